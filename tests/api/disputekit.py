"""A table with disputed rounds to come, played over HTTP, every balance worked out by
hand; and a dispute opened and resolved, each checked to have made no money.

The table (english rules: ann casts, main called): deposits ann 1000, bob 1000,
cat 1000, the setter 10 000.

Round 1: ann stakes 100 against the setter; bob lays 60 and ann covers it. Main 7,
thrown 3+4: a nick. ann wins 100 from the setter and 60 from bob:
    ann 1160, bob 940, cat 1000, setter 9900.

Round 2: main 7; 2+4 sets the chance 6. cat offers bob 20 against 50 that the next
throw is 8, and bob takes it. 4+4 is thrown: cat wins bob's 50. Then 3+3: the chance.
    ann 1160, bob 890, cat 1050, setter 9900.
"""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api
from tests.api.gamekit import Evening, bet_id

TABLE = "t1"


DEPOSITS = {"ann": 1000, "bob": 1000, "cat": 1000, "setter": 10_000}


def seated(api: Api) -> Evening:
    """Table t1 (english), ann, bob and cat seated, ann the caster."""
    night = Evening(api, TABLE, deposits=DEPOSITS)
    croupier = night.croupier
    croupier.ok("post", "/tables", {"id": TABLE, "ruleset": "english"})
    for name in ("ann", "bob", "cat"):
        night.do(croupier, "seats", {"player": name})
    for name, die in (("ann", 1), ("bob", 2), ("cat", 3)):
        night.do(croupier, "casts", {"player": name, "die": die})
    return night


def two_rounds(api: Api) -> tuple[Evening, dict[str, int]]:
    night = seated(api)
    croupier = night.croupier
    night.do("ann", "stakes", {"amount": 100})
    laid = bet_id(night.do("bob", "lays", {"player": "bob", "amount": 60}), "StakeLaid")
    night.do("ann", "covers", {"bets": [laid]})
    night.do(croupier, "main", {"main": 7})
    nick = night.do(croupier, "throws", {"die1": 3, "die2": 4})
    assert night.balances() == {"ann": 1160, "bob": 940, "cat": 1000, "setter": 9900}

    night.do(croupier, "main", {"main": 7})
    night.do(croupier, "throws", {"die1": 2, "die2": 4})
    offer = {
        "player": "cat",
        "proposition": {"kind": "next-total", "totals": [8]},
        "backs": True,
        "stake": 20,
        "asks": 50,
        "to": "bob",
    }
    side = bet_id(night.do("cat", "side-bets", offer), "SideBetOffered")
    night.do("bob", "side-bets/accept", {"player": "bob", "bet": side})
    eight = night.do(croupier, "throws", {"die1": 4, "die2": 4})
    night.do(croupier, "throws", {"die1": 3, "die2": 3})
    assert night.balances() == {"ann": 1160, "bob": 890, "cat": 1050, "setter": 9900}
    versions = {"nick": nick["events"][0]["version"], "eight": eight["events"][0]["version"]}
    return night, versions


def open_dispute(night: Evening, who: Any, round: int, body: dict[str, Any]) -> dict[str, Any]:
    client = night._client(who)
    response = client.post(f"/tables/{TABLE}/rounds/{round}/disputes", json=body)
    assert response.status_code == 201, response.get_json()
    answer: dict[str, Any] = response.get_json()
    night.check_conserved()
    return answer


def resolve(night: Evening, dispute: str, body: dict[str, Any]) -> dict[str, Any]:
    response = night.bank.post(f"/tables/{TABLE}/disputes/{dispute}/resolution", json=body)
    assert response.status_code == 201, response.get_json()
    night.check_conserved()
    answer: dict[str, Any] = response.get_json()
    return answer


def french_side_bet_round(api: Api) -> tuple[Evening, str, int]:
    """Table t1 under french rules (the main rolled, re-tossed until 5 to 9), ann the
    caster: she offers bob 150 against his 170 that the first throw after the main
    nicks, and he takes it. 1+3 is re-tossed, 4+1 sets the main 5, 1+4 nicks it: ann
    wins bob's 170 (320 paid to her). ann 1170, bob 830. Returns the side bet's id and
    the first throw's version."""
    night = Evening(api, TABLE, deposits=DEPOSITS)
    croupier = night.croupier
    croupier.ok("post", "/tables", {"id": TABLE, "ruleset": "french"})
    for name in ("ann", "bob"):
        night.do(croupier, "seats", {"player": name})
    for name, die in (("ann", 1), ("bob", 2)):
        night.do(croupier, "casts", {"player": name, "die": die})
    offer = {
        "player": "ann",
        "proposition": {"kind": "nick-first-throw", "totals": []},
        "backs": True,
        "stake": 150,
        "asks": 170,
        "to": "bob",
    }
    side = bet_id(night.do("ann", "side-bets", offer), "SideBetOffered")
    night.do("bob", "side-bets/accept", {"player": "bob", "bet": side})
    first = night.do(croupier, "throws", {"die1": 1, "die2": 3})["events"][0]["version"]
    night.do(croupier, "throws", {"die1": 4, "die2": 1})
    night.do(croupier, "throws", {"die1": 1, "die2": 4})
    assert night.balances() == {"ann": 1170, "bob": 830, "cat": 1000, "setter": 10_000}
    return night, side, first


def odds_round(api: Api) -> tuple[Evening, int]:
    """Round 1 at t1 (english) with odds on the chance: ann stakes 100 against the
    setter; main 7; 1+3 sets the chance 4, and ann lays 25 odds on it, paid 2 to 1 (the
    setter lays 50); 2+2 throws the chance: ann wins 100 and 50.
        ann 1150, bob 1000, cat 1000, setter 9850.
    Had the 1+3 been 2+3 (the chance 5, paid 3 to 2), her 25 odds would pay 75/2, half
    a minor unit, and english rules refuse such a stake. Returns the 1+3's version."""
    night = seated(api)
    croupier = night.croupier
    night.do("ann", "stakes", {"amount": 100})
    night.do(croupier, "main", {"main": 7})
    four = night.do(croupier, "throws", {"die1": 1, "die2": 3})["events"][0]["version"]
    night.do("ann", "odds", {"player": "ann", "on": "chance", "amount": 25})
    night.do(croupier, "throws", {"die1": 2, "die2": 2})
    assert night.balances() == {"ann": 1150, "bob": 1000, "cat": 1000, "setter": 9850}
    return night, four
