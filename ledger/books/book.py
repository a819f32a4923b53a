"""The club's book: the store the ledger writes to, and the balances it holds.

Writing is the unit of work's (ledger.unit_of_work), through the club's commands
(ledger.service): there is no other way to append an event or post money.
"""

from __future__ import annotations

from ledger.books import projections
from ledger.store.eventstore import EventStore


class Book:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    def balances(self) -> dict[str, int]:
        with self.store.engine.connect() as conn:
            return projections.balances(conn)
