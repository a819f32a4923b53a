"""The log's Merkle tree as the database stores it (`tree_hashes`), grown by every
write, and the signed checkpoint of it (`checkpoints`) each write hands out as its
receipt.

Record n of the tree (ledger.store.log.merkle, RFC 9162) is the event at position n + 1;
its bytes are `Recorded.hashed()`, the canonical document of everything stored about
the event (position, stream, version, type, schema version, payload, actor,
idempotency key, recorded_at). Each stored hash is a row of `tree_hashes`, and each
write's checkpoint a row of `checkpoints`; the database refuses to change either.

An append needs only the tree's right edge, its frontier (merkle.Frontier): the
root of each complete subtree, at most 64 hashes. So a store keeps it in memory
between writes (of the size it was committed at, and replaced only once a write has
committed); an append then costs O(log n) hashing and no read. Any other size
(another process wrote, a write rolled back) reads it again: one query.
"""

from __future__ import annotations

from base64 import b64encode
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import sqlalchemy as sa

from ledger.store import codec
from ledger.store.eventstore import Recorded
from ledger.store.log import merkle
from ledger.store.log.checkpoint import MAX_SIZE, time_line
from ledger.store.log.keys import Signer, check_name

SIGNATURE_PREFIX = "\u2014 "
"""A signed note's signature line starts with an em dash and a space (C2SP signed-note)."""


class LogError(Exception):
    """The tree and the events disagree in a way an append cannot go on from."""


def leaf(row: Any) -> bytes:
    """The leaf hash of a stored event (a Recorded, or a row with its columns)."""
    return merkle.leaf_hash(row.hashed())


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

    # One query and nothing else: a proof's reads are all in tree_hashes, and working
    # out each index's level (to answer some from a frontier) cost as much as the
    # query itself (bench.tlog).
    def read(indexes: Sequence[int]) -> list[bytes]:
        found = read_hashes(conn, indexes)
        return [found[i] for i in indexes if i in found]

    return read


def load_frontier(conn: sa.Connection, size: int) -> merkle.Frontier:
    """The frontier of the stored tree of `size` records, read in one query (raises
    merkle.BadRead if a hash is missing)."""
    indexes = merkle.frontier_indexes(size)
    found = read_hashes(conn, indexes)
    if len(found) != len(indexes):
        raise merkle.BadRead(f"the stored tree of {size} events is missing hashes")
    return merkle.Frontier(size, [found[i] for i in indexes])


@dataclass
class Growth:
    """What one write adds to the tree: its frontier, grown by the write's events, and
    the stored hashes they make, by index, which `insert` (or `seal`) writes."""

    frontier: merkle.Frontier
    made: dict[int, bytes] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.frontier.size

    def add(self, rows: Sequence[Any]) -> None:
        """Append the leaves of `rows`, the events just appended at the tree's end:
        straight from the frontier, with no read, and the texts the rows share quoted
        once (as the store's append quotes them)."""
        frontier, made = self.frontier, self.made
        quoted = codec.Quoted()
        frame, leaf_hash = codec.frame, merkle.leaf_hash
        for row in rows:
            n = frontier.size
            if row.position != n + 1:
                raise LogError(
                    f"event at position {row.position} is not the next record of the tree "
                    f"of {n} events"
                )
            leaf = leaf_hash(
                frame(quoted, row.position, row.stream, row.version, row.type,
                      row.schema_version, row.payload, row.actor, row.idempotency_key,
                      row.recorded_at)
            )  # fmt: skip
            try:
                stored = frontier.append(leaf)
            except merkle.BadIndex as exc:
                raise LogError(str(exc)) from None
            index = merkle.stored_hash_count(n)  # stored_hash_index(0, n)
            for digest in stored:
                made[index] = digest
                index += 1

    def root(self) -> bytes:
        return self.frontier.root()

    def insert(self, conn: sa.Connection) -> None:
        """Insert every stored hash this write made: one multi-row INSERT (a few, for
        a big write), which SQLite runs in a quarter of executemany's time a row."""
        made = sorted(self.made.items())
        if conn.dialect.name == "postgresql":
            if made:
                _execute(conn, _HASHES_SQL_PG, ([i for i, _ in made], [h for _, h in made]))
            return
        for start in range(0, len(made), INSERT_ROWS):
            chunk = made[start : start + INSERT_ROWS]
            _execute(
                conn,
                "INSERT INTO tree_hashes (idx, hash) VALUES " + ", ".join(["(?, ?)"] * len(chunk)),
                [value for row in chunk for value in row],
            )


INSERT_ROWS = 400
"""Rows a multi-row INSERT into tree_hashes: 800 parameters, within SQLite's oldest
limit of 999."""

_HASHES_SQL_PG = (
    "INSERT INTO tree_hashes (idx, hash) SELECT * FROM unnest(%s::bigint[], %s::bytea[])"
)


def grow(conn: sa.Connection, size: int, frontier: merkle.Frontier | None) -> Growth:
    """A Growth of the tree of `size` records, from a copy of `frontier` if it is that
    tree's (the store keeps the last one committed), else from the database."""
    if frontier is not None and frontier.size == size:
        return Growth(frontier.copy())
    try:
        return Growth(load_frontier(conn, size))
    except merkle.BadRead:
        raise LogError(
            f"the tree is missing stored hashes of its first {size} events: run `hazard verify`"
        ) from None


def issue(conn: sa.Connection, signer: Signer, size: int, root: bytes, issued_at: str) -> str:
    """Sign the checkpoint of the tree of `size` records with root `root`, store it,
    and return the signed note. Issued at `issued_at`, the write's recorded_at."""
    note = signed_checkpoint(signer, size, root, issued_at)
    _execute(conn, _CHECKPOINT_SQL, (size, root.hex(), issued_at, note))
    return note


def seal(
    conn: sa.Connection,
    growth: Growth,
    signer: Signer,
    issued_at: str,
    also: Sequence[tuple[str, Sequence[Any]]] = (),
) -> str:
    """Store what a write adds to the log, its new hashes and the signed checkpoint of
    the tree they make, and return that checkpoint's note; and the inserts `also`
    (statement, parameters), which its seal makes (ledger.store.log.sealing).

    On PostgreSQL all of them go in one statement (the hashes as two arrays, so its
    text and plan are the same for every write), one round trip instead of several;
    SQLite, in process, has no round trips to save. Straight to the driver, as the
    event append does: SQLAlchemy's statement handling cost more than these inserts
    (bench.tlog)."""
    root = growth.root()
    note = signed_checkpoint(signer, growth.size, root, issued_at)
    checkpoint = (growth.size, root.hex(), issued_at, note)
    if conn.dialect.name != "postgresql":
        for sql, parameters in also:
            _execute(conn, sql, parameters)
        growth.insert(conn)
        _execute(conn, _CHECKPOINT_SQL, checkpoint)
        return note
    made = sorted(growth.made.items())
    before = "".join(f"also{i} AS ({sql}), " for i, (sql, _) in enumerate(also))
    _execute(
        conn,
        f"WITH {before}hashes AS ({_HASHES_SQL_PG}) {_CHECKPOINT_SQL}",
        (
            *(value for _, parameters in also for value in parameters),
            [i for i, _ in made],
            [h for _, h in made],
            *checkpoint,
        ),
    )
    return note


_CHECKPOINT_SQL = "INSERT INTO checkpoints (size, root, issued_at, note) VALUES (?, ?, ?, ?)"


def _execute(conn: sa.Connection, sql: str, parameters: Sequence[Any]) -> None:
    if conn.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, parameters)
    finally:
        cursor.close()


def signed_checkpoint(signer: Signer, size: int, root: bytes, issued_at: str) -> str:
    """Byte for byte sign_checkpoint(Checkpoint.issued(signer.name, size, root, when),
    signer), written out: what a write signs is always a well-formed checkpoint (a
    checked name, a size, a 32-byte root, a time line), so the checks and the key id
    the general path works out on every call are done once per signer (bench.tlog:
    they cost twice the signature)."""
    if not 0 <= size <= MAX_SIZE or len(root) != merkle.HASH_SIZE:
        raise ValueError(f"no checkpoint of {size} records with a {len(root)}-byte root")
    when = datetime.fromisoformat(issued_at.replace("Z", "+00:00"))
    text = f"{signer.name}\n{size}\n{b64encode(root).decode()}\n{time_line(when)}\n"
    key_id, prefix = _signature_line(signer)
    blob = key_id + signer.sign(text.encode())
    return f"{text}\n{prefix}{b64encode(blob).decode()}\n"


@lru_cache(maxsize=8)
def _signature_line(signer: Signer) -> tuple[bytes, str]:
    """The signer's key id (4 bytes) and the start of its signature line."""
    check_name(signer.name)
    return signer.key_id.to_bytes(4, "big"), f"{SIGNATURE_PREFIX}{signer.name} "


def build(conn: sa.Connection, batch: int = 5000) -> int:
    """Store the tree of every event already in the log, on a database that has none
    yet (migration 0004); returns its size. Reads and writes a batch at a time, and
    keeps only the frontier in memory."""
    growth = Growth(merkle.Frontier())
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
        growth.made.clear()
