"""A table's stream, played command by command: what the referee and the disputes are
given to judge (tests/engine/test_referee.py, test_disputes.py).

    game = Game("english")                # ann, bob and cat seated, ann casting
    game.do(engine.stake, 100)
    game.events, game.state
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import engine
from engine import events as ev
from engine.fold import INITIAL, fold
from engine.state import TableState
from tests.engine.strategies import RULE_SETS


class Game:
    """Commands played on a table, keeping the stream they record."""

    def __init__(
        self,
        rules: str = "english",
        players: tuple[str, ...] = ("ann", "bob", "cat"),
        limits: ev.Limits = ev.Limits(),
    ):
        self.events: list[ev.Event] = []
        self.state: TableState = INITIAL
        self.do(lambda s: engine.open_table(RULE_SETS[rules], limits, s))
        for p in players:
            self.do(engine.seat, p)
        for die, p in enumerate(players, start=1):  # the first seat casts lowest
            self.do(engine.cast_for_caster, p, die)

    def do(self, command: Callable[..., list[ev.Event]], *args: Any) -> list[ev.Event]:
        new = command(self.state, *args)
        self.events += new
        self.state = fold(new, self.state)
        return new

    def at(self, kind: type, **fields: Any) -> int:
        """The index of the first event of `kind` with these fields."""
        return next(
            i
            for i, e in enumerate(self.events)
            if isinstance(e, kind) and all(getattr(e, k) == v for k, v in fields.items())
        )
