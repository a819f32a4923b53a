"""Receipts as the writes handed them out: for an event, the bytes its leaf covers and
the checkpoint that the write which recorded it signed.

A write's receipt is the checkpoint of the size the write left the log at, the first
checkpoint whose tree holds the event. The console hands these to the player's browser,
which checks them against the log's public reads on its own (ledger/console/static/):
the leaf it hashes itself from the event's bytes, and the receipt's tree it proves a
prefix of the one the witnesses cosigned.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa

from ledger.store.eventstore import Recorded
from ledger.store.schema import checkpoints, events

CHUNK = 500
"""Positions asked for in one query: under SQLite's limit on a query's parameters."""


@dataclass(frozen=True)
class Receipt:
    position: int
    frame: bytes
    """The event's canonical bytes (codec.frame): its leaf is SHA-256(0x00 || frame)."""
    size: int | None
    """The size of the checkpoint the write signed; None if no checkpoint holds it (a
    store that signs nothing)."""
    note: str | None
    """That checkpoint, the signed note, as the write handed it out."""


def written(conn: sa.Connection, positions: Iterable[int]) -> list[Receipt]:
    """The receipt of each event at `positions` (those the log holds), in order."""
    wanted = sorted(set(positions))
    found: list[Receipt] = []
    for at in range(0, len(wanted), CHUNK):
        found += _chunk(conn, wanted[at : at + CHUNK])
    return found


def at_version(conn: sa.Connection, stream: str, version: int) -> tuple[Recorded, Receipt]:
    """The event at `version` of `stream` as stored, and its receipt."""
    row = conn.execute(
        sa.select(events).where(events.c.stream == stream, events.c.version == version)
    ).one()
    recorded = Recorded(**{k: row._mapping[k] for k in Recorded._fields})
    (found,) = written(conn, [recorded.position])
    return recorded, found


def _chunk(conn: sa.Connection, positions: list[int]) -> list[Receipt]:
    # The write's checkpoint: the smallest size at or past the event's position (one
    # correlated lookup on the checkpoints' key per event, in the same query).
    size = (
        sa.select(sa.func.min(checkpoints.c.size))
        .where(checkpoints.c.size >= events.c.position)
        .scalar_subquery()
    )
    rows = conn.execute(
        sa.select(events, size.label("receipt_size"))
        .where(events.c.position.in_(positions))
        .order_by(events.c.position)
    ).all()
    sizes = {int(row.receipt_size) for row in rows if row.receipt_size is not None}
    notes = dict(
        conn.execute(
            sa.select(checkpoints.c.size, checkpoints.c.note).where(checkpoints.c.size.in_(sizes))
        ).all()
    )
    return [
        Receipt(
            position=int(row.position),
            frame=Recorded(**{k: row._mapping[k] for k in Recorded._fields}).hashed(),
            size=None if row.receipt_size is None else int(row.receipt_size),
            note=None if row.receipt_size is None else notes[int(row.receipt_size)],
        )
        for row in rows
    ]
