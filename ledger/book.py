"""The club's book: appending events and posting the money they move, as one act."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from engine.state import TableState
from ledger import projections, snapshots
from ledger.accounts import account_stream
from ledger.store import EventStore, Recorded, StoreError
from ledger.vocabulary import CreditLimitSet, Deposited, Withdrawn


class InvalidAmount(StoreError):
    """Amounts are whole, positive numbers of minor units."""


class Book:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    def record(
        self,
        conn: sa.Connection,
        stream: str,
        expected_version: int,
        events: Sequence[Any],
        actor: str,
        idempotency_key: str | None = None,
        state_after: TableState | None = None,
    ) -> list[Recorded]:
        """Append and post in the caller's transaction; an overdraft undoes both.

        Given the table's state after the events, a snapshot is cached each time the
        stream passes a multiple of `snapshots.EVERY`.
        """
        rows = self.store.append(conn, stream, expected_version, events, actor, idempotency_key)
        projections.apply(conn, rows)
        if (
            state_after is not None
            and rows
            and snapshots.due(expected_version, state_after.version, snapshots.EVERY)
        ):
            snapshots.save_in(conn, stream, state_after)
        return rows

    def _account_event(self, account: str, kind: type, actor: str, **fields: int) -> Recorded:
        for name, value in fields.items():
            if type(value) is not int or value < (0 if name == "limit" else 1):
                raise InvalidAmount(f"{name} must be a whole, positive number of minor units")
        stream = account_stream(account)
        with self.store.transaction() as conn:
            version = self.store.stream_version(conn, stream)
            event = kind(version=version + 1, account=account, **fields)
            return self.record(conn, stream, version, [event], actor)[0]

    def deposit(self, account: str, amount: int, actor: str) -> Recorded:
        return self._account_event(account, Deposited, actor, amount=amount)

    def withdraw(self, account: str, amount: int, actor: str) -> Recorded:
        return self._account_event(account, Withdrawn, actor, amount=amount)

    def set_credit_limit(self, account: str, limit: int, actor: str) -> Recorded:
        return self._account_event(account, CreditLimitSet, actor, limit=limit)

    def balances(self) -> dict[str, int]:
        with self.store.engine.connect() as conn:
            return projections.balances(conn)
