"""The referee's quick checks (engine.quick) held to the commands they stand for: at
every command boundary of generated tables of every rule set, each quick check is
given the event the stream records there and that event changed (each field, by
value and by type; the version; another player), and says yes only where the command,
run on the frozen state, derives exactly that one event, which folds to the same
state. On the clean streams it says yes to the common commands, so that the referee's
quick path is the one taken (tests/engine/test_referee_fast.py holds the whole
referee, quick path and all, to the plain one)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine import events as ev
from engine.betting import MAX_OPEN_BETS, PLAYERS_SHARE
from engine.causes import COMMANDS
from engine.errors import Disagreement, HazardError
from engine.fold import Folding, fold
from engine.quick import QUICK
from engine.referee import Referee
from engine.serverdice import require_draw_next
from engine.state import SETTER, TableState
from tests.engine.serverkit import ServerGame
from tests.engine.strategies import ACTIONS, PLAYERS, RULE_SETS, histories

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def boundaries(events: tuple[ev.Event, ...]) -> Iterator[tuple[TableState, ev.Event]]:
    """Each state at a command boundary of `events`, with the event after it."""
    starts: list[TableState] = []
    referee = Referee(on_group=lambda due, before, after: starts.append(before))
    for e in events:
        if referee.at_boundary:
            yield referee.state, e
        referee.check(e)
    assert starts  # the stream was read, group by group


def variants(e: ev.Event) -> Iterator[ev.Event]:
    """`e` and `e` with one field changed: by value, and to a value of another type that
    Python takes as equal (True for 1, 1.0 for 1, a str subclass for a str)."""
    yield e
    for f in dataclasses.fields(e):
        value = getattr(e, f.name)
        if type(value) is int:
            for other in (value - 1, value + 1, value * 1000, 0, -value, float(value), value == 1):
                yield dataclasses.replace(e, **{f.name: other})
        elif type(value) is str:
            for other in (*PLAYERS, SETTER, value + "x", f"b{e.version}", _Str(value)):
                yield dataclasses.replace(e, **{f.name: other})
        elif type(value) is bool:
            for other in (not value, int(value)):
                yield dataclasses.replace(e, **{f.name: other})
        elif value is None:
            for other in (*PLAYERS, SETTER):
                yield dataclasses.replace(e, **{f.name: other})
        elif type(value) is ev.Proposition:
            for other in PROPOSITIONS:
                yield dataclasses.replace(e, **{f.name: other})


PROPOSITIONS = (
    ev.CASTER_WINS,
    ev.CHANCE_BEFORE_MAIN,
    ev.Proposition(ev.PropositionKind.NICK_FIRST_THROW),
    ev.Proposition(ev.PropositionKind.NEXT_TOTAL, frozenset({7, 11})),
    ev.Proposition(ev.PropositionKind.NEXT_TOTAL, frozenset(range(2, 13))),
    ev.Proposition(ev.PropositionKind.NEXT_TOTAL, frozenset({1, 7})),
    ev.Proposition(ev.PropositionKind.CASTER_WINS, frozenset({7})),
)
"""Propositions an offer may name: each kind, and next totals that are not one."""


class _Str(str):
    """A str that equals its value but is not one."""


def derived(state: TableState, e: ev.Event) -> list[ev.Event] | None:
    """What the command `e` records derives on `state` as the referee runs it (nothing
    but the throw while a client seed waits for it), or None if it refuses."""
    try:
        require_draw_next(state, e)
        return COMMANDS[e.__class__](state, e)
    except (HazardError, Disagreement, TypeError, ValueError, AssertionError):
        return None


def quick_says(state: TableState, e: ev.Event) -> TableState | None:
    """The state after `e` if its quick check lets it through on `state`, else None."""
    folding = Folding(state)
    if not folding.admit(e, QUICK[e.__class__]):
        assert folding.state is state  # a check that says no changes nothing
        return None
    return folding.state


def others(state: TableState) -> Iterator[ev.Event]:
    """Events of the quick kinds as the table's next, whatever the stream has there:
    each main, a stake by the caster and one laid by each player, a cover and a taking
    of every open bet by each player."""
    v = state.version + 1
    caster = state.caster or PLAYERS[0]
    for main in range(4, 11):
        yield ev.MainCalled(version=v, main=main)
    yield ev.CasterStaked(version=v, bet_id=f"b{v}", caster=caster, amount=10)
    for p in (*PLAYERS, SETTER):
        yield ev.StakeLaid(version=v, bet_id=f"b{v}", bettor=p, amount=10)
        for proposition in PROPOSITIONS:
            for to in (None, PLAYERS[1]):
                yield ev.SideBetOffered(
                    version=v,
                    bet_id=f"b{v}",
                    offerer=p,
                    proposition=proposition,
                    backs=True,
                    stake=10,
                    asks=20,
                    to=to,
                )
    for bet in state.bets.values():
        yield ev.StakeCovered(version=v, bet_id=bet.id, caster=caster, amount=bet.no_stake)
        amount = bet.yes_stake if bet.yes is None else bet.no_stake
        for p in (*PLAYERS, SETTER):
            yield ev.SideBetAccepted(version=v, bet_id=bet.id, acceptor=p, amount=amount)


def held_at(state: TableState, candidates: Iterator[ev.Event], recorded: ev.Event | None) -> int:
    """Each candidate's quick check on `state` held to its command; whether it let
    `recorded` (the stream's own event) through."""
    took = 0
    for e in candidates:
        after = quick_says(state, e)
        if after is None:
            continue
        due = derived(state, e)
        assert due is not None, f"{e} let through where the referee refuses it"
        assert due == [e], f"{e} let through where its command derives {due}"
        kinds = [type(getattr(x, f.name)) for x in (e, due[0]) for f in dataclasses.fields(x)]
        assert kinds[: len(kinds) // 2] == kinds[len(kinds) // 2 :], f"{e}: {due[0]}"
        assert after == fold(due, state), f"{e} folds otherwise than its command's"
        took += e is recorded
    return took


def held_to_commands(events: tuple[ev.Event, ...] | list[ev.Event]) -> Counter[str]:
    """Every quick check at every boundary of `events`, held to its command; how many
    recorded events each let through."""
    taken: Counter[str] = Counter()
    for state, recorded in boundaries(tuple(events)):
        held_at(state, others(state), None)
        if recorded.__class__ in QUICK and held_at(state, variants(recorded), recorded):
            taken[type(recorded).__name__] += 1
    return taken


@pytest.mark.parametrize("name", sorted(RULE_SETS))
@SETTINGS
@given(data=st.data())
def test_a_quick_check_says_yes_only_where_its_command_derives_that_event(
    name: str, data: st.DataObject
) -> None:
    h = data.draw(histories(rule_names=(name,), max_steps=120, actions=ACTIONS))
    held_to_commands(h.events)


def test_the_quick_checks_take_the_common_commands_of_a_clean_table() -> None:
    taken: Counter[str] = Counter()

    # The same tables every run: whether each kind is met is not left to chance.
    @settings(
        max_examples=60,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        h = data.draw(histories(max_steps=150, actions=ACTIONS))
        taken.update(held_to_commands(h.events))

    run()
    assert set(taken) == {t.__name__ for t in QUICK}, taken


def test_no_quick_check_lets_anything_but_the_throw_follow_a_client_seed() -> None:
    # While a client seed waits for its throw, only that throw may come
    # (serverdice.require_draw_next): every quick kind refused, as the referee refuses it.
    game = ServerGame(("ann", "bob", "cat"), rules="club")
    game.turn()
    game.do(engine.stake, 10)
    other = next(p for p in game.state.seats if p != game.state.caster)
    game.do(engine.lay, other, 10)
    game.do(engine.cover, 10)
    game.do(engine.offer_side_bet, other, ev.CASTER_WINS, True, 10, 10)
    game.do(engine.give_seed, "the caster's seed")
    assert game.state.client_seed is not None
    assert [quick_says(game.state, e) for e in others(game.state)] == [None] * len(
        list(others(game.state))
    )
    held_to_commands(game.events)


@pytest.mark.parametrize("offers", [PLAYERS_SHARE - 1, PLAYERS_SHARE, MAX_OPEN_BETS])
def test_the_quick_checks_keep_the_tables_caps_on_open_bets(offers: int) -> None:
    # The setter's offers fill the table to the players' share and to its cap: a
    # player's offer, and at the cap the round's stakes too, are refused by the
    # commands, so by the quick checks.
    state = fold(engine.open_table(RULE_SETS["english"], ev.Limits()))
    for p in PLAYERS[:3]:
        state = fold(engine.seat(state, p), state)
    for die, p in enumerate(PLAYERS[:3], start=1):
        state = fold(engine.cast_for_caster(state, p, die), state)
    events: list[ev.Event] = []
    for _ in range(offers):
        new = engine.offer_side_bet(state, SETTER, ev.CASTER_WINS, True, 10, 10)
        state = fold(new, state)
        events += new
    assert len(state.bets) == offers
    assert held_at(state, others(state), None) == 0
    placed = {
        type(e).__name__ + (" by the setter" if getattr(e, "offerer", None) == SETTER else "")
        for e in others(state)
        if isinstance(e, ev.StakeLaid | ev.SideBetOffered) and quick_says(state, e) is not None
    }
    assert ("SideBetOffered" in placed) == (offers < PLAYERS_SHARE)  # not simply shut
    assert ("StakeLaid" in placed) == ("SideBetOffered by the setter" in placed)
    assert ("StakeLaid" in placed) == (offers < MAX_OPEN_BETS)


def test_a_fold_after_quick_checks_gives_the_plain_fold_and_loses_nothing_when_refused() -> None:
    state = fold(engine.open_table(RULE_SETS["english"], ev.Limits()))
    for p in PLAYERS[:2]:
        state = fold(engine.seat(state, p), state)
    for die, p in enumerate(PLAYERS[:2], start=1):
        state = fold(engine.cast_for_caster(state, p, die), state)
    called = engine.call_main(state, 7)
    staked = engine.stake(fold(called, state), 10)
    folding = Folding(state)
    assert folding.admit(called[0], QUICK[ev.MainCalled])
    assert folding.admit(staked[0], QUICK[ev.CasterStaked])  # the state left unfrozen
    before = fold(called + staked, state)
    with pytest.raises(HazardError):  # a gap: the fold refuses it, part applied
        folding.fold([ev.MainCalled(version=before.version + 2, main=6)])
    assert folding.state == before  # the state the quick checks came to, not lost
    thrown = engine.throw(before, 3, 4)
    assert folding.fold(thrown) == fold(thrown, before)
