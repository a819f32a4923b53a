"""Example-driven tests of the commands: the table, the round, stakes, passing the dice,
void throws, leaving, closing and replay (bets on odds and side bets: test_bets.py).

Every refusal is checked to raise its rule, return nothing and leave the state as its
events say; every table is checked on teardown to keep its books (see tablekit.py).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest

import engine
from engine import events as ev
from engine.errors import ReplayError, Rule, RuleBroken
from engine.events import Limits
from engine.fold import fold
from engine.money import ESCROW
from engine.rules import DicePass, MainMethod
from engine.rulesets import BUILTIN
from engine.state import SETTER, Phase, RoundResult, TableState
from engine.table import MAX_SEATS
from tests.engine.tablekit import (
    CASTER_WINS,
    Table,
    kinds,
    next_total,
)

# -- the table: opening, seating, the first caster ----------------------------------


def test_open_and_seat_refusals(table: Callable[..., Table]) -> None:
    t = table(players=("ann",), choose=False)
    t.refused(Rule.WRONG_PHASE, lambda s: engine.open_table(BUILTIN["english"], state=s))
    t.refused(Rule.ALREADY_SEATED, engine.seat, "ann")
    t.refused(Rule.SETTER_CANNOT_SIT, engine.seat, SETTER)
    for bad in ("", " bob", "escrow:b1", "x" * 65):
        t.refused(Rule.NOT_SEATED, engine.seat, bad)
    for limits in (Limits(min_stake=0), Limits(min_stake=10, max_stake=5), Limits(max_exposure=-1)):
        with pytest.raises(RuleBroken) as info:
            engine.open_table(BUILTIN["english"], limits)
        assert info.value.rule is Rule.INVALID_STAKE
    t.refused(Rule.WRONG_PHASE, engine.call_main, 7)
    t.refused(Rule.WRONG_PHASE, engine.throw, 3, 4)


def test_first_caster_lowest_goes_first_ties_cast_again(table: Callable[..., Table]) -> None:
    t = table(choose=False)
    assert kinds(t.do(engine.cast_for_caster, "ann", 3)) == ["DieCastForCaster"]
    t.refused(Rule.NOT_YOUR_CAST, engine.cast_for_caster, "ann", 1)
    t.refused(Rule.NOT_SEATED, engine.cast_for_caster, "dan", 1)
    t.refused(Rule.INVALID_DIE, engine.cast_for_caster, "bob", 7)
    t.refused(Rule.INVALID_DIE, engine.cast_for_caster, "bob", 0)
    t.do(engine.cast_for_caster, "bob", 3)
    assert kinds(t.do(engine.cast_for_caster, "cat", 5)) == ["DieCastForCaster"]
    assert t.state.caster is None and t.state.phase is Phase.SEATING
    # ann and bob tied for lowest: only they cast again.
    detail = t.refused(Rule.NOT_YOUR_CAST, engine.cast_for_caster, "cat", 1)
    assert detail.endswith("ann, bob")
    t.do(engine.cast_for_caster, "ann", 4)
    t.refused(Rule.NOT_YOUR_CAST, engine.cast_for_caster, "ann", 1)
    out = t.do(engine.cast_for_caster, "bob", 2)
    assert out[-1] == ev.CasterChosen(version=t.state.version, player="bob")
    assert (t.state.caster, t.state.phase, t.state.round) == ("bob", Phase.AWAITING_MAIN, 1)
    t.refused(Rule.WRONG_PHASE, engine.cast_for_caster, "cat", 1)


def test_leaving_the_cast_off_can_decide_it(table: Callable[..., Table]) -> None:
    t = table(choose=False)
    t.do(engine.cast_for_caster, "ann", 2)
    t.do(engine.cast_for_caster, "bob", 4)
    assert kinds(t.do(engine.leave, "cat")) == ["PlayerLeft", "CasterChosen"]
    assert t.state.caster == "ann" and t.state.seats == ("ann", "bob")


# -- the round ----------------------------------------------------------------------


def test_call_main_and_throw_refusals(table: Callable[..., Table]) -> None:
    t = table()
    t.refused(Rule.THROW_BEFORE_MAIN, engine.throw, 3, 4)
    t.refused(Rule.THROW_BEFORE_MAIN, engine.void_throw, "cocked", 0)
    for bad in (4, 10, "7", 7.0):
        t.refused(Rule.INVALID_MAIN, engine.call_main, bad)
    assert t.do(engine.call_main, 7) == [ev.MainCalled(version=t.state.version, main=7)]
    t.refused(Rule.WRONG_PHASE, engine.call_main, 6)
    for d1, d2 in ((7, 1), (0, 3), (3, True)):
        t.refused(Rule.INVALID_DIE, engine.throw, d1, d2)
    t.refused(Rule.ODDS_BEFORE_CHANCE, engine.lay_odds, "ann", "chance", 10)
    t.refused(Rule.PASS_NOT_ALLOWED, engine.pass_dice)


ROUNDS = [  # main, throws, result: the caster stakes 250; bob lays 300; cat lays 120
    pytest.param(7, [(5, 6)], RoundResult.NICK, id="nick-11-on-7"),
    pytest.param(8, [(6, 6)], RoundResult.NICK, id="nick-12-on-8"),
    pytest.param(7, [(6, 6)], RoundResult.OUT, id="out-12-on-7"),
    pytest.param(6, [(5, 6)], RoundResult.OUT, id="out-11-on-6"),
    pytest.param(5, [(4, 4), (3, 4), (6, 2)], RoundResult.CHANCE, id="chance-8-then-8"),
    pytest.param(5, [(4, 4), (6, 6), (1, 4)], RoundResult.MAIN, id="chance-8-then-main"),
]


@pytest.mark.parametrize(("main", "throws", "result"), ROUNDS)
def test_round_outcomes_settle_to_the_penny(
    table: Callable[..., Table], main: int, throws: list[tuple[int, int]], result: RoundResult
) -> None:
    t = table()
    t.bet(engine.stake, 250)
    t.bet(engine.lay, "bob", 300)
    t.bet(engine.lay, "cat", 120)
    assert kinds(t.do(engine.cover, 1000)) == ["StakeCovered", "StakeCovered"]
    t.do(engine.call_main, main)
    for d1, d2 in throws[:-1]:
        assert kinds(t.do(engine.throw, d1, d2)) == ["DiceThrown"]
    out = t.do(engine.throw, *throws[-1])
    won = result in (RoundResult.NICK, RoundResult.CHANCE)
    assert kinds(out) == ["DiceThrown"] + ["BetSettled"] * 3
    assert {e.winner for e in out[1:]} == ({"ann"} if won else {"setter", "bob", "cat"})
    sign = 1 if won else -1
    assert t.players_net() == {
        "ann": sign * 670,
        SETTER: -sign * 250,
        "bob": -sign * 300,
        "cat": -sign * 120,
    }
    assert t.state.last_result is result
    assert (t.state.wins, t.state.losses, t.state.round) == (int(won), int(not won), 2)
    assert t.state.phase is Phase.AWAITING_MAIN and t.state.caster == "ann"
    assert not t.state.bets


def test_stake_refusals_and_limits(table: Callable[..., Table]) -> None:
    t = table(limits=Limits(min_stake=10, max_stake=1000))
    t.refused(Rule.STAKE_BELOW_MINIMUM, engine.stake, 5)
    t.refused(Rule.STAKE_ABOVE_MAXIMUM, engine.lay, "bob", 1001)
    for bad in (0, -5, "10", True, 10.0):
        t.refused(Rule.INVALID_STAKE, engine.lay, "bob", bad)
    t.refused(Rule.CASTER_CANNOT_LAY, engine.lay, "ann", 100)
    t.refused(Rule.NOT_SEATED, engine.lay, "dan", 100)
    t.refused(Rule.STAKE_BELOW_MINIMUM, engine.offer_side_bet, "bob", CASTER_WINS, True, 10, 9)
    t.bet(engine.stake, 1000)
    t.refused(Rule.CASTER_ALREADY_STAKED, engine.stake, 10)
    t.refused(Rule.INVALID_STAKE, engine.cover, -1)
    t.refused(Rule.UNKNOWN_BET, engine.cover, 100, ["b99"])
    t.refused(Rule.UNKNOWN_BET, engine.refuse, "b99")
    t.do(engine.call_main, 9)
    t.do(engine.throw, 2, 2)  # chance 4
    t.refused(Rule.BETTING_CLOSED, engine.lay, "bob", 100)
    t.refused(Rule.BETTING_CLOSED, engine.stake, 100)
    t.do(engine.throw, 1, 3)
    assert t.players_net() == {"ann": 1000, SETTER: -1000}


def test_caster_refuses_what_they_cannot_cover(table: Callable[..., Table]) -> None:
    t = table()
    big = t.bet(engine.lay, "bob", 500)
    small = t.bet(engine.lay, "cat", 200)
    t.do(engine.call_main, 6)
    detail = t.refused(Rule.STAKES_PENDING, engine.throw, 3, 3)
    assert big in detail and small in detail
    detail = t.refused(Rule.STAKE_NOT_COVERED, engine.cover, 600)
    assert "600" in detail and "700" in detail
    assert kinds(t.do(engine.cover, 600, [big])) == ["StakeCovered"]
    t.refused(Rule.UNKNOWN_BET, engine.refuse, big)
    (voided,) = t.do(engine.refuse, small)
    assert voided == ev.BetVoided(
        voided.version, small, "refused", (ev.Transfer(ESCROW + small, "cat", 200),)
    )
    t.do(engine.throw, 3, 3)
    assert t.players_net() == {"ann": 500, "bob": -500}


@pytest.mark.parametrize("funds", [100, 1000])
def test_cover_naming_a_stake_twice_covers_it_once(table: Callable[..., Table], funds: int) -> None:
    # A stake named twice is still one stake: the caster matches it once, and what the
    # caster puts into its escrow is paid out when it settles (checked on teardown).
    t = table()
    laid = t.bet(engine.lay, "bob", 100)
    assert kinds(t.do(engine.cover, funds, [laid, laid])) == ["StakeCovered"]
    t.do(engine.call_main, 7)
    t.do(engine.throw, 5, 6)
    assert t.players_net() == {"ann": 100, "bob": -100}


def test_hard_core_caster_forfeits(table: Callable[..., Table]) -> None:
    t = table("hard-core")
    t.do(engine.throw, 3, 3)  # the first roll is the main: 6
    assert t.state.main == 6
    own = t.bet(engine.stake, 50)
    t.bet(engine.lay, "bob", 500)
    laid = t.bet(engine.lay, "cat", 200)
    t.refused(Rule.REFUSAL_NOT_ALLOWED, engine.refuse, laid)
    out = t.do(engine.cover, 600, [laid])
    assert kinds(out) == ["BetVoided"] * 3 + ["CasterForfeited", "DicePassed"]
    assert {e.reason for e in out[:3]} == {"forfeit"} and out[0].bet_id == own
    assert out[3:] == [
        ev.CasterForfeited(out[3].version, "ann"),
        ev.DicePassed(out[4].version, "bob", "forfeit"),
    ]
    assert (t.state.caster, t.state.phase, t.state.main) == ("bob", Phase.AWAITING_MAIN, None)
    assert t.state.abandoned == 1 and not t.state.bets and not t.players_net()


def test_hard_core_caster_who_can_cover_covers_everything(table: Callable[..., Table]) -> None:
    t = table("hard-core")
    first = t.bet(engine.lay, "bob", 500)
    t.bet(engine.lay, "cat", 200)
    assert kinds(t.do(engine.cover, 700, [first])) == ["StakeCovered", "StakeCovered"]
    t.do(engine.throw, 4, 4)  # main 8
    t.do(engine.throw, 6, 5)  # 11 throws out on 8; a loss passes the dice
    assert t.players_net() == {"ann": -700, "bob": 500, "cat": 200}
    assert t.state.caster == "bob"


# -- void throws ----------------------------------------------------------------------


def test_void_throws_recast_one_die_or_both(table: Callable[..., Table]) -> None:
    t = table()
    t.do(engine.call_main, 7)
    for reason, off, standing in (("dropped", 1, 4), ("cocked", 3, None), ("wild", 0, 4)):
        t.refused(Rule.INVALID_VOID, engine.void_throw, reason, off, standing)
    t.refused(Rule.INVALID_DIE, engine.void_throw, "cocked", 1, 7)
    (voided,) = t.do(engine.void_throw, "cocked", 1, 4)
    assert (voided.reason, voided.off, voided.standing) == ("cocked", 1, 4)
    assert t.state.standing == (1, 4) and t.state.throws == 0
    t.refused(Rule.RECAST_MUST_KEEP_STANDING_DIE, engine.throw, 2, 5)
    # Die 2 stood, so it cannot have gone off (it was not thrown).
    t.refused(Rule.STANDING_DIE_NOT_OFF, engine.void_throw, "wild", 2, 6)
    t.refused(Rule.RECAST_MUST_KEEP_STANDING_DIE, engine.throw, 5, 6)
    t.do(engine.void_throw, "wild", 1)  # one die off, but both are recast
    assert t.state.standing is None
    t.do(engine.throw, 3, 4)
    assert t.state.last_result is RoundResult.NICK and t.state.standing is None


def test_standing_die_is_kept(table: Callable[..., Table]) -> None:
    t = table()
    t.do(engine.call_main, 5)
    t.do(engine.void_throw, "cocked", 2, 2)
    t.do(engine.throw, 2, 3)  # die 1 stood at 2; die 2 recast to 3: a nick
    assert t.state.last_result is RoundResult.NICK


def test_a_standing_die_keeps_its_value_until_both_are_recast(table: Callable[..., Table]) -> None:
    """Once a die stands, only the other die is cast: a void that recasts it alone keeps
    the same die standing at the same value, and naming the standing die (or both) as
    off is refused, since it was not thrown. Recasting both together ends the standing."""
    t = table()
    t.do(engine.call_main, 7)
    t.do(engine.void_throw, "cocked", 2, 5)  # die 1 stands at 5
    detail = t.refused(Rule.RECAST_MUST_KEEP_STANDING_DIE, engine.void_throw, "wild", 2, 6)
    assert "die 1 stands at 5" in detail
    for off, standing in ((1, 5), (1, 2), (1, None), (0, None)):
        detail = t.refused(Rule.STANDING_DIE_NOT_OFF, engine.void_throw, "wild", off, standing)
        assert "die 1 stands at 5" in detail
    t.do(engine.void_throw, "wild", 2, 5)  # die 2 off again; die 1 still stands at 5
    assert t.state.standing == (2, 5)
    t.refused(Rule.RECAST_MUST_KEEP_STANDING_DIE, engine.throw, 6, 1)
    t.do(engine.void_throw, "cocked", 2)  # die 2 off again, and both are recast
    assert t.state.standing is None
    t.do(engine.void_throw, "wild", 1, 3)  # a new standing: die 2 at 3
    assert t.state.standing == (1, 3)
    t.do(engine.throw, 4, 3)  # 7 nicks a main of 7
    assert t.state.last_result is RoundResult.NICK and t.state.standing is None


# -- passing the dice ------------------------------------------------------------------


def test_english_passes_after_three_consecutive_losses(table: Callable[..., Table]) -> None:
    t = table()
    for _ in range(2):
        t.do(engine.call_main, 7)
        assert kinds(t.do(engine.throw, 1, 1)) == ["DiceThrown"]
    t.do(engine.call_main, 7)
    t.do(engine.throw, 3, 4)  # a win resets the count
    assert t.state.consecutive_losses == 0
    t.refused(Rule.PASS_NOT_ALLOWED, engine.pass_dice)
    for _ in range(2):
        t.do(engine.call_main, 5)
        t.do(engine.throw, 6, 6)
    t.do(engine.call_main, 9)
    t.do(engine.throw, 2, 2)
    out = t.do(engine.throw, 4, 5)  # the main before the chance: third loss in a row
    assert out[-1] == ev.DicePassed(out[-1].version, "bob", "3-losses")
    # The streak starts afresh with the new caster; the last result is the table's.
    assert (t.state.caster, t.state.consecutive_losses) == ("bob", 0)
    assert t.state.last_result is RoundResult.MAIN
    assert (t.state.wins, t.state.losses) == (1, 5)


def test_history_any_loss_passes_and_a_winner_may_pass(table: Callable[..., Table]) -> None:
    t = table("history")
    t.refused(Rule.MAIN_IS_ROLLED, engine.call_main, 6)
    t.do(engine.throw, 3, 3)  # the first roll is the main: 6
    out = t.do(engine.throw, 3, 4)  # the history page's table: 7 loses on a main of 6
    assert out[-1] == ev.DicePassed(out[-1].version, "bob", "loss")
    t.do(engine.throw, 2, 3)
    t.refused(Rule.PASS_NOT_ALLOWED, engine.pass_dice)  # mid-round
    t.do(engine.throw, 1, 4)  # nick
    staked = t.bet(engine.stake, 10)
    out = t.do(engine.pass_dice)
    assert kinds(out) == ["BetVoided", "DicePassed"] and out[0].bet_id == staked
    assert out[0].reason == "dice-passed"
    assert out[1] == ev.DicePassed(out[1].version, "cat", "choice")
    t.refused(Rule.PASS_NOT_ALLOWED, engine.pass_dice)  # cat has not won yet


MUST_PASS = [  # rule, consecutive losses, consecutive wins, why the dice pass (or None)
    (DicePass(after_losses=3), 2, 0, None),
    (DicePass(after_losses=3), 3, 0, "3-losses"),
    (DicePass(after_losses=1), 1, 0, "loss"),
    (DicePass(after_losses=1, after_wins=3), 0, 2, None),
    (DicePass(after_losses=1, after_wins=3), 0, 3, "3-wins"),
    (DicePass(after_losses=None, after_wins=1), 0, 1, "win"),
    (DicePass(after_losses=None), 9, 0, None),
]


@pytest.mark.parametrize(("rule", "losses", "wins", "reason"), MUST_PASS)
def test_must_pass(rule: DicePass, losses: int, wins: int, reason: str | None) -> None:
    assert engine.must_pass(rule, losses, wins) == reason


@pytest.mark.parametrize("dice", [(6, 6), (1, 1), (2, 2), (5, 5), (6, 5)])
def test_history_first_roll_outside_5_to_9_loses(
    table: Callable[..., Table], dice: tuple[int, int]
) -> None:
    t = table("history")
    bet = t.bet(engine.stake, 100)
    out = t.do(engine.throw, *dice)
    assert kinds(out) == ["DiceThrown", "BetSettled", "DicePassed"]
    assert out[1].bet_id == bet and out[1].winner == SETTER
    assert t.state.last_result is RoundResult.NO_MAIN
    assert (t.state.caster, t.state.losses, t.state.main) == ("bob", 1, None)
    assert t.players_net() == {"ann": -100, SETTER: 100}


def test_three_wins_passes_after_three_wins_and_any_loss(table: Callable[..., Table]) -> None:
    t = table("three-wins")
    for _ in range(2):
        t.do(engine.call_main, 7)
        assert kinds(t.do(engine.throw, 5, 2)) == ["DiceThrown"]
    t.do(engine.call_main, 7)
    out = t.do(engine.throw, 5, 2)
    assert out[-1] == ev.DicePassed(out[-1].version, "bob", "3-wins")
    t.refused(Rule.PASS_NOT_ALLOWED, engine.pass_dice)
    t.do(engine.call_main, 7)
    assert t.do(engine.throw, 1, 2)[-1] == ev.DicePassed(t.state.version, "cat", "loss")


@pytest.mark.parametrize("name", ["french", "club"])
def test_rolled_main_is_retossed_until_5_to_9(table: Callable[..., Table], name: str) -> None:
    t = table(name)
    t.refused(Rule.MAIN_IS_ROLLED, engine.call_main, 7)
    t.bet(engine.stake, 40)
    for dice in ((1, 1), (6, 6), (1, 3), (5, 5), (6, 5), (1, 2)):
        assert kinds(t.do(engine.throw, *dice)) == ["DiceThrown"]
        assert (t.state.main, t.state.phase, t.state.losses) == (None, Phase.AWAITING_MAIN, 0)
    t.do(engine.throw, 4, 4)
    assert (t.state.main, t.state.phase) == (8, Phase.FIRST_THROW)
    t.do(engine.throw, 6, 6)
    assert t.players_net() == {"ann": 40, SETTER: -40}


# -- leaving and closing -------------------------------------------------------------


def test_caster_leaving_voids_the_round_and_passes_the_dice(table: Callable[..., Table]) -> None:
    t = table()
    own = t.bet(engine.stake, 100)
    laid = t.bet(engine.lay, "bob", 200)
    t.do(engine.cover, 200)
    side = t.bet(engine.offer_side_bet, "cat", CASTER_WINS, False, 50, 50)
    t.do(engine.accept_side_bet, side, SETTER)
    t.do(engine.call_main, 6)
    t.do(engine.throw, 2, 2)
    total = t.bet(engine.offer_side_bet, "bob", next_total(7), True, 10, 20)
    t.do(engine.accept_side_bet, total, "cat")
    t.refused(Rule.HAS_OPEN_BETS, engine.leave, "cat")
    t.refused(Rule.NOT_SEATED, engine.leave, "dan")
    out = t.do(engine.leave, "ann")
    assert kinds(out) == ["BetVoided"] * 3 + ["PlayerLeft", "DicePassed"]
    assert {e.bet_id: e.reason for e in out[:3]} == dict.fromkeys((own, laid, side), "caster-left")
    assert out[-1] == ev.DicePassed(out[-1].version, "bob", "caster-left")
    assert (t.state.seats, t.state.caster, t.state.abandoned) == (("bob", "cat"), "bob", 1)
    assert (t.state.phase, t.state.main, t.state.chance) == (Phase.AWAITING_MAIN, None, None)
    assert list(t.state.bets) == [total]
    assert t.players_net() == {"bob": -10, "cat": -20}  # held in the next-total escrow
    t.refused(Rule.HAS_OPEN_BETS, engine.leave, "bob")  # the caster's next-total bet is open
    t.do(engine.call_main, 7)
    t.do(engine.throw, 3, 4)
    assert kinds(t.do(engine.leave, "cat")) == ["PlayerLeft"]
    assert t.players_net() == {"bob": 20, "cat": -20}


def _play_to(t: Table, phase: Phase) -> None:
    """Play the current round on to `phase`: the main called or thrown, then a chance."""
    if phase is Phase.AWAITING_MAIN:
        return
    if t.state.rules is not None and t.state.rules.main_method is MainMethod.CALLED:
        t.do(engine.call_main, 6)
    else:
        t.do(engine.throw, 3, 3)
    if phase is Phase.CHANCE:
        t.do(engine.throw, 2, 2)
    assert t.state.phase is phase


def _abandoned_from(before: TableState, after: TableState) -> None:
    """The round `before` was in ended as abandoned, and counted as such, whatever part
    of it had been played."""
    assert after.round == before.round + 1
    assert (after.abandoned, after.wins, after.losses) == (
        before.abandoned + 1,
        before.wins,
        before.losses,
    )
    assert after.last_result is RoundResult.ABANDONED
    assert (after.main, after.chance, after.throws, after.standing) == (None, None, 0, None)
    assert not [b for b in after.bets.values() if b.proposition.round_scoped]


ROUND_PHASES = [Phase.AWAITING_MAIN, Phase.FIRST_THROW, Phase.CHANCE]


@pytest.mark.parametrize("phase", ROUND_PHASES, ids=lambda p: p.value)
def test_a_caster_leaving_abandons_the_round_in_any_phase(
    table: Callable[..., Table], phase: Phase
) -> None:
    t = table()
    t.bet(engine.stake, 100)
    _play_to(t, phase)
    before = t.state
    assert kinds(t.do(engine.leave, "ann")) == ["BetVoided", "PlayerLeft", "DicePassed"]
    _abandoned_from(before, t.state)
    assert (t.state.caster, t.state.phase) == ("bob", Phase.AWAITING_MAIN)


@pytest.mark.parametrize("phase", ROUND_PHASES[:2], ids=lambda p: p.value)
def test_a_hard_core_forfeit_abandons_the_round_in_any_phase(
    table: Callable[..., Table], phase: Phase
) -> None:
    t = table("hard-core")
    _play_to(t, phase)
    t.bet(engine.lay, "bob", 500)
    before = t.state
    assert kinds(t.do(engine.cover, 100))[-2:] == ["CasterForfeited", "DicePassed"]
    _abandoned_from(before, t.state)
    assert (t.state.caster, t.state.phase) == ("bob", Phase.AWAITING_MAIN)


@pytest.mark.parametrize("phase", ROUND_PHASES, ids=lambda p: p.value)
def test_closing_abandons_the_round_in_any_phase(table: Callable[..., Table], phase: Phase) -> None:
    t = table()
    t.bet(engine.stake, 100)
    _play_to(t, phase)
    before = t.state
    t.do(engine.close)
    _abandoned_from(before, t.state)
    assert t.state.phase is Phase.CLOSED


def test_closing_before_the_first_caster_ends_no_round(table: Callable[..., Table]) -> None:
    t = table(choose=False)
    t.do(engine.close)
    assert (t.state.round, t.state.abandoned, t.state.last_result) == (0, 0, None)


def test_a_table_seats_at_most_max_seats(table: Callable[..., Table]) -> None:
    """The seats, and so the table's state and its cast-off, stay bounded."""
    players = tuple(f"p{i}" for i in range(1, MAX_SEATS + 1))
    t = table(players=players, choose=False)
    detail = t.refused(Rule.TABLE_FULL, engine.seat, "late")
    assert detail == f"the table seats at most {MAX_SEATS} players, and all are taken"
    t.refused(Rule.ALREADY_SEATED, engine.seat, "p1")  # the more particular refusal first
    t.do(engine.leave, "p7")
    t.do(engine.seat, "late")
    assert len(t.state.seats) == MAX_SEATS


def test_closing_an_emptied_table_ends_no_round(table: Callable[..., Table]) -> None:
    """Every caster left, so the dice went to nobody and the table is seating again:
    no round is in play, and closing it abandons nothing (QA, issue 9)."""
    t = table(players=("p1", "p2"), choose=False)
    t.do(engine.cast_for_caster, "p1", 1)
    t.do(engine.cast_for_caster, "p2", 3)
    t.do(engine.leave, "p1")
    t.do(engine.leave, "p2")
    before = t.state
    assert (before.phase, before.round, before.caster, before.abandoned) == (
        Phase.SEATING,
        3,
        None,
        2,
    )
    assert not before.in_play
    t.do(engine.close)
    assert (t.state.round, t.state.abandoned, t.state.last_result) == (
        3,
        2,
        RoundResult.ABANDONED,  # round 2's, as p2 left
    )
    assert t.state.phase is Phase.CLOSED


def test_a_leaving_caster_no_longer_holds_the_dice(table: Callable[..., Table]) -> None:
    """Between the caster's PlayerLeft and the DicePassed that follows it (the state a
    read model sees), the leaver holds no dice and no round is in play."""
    t = table(players=("p1", "p2"))
    out = engine.leave(t.state, "p1")
    assert kinds(out) == ["PlayerLeft", "DicePassed"]
    between = fold(out[:1], t.state)
    assert (between.caster, between.in_play) == (None, False)
    t.do(engine.leave, "p1")
    assert (t.state.caster, t.state.in_play) == ("p2", True)


def test_last_seat_caster_leaving_passes_round_to_first_seat(table: Callable[..., Table]) -> None:
    t = table(choose=False)
    for player, die in (("ann", 5), ("bob", 6), ("cat", 1)):
        t.do(engine.cast_for_caster, player, die)
    assert t.do(engine.leave, "cat")[-1] == ev.DicePassed(t.state.version, "ann", "caster-left")
    t.do(engine.leave, "bob")
    assert t.do(engine.leave, "ann")[-1] == ev.DicePassed(t.state.version, None, "caster-left")
    assert (t.state.phase, t.state.caster, t.state.seats) == (Phase.SEATING, None, ())


def test_close_voids_every_bet(table: Callable[..., Table]) -> None:
    t = table()
    bets = {t.bet(engine.stake, 10), t.bet(engine.lay, "bob", 30)}
    bets.add(t.bet(engine.offer_side_bet, "cat", next_total(4), True, 5, 6))
    out = t.do(engine.close)
    assert kinds(out) == ["BetVoided"] * 3 + ["TableClosed"]
    assert {e.bet_id for e in out[:3]} == bets and {e.reason for e in out[:3]} == {"table-closed"}
    assert t.state.phase is Phase.CLOSED and not t.state.bets and not t.players_net()
    for command, args in ((engine.seat, ("dan",)), (engine.throw, (1, 2)), (engine.close, ())):
        t.refused(Rule.TABLE_CLOSED, command, *args)
    t.refused(Rule.TABLE_CLOSED, engine.offer_side_bet, "bob", next_total(4), True, 5, 6)


# -- replay ------------------------------------------------------------------------------


def test_fold_refuses_a_broken_stream(table: Callable[..., Table]) -> None:
    t = table()
    t.bet(engine.stake, 10)
    events = list(t.events)
    with pytest.raises(ReplayError, match="skips or repeats"):
        fold(events[:2] + events[3:])
    with pytest.raises(ReplayError, match="skips or repeats"):
        fold(events[:3] + events[2:])
    with pytest.raises(ReplayError):
        fold([*events, ev.BetSettled(len(events) + 1, "b99", "ann", (), Fraction(0))])
    with pytest.raises(ReplayError):
        fold([events[0], ev.DiceThrown(2, 3, 4)])
    with pytest.raises(ReplayError, match="unknown event type"):
        fold([*events, object()])  # type: ignore[list-item]
    # Same events in, same state out, whether folded at once or in pieces.
    assert fold(events) == fold(events[5:], fold(events[:5])) == t.state
