"""The controls the table page draws (ledger.console.phase), phase by phase and person by
person, on states the engine's own commands make: no database, no browser."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import engine as hz
from ledger.commands import Caller, Role
from ledger.console.phase import Controls, controls

CROUPIER = Caller(Role.CROUPIER, "cecil")
SETTER = Caller(Role.SETTER, "boss")
AUDITOR = Caller(Role.AUDITOR, "al")
ANN = Caller(Role.PLAYER, "ann")
BOB = Caller(Role.PLAYER, "bob")


def then(state: hz.TableState, command: Callable[..., list[hz.Event]], *values: Any) -> Any:
    return hz.fold(command(state, *values), state)


def table(rules: str = "english", caster: bool = True) -> hz.TableState:
    """ann, bob and cat seated; ann the caster (unless `caster` is False)."""
    state = then(hz.INITIAL, lambda _s: hz.open_table(hz.BUILTIN[rules], hz.Limits()))
    for name in ("ann", "bob", "cat"):
        state = then(state, hz.seat, name)
    if caster:
        for name, die in (("ann", 1), ("bob", 2), ("cat", 3)):
            state = then(state, hz.cast_for_caster, name, die)
    return state


def shown(found: Controls) -> set[str]:
    """The controls drawn, by name."""
    return {name for name in Controls.__dataclass_fields__ if getattr(found, name)}


def test_seating_before_play_and_nothing_for_those_who_watch() -> None:
    state = table(caster=False)
    assert shown(controls(state, CROUPIER)) >= {"seat", "casts"}
    assert controls(state, CROUPIER).casts == ("ann", "bob", "cat")
    assert not shown(controls(state, CROUPIER)) & {"main", "throw", "stake", "lays", "odds"}
    assert shown(controls(state, AUDITOR)) == set()
    assert not shown(controls(state, BOB)) & {"seat", "casts", "close"}


def test_the_main_and_the_rounds_stakes_while_the_main_is_due() -> None:
    state = table()
    croupier = controls(state, CROUPIER)
    assert croupier.main and croupier.stake and not croupier.throw and not croupier.casts
    assert croupier.lays == ("bob", "cat")  # the seated, but not the caster
    assert controls(state, SETTER).main  # the setter may do anything
    # A player: their own lay; the caster: their own stake.
    assert controls(state, BOB).lays == ("bob",) and not controls(state, BOB).stake
    assert controls(state, ANN).stake and controls(state, ANN).lays == ()
    assert not controls(state, ANN).main  # the croupier calls it
    assert shown(controls(state, AUDITOR)) == set()


def test_the_dice_once_there_is_a_main_and_the_lays_to_cover_first() -> None:
    state = then(then(table(), hz.stake, 100), hz.lay, "bob", 50)
    state = then(state, hz.call_main, 7)
    croupier = controls(state, CROUPIER)
    assert croupier.throw and not croupier.main and not croupier.preliminary
    [laid] = [b for b in state.open_bets if b.pending]
    assert croupier.pending == (laid.id,) and croupier.covers == (laid,) and croupier.refuse
    assert controls(state, ANN).covers == (laid,)  # the caster covers her own
    assert controls(state, BOB).covers == () and not controls(state, BOB).throw


def test_odds_once_the_chance_is_set_and_the_rounds_stakes_no_more() -> None:
    state = then(then(table(), hz.stake, 100), hz.lay, "bob", 50)
    state = then(state, lambda s: hz.cover(s, 10_000))
    state = then(then(state, hz.call_main, 7), hz.throw, 2, 2)
    assert state.phase is hz.Phase.CHANCE
    croupier = controls(state, CROUPIER)
    assert croupier.throw and croupier.odds == ("ann", "bob")  # cat has no stake to back
    assert not (croupier.stake or croupier.lays or croupier.main)
    assert controls(state, BOB).odds == ("bob",)


def test_rolled_mains_hard_core_covers_and_a_closed_table() -> None:
    french = controls(table("french"), CROUPIER)
    assert french.throw and french.preliminary and not french.main
    hard = then(table("hard-core"), hz.lay, "bob", 50)
    assert controls(hard, CROUPIER).covers and not controls(hard, CROUPIER).refuse
    closed = then(table(), hz.close)
    assert controls(closed, CROUPIER) == Controls()


def test_everyone_lays_is_the_croupiers_while_every_seated_player_but_the_caster_may() -> None:
    state = table()
    assert controls(state, CROUPIER).everyone_lays and controls(state, SETTER).everyone_lays
    assert not controls(state, BOB).everyone_lays  # a player lays for themselves only
    # Two seated only: one layer, whose own lay is the one button already there.
    two = then(hz.INITIAL, lambda _s: hz.open_table(hz.BUILTIN["english"], hz.Limits()))
    for name in ("ann", "bob"):
        two = then(two, hz.seat, name)
    for name, die in (("ann", 1), ("bob", 2)):
        two = then(two, hz.cast_for_caster, name, die)
    assert controls(two, CROUPIER).lays == ("bob",) and not controls(two, CROUPIER).everyone_lays
    # Once the chance is set, the round's stakes are made: no lays, nor everyone's.
    state = then(then(then(state, hz.stake, 100), hz.call_main, 7), hz.throw, 2, 2)
    assert not controls(state, CROUPIER).lays and not controls(state, CROUPIER).everyone_lays
    # The grid of throws shows where the throw is due, as the dice pad does (`throw`).
    assert controls(state, CROUPIER).throw
