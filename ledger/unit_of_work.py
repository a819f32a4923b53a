"""The unit of work: the one way anything is written to the ledger.

A write is one transaction that appends events, posts the money they move, updates
every read model, takes a snapshot when one is due, and stores the idempotency key
with the response, so that all of it commits together or none of it does. Keeping it
in one object, as cosmicpython's `with uow: ... uow.commit()` does, means nothing can
append and forget a read model, and whatever every append must also do (the Merkle
tree's leaves and its checkpoints) has one place to go: `UnitOfWork._recorded`.

    uow = UnitOfWork(store, key, request)
    if (earlier := uow.earlier()) is not None:
        return earlier                      # a repeat: the stored answer, nothing written
    with uow:
        rows, after = uow.play(stream, before, events, actor)
        uow.commit(response)                # anything else rolls back
    return uow.answer

A repeat with the same key and request is answered from the store and writes nothing;
the same key with another request is refused (IdempotencyConflict). Two racing first
attempts cannot both commit: the loser fails on the key or on the stream's version,
its transaction (events included) rolls back, and the unit of work answers with the
winner's response. `earlier` is asked first, outside the transaction: a repeat must
not decide again on a table that has moved on since its first answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

import sqlalchemy as sa

from engine.command import Drafted
from engine.state import TableState
from ledger.books import projections, tableviews
from ledger.store import idempotency, snapshots
from ledger.store.eventstore import ConcurrencyError, EventStore, NoSigningKey, Recorded
from ledger.store.log import sealing, tree
from ledger.store.log.heads import Heads

RACE_LOST = (sa.exc.IntegrityError, ConcurrencyError)
"""How the loser of two racing first attempts fails: at the key or at the version."""


class UnitOfWork:
    """One write transaction on `store`, answering `request` once under `key`."""

    conn: sa.Connection
    """The transaction's connection, for what a command reads before it decides."""

    def __init__(
        self, store: EventStore, key: str | None = None, request: Mapping[str, Any] | None = None
    ) -> None:
        self.store, self.key = store, key
        self._digest = idempotency.request_hash(request or {})
        self._transaction: AbstractContextManager[sa.Connection] | None = None
        self._answer: dict[str, Any] | None = None
        self._growth: tree.Growth | None = None
        self._positions: list[int] = []
        self._rows: list[Recorded] = []
        self._issued_at = ""
        self._now: str | None = None
        self.committed = False

    def earlier(self) -> dict[str, Any] | None:
        """The response stored under the key, if it already answered this request
        (outside any transaction, so a repeat never waits for the write lock)."""
        if self.key is None:
            return None
        return idempotency.stored(self.store, self.key, self._digest)

    def __enter__(self) -> UnitOfWork:
        self._transaction = self.store.transaction()
        self.conn = self._transaction.__enter__()
        self._growth, self._positions, self._rows = None, [], []
        self._issued_at, self._now = "", None
        return self

    def now(self) -> str:
        """The time this write's events are recorded at, as the store will stamp them:
        its clock, held back to the log's last event if the clock is behind
        (ledger.store.eventstore.append). Asked before anything is appended, it fixes
        the write's time, so what a command checks against the time (a player's limits,
        ledger.books.limits) is judged at the very moment the log records."""
        if self._rows:
            return self._issued_at
        if self._now is None:
            clock = self.store.clock()
            last = self.conn.execute(
                sa.text("SELECT recorded_at FROM events ORDER BY position DESC LIMIT 1")
            ).scalar()
            self._now = max(clock, str(last)) if last is not None else clock
            self._issued_at = clock  # the append holds it back to the last, and says so
        return self._now

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        assert self._transaction is not None
        transaction, self._transaction = self._transaction, None
        if kind is None and not self.committed:
            self.conn.rollback()  # not told to commit: nothing of it stays
        # The store decides whether the connection is kept (ledger.store.eventstore.Refused).
        transaction.__exit__(kind, exc, traceback)
        wrote = self.store.wrote
        if kind is None and self.committed and self._growth is not None and wrote is not None:
            wrote()  # the lock let go: what the log of significant events counted may follow
        if kind is not None and self.key is not None and issubclass(kind, RACE_LOST):
            earlier = idempotency.stored(self.store, self.key, self._digest)
            if earlier is not None:  # a racing first attempt won: its answer is ours
                self._answer = earlier
                return True
        return False

    # -- writing ----------------------------------------------------------------------

    def record(
        self,
        stream: str,
        expected_version: int,
        events: Sequence[Any],
        actor: str,
        idempotency_key: str | None = None,
    ) -> list[Recorded]:
        """Append to an account's stream and post what the events move; an overdraft
        (or any refusal) undoes the whole unit of work."""
        rows, _ = self._recorded(stream, expected_version, events, actor, idempotency_key)
        return rows

    def play(
        self,
        stream: str,
        before: TableState,
        events: Sequence[Any],
        actor: str,
        idempotency_key: str | None = None,
    ) -> tuple[list[Recorded], TableState]:
        """Append a table's events, decided by the engine from `before`: post the money,
        write the table's read models, and snapshot the state after them each time the
        stream passes a multiple of `snapshots.EVERY`. Returns the rows and that state."""
        rows, after = self._recorded(stream, before.version, events, actor, idempotency_key, before)
        assert after is not None
        return rows, after

    def _recorded(
        self,
        stream: str,
        expected_version: int,
        events: Sequence[Any],
        actor: str,
        idempotency_key: str | None,
        before: TableState | None = None,
    ) -> tuple[list[Recorded], TableState | None]:
        """Append, then everything an append's rows cause, in this transaction: the one
        place where every append passes. The rows' leaves join the log's Merkle tree
        here; `commit` signs the tree they make."""
        conn = self.conn
        # One write, one time: every event of it, its seal and its checkpoint, so that a
        # cut by time never falls inside a write (docs/export-format.md).
        at = self._issued_at or None
        rows = self.store.append(
            conn, stream, expected_version, events, actor, idempotency_key, at=at
        )
        if rows:
            self._grow(rows)
        projections.apply(conn, rows)
        if before is None:  # an account's stream
            return rows, None
        # The engine's events, with the state it folded them to: the rows carry their
        # events (eventstore.Known), so neither is decoded nor folded again here.
        folded = events.folded if isinstance(events, Drafted) else None
        after = tableviews.apply(conn, stream, before, rows, folded=folded)
        if rows and snapshots.due(expected_version, after.version, snapshots.EVERY):
            snapshots.save_in(conn, stream, after)
        return rows, after

    def _grow(self, rows: Sequence[Recorded]) -> None:
        if self._growth is None:
            self._growth = tree.grow(self.conn, rows[0].position - 1, self.store.frontier)
        self._growth.add(rows)
        self._positions.extend(row.position for row in rows)
        self._rows.extend(rows)
        self._issued_at = rows[-1].recorded_at

    def commit(self, response: Mapping[str, Any] | None = None) -> None:
        """Store the key with `response` (given a key) and commit everything.

        A write that appended events also stores the tree's new hashes and a signed
        checkpoint of the tree they make, and answers with its receipt: the positions
        written and that checkpoint, whose tree includes them. The receipt is part of
        the answer kept under the key, so a repeat hands back the same receipt."""
        answer = dict(response or {})
        growth = self._growth
        if growth is not None:
            signer = self.store.signer
            if signer is None:
                where = f" at {self.store.key_path}" if self.store.key_path else ""
                raise NoSigningKey(
                    f"no signing key{where}: every write hands out a signed checkpoint, "
                    "so nothing was written; make one with `hazard key create`"
                )
            heads, inserts = self._seal(growth) if self.store.seals else (None, [])
            note = tree.seal(self.conn, growth, signer, self._issued_at, inserts)
            answer["receipt"] = {"positions": list(self._positions), "checkpoint": note}
        if self.key is not None:
            idempotency.remember(self.conn, self.key, self._digest, answer, self.store.clock())
        self.conn.commit()
        self.committed, self._answer = True, answer
        if growth is not None:  # committed history only: neither goes stale
            self.store.frontier = growth.frontier
            if heads is not None:
                self.store.heads = heads

    def _seal(self, growth: tree.Growth) -> tuple[Heads, list[tuple[str, Any]]]:
        """End the write with its seal (ledger.store.log.sealing): the event committing
        the heads of every stream and account after the write's events, the last leaf
        under the checkpoint the write signs, and the heads it moved, for `heads_log`;
        both stored by `tree.seal` with the checkpoint (on PostgreSQL in its one
        statement). The store's heads are taken for it, and handed back by `commit`
        once the write has committed."""
        rows = self._rows
        kept, self.store.heads = self.store.heads, None
        heads = sealing.take(self.conn, kept, rows[0].position - 1)
        row, moved = sealing.seal(heads, rows, growth.size + 1, self._issued_at)
        growth.add([row])
        sealing.sealed(heads, row)
        return heads, sealing.inserts(self.conn, row, moved)

    @property
    def answer(self) -> dict[str, Any]:
        """The response: the one committed, or the winner's when a race was lost."""
        if self._answer is None:
            raise RuntimeError("the unit of work was neither committed nor answered")
        return self._answer
