"""A club whose clock the test moves, for the tests of players' limits and breaks: the
store stamps every event by it, and the limits are judged at what it stamps."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

import engine as hz
from ledger.commands import Caller, Role
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import events
from tests.ledger.clockkit import Wall
from tests.ledger.clubkit import a_club

ANN = Caller(Role.PLAYER, "ann")
BOB = Caller(Role.PLAYER, "bob")
SETTER = Caller(Role.SETTER, "boss")


class Timed:
    """A club on `store`, its clock a wall clock the test moves on (`later`)."""

    def __init__(self, store: EventStore) -> None:
        self.wall = Wall()
        store.clock = self.wall.clock()
        self.store = store
        self.club: Club = a_club(store)

    def later(self, **by: float) -> None:
        self.wall.now += timedelta(**by)

    def deposit(self, name: str, amount: int) -> dict[str, object]:
        from ledger.store.vocabulary import Deposited

        return self.club.account_command(name, Deposited, amount, "setter:boss")

    def count(self) -> int:
        """How many events the log holds: a refusal leaves it as it was."""
        with self.store.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar() or 0)

    def balance(self, name: str) -> int:
        with self.store.engine.connect() as conn:
            return self.club.standing(conn, name if name != hz.SETTER else hz.SETTER)[0]
