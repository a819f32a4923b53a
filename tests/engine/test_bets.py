"""Example-driven tests of bets beyond the round's stakes: odds at Hoyle's prices,
payouts that fall between minor units, the setter's exposure cap, and side bets on
every proposition. Tables are checked on teardown to keep their books (tablekit.py).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

import engine
from engine import events as ev
from engine.betting import MAX_BETS_PER_PLAYER, MAX_OPEN_BETS, PLAYERS_SHARE, Verdict, _decide
from engine.errors import Rule
from engine.events import Limits, Proposition, PropositionKind
from engine.money import ESCROW
from engine.rules import RuleSet, from_mapping
from engine.rulesets import BUILTIN
from engine.state import SETTER, Phase, RoundResult
from tests.engine.tablekit import (
    CASTER_WINS,
    CHANCE_FIRST,
    NICK_FIRST,
    Table,
    kinds,
    next_total,
)

# -- odds ---------------------------------------------------------------------------


def test_odds_pay_hoyles_table(table: Callable[..., Table]) -> None:
    t = table()
    t.bet(engine.stake, 100)
    t.bet(engine.lay, "bob", 100)
    t.do(engine.cover, 100)
    t.do(engine.call_main, 7)
    t.do(engine.throw, 1, 4)  # chance 5: odds 3/2 on the chance, 2/3 on the main
    detail = t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "ann", "chance", 25)
    assert "3/2" in detail and "75/2" in detail and detail.endswith("are 24 and 26")
    detail = t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "bob", "main", 25)
    assert detail.endswith("are 24 and 27")
    t.refused(Rule.ODDS_WITHOUT_STAKE, engine.lay_odds, "cat", "chance", 10)
    t.refused(Rule.INVALID_PROPOSITION, engine.lay_odds, "ann", "point", 10)
    t.refused(Rule.INVALID_STAKE, engine.lay_odds, "ann", "chance", 0)
    (ann,) = t.do(engine.lay_odds, "ann", "chance", 100)
    assert (ann.stake, ann.payout, ann.breakage) == (100, 150, Fraction(0))
    assert "0 more" in t.refused(Rule.ODDS_LIMIT, engine.lay_odds, "ann", "chance", 2)
    (bob,) = t.do(engine.lay_odds, "bob", "main", 60)
    assert (bob.stake, bob.payout) == (60, 40)
    assert "40 more" in t.refused(Rule.ODDS_LIMIT, engine.lay_odds, "bob", "main", 42)
    assert t.state.exposure() == 100 + 150 + 40
    assert kinds(t.do(engine.throw, 3, 3)) == ["DiceThrown"]
    out = t.do(engine.throw, 2, 3)  # the chance: the caster and the chance win
    settled = {e.bet_id: (e.winner, e.transfers[0].amount) for e in out[1:]}
    assert settled[ann.bet_id] == ("ann", 250) and settled[bob.bet_id] == (SETTER, 100)
    assert t.players_net() == {"ann": 350, SETTER: -190, "bob": -160}


@pytest.mark.parametrize(("stake", "nearest"), [(3, "are 5"), (12, "are 10 and 15")])
def test_payout_not_payable_names_nearest_stakes(
    table: Callable[..., Table], stake: int, nearest: str
) -> None:
    t = table()
    t.bet(engine.stake, 100)
    t.do(engine.call_main, 5)
    t.do(engine.throw, 3, 3)  # chance 6 on a main of 5: 4/5
    assert t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "ann", "chance", stake).endswith(
        nearest
    )
    t.do(engine.close)


def test_payout_not_payable_names_only_stakes_within_the_odds_limit(
    table: Callable[..., Table],
) -> None:
    t = table()
    t.bet(engine.stake, 1000)
    t.do(engine.call_main, 5)
    t.do(engine.throw, 3, 4)  # chance 7 on a main of 5: 2/3 on the chance
    detail = t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "ann", "chance", 1000)
    assert detail.endswith(
        "the nearest stake that pays exactly and may be laid (at most 1000) is 999"
    )
    assert "1002" not in detail
    t.do(engine.lay_odds, "ann", "chance", 999)
    detail = t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "ann", "chance", 1)
    assert detail.endswith("no stake that may be laid (at most 1) pays exactly")
    t.do(engine.close)


def test_payout_not_payable_names_only_stakes_within_the_setter_s_cap(
    table: Callable[..., Table],
) -> None:
    data = BUILTIN["english"].to_mapping()
    data.update(name="triple-odds", odds_multiple=3)
    t = table(from_mapping(data), Limits(max_exposure=200))
    t.bet(engine.stake, 100)
    t.do(engine.call_main, 5)
    t.do(engine.throw, 3, 4)  # chance 7 on a main of 5: 2/3; the setter has 100 to spare
    detail = t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "ann", "chance", 200)
    assert detail.endswith("(at most 150) is 150")
    (laid,) = t.do(engine.lay_odds, "ann", "chance", 150)
    assert laid.payout == 100 and t.state.exposure() == 200
    t.do(engine.close)


def test_round_down_records_breakage(table: Callable[..., Table]) -> None:
    data = BUILTIN["english"].to_mapping()
    data.update(name="round-down", rounding="round-down", odds_multiple=2)
    t = table(from_mapping(data))
    t.bet(engine.stake, 25)
    t.do(engine.call_main, 7)
    t.do(engine.throw, 1, 4)
    first = t.bet(engine.lay_odds, "ann", "chance", 25)
    (second,) = t.do(engine.lay_odds, "ann", "chance", 25)
    assert (second.payout, second.breakage) == (37, Fraction(1, 2))
    t.refused(Rule.ODDS_LIMIT, engine.lay_odds, "ann", "chance", 1)
    out = t.do(engine.throw, 4, 1)
    odds = [e for e in out if isinstance(e, ev.BetSettled) and e.bet_id in (first, second.bet_id)]
    assert [(e.winner, e.transfers[0].amount, e.breakage) for e in odds] == [
        ("ann", 62, Fraction(1, 2))
    ] * 2
    assert t.players_net() == {"ann": 99, SETTER: -99}


def round_down(odds_multiple: int) -> RuleSet:
    data = BUILTIN["english"].to_mapping()
    data.update(name="round-down", rounding="round-down", odds_multiple=odds_multiple)
    return from_mapping(data)


def test_round_down_refuses_a_stake_that_would_pay_nothing(table: Callable[..., Table]) -> None:
    t = table(round_down(2))
    t.bet(engine.stake, 25)
    t.do(engine.call_main, 7)
    t.do(engine.throw, 1, 3)  # chance 4 on a main of 7: 1/2 on the main
    detail = t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "ann", "main", 1)
    assert "rounds down to nothing" in detail and detail.endswith(
        "the smallest stake that pays is 2"
    )
    (laid,) = t.do(engine.lay_odds, "ann", "main", 3)
    assert (laid.payout, laid.breakage) == (1, Fraction(1, 2))
    t.do(engine.close)


def test_round_down_names_no_stake_when_none_within_the_limit_pays(
    table: Callable[..., Table],
) -> None:
    t = table(round_down(1))
    t.bet(engine.stake, 1)
    t.do(engine.call_main, 7)
    t.do(engine.throw, 1, 3)
    detail = t.refused(Rule.PAYOUT_NOT_PAYABLE, engine.lay_odds, "ann", "main", 1)
    assert detail.endswith("no stake that may be laid (at most 1) pays anything")
    t.do(engine.close)


def test_breakage_is_recorded_only_where_a_payment_was_rounded(
    table: Callable[..., Table],
) -> None:
    t = table(round_down(1))
    t.bet(engine.stake, 25)
    t.bet(engine.lay, "bob", 25)
    t.do(engine.cover, 25)
    t.do(engine.call_main, 7)
    t.do(engine.throw, 1, 4)  # chance 5: 3/2 on the chance, 2/3 on the main
    on_chance = t.bet(engine.lay_odds, "ann", "chance", 25)  # pays 37, 1/2 rounded off
    on_main = t.bet(engine.lay_odds, "bob", "main", 25)  # pays 16, 2/3 rounded off
    out = t.do(engine.throw, 3, 4)  # the main: the chance bet loses, the main bet wins
    settled = {e.bet_id: (e.winner, e.breakage) for e in out if isinstance(e, ev.BetSettled)}
    assert settled[on_chance] == (SETTER, Fraction(0))  # the setter's own 37 back: no rounding
    assert settled[on_main] == ("bob", Fraction(2, 3))
    assert all(b == 0 for bet, (_, b) in settled.items() if bet not in (on_chance, on_main))


def test_exposure_limit(table: Callable[..., Table]) -> None:
    t = table(limits=Limits(max_exposure=200))
    t.refused(Rule.EXPOSURE_LIMIT, engine.stake, 201)
    t.bet(engine.stake, 100)
    t.do(engine.call_main, 7)
    t.do(engine.throw, 3, 1)  # chance 4: odds 2/1
    t.refused(Rule.EXPOSURE_LIMIT, engine.lay_odds, "ann", "chance", 100)
    t.do(engine.lay_odds, "ann", "chance", 50)
    assert t.state.exposure() == 200
    t.refused(Rule.EXPOSURE_LIMIT, engine.offer_side_bet, SETTER, next_total(7), True, 1, 1)
    offer = t.bet(engine.offer_side_bet, "bob", next_total(2), True, 10, 60)
    t.refused(Rule.EXPOSURE_LIMIT, engine.accept_side_bet, offer, SETTER)
    t.do(engine.accept_side_bet, offer, "cat")
    t.do(engine.throw, 1, 1)  # 2: bob's next total; the chance phase goes on
    t.do(engine.throw, 2, 2)  # the chance: the caster's stake and odds (2/1) win
    assert t.players_net() == {"bob": 60, "cat": -60, "ann": 200, SETTER: -200}


# -- side bets ----------------------------------------------------------------------


def test_side_bet_caster_wins_each_side_names_its_stake(table: Callable[..., Table]) -> None:
    t = table()
    offer = t.bet(engine.offer_side_bet, "bob", CASTER_WINS, True, 100, 500, to="cat")
    assert t.state.bets[offer].pending and t.state.bets[offer].yes_stake == 100
    t.refused(Rule.NOT_SEATED, engine.accept_side_bet, offer, "dan")
    t.refused(Rule.NOT_OFFERED_TO_YOU, engine.accept_side_bet, offer, "ann")
    t.refused(Rule.SELF_BET, engine.accept_side_bet, offer, "bob")
    t.refused(Rule.NOT_YOUR_BET, engine.withdraw_side_bet, offer, "cat")
    (accepted,) = t.do(engine.accept_side_bet, offer, "cat")
    assert accepted.amount == 500 and not t.state.bets[offer].pending
    t.refused(Rule.UNKNOWN_BET, engine.accept_side_bet, offer, "cat")
    t.refused(Rule.UNKNOWN_BET, engine.withdraw_side_bet, offer, "bob")
    t.do(engine.call_main, 7)
    out = t.do(engine.throw, 6, 5)
    paid = (ev.Transfer(ESCROW + offer, "bob", 600),)
    assert out[1] == ev.BetSettled(out[1].version, offer, "bob", paid, Fraction(0))
    assert t.players_net() == {"bob": 500, "cat": -500}


def test_side_bet_offer_refusals_and_withdrawal(table: Callable[..., Table]) -> None:
    t = table(choose=False)
    t.refused(Rule.WRONG_PHASE, engine.offer_side_bet, "bob", CASTER_WINS, True, 1, 1)
    t.refused(Rule.SELF_BET, engine.offer_side_bet, "bob", next_total(7), True, 1, 1, to="bob")
    t.refused(Rule.NOT_SEATED, engine.offer_side_bet, "bob", next_total(7), True, 1, 1, to="dan")
    t.refused(Rule.NOT_SEATED, engine.offer_side_bet, "dan", next_total(7), True, 1, 1)
    for bad in (next_total(), next_total(*range(2, 13)), next_total(13), next_total(1, 7)):
        t.refused(Rule.INVALID_PROPOSITION, engine.offer_side_bet, "bob", bad, True, 1, 1)
    bad = Proposition(PropositionKind.CASTER_WINS, frozenset({7}))
    t.refused(Rule.INVALID_PROPOSITION, engine.offer_side_bet, "bob", bad, True, 1, 1)
    offer = t.bet(engine.offer_side_bet, "bob", next_total(7), True, 100, 500)
    out = t.do(engine.withdraw_side_bet, offer, "bob")
    refund = (ev.Transfer(ESCROW + offer, "bob", 100),)
    assert out == [ev.BetVoided(out[0].version, offer, "withdrawn", refund)]
    t.refused(Rule.UNKNOWN_BET, engine.withdraw_side_bet, offer, "bob")
    assert not t.players_net()


@pytest.mark.parametrize(
    ("totals", "bad"), [([1], 1), ([13], 13), ([7, 13], 13), ([0, 7], 0), ([-2], -2)]
)
def test_a_next_total_outside_2_to_12_is_named(
    table: Callable[..., Table], totals: list[int], bad: int
) -> None:
    t = table(choose=False)
    detail = t.refused(
        Rule.INVALID_PROPOSITION, engine.offer_side_bet, "bob", next_total(*totals), True, 1, 1
    )
    assert detail == f"a next-total bet names totals 2 to 12, not {bad}"


def test_a_next_total_naming_none_or_every_total_says_so(table: Callable[..., Table]) -> None:
    t = table(choose=False)
    for bad in (next_total(), next_total(*range(2, 13))):
        detail = t.refused(Rule.INVALID_PROPOSITION, engine.offer_side_bet, "bob", bad, True, 1, 1)
        assert detail == "a next-total bet names some, but not all, of the totals 2 to 12"


PLAYERS = tuple(f"p{n}" for n in range(1, 12))
"""Enough players to fill the table's share of offers and odds, a player's cap apiece."""


def crowded(table: Callable[..., Table], *first: str) -> Table:
    """A table where ann casts, `first` sit with her, and then PLAYERS."""
    t = table(players=("ann", *first))
    for player in PLAYERS:
        t.do(engine.seat, player)
    return t


def fill(t: Table, offerers: tuple[str, ...], count: int, proposition: Any = None) -> None:
    """`count` untaken offers, a player's cap from each of `offerers` in turn."""
    for n in range(count):
        who = offerers[n // MAX_BETS_PER_PLAYER]
        t.bet(engine.offer_side_bet, who, proposition or next_total(7), True, 1, 1)


def test_a_table_holds_at_most_max_open_bets(table: Callable[..., Table]) -> None:
    """Open bets and offers are capped, so a write that closes them all (closing the
    table, a throw) answers a bounded number of events. Offers and odds fill the table
    up to the reserve; the caster's stake, the lays and the setter's offers use it."""
    t = crowded(table)
    fill(t, PLAYERS, PLAYERS_SHARE)
    assert len(t.state.bets) == PLAYERS_SHARE
    detail = t.refused(
        Rule.TOO_MANY_OPEN_BETS, engine.offer_side_bet, "p10", next_total(7), True, 1, 1
    )
    assert detail == (
        f"the table holds {PLAYERS_SHARE} open bets and offers: players' offers and odds "
        f"fill it to {PLAYERS_SHARE}, and the other {MAX_OPEN_BETS - PLAYERS_SHARE} places "
        "are kept for the caster's stake, the lays and the setter's offers; wait for some "
        "to resolve"
    )
    t.bet(engine.stake, 10)  # the round's own stakes still go on
    laid = t.bet(engine.lay, "p10", 10)
    while len(t.state.bets) < MAX_OPEN_BETS:
        t.bet(engine.offer_side_bet, SETTER, next_total(7), True, 1, 1)
    full = f"the table holds at most {MAX_OPEN_BETS} open bets and offers; wait for some to resolve"
    assert (
        t.refused(Rule.TOO_MANY_OPEN_BETS, engine.offer_side_bet, SETTER, next_total(7), True, 1, 1)
        == full
    )
    assert t.refused(Rule.TOO_MANY_OPEN_BETS, engine.lay, "p11", 10) == full
    t.do(engine.cover, 10)  # taking an offer's other side adds no bet
    t.do(engine.call_main, 6)
    t.do(engine.throw, 2, 2)  # a chance of 4: the next-total offers were never taken
    assert len(t.state.bets) == 2
    t.refused(Rule.ODDS_WITHOUT_STAKE, engine.lay_odds, "p11", "chance", 10)
    t.bet(engine.lay_odds, "p10", "main", 10)
    assert len(t.state.bets) == 3 and laid in t.state.bets
    assert len(t.do(engine.close)) == 4


def test_one_player_cannot_stop_the_betting(table: Callable[..., Table]) -> None:
    """A player holds at most MAX_BETS_PER_PLAYER open bets and offers, far below the
    table's cap: the caster, the other players and the setter bet on as before."""
    t = table(players=("ann", "bob", "cat", "dan"))
    fill(t, ("cat",), MAX_BETS_PER_PLAYER)
    detail = t.refused(
        Rule.TOO_MANY_OWN_BETS, engine.offer_side_bet, "cat", next_total(7), True, 1, 1
    )
    assert detail == (
        f"'cat' holds {MAX_BETS_PER_PLAYER} open bets and offers at this table, the most "
        "one player may: wait for some to resolve, or withdraw an offer"
    )
    t.refused(Rule.TOO_MANY_OWN_BETS, engine.lay, "cat", 10)
    offer = t.bet(engine.offer_side_bet, "dan", next_total(7), True, 1, 1)
    t.refused(Rule.TOO_MANY_OWN_BETS, engine.accept_side_bet, offer, "cat")
    t.bet(engine.stake, 10)
    t.bet(engine.lay, "bob", 10)
    t.bet(engine.offer_side_bet, SETTER, next_total(7), True, 1, 1)
    t.do(engine.accept_side_bet, offer, "bob")
    t.do(engine.cover, 10)
    assert len(t.state.bets) == MAX_BETS_PER_PLAYER + 4
    # Withdrawing an offer makes room for the next.
    first = min((b for b in t.state.bets.values() if b.yes == "cat"), key=lambda b: b.round)
    t.do(engine.withdraw_side_bet, first.id, "cat")
    t.bet(engine.offer_side_bet, "cat", next_total(7), True, 1, 1)


def test_the_caster_covers_and_stakes_whatever_they_hold(table: Callable[..., Table]) -> None:
    """The caster's stake and covers are the round's: a caster at their own cap of
    offers still stakes, and covers every stake laid against them."""
    t = table(players=("ann", "bob", "cat"))
    fill(t, ("ann",), MAX_BETS_PER_PLAYER)
    t.bet(engine.stake, 10)
    t.bet(engine.lay, "bob", 10)
    t.bet(engine.lay, "cat", 10)
    t.do(engine.cover, 20)
    assert sum("ann" in b.parties for b in t.state.bets.values()) == MAX_BETS_PER_PLAYER + 3


def test_odds_and_stakes_count_toward_the_open_bet_cap(table: Callable[..., Table]) -> None:
    t = crowded(table, "bob")
    t.bet(engine.lay, "bob", 10)
    t.do(engine.cover, 10)
    t.do(engine.call_main, 6)
    t.do(engine.throw, 2, 2)
    fill(t, PLAYERS, PLAYERS_SHARE - 1, CHANCE_FIRST)
    t.refused(Rule.TOO_MANY_OPEN_BETS, engine.lay_odds, "bob", "main", 5)
    t2 = crowded(table)
    fill(t2, PLAYERS, PLAYERS_SHARE)
    for _ in range(MAX_OPEN_BETS - PLAYERS_SHARE):
        t2.bet(engine.offer_side_bet, SETTER, next_total(7), True, 1, 1)
    t2.refused(Rule.TOO_MANY_OPEN_BETS, engine.stake, 10)


def test_side_bet_chance_before_main(table: Callable[..., Table]) -> None:
    t = table()
    t.do(engine.call_main, 6)
    t.do(engine.throw, 2, 2)  # chance 4
    offer = t.bet(engine.offer_side_bet, "bob", CHANCE_FIRST, False, 300, 100)
    assert t.do(engine.accept_side_bet, offer, SETTER)[0].amount == 100
    t.do(engine.throw, 1, 5)  # the main: chance-before-main is false
    assert t.players_net() == {"bob": 100, SETTER: -100}


def test_chance_before_main_void_when_no_chance_and_never_accepted(
    table: Callable[..., Table],
) -> None:
    t = table()
    t.do(engine.call_main, 6)
    taken = t.bet(engine.offer_side_bet, "bob", CHANCE_FIRST, True, 100, 100)
    t.do(engine.accept_side_bet, taken, "cat")
    lonely = t.bet(engine.offer_side_bet, "cat", CASTER_WINS, True, 40, 40)
    out = t.do(engine.throw, 6, 6)  # 12 nicks on 6: no chance is ever set
    voids = {e.bet_id: e.reason for e in out if isinstance(e, ev.BetVoided)}
    assert voids == {taken: "undecidable", lonely: "never-accepted"}
    assert not t.players_net()


def test_side_bet_nick_first_throw(table: Callable[..., Table]) -> None:
    t = table()
    offer = t.bet(engine.offer_side_bet, "cat", NICK_FIRST, True, 50, 200)
    t.do(engine.accept_side_bet, offer, "bob")
    t.do(engine.call_main, 8)
    assert kinds(t.do(engine.throw, 6, 6)) == ["DiceThrown", "BetSettled"]
    assert t.players_net() == {"cat": 200, "bob": -200}
    t.do(engine.call_main, 8)
    t.do(engine.throw, 3, 3)
    t.refused(Rule.PROPOSITION_DECIDED, engine.offer_side_bet, "cat", NICK_FIRST, True, 5, 5)


def test_nick_first_throw_waits_for_a_rolled_main(table: Callable[..., Table]) -> None:
    t = table("french")
    offer = t.bet(engine.offer_side_bet, "cat", NICK_FIRST, False, 30, 10)
    t.do(engine.accept_side_bet, offer, "bob")
    assert kinds(t.do(engine.throw, 1, 1)) == ["DiceThrown"]  # re-tossed
    assert kinds(t.do(engine.throw, 2, 3)) == ["DiceThrown"]  # the main: 5
    assert kinds(t.do(engine.throw, 4, 1)) == ["DiceThrown", "BetSettled"]  # nick
    assert t.players_net() == {"bob": 30, "cat": -30}


def test_nick_first_throw_void_when_first_roll_is_no_main(table: Callable[..., Table]) -> None:
    t = table("history")
    offer = t.bet(engine.offer_side_bet, "cat", NICK_FIRST, True, 30, 10)
    t.do(engine.accept_side_bet, offer, "bob")
    out = t.do(engine.throw, 6, 6)
    assert [(type(e).__name__, getattr(e, "reason", None)) for e in out[1:]] == [
        ("BetVoided", "undecidable"),
        ("DicePassed", "loss"),
    ]


def test_side_bet_next_total_outlives_the_round(table: Callable[..., Table]) -> None:
    t = table()
    offer = t.bet(engine.offer_side_bet, "bob", next_total(7, 11), True, 100, 500)
    t.do(engine.accept_side_bet, offer, "cat")
    lonely = t.bet(engine.offer_side_bet, "cat", next_total(2), True, 5, 5)
    t.do(engine.call_main, 7)
    t.do(engine.void_throw, "wild", 0)  # a void throw decides nothing
    out = t.do(engine.throw, 1, 1)  # 2 throws out; 2 is not 7 or 11
    decided = {e.bet_id: type(e).__name__ for e in out[1:]}
    assert decided == {offer: "BetSettled", lonely: "BetVoided"}
    assert out[1].winner == "cat"  # type: ignore[union-attr]
    assert t.players_net() == {"bob": -100, "cat": 100}


# -- verdicts -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(PropositionKind))
def test_a_throw_leaves_every_proposition_open_or_with_a_verdict(kind: PropositionKind) -> None:
    """`Verdict` names each way a throw decides a proposition; None is still open."""
    proposition = Proposition(
        kind, frozenset({7}) if kind is PropositionKind.NEXT_TOTAL else frozenset()
    )
    seen = {
        _decide(proposition, phase, result, total, result is not None)
        for phase in (Phase.AWAITING_MAIN, Phase.FIRST_THROW, Phase.CHANCE)
        for result in (None, *RoundResult)
        for total in range(2, 13)
    }
    assert seen - {None} <= set(Verdict)
    assert seen - {None}


def test_verdicts_read_as_the_rules_say() -> None:
    def decide(kind: PropositionKind, phase: Phase, result: RoundResult | None) -> object:
        totals = frozenset({7}) if kind is PropositionKind.NEXT_TOTAL else frozenset()
        return _decide(Proposition(kind, totals), phase, result, 7, result is not None)

    assert decide(PropositionKind.NEXT_TOTAL, Phase.CHANCE, None) is Verdict.YES
    assert decide(PropositionKind.CASTER_WINS, Phase.CHANCE, RoundResult.MAIN) is Verdict.NO
    assert decide(PropositionKind.CASTER_WINS, Phase.CHANCE, RoundResult.ABANDONED) is (
        Verdict.VOID
    )
    assert decide(PropositionKind.NICK_FIRST_THROW, Phase.AWAITING_MAIN, None) is None
    assert decide(PropositionKind.NICK_FIRST_THROW, Phase.AWAITING_MAIN, RoundResult.NO_MAIN) is (
        Verdict.VOID
    )
    assert decide(PropositionKind.CHANCE_BEFORE_MAIN, Phase.FIRST_THROW, RoundResult.OUT) is (
        Verdict.VOID
    )


def test_a_table_opened_under_the_first_caps_keeps_them(table: Callable[..., Table]) -> None:
    """Limits.caps 1, a table opened before players had caps of their own: one player
    may hold more than MAX_BETS_PER_PLAYER, and fill the players' share, as then."""
    t = table(players=("ann", "bob", "cat"), limits=Limits(caps=1))
    for _ in range(PLAYERS_SHARE + 1):
        t.bet(engine.offer_side_bet, "cat", next_total(7), True, 1, 1)
    assert sum("cat" in b.parties for b in t.state.bets.values()) == PLAYERS_SHARE + 1
