"""The tamper-evident log in the database: the Merkle tree over every event, and the
signed checkpoints of it that every write hands out as its receipt.

Record n of the tree (ledger.store.merkle, RFC 9162) is the event at position n + 1;
its bytes are `Recorded.hashed()`, the canonical document of everything stored about
the event (position, stream, version, type, schema version, payload, actor,
idempotency key, recorded_at). Each stored hash is a row of `tree_hashes`, and each
write's checkpoint a row of `checkpoints`; the database refuses to change either.

An append needs only the tree's right edge, its *frontier*: the newest complete
subtree at each level. Each of a record's left halves is the newest complete subtree
at its level, and so is each piece of the root. The frontier is at most 64 hashes, so
a store keeps it in memory between writes (keyed by the tree's size, and replaced
only once a write has committed); an append then costs O(log n) hashing and no read.
Any other size (another process wrote, a write rolled back) reads it again: one query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from ledger.store import merkle
from ledger.store.checkpoint import Checkpoint, sign_checkpoint
from ledger.store.keys import Signer
from ledger.store.schema import checkpoints as checkpoints_table

Frontier = dict[int, tuple[int, bytes]]
"""level -> (number, hash) of the newest complete subtree at that level."""


class LogError(Exception):
    """The tree and the events disagree in a way an append cannot go on from."""


def leaf(row: Any) -> bytes:
    """The leaf hash of a stored event (a Recorded, or a row with its columns)."""
    return merkle.leaf_hash(row.hashed())


def frontier_indexes(size: int) -> list[int]:
    """The stored-hash indexes of the frontier of a tree of `size` records."""
    out = []
    for level in range(size.bit_length()):
        number = (size >> level) - 1
        if number >= 0:
            out.append(merkle.stored_hash_index(level, number))
    return out


class HashReader:
    """merkle.HashReader over `tree_hashes` in a connection's transaction, answering
    first from hashes this write made (not yet read back) and from a frontier."""

    def __init__(self, conn: sa.Connection, frontier: Frontier | None = None) -> None:
        self.conn = conn
        self.frontier: Frontier = dict(frontier or {})
        self.made: dict[int, bytes] = {}

    def __call__(self, indexes: Sequence[int]) -> list[bytes]:
        found: dict[int, bytes] = {}
        missing = []
        for index in indexes:
            if index in self.made:
                found[index] = self.made[index]
                continue
            level, number = merkle.split_stored_hash_index(index)
            held = self.frontier.get(level)
            if held is not None and held[0] == number:
                found[index] = held[1]
            else:
                missing.append(index)
        if missing:
            found.update(read_hashes(self.conn, missing))
        return [found[i] for i in indexes if i in found]

    def keep(self, index: int, digest: bytes) -> None:
        self.made[index] = digest
        level, number = merkle.split_stored_hash_index(index)
        held = self.frontier.get(level)
        if held is None or held[0] < number:
            self.frontier[level] = (number, digest)


def read_hashes(conn: sa.Connection, indexes: Sequence[int]) -> dict[int, bytes]:
    """Stored hashes by index, in one query (any that are missing are left out)."""
    if not indexes:
        return {}
    cursor = conn.connection.cursor()
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    try:
        cursor.execute(
            f"SELECT idx, hash FROM tree_hashes WHERE idx IN ({', '.join([mark] * len(indexes))})",
            tuple(indexes),
        )
        return {int(i): bytes(h) for i, h in cursor.fetchall()}
    finally:
        cursor.close()


def reader(conn: sa.Connection) -> merkle.HashReader:
    """A merkle.HashReader for proofs and roots: a missing hash is merkle.BadRead."""
    return HashReader(conn)


def load_frontier(conn: sa.Connection, size: int) -> Frontier:
    """The frontier of the stored tree of `size` records, read in one query."""
    indexes = frontier_indexes(size)
    hashes = read_hashes(conn, indexes)
    if len(hashes) != len(indexes):
        raise LogError(
            f"the tree is missing stored hashes of its first {size} events: run `hazard verify`"
        )
    frontier: Frontier = {}
    for index, digest in hashes.items():
        level, number = merkle.split_stored_hash_index(index)
        frontier[level] = (number, digest)
    return frontier


@dataclass
class Growth:
    """What one write adds to the tree: the size before it and the reader holding the
    hashes made since, which `finish` inserts."""

    start: int
    size: int
    hashes: HashReader

    def add(self, rows: Sequence[Any]) -> None:
        """Append the leaves of `rows`, the events just appended at the tree's end."""
        for row in rows:
            if row.position != self.size + 1:
                raise LogError(
                    f"event at position {row.position} is not the next record of the tree "
                    f"of {self.size} events"
                )
            hashes = merkle.stored_hashes_for_leaf(self.size, leaf(row), self.hashes)
            first = merkle.stored_hash_index(0, self.size)
            for offset, digest in enumerate(hashes):
                self.hashes.keep(first + offset, digest)
            self.size += 1

    def root(self) -> bytes:
        return merkle.tree_hash(self.size, self.hashes)

    def insert(self, conn: sa.Connection) -> None:
        """Insert every stored hash this write made."""
        made = sorted(self.hashes.made.items())
        if not made:
            return
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        cursor = conn.connection.cursor()
        try:
            sql = f"INSERT INTO tree_hashes (idx, hash) VALUES ({mark}, {mark})"
            if len(made) == 1:
                cursor.execute(sql, made[0])
            else:
                cursor.executemany(sql, made)
        finally:
            cursor.close()


def grow(conn: sa.Connection, size: int, frontier: Frontier | None) -> Growth:
    """A Growth of the tree of `size` records, from `frontier` if it is that tree's
    (the caller keeps it keyed by size), else from the database."""
    return Growth(size, size, HashReader(conn, frontier if frontier is not None else
                                         load_frontier(conn, size)))  # fmt: skip


def issue(conn: sa.Connection, signer: Signer, size: int, root: bytes, issued_at: str) -> str:
    """Sign the checkpoint of the tree of `size` records with root `root`, store it,
    and return the signed note. Issued at `issued_at`, the write's recorded_at."""
    when = datetime.fromisoformat(issued_at.replace("Z", "+00:00"))
    note = sign_checkpoint(Checkpoint.issued(signer.name, size, root, when), signer)
    conn.execute(
        checkpoints_table.insert(),
        {"size": size, "root": root.hex(), "issued_at": issued_at, "note": note},
    )
    return note


def build(conn: sa.Connection, batch: int = 5000) -> int:
    """Store the tree of every event already in the log, on a database that has none
    yet (migration 0004); returns its size. Reads and writes a batch at a time, and
    keeps only the frontier in memory."""
    from ledger.store.eventstore import Recorded  # the store imports this module

    growth = Growth(0, 0, HashReader(conn, {}))
    events = sa.table("events", *(sa.column(name) for name in Recorded._fields))
    while True:
        rows = conn.execute(
            sa.select(events)
            .where(events.c.position > growth.size)
            .order_by(events.c.position)
            .limit(batch)
        ).all()
        if not rows:
            return growth.size
        growth.add([Recorded(**row._mapping) for row in rows])
        growth.insert(conn)
        growth.hashes.made.clear()
