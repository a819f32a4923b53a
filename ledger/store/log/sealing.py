"""Each write's seal: the last event of every write, committing the heads of every
stream and account (ledger.store.log.heads) inside the log, before the checkpoint the
write signs.

The heads the seals commit are kept in `heads_log`, append-only: each write adds a row
for every head it moved, at its seal's position. So the heads at any seal are, per
head, its newest row at or before that seal (what an export proves its scope against),
and a store that is behind (another server wrote) catches up by reading the rows after
the size it stands at. A store keeps its `Heads` in memory between writes, as it keeps
the tree's frontier: a write takes it, moves it, and hands it back only once committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from engine.money import ESCROW, holds
from ledger.store import codec, db
from ledger.store.eventstore import CorruptEvent, Known, Recorded, RowDecoder
from ledger.store.log import heads as hd
from ledger.store.log.heads import Head, Heads
from ledger.store.vocabulary import (
    MOVES_MONEY,
    TABLE_PREFIX,
    LogSealed,
    player_account,
    transfers_of,
)

ACTOR = "ledger"
"""Who writes a seal: the ledger itself, never a caller."""


class SealError(Exception):
    """A seal that does not commit the heads the log's events make."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"the seal at position {position}: {reason}")
        self.position = position


def accounts_of(row: Any) -> list[str]:
    """The ledger accounts an event's transfers touch, but a table's bets' escrows, which
    have no head (heads.chained; heads.changes leaves any out). A table's are named from
    its local names as transfers_of names them, without making its transfers: a
    restore, and the migration that built the first heads, ask it of every event."""
    stream = row.stream
    if not stream.startswith(TABLE_PREFIX):
        return [a for t in transfers_of(stream, row.event()) for a in (t.source, t.target)]
    return [
        player_account(local)
        for t in holds(row.event())
        for local in (t.source, t.target)
        if not local.startswith(ESCROW)
    ]


# -- The heads a store keeps -------------------------------------------------------------

_AT_SQL = (
    # Each head's newest row at or before the size, by its key (idx, position): one
    # index seek per head, however many rows the log has kept of it (a GROUP BY over
    # heads_log read every row, seconds on a big log, for every table's export).
    "WITH RECURSIVE ids(idx) AS (SELECT 0 UNION ALL SELECT idx + 1 FROM ids WHERE idx < ?)"
    " SELECT h.idx, h.kind, h.name, h.count, h.hash FROM ids JOIN heads_log h"
    " ON h.idx = ids.idx AND h.position = (SELECT MAX(position) FROM heads_log"
    " WHERE idx = ids.idx AND position <= ?) ORDER BY h.idx"
)
_LAST_SQL = "SELECT MAX(idx) FROM heads_log"
_AFTER_SQL = (
    "SELECT idx, kind, name, count, hash FROM heads_log WHERE position > ? AND position <= ?"
    " ORDER BY position, idx"
)
_SEALS_SQL = (
    "SELECT version, hash FROM events WHERE stream = ? AND position <= ?"
    " ORDER BY version DESC LIMIT 1"
)


def heads_at(conn: sa.Connection, size: int) -> Heads:
    """The heads as they stood at log size `size` (a seal's position, or the newest),
    read in one query."""
    heads = Heads(size)
    last = db.fetch(conn, _LAST_SQL)[0][0]
    if last is not None:
        _place(heads, db.fetch(conn, _AT_SQL, (int(last), size)))
    heads.seals, heads.seal_hash = _seals(conn, size)
    return heads


def _place(heads: Heads, rows: Iterable[Any]) -> None:
    for idx, kind, name, count, digest in rows:
        head = Head(str(kind), str(name), int(count), str(digest))
        at = heads.set(head)
        if at != int(idx):
            raise SealError(heads.size, f"head {idx} ({kind} {name}) is stored out of order")


def _seals(conn: sa.Connection, size: int) -> tuple[int, str]:
    """The last seal at or before `size`: its version and hash."""
    found = db.fetch(conn, _SEALS_SQL, (hd.SEALS, size))
    return (int(found[0][0]), str(found[0][1])) if found else (0, hd.GENESIS)


def take(conn: sa.Connection, kept: Heads | None, size: int) -> Heads:
    """The heads at log size `size`, for a write to move: `kept` (a store's, from its
    last write) caught up by the rows written since, or read whole."""
    if kept is None or kept.size > size:
        return heads_at(conn, size)
    if kept.size < size:
        _place(kept, db.fetch(conn, _AFTER_SQL, (kept.size, size)))
        kept.seals, kept.seal_hash = _seals(conn, size)
        kept.size = size
    return kept


# -- Sealing a write ---------------------------------------------------------------------


def seal(
    heads: Heads, rows: Sequence[Any], position: int, at: str
) -> tuple[Known, list[tuple[int, Head]]]:
    """Move `heads` by a write's events `rows` and make its seal, the event at
    `position` (the next of stream `log`, recorded `at`, the write's time), as the row
    to store; and the heads it moved, by index, for `heads_log`."""
    moved = _moved(heads, rows)
    event = LogSealed(heads.seals + 1, heads.root().hex(), len(heads))
    name, schema, text = codec.payload_text(event)
    prev = heads.seal_hash
    document = codec.frame(
        codec.Quoted(), position, hd.SEALS, event.version, name, schema, text, ACTOR, None, at
    )
    row = Known.of(
        (
            position, hd.SEALS, event.version, name, schema, text, ACTOR, None, at, prev,
            codec.chain_hash(prev, document),
        ),
        event,
    )  # fmt: skip
    return row, moved


_EVENT_SQL = (
    f"INSERT INTO events ({', '.join(Recorded._fields)})"
    f" VALUES ({', '.join(['?'] * len(Recorded._fields))})"
)
_HEADS_COLUMNS = ("position", "idx", "kind", "name", "count", "hash")
_HEADS_SQL_PG = (
    f"INSERT INTO heads_log ({', '.join(_HEADS_COLUMNS)}) SELECT * FROM"
    " unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::text[])"
)
HEADS_AT_ONCE = 150
"""Heads a multi-row INSERT into heads_log on SQLite takes: 900 parameters, within its
oldest limit of 999."""


def inserts(
    conn: sa.Connection, row: Known, moved: Sequence[tuple[int, Head]]
) -> list[tuple[str, Sequence[Any]]]:
    """The statements (with `?` marks) that store a write's seal and the heads it moved,
    for ledger.store.log.tree.seal to run with the write's checkpoint: on PostgreSQL in
    its one statement, the heads as arrays (one text and plan for every write)."""
    out: list[tuple[str, Sequence[Any]]] = [(_EVENT_SQL, tuple(row))]
    values = [(row.position, i, h.kind, h.name, h.count, h.hash) for i, h in moved]
    if conn.dialect.name == "postgresql":
        if values:
            out.append((_HEADS_SQL_PG, [list(column) for column in zip(*values, strict=True)]))
        return out
    for start in range(0, len(values), HEADS_AT_ONCE):
        chunk = values[start : start + HEADS_AT_ONCE]
        marks = ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(chunk))
        out.append(
            (
                f"INSERT INTO heads_log ({', '.join(_HEADS_COLUMNS)}) VALUES {marks}",
                [v for value in chunk for v in value],
            )
        )
    return out


def store_moved(conn: sa.Connection, position: int, moved: Sequence[tuple[int, Head]]) -> None:
    """Keep the heads a write moved, at its seal's `position`."""
    if moved:
        db.insert_tuples(
            conn,
            "heads_log",
            ("position", "idx", "kind", "name", "count", "hash"),
            [(position, i, h.kind, h.name, h.count, h.hash) for i, h in moved],
        )


def sealed(heads: Heads, row: Any) -> None:
    """The seal `row` is written: the heads stand at its position."""
    heads.seals += 1
    heads.seal_hash = row.hash
    heads.size = row.position


# -- Checking and rebuilding from the events ----------------------------------------------


def check(
    rows: Iterable[Any], heads: Heads | None = None
) -> Iterator[tuple[Any, Heads, list[tuple[int, Head]]]]:
    """Fold the heads over `rows` (every event, in position order, from the first, or
    from where `heads` stands), holding each seal to what the events before it make:
    raises SealError at the first seal that disagrees. Yields each seal row with the
    heads it commits and those that moved since the seal before it, by index. After
    the last row, `heads` stands there (moved by any events after the last seal)."""
    heads = heads if heads is not None else Heads()
    pending: list[Any] = []
    for row in rows:
        if row.stream != hd.SEALS:
            pending.append(row)
            continue
        moved = _moved(heads, pending)
        pending.clear()
        event = row.event()
        if row.version != heads.seals + 1:
            raise SealError(row.position, f"it is seal {row.version}, after seal {heads.seals}")
        root = heads.root().hex()
        if event.root != root or event.heads != len(heads):
            raise SealError(
                row.position,
                f"it commits {event.heads} heads with root {event.root}, but the events "
                f"before it make {len(heads)} with root {root}",
            )
        sealed(heads, row)
        yield row, heads, moved
    if pending:
        _moved(heads, pending)
        heads.size = pending[-1].position


def _moved(heads: Heads, rows: Sequence[Any]) -> list[tuple[int, Head]]:
    moved = {heads.index[(h.kind, h.name)]: h for h in hd.apply(heads, rows, accounts_of)}
    return sorted(moved.items())


class Rebuild:
    """`heads_log` written afresh from every event, fed in position order from the
    first (`feed`, a batch at a time), every seal checked on the way (SealError at the
    first that disagrees); `finish` after the last. What a database from before there
    were seals (migration 0012) and a restored log start from.

    Each batch is folded into the heads as it comes, and only the heads it moved are
    kept until the next seal, never its rows: a log from before seals has no seal to
    end the fold at, and a restore of it held every event until the end."""

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn
        self.heads = Heads()
        self.moved: dict[int, Head] = {}
        """The heads moved since the last seal, by index, each as it stands now."""

    def feed(self, rows: Sequence[Any]) -> None:
        start = 0
        for i, row in enumerate(rows):
            if row.stream != hd.SEALS:
                continue
            self._fold(rows[start:i])
            start = i + 1
            for seal_row, _, _ in check([row], self.heads):
                store_moved(self.conn, seal_row.position, sorted(self.moved.items()))
            self.moved = {}
        self._fold(rows[start:])

    def _fold(self, rows: Sequence[Any]) -> None:
        """Move the heads by `rows` (no seal among them), as `check` would at the next
        seal: folded in parts, each head steps from where the part before left it."""
        if rows:
            self.moved.update(_moved(self.heads, rows))
            self.heads.size = rows[-1].position

    def finish(self) -> Heads:
        # What moved after the last seal (all of it, on a log from before seals) is
        # kept at the last event's position, where a write's catch-up reads it from.
        if self.moved:
            store_moved(self.conn, self.heads.size, sorted(self.moved.items()))
            self.moved = {}
        return self.heads


def rebuild(conn: sa.Connection, batches: Iterable[Sequence[Any]]) -> Heads:
    """A `Rebuild` fed every batch of `batches`."""
    rebuilding = Rebuild(conn)
    for batch in batches:
        rebuilding.feed(batch)
    return rebuilding.finish()


class Folding:
    """The heads folded over a log's events as a check reads them, in position order
    from the first, each seal held to them: `event` says what is wrong with an event
    (a seal that commits other heads, or out of turn), or None. The events between two
    seals are folded at the second (hd.Pending), each head set once."""

    def __init__(self) -> None:
        self.heads = Heads()
        self.pending = hd.Pending()
        # Few payload texts kept decoded: the events it decodes move money, and nearly
        # every settlement's text is its own; 4,096 of each type, kept for the whole
        # pass, were a quarter of the log check's memory at a million events.
        self.decode = RowDecoder(seen=256)

    def event(
        self,
        position: int,
        stream: str,
        version: int,
        type_: str,
        schema: int,
        payload: str,
        digest: str,
    ) -> str | None:
        heads = self.heads
        if stream == hd.SEALS:
            try:
                seal = self.decode(position, type_, schema, version, payload)
            except CorruptEvent as exc:
                return str(exc)
            if not isinstance(seal, LogSealed) or version != heads.seals + 1:
                return f"it is seal {version}, after seal {heads.seals}"
            self.pending.fold(heads)
            heads.seals += 1
            root = heads.root().hex()
            if seal.root != root or seal.heads != len(heads):
                return (
                    f"the seal commits {seal.heads} heads with root {seal.root}, but the "
                    f"events before it make {len(heads)} with root {root}: the seal, or an "
                    "event before it, was rewritten"
                )
            return None
        accounts: list[str] = []
        if type_ in MOVES_MONEY:
            try:
                event = self.decode(position, type_, schema, version, payload)
            except CorruptEvent as exc:
                return str(exc)
            accounts = [a for t in transfers_of(stream, event) for a in (t.source, t.target)]
        self.pending.add(position, stream, version, type_, digest, accounts)
        return None
