"""The referee re-runs every command a stream records and holds what it derives to the
engine: clean streams pass, and each kind of tampering fails at the version where the
file first differs, saying what differs in the game's words."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine import events as ev
from engine.errors import Disagreement
from engine.fold import INITIAL, fold
from engine.referee import Referee
from engine.rulesets import BUILTIN
from engine.state import SETTER, TableState
from tests.engine.strategies import PLAYING, RULE_SETS, History, histories
from tests.engine.streamkit import Game, long_game
from tests.engine.tablekit import next_total

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PLACED = (ev.CasterStaked, ev.StakeLaid, ev.OddsLaid, ev.SideBetOffered)


def referee(events: list[ev.Event], state: TableState = INITIAL) -> Referee:
    r = Referee(state)
    for e in events:
        r.check(e)
    r.finish()
    return r


def disagreement(events: list[ev.Event], state: TableState = INITIAL) -> Disagreement:
    with pytest.raises(Disagreement) as info:
        referee(events, state)
    return info.value


def renumbered(events: list[ev.Event]) -> list[ev.Event]:
    """Versions 1, 2, 3, ... again, as a forger who re-hashes the stream would leave it."""
    return [dataclasses.replace(e, version=i) for i, e in enumerate(events, start=1)]


def odds_round() -> Game:
    """ann casts under english rules: stakes, a side bet on 8, the chance 8, odds on
    it, then the main 7: the caster loses and every bet is settled."""
    g = Game()
    g.do(engine.call_main, 7)
    g.do(engine.stake, 60)
    g.do(engine.lay, "bob", 60)
    g.do(engine.lay, "cat", 30)
    g.do(engine.cover, 1000)
    (offer,) = g.do(engine.offer_side_bet, "cat", next_total(8), True, 10, 50)
    g.do(engine.accept_side_bet, offer.bet_id, "bob")  # type: ignore[union-attr]
    g.do(engine.throw, 4, 4)  # chance 8: cat's side bet on 8 wins
    g.do(engine.lay_odds, "ann", "chance", 60)
    g.do(engine.throw, 3, 4)  # the main: the caster loses
    return g


# -- clean streams pass ------------------------------------------------------------------


def test_a_clean_round_passes_and_is_counted() -> None:
    g = odds_round()
    r = referee(g.events)
    assert r.state == g.state
    assert r.rounds == 1
    assert r.bets == 5  # the caster's stake, two laid, a side bet offered, the odds
    assert r.bets == sum(isinstance(e, PLACED) for e in g.events)


@pytest.mark.parametrize("name", sorted(RULE_SETS))
@settings(SETTINGS, max_examples=15)
@given(data=st.data())
def test_a_clean_stream_of_each_rule_set_passes(name: str, data: st.DataObject) -> None:
    check_clean(data.draw(histories(rule_names=(name,), max_steps=200, actions=PLAYING)))


@SETTINGS
@given(histories())
def test_random_valid_games_pass(h: History) -> None:
    check_clean(h)


def check_clean(h: History) -> None:
    r = referee(h.events)
    assert r.state == h.state
    assert r.rounds == h.state.wins + h.state.losses + h.state.abandoned
    assert r.bets == sum(isinstance(e, PLACED) for e in h.events)


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_a_long_game_of_each_builtin_rule_set_passes(name: str) -> None:
    g = long_game(name, random.Random(name), rounds=60)
    r = referee(g.events)
    assert r.state == g.state
    assert r.rounds >= 60


def test_the_referee_starts_from_a_snapshot() -> None:
    g = odds_round()
    k = g.at(ev.DiceThrown)  # the state before the first throw, as a partial export has it
    r = referee(g.events[k:], fold(g.events[:k]))
    assert r.state == g.state
    assert r.rounds == 1


def test_every_void_reason_passes() -> None:
    """Each reason a group can start with maps to the command that derives it."""
    g = Game("club")
    g.do(engine.throw, 3, 4)  # rolled main 7
    (laid,) = g.do(engine.lay, "bob", 60)
    g.do(engine.refuse, laid.bet_id)  # type: ignore[union-attr]  # refused
    (offer,) = g.do(engine.offer_side_bet, "bob", next_total(4), True, 10, 10)
    g.do(engine.withdraw_side_bet, offer.bet_id, "bob")  # type: ignore[union-attr]  # withdrawn
    g.do(engine.offer_side_bet, "ann", next_total(4), True, 10, 10, "cat")
    g.do(engine.leave, "cat")  # offeree-left
    g.do(engine.throw, 3, 4)  # nick: ann wins and may pass
    g.do(engine.stake, 10)
    g.do(engine.pass_dice)  # dice-passed
    g.do(engine.stake, 10)
    g.do(engine.leave, "bob")  # caster-left
    g.do(engine.stake, 10)
    g.do(engine.close)  # table-closed
    reasons = {e.reason for e in g.events if isinstance(e, ev.BetVoided)}
    assert reasons == {
        "refused",
        "withdrawn",
        "offeree-left",
        "dice-passed",
        "caster-left",
        "table-closed",
    }
    assert referee(g.events).state == g.state

    h = Game("hard-core")
    h.do(engine.throw, 3, 4)
    h.do(engine.stake, 10)
    h.do(engine.lay, "bob", 60)
    forfeit = h.do(engine.cover, 59)
    assert [type(e).__name__ for e in forfeit] == [
        "BetVoided",
        "BetVoided",
        "CasterForfeited",
        "DicePassed",
    ]
    r = referee(h.events)
    assert r.state == h.state and r.rounds == 1


# -- tampering fails at the right version, in words -----------------------------------


def test_a_changed_die_rederives_different_settlements() -> None:
    g = odds_round()
    k = g.at(ev.DiceThrown, die1=3, die2=4)
    events = list(g.events)
    events[k] = ev.DiceThrown(events[k].version, 4, 4)  # the chance instead of the main
    d = disagreement(events)
    assert d.version == events[k + 1].version
    assert d.reason == (
        "BetSettled b10 pays the setter 120, but the throw 4+4 at version 20 under english "
        "rules decides b10 for player ann: ann is paid 120"
    )


def test_a_die_that_decides_nothing_leaves_the_settlements_without_a_throw() -> None:
    g = odds_round()
    k = g.at(ev.DiceThrown, die1=3, die2=4)
    events = list(g.events)
    events[k] = ev.DiceThrown(events[k].version, 2, 4)
    d = disagreement(events)
    assert d.version == events[k + 1].version
    assert d.reason == (
        "BetSettled b10 pays the setter 120, but the throw 2+4 at version 20 under english "
        "rules decides no bet, and no command since decides b10"
    )


def test_a_changed_winner() -> None:
    g = odds_round()
    k = g.at(ev.BetSettled, bet_id="b11")
    events = list(g.events)
    events[k] = dataclasses.replace(
        events[k],
        winner="ann",
        transfers=(ev.Transfer("escrow:b11", "ann", 120),),
    )
    d = disagreement(events)
    assert d.version == 22
    assert d.reason == (
        "BetSettled b11 pays player ann 120, but the throw 3+4 at version 20 under english "
        "rules decides b11 for player bob: bob is paid 120"
    )


def test_a_changed_amount_in_the_transfers() -> None:
    g = odds_round()
    k = g.at(ev.BetSettled, bet_id="b19")
    events = list(g.events)
    events[k] = dataclasses.replace(events[k], transfers=(ev.Transfer("escrow:b19", SETTER, 130),))
    d = disagreement(events)
    assert d.version == 24
    assert d.reason == (
        "BetSettled b19 pays the setter 130, but the throw 3+4 at version 20 under english "
        "rules decides b19 for the setter: setter is paid 132"
    )


def test_a_missing_settlement() -> None:
    g = odds_round()
    k = g.at(ev.BetSettled, bet_id="b11")
    d = disagreement(renumbered(g.events[:k] + g.events[k + 1 :]))
    assert d.version == 22
    assert d.reason.startswith(
        "the file has BetSettled b12 pays player cat 60 where the throw 3+4 at version 20 "
        "under english rules closes b11 next (it decides bets b10, b11, b12, b19, in that "
        "order)"
    )


def test_a_missing_last_settlement_before_the_next_command() -> None:
    g = odds_round()
    g.do(engine.call_main, 6)
    k = g.at(ev.BetSettled, bet_id="b19")
    d = disagreement(renumbered(g.events[:k] + g.events[k + 1 :]))
    assert d.version == 24
    assert d.reason == (
        "the throw 3+4 at version 20 under english rules decides bets b10, b11, b12, b19 but "
        "the file closes only b10, b11, b12: BetSettled b19 pays the setter 132 is missing, "
        "MainCalled 6 is in its place"
    )


def test_an_extra_settlement() -> None:
    g = odds_round()
    k = g.at(ev.DiceThrown, die1=4, die2=4)
    events = list(g.events)
    extra = ev.BetSettled(0, "b10", "ann", (ev.Transfer("escrow:b10", "ann", 120),), Fraction(0))
    events.insert(k + 2, extra)  # after the side bet's settlement
    d = disagreement(renumbered(events))
    assert d.version == 19
    assert d.reason == (
        "BetSettled b10 pays player ann 120, but the throw 4+4 at version 17 under english "
        "rules decides only b15, and no command since decides b10"
    )


def test_a_changed_odds_payout() -> None:
    g = odds_round()
    k = g.at(ev.OddsLaid)
    events = list(g.events)
    events[k] = dataclasses.replace(events[k], payout=73)
    d = disagreement(events)
    assert d.version == 19
    assert d.reason.startswith(
        "OddsLaid b19: payout 73 with breakage 0, the rules give payout 72 with breakage 0"
    )


def test_a_changed_breakage_under_round_down() -> None:
    g = Game("english-round-down")
    g.do(engine.call_main, 7)
    g.do(engine.stake, 60)
    g.do(engine.throw, 4, 4)  # chance 8: odds of 6/5 on the chance
    (odds,) = g.do(engine.lay_odds, "ann", "chance", 7)
    assert (odds.payout, odds.breakage) == (8, Fraction(2, 5))  # type: ignore[union-attr]
    events = list(g.events)
    events[-1] = dataclasses.replace(events[-1], payout=9, breakage=Fraction(-3, 5))
    d = disagreement(events)
    assert d.version == events[-1].version
    assert d.reason == (
        "OddsLaid b12: payout 9 with breakage -3/5, the rules give payout 8 with breakage "
        "2/5 (ann's odds of 7 on the chance at version 12 under english-round-down rules "
        "(main 7, chance 8))"
    )


def test_swapped_settlements() -> None:
    g = odds_round()
    k = g.at(ev.BetSettled, bet_id="b10")
    events = list(g.events)
    events[k], events[k + 1] = events[k + 1], events[k]
    d = disagreement(renumbered(events))
    assert d.version == 21
    assert "where the throw 3+4 at version 20 under english rules closes b10 next" in d.reason


def test_swapped_events_keeping_their_versions() -> None:
    g = odds_round()
    k = g.at(ev.StakeLaid, bettor="bob")
    events = list(g.events)
    events[k], events[k + 1] = events[k + 1], events[k]
    d = disagreement(events)
    assert d.version == 12
    assert d.reason == (
        "StakeLaid has version 12, but the table's next event is version 11: the stream "
        "skips or repeats an event"
    )


def test_a_wrong_bet_id() -> None:
    g = odds_round()
    k = g.at(ev.StakeLaid, bettor="bob")
    events = list(g.events)
    events[k] = dataclasses.replace(events[k], bet_id="b99")
    d = disagreement(events)
    assert d.version == 11
    assert d.reason == (
        "StakeLaid b99: bob lays 60, but the bet bob's stake of 60 laid at version 11 places "
        "is b11: a bet's id comes from the version of the event that places it"
    )


def test_a_command_the_engine_refuses() -> None:
    g = odds_round()
    k = g.at(ev.MainCalled)
    events = list(g.events)
    events.insert(k + 1, ev.MainCalled(0, 6))  # a second main for the same round
    d = disagreement(renumbered(events))
    assert d.version == 10
    assert d.reason == (
        "the engine refuses the main called (6) at version 10: the main is already set at 7 "
        "(rule wrong-phase)"
    )


def test_a_forfeit_where_the_rules_let_the_caster_refuse() -> None:
    g = Game("club")
    g.do(engine.throw, 3, 4)
    (laid,) = g.do(engine.lay, "bob", 60)
    forged = [
        ev.BetVoided(0, laid.bet_id, "forfeit", (ev.Transfer(f"escrow:{laid.bet_id}", "bob", 60),)),  # type: ignore[union-attr]
        ev.CasterForfeited(0, "ann"),
    ]
    d = disagreement(renumbered(g.events + forged))
    assert d.version == len(g.events) + 1
    assert "under club rules a caster who cannot cover refuses stakes" in d.reason


def test_a_forfeit_with_nothing_pending() -> None:
    g = Game("hard-core")
    g.do(engine.throw, 3, 4)
    d = disagreement(renumbered([*g.events, ev.CasterForfeited(0, "ann")]))
    assert "no stake laid against the caster is waiting to be covered" in d.reason


def test_a_hard_core_cover_that_leaves_a_stake_out() -> None:
    g = Game("hard-core")
    g.do(engine.throw, 3, 4)
    g.do(engine.lay, "bob", 60)
    g.do(engine.lay, "cat", 30)
    g.do(engine.cover, 90)
    g.do(engine.throw, 3, 4)
    k = g.at(ev.StakeCovered, bet_id="b11")
    d = disagreement(renumbered(g.events[:k] + g.events[k + 1 :]))
    assert d.version == k + 1
    assert d.reason == (
        "the caster covering the stakes laid at version 12 under hard-core rules covers every "
        "pending stake (b10, b11) under hard-core play, in that order: the engine derives "
        "StakeCovered b11: ann covers 30, the file has DiceThrown 3+4"
    )


def test_a_stream_cut_inside_a_command() -> None:
    g = odds_round()
    cut = g.at(ev.BetSettled, bet_id="b12")
    r = Referee()
    for e in g.events[:cut]:
        r.check(e)
    with pytest.raises(Disagreement) as info:
        r.finish()
    assert info.value.version == 23
    assert info.value.reason == (
        "the stream ends inside the throw 3+4 at version 20 under english rules: it also "
        "derives BetSettled b12 pays player cat 60 and 1 event more (it decides bets b10, "
        "b11, b12, b19; the file closes only b10, b11)"
    )


def test_an_event_only_a_command_derives_cannot_start_one() -> None:
    g = odds_round()
    d = disagreement(renumbered([*g.events, ev.CasterChosen(0, "bob")]))
    assert d.version == len(g.events) + 1
    assert d.reason == (
        "CasterChosen bob is derived by no command here: the events of the throw 3+4 at "
        "version 20 under english rules ended before it"
    )


@SETTINGS
@given(histories(min_steps=20))
def test_changing_any_settlement_fails_at_that_settlement(h: History) -> None:
    """Paying any settlement to the other party, or one unit more, is caught there."""
    settled = [i for i, e in enumerate(h.events) if isinstance(e, ev.BetSettled)]
    for i in settled[:5]:
        e = h.events[i]
        assert isinstance(e, ev.BetSettled)
        t = e.transfers[0]
        more = dataclasses.replace(e, transfers=(dataclasses.replace(t, amount=t.amount + 1),))
        d = disagreement([*h.events[:i], more, *h.events[i + 1 :]])
        assert d.version == e.version
        assert d.reason.startswith(f"BetSettled {e.bet_id} pays")


def test_counts_by_type_are_what_the_file_holds() -> None:
    g = long_game("english", random.Random(3), rounds=30)
    r = referee(g.events)
    kinds = Counter(type(e).__name__ for e in g.events)
    assert r.bets == sum(kinds[k.__name__] for k in PLACED)
