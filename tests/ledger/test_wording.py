"""A statement's entries in the game's own words (ledger.books.wording): every event that
can post to a player's account has words of its own, in the club's money, and none is
said by its event's name or in bare minor units."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ledger.books import wording
from ledger.books.statements import Bet, Entry
from ledger.house import House
from ledger.store.vocabulary import MOVES_MONEY, STORED_EVENTS

GBP = House()
AT = "2026-11-26T21:30:05.123456Z"


def entry(kind: str, amount: int, payload: dict[str, Any], **context: Any) -> Entry:
    """ann's entry of event `kind` at table t1 (unless `stream` says otherwise)."""
    stream = context.pop("stream", "table:t1")
    table = stream.removeprefix("table:") if stream.startswith("table:") else None
    return Entry(
        position=42,
        recorded_at=AT,
        stream=stream,
        type=kind,
        payload=payload,
        player="ann",
        amount=amount,
        balance=1000,
        table=table,
        **context,
    )


NICK = {"kind": "nick-first-throw", "totals": []}
EIGHT = {"kind": "next-total", "totals": [8]}
ODDS = {"bet_id": "b20", "bettor": "ann", "on": "chance", "stake": 50, "payout": 100}
OFFER = {"bet_id": "b7", "offerer": "bob", "proposition": EIGHT, "backs": True, "stake": 20}
LAY = {"bet_id": "b9", "bettor": "ann", "amount": 60}

ANNS = "account:player:ann"
CASES = [
    ("deposit", entry("Deposited", 1000, {"account": "player:ann", "amount": 1000}, stream=ANNS)),
    ("withdrawal", entry("Withdrawn", -250, {"account": "player:ann", "amount": 250}, stream=ANNS)),
    (
        "staked as caster against the setter at t1, round 2",
        entry("CasterStaked", -100, {"bet_id": "b5", "caster": "ann", "amount": 100}, round=2),
    ),
    (
        "laid a stake against the caster at t1, round 2",
        entry("StakeLaid", -60, LAY, round=2),
    ),
    (
        "covered a stake laid against you at t1, round 2",
        entry("StakeCovered", -60, {"bet_id": "b9", "caster": "ann", "amount": 60}, round=2),
    ),
    (
        "laid odds on the chance at t1, round 3, at 2 to 1",
        entry("OddsLaid", -50, ODDS, round=3),
    ),
    (
        "offered a side bet that the first throw nicks at t1, round 1, £2.00 against £1.50, to bob",
        entry(
            "SideBetOffered",
            -200,
            {"bet_id": "b4", "offerer": "ann", "proposition": NICK, "backs": True,
             "stake": 200, "asks": 150, "to": "bob"},
            round=1,
        ),
    ),
    (
        "took bob's side bet that the next throw does not total 8 at t1, round 2",
        entry(
            "SideBetAccepted",
            -50,
            {"bet_id": "b7", "acceptor": "ann", "amount": 50},
            round=2,
            bet=Bet("b7", "side", OFFER),
        ),
    ),
    (
        "won the odds on the chance at t3, round 5 (the chance thrown)",
        entry(
            "BetSettled",
            150,
            {"bet_id": "b20", "winner": "ann"},
            stream="table:t3",
            round=5,
            result="chance",
            bet=Bet("b20", "odds", ODDS, "settled", "ann", None, 5),
        ),
    ),
    (
        "lost the laid stake at t1, round 2 (thrown out)",
        entry(
            "BetSettled",
            0,
            {"bet_id": "b9", "winner": "cat"},
            round=2,
            result="out",
            bet=Bet("b9", "laid", LAY, "settled", "cat", None, 2),
        ),
    ),
    (
        "lost the side bet that the next throw does not total 8 at t1, round 2",
        entry(
            "BetSettled",
            0,
            {"bet_id": "b7", "winner": "bob"},
            round=2,
            result="chance",  # a next-total bet is not decided by how the round ends
            bet=Bet("b7", "side", OFFER, "settled", "bob", None, 2),
        ),
    ),
    (
        "the laid stake returned at t1, round 2 (refused by the caster)",
        entry(
            "BetVoided",
            60,
            {"bet_id": "b9", "reason": "refused"},
            round=2,
            bet=Bet("b9", "laid", LAY, "voided", None, "refused", 2),
        ),
    ),
    (
        "dispute d31 at t1, round 2: the round voided, the laid stake reversed",
        entry(
            "BetAdjusted",
            -120,
            {"bet_id": "b9", "dispute_id": "d31", "round": 2, "adjustment": "reversal"},
            round=2,
            bet=Bet("b9", "laid", LAY, "settled", "ann", None, 2),
            dispute={"resolution": "voided", "dice": None},
        ),
    ),
    (
        "dispute d33 at t1, round 2: the throw corrected to 4+5, adjusting the odds on the chance",
        entry(
            "BetAdjusted",
            -150,
            {"bet_id": "b20", "dispute_id": "d33", "round": 2, "adjustment": "correction"},
            round=2,
            bet=Bet("b20", "odds", ODDS, "settled", "ann", None, 2),
            dispute={"resolution": "corrected", "dice": (4, 5)},
        ),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("said", "shown"), CASES, ids=[c[1].type + str(i) for i, c in enumerate(CASES)]
)
def test_each_entry_in_the_game_s_words(said: str, shown: Entry) -> None:
    assert wording.describe(shown, GBP) == said


def test_every_event_that_moves_money_has_words_and_the_cases_cover_them() -> None:
    """A new event that moves money fails here until it has words of its own."""
    assert MOVES_MONEY <= wording.WORDED
    assert {shown.type for _, shown in CASES} == set(MOVES_MONEY)


def test_a_sentence_gives_the_amount_in_the_club_s_money() -> None:
    won = next(shown for _, shown in CASES if shown.type == "BetSettled" and shown.amount)
    assert wording.sentence(won, GBP).endswith(": +£1.50")
    assert wording.sentence(won, House("JPY", 0)).endswith(": +¥150")
    deposit = CASES[0][1]
    assert wording.sentence(deposit, GBP) == "deposit: +£10.00"
    lost = next(shown for _, shown in CASES if shown.type == "BetSettled" and not shown.amount)
    assert wording.sentence(lost, GBP) == "lost the laid stake at t1, round 2 (thrown out)"


NAMES = re.compile("|".join(cls.__name__ for cls in STORED_EVENTS))
MONEY_FIELDS = ("amount", "stake", "asks", "payout")


@pytest.mark.parametrize("house", [GBP, House("JPY", 0), House("EUR", 3)])
def test_no_words_name_an_event_or_show_bare_minor_units(house: House) -> None:
    for _, shown in CASES:
        said = wording.sentence(shown, house)
        assert not NAMES.search(said), said
        # No amount of the event's, or of what it moved, as a bare count of minor
        # units: each is written as the club writes money.
        counts = [shown.payload[f] for f in MONEY_FIELDS if f in shown.payload]
        for count in [*counts, abs(shown.amount)]:
            if count and house.minor_units:
                assert not re.search(rf"(?<![\d.,]){count}(?![\d.,])", said), (count, said)


def test_a_receipt_of_an_event_that_moved_no_money_says_what_it_was() -> None:
    assert wording.event_words("PlayerSeated", {"player": "ann"}, "t1", GBP) == "sat down at t1"
    assert (
        wording.event_words("DisputeOpened", {"dispute_id": "d9", "round": 3}, "t1", GBP)
        == "opened dispute d9 over round 3 at t1"
    )
    assert (
        wording.event_words("CreditLimitSet", {"limit": 5000}, "account:player:ann", GBP)
        == "your credit limit set to £50.00"
    )
    assert wording.event_words("DiceThrown", {"die1": 1, "die2": 2}, "t1", GBP) is None
    assert wording.event_words("DisputeOpened", {}, "t1", GBP) is None  # a payload damaged
