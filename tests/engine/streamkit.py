"""A table's stream, played command by command: what the referee and the disputes are
given to judge (tests/engine/test_referee.py, test_disputes.py).

    game = Game("english")                # ann, bob and cat seated, ann casting
    game.do(engine.stake, 100)
    game.events, game.state
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from typing import Any

import engine
from engine import events as ev
from engine.fold import INITIAL, fold
from engine.state import SETTER, TableState
from tests.engine.strategies import RULE_SETS
from tests.engine.tablekit import next_total


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


def long_game(name: str, rng: random.Random, rounds: int) -> Game:
    """Rounds with stakes, covers or refusals, side bets, odds and now and then a pass."""
    g = Game(name, ("ann", "bob", "cat", "dan"))
    rules = RULE_SETS[name]
    while g.state.wins + g.state.losses + g.state.abandoned < rounds:
        s = g.state
        assert s.caster is not None
        if rules.main_method is engine.MainMethod.CALLED:
            g.do(engine.call_main, rng.randrange(5, 10))
        g.do(engine.stake, 60 * rng.randrange(1, 4))
        others = [p for p in g.state.seats if p != s.caster]
        for p in rng.sample(others, rng.randrange(0, 3)):
            g.do(engine.lay, p, 60)
        if rules.cover is engine.CoverPolicy.FORFEIT and rng.random() < 0.2:
            g.do(engine.cover, 0)  # forfeits if anything was laid
        elif rng.random() < 0.3 and rules.cover is engine.CoverPolicy.REFUSE:
            for bet in [b for b in g.state.bets.values() if b.pending and b.no]:
                g.do(engine.refuse, bet.id)
        else:
            g.do(engine.cover, 10**6)
        if g.state.caster is None or g.state.phase is engine.Phase.SEATING:
            break
        offer = g.do(engine.offer_side_bet, "dan", next_total(6, 8), True, 10, 40)
        if rng.random() < 0.7:
            g.do(engine.accept_side_bet, offer[0].bet_id, SETTER)  # type: ignore[union-attr]
        start = g.state.round
        while g.state.round == start:
            if g.state.phase is engine.Phase.CHANCE and rng.random() < 0.3:
                caster = g.state.caster
                mine = [b for b in g.state.bets.values() if b.kind.value == "caster"]
                if mine and caster is not None:
                    with contextlib.suppress(engine.RuleBroken):  # odds the rules refuse
                        g.do(engine.lay_odds, caster, "chance", 60)
            g.do(engine.throw, rng.randrange(1, 7), rng.randrange(1, 7))
        if rules.dice_pass.voluntary and g.state.consecutive_wins and rng.random() < 0.5:
            g.do(engine.pass_dice)
    return g
