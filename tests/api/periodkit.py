"""ann's November at t1, each evening on the club's clock set for it (UTC, the default
zone), for the tests of a statement for a period (the API's and the console's):

  2 Nov  deposits 1000; round 1: she stakes 100 against the setter and covers bob's 60,
         a nick: paid 200 + 120, won 160 over her stakes. ann 1160 (disputekit.two_rounds).
  10 Nov the setter pays her out 100; round 3: she stakes 50, main 7, 1+1: out, lost 50;
         she stakes 30, left open. ann 980.
  20 Nov bob disputes round 1, the setter voids it: her 160 goes back (100 to the
         setter, 60 to bob). ann 820.
"""

from __future__ import annotations

from tests.api.conftest import Api
from tests.api.disputekit import open_dispute, resolve, two_rounds
from tests.api.gamekit import Evening


def _at(api: Api, day: str) -> None:
    """Every event from here on is recorded on `day`, at 20:00 UTC and a microsecond on."""
    ticks = iter(range(10**6))
    api.book.store.clock = lambda: f"{day}T20:00:00.{next(ticks):06d}Z"


def november(api: Api) -> Evening:
    _at(api, "2026-11-02")
    night, _ = two_rounds(api)
    _at(api, "2026-11-10")
    night.bank.ok("post", "/players/ann/withdrawals", {"amount": 100})
    night.deposited -= 100  # what the club holds, for gamekit's check that none is made
    night.do("ann", "stakes", {"amount": 50})
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 1, "die2": 1})  # out
    night.do("ann", "stakes", {"amount": 30})
    _at(api, "2026-11-20")
    opened = open_dispute(night, "bob", 1, {"claim": "the dice left the table"})
    resolve(night, opened["dispute_id"], {"resolution": "voided", "reason": "so they did"})
    assert night.balance("ann") == 820
    return night
