"""A server-dice table's stream, played command by command and sealed with seeds as
the ledger seals them: what the server-dice tests and the referee's are given."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

import engine
from engine import events as ev
from engine import serverdice
from engine.fold import INITIAL, fold
from engine.rulesets import BUILTIN
from engine.state import Phase, TableState


class ServerGame:
    """Commands on a server-dice table, sealed with seeds as the ledger seals them (the
    seeds from a seeded generator here; the ledger's come from `secrets`)."""

    def __init__(self, players: tuple[str, ...] = ("ann", "bob"), rules: str = "club") -> None:
        self.rng = random.Random(13)
        self.events: list[ev.Event] = []
        self.state: TableState = INITIAL
        self.seed: bytes | None = None
        self.do(lambda s: engine.open_table(BUILTIN[rules], ev.Limits(), s, dice="server"))
        for p in players:
            self.do(engine.seat, p)
        for die, p in enumerate(players, start=1):
            self.do(engine.cast_for_caster, p, die)

    def do(self, command: Callable[..., list[ev.Event]], *args: Any) -> list[ev.Event]:
        before = self.state
        new = command(before, *args)
        ends, begins = serverdice.turn_change(before, new)
        reveal = self.seed.hex() if ends and self.seed is not None else None
        commitment = None
        if begins:
            self.seed = self.rng.randbytes(32)
            commitment = hashlib.sha256(self.seed).hexdigest()
        serverdice.seal(before, new, reveal, commitment)
        self.events += new
        self.state = fold(new, before)
        return new

    def throw(self, client_seed: str) -> list[ev.Event]:
        assert self.seed is not None
        d1, d2 = serverdice.draw(self.seed, client_seed, self.state.nonce)
        return self.do(engine.server_throw, client_seed, d1, d2)

    def turn(self) -> list[ev.Event]:
        """Throw (staking 10 on each round) until the dice pass."""
        for n in range(500):
            if self.state.phase is Phase.AWAITING_MAIN and not self.state.bets:
                self.do(engine.stake, 10)
            new = self.throw(f"seed-{self.state.version}-{n}")
            if any(isinstance(e, ev.DicePassed) for e in new):
                return new
        raise AssertionError("the dice never passed")
