"""The referee folds each command's events on the copy of the table kept from the
command before (engine.fold.Folding), runs a throw on that copy too, and checks the
commands of one event by their quick checks on it (engine.quick). Held here to
the plain way, each command run as any caller runs it and each group folded afresh
from the state before it with `fold`: the same state after every event, and on a
tampered stream the same Disagreement, at the same version, in the same words."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import events as ev
from engine.causes import Run
from engine.errors import Disagreement
from engine.fold import fold
from engine.referee import Referee
from engine.state import TableState
from tests.engine.serverkit import ServerGame
from tests.engine.strategies import PLAYING, RULE_SETS, histories

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class FoldedAfresh(Referee):
    """The referee with each command run as any caller runs it (none checked by its
    quick check, engine.quick), and each group folded anew from the state before it."""

    def _quickly(self, event: ev.Event, quick: object) -> bool:
        return False

    def _run(self, run: Run, state: TableState, event: ev.Event) -> Sequence[ev.Event]:
        return run(state, event)

    def _fold(self, due: Sequence[ev.Event], before: TableState) -> TableState:
        return fold(due, before)


Verdict = tuple[object, ...]


def verdict(referee: Referee, events: Sequence[ev.Event]) -> tuple[Verdict, list[TableState]]:
    """What the referee says of `events`, and its state after each of them."""
    states = []
    try:
        for e in events:
            referee.check(e)
            states.append(referee.state)
        referee.finish()
    except Disagreement as exc:
        return ("differs", exc.version, str(exc.reason)), states
    said = (referee.rounds, referee.bets, referee.trusted, referee.unrevealed)
    return ("passes", referee.state, said), states


def same_verdicts(events: Sequence[ev.Event]) -> Verdict:
    fast, fast_states = verdict(Referee(), events)
    plain, plain_states = verdict(FoldedAfresh(), events)
    assert fast == plain
    assert fast_states == plain_states
    return fast


def tampered(data: st.DataObject, events: list[ev.Event]) -> list[ev.Event]:
    """`events` with one of them changed, dropped, repeated or swapped with the next."""
    i = data.draw(st.integers(0, len(events) - 1))
    e = events[i]
    how = data.draw(st.sampled_from(("field", "drop", "repeat", "swap")))
    if how == "drop":
        return events[:i] + events[i + 1 :]
    if how == "repeat":
        return events[: i + 1] + events[i:]
    if how == "swap":
        return events[:i] + events[i + 1 : i + 2] + [e] + events[i + 2 :]
    fields = [
        f.name
        for f in dataclasses.fields(e)
        if type(getattr(e, f.name)) in (int, str) or f.name == "transfers"
    ]
    name = data.draw(st.sampled_from(fields))
    value = getattr(e, name)
    if name == "transfers":
        if not value:
            return events[:i] + events[i + 1 :]
        t = value[0]
        value = (dataclasses.replace(t, amount=t.amount + data.draw(st.integers(-2, 2))),)
        value += e.transfers[1:]  # type: ignore[attr-defined]
    elif type(value) is int:
        value += data.draw(st.sampled_from((-1, 1, 2)))
    else:
        value = data.draw(st.sampled_from(("ann", "bob", "b3", value + "x")))
    return [*events[:i], dataclasses.replace(e, **{name: value}), *events[i + 1 :]]


@pytest.mark.parametrize("name", sorted(RULE_SETS))
@SETTINGS
@given(data=st.data())
def test_the_kept_fold_gives_the_plain_verdict_under_each_rule_set(
    name: str, data: st.DataObject
) -> None:
    h = data.draw(histories(rule_names=(name,), max_steps=120, actions=PLAYING))
    assert same_verdicts(h.events)[0] == "passes"
    for _ in range(3):
        same_verdicts(tampered(data, list(h.events)))


@SETTINGS
@given(data=st.data())
def test_the_kept_fold_gives_the_plain_verdict_at_a_server_dice_table(data: st.DataObject) -> None:
    thrown_main = ("club", "french", "hard-core", "history")  # ServerGame calls no main
    game = ServerGame(("ann", "bob", "cat"), rules=data.draw(st.sampled_from(thrown_main)))
    for _ in range(data.draw(st.integers(1, 3))):
        game.turn()
    game.throw("one more")  # a turn in play: its throws not drawn again yet
    assert same_verdicts(game.events)[0] == "passes"
    for _ in range(3):
        same_verdicts(tampered(data, list(game.events)))
