"""The event store: an append-only, hash-chained log on SQLAlchemy Core.

Guarantees live in the database where they can: (stream, version) is unique, which is
the optimistic concurrency check; triggers refuse UPDATE and DELETE on events. Appends
are serialised (an advisory lock on PostgreSQL, BEGIN IMMEDIATE on SQLite) so that
global positions become visible in order and a reader tailing "after position P"
never skips one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from engine.events import Event
from ledger import codec
from ledger.schema import events as events_table

GENESIS = "0" * 64
APPEND_LOCK = 0x48415A415244  # "HAZARD": the advisory lock key that orders appends


class StoreError(Exception):
    """Base of the store's errors."""


class ConcurrencyError(StoreError):
    """The stream moved on since the writer read it: nothing was written."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r} is at version {actual}, not {expected} as expected")
        self.stream, self.expected, self.actual = stream, expected, actual


class CorruptEvent(StoreError):
    """A stored event this code cannot read: the position says which."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"event at position {position}: {reason}")
        self.position = position


@dataclass(frozen=True, slots=True)
class Recorded:
    """An event as stored, with where, when and by whom."""

    position: int
    stream: str
    version: int
    type: str
    schema_version: int
    payload: str
    actor: str
    idempotency_key: str | None
    recorded_at: str
    prev_hash: str
    hash: str

    def document(self) -> dict[str, Any]:
        """What the hash covers: every column but the hashes themselves."""
        return {
            "position": self.position,
            "stream": self.stream,
            "version": self.version,
            "type": self.type,
            "schema_version": self.schema_version,
            "payload": json.loads(self.payload),
            "actor": self.actor,
            "idempotency_key": self.idempotency_key,
            "recorded_at": self.recorded_at,
        }

    def hashed(self) -> bytes:
        """The bytes the hash covers: `document()` in canonical form, built around the
        stored payload text rather than by parsing and re-encoding it."""
        header = {
            "position": self.position,
            "stream": self.stream,
            "version": self.version,
            "type": self.type,
            "schema_version": self.schema_version,
            "actor": self.actor,
            "idempotency_key": self.idempotency_key,
            "recorded_at": self.recorded_at,
        }
        return codec.canonical_spliced(header, "payload", self.payload)

    def event(self) -> Event:
        return decode_row(self)


def decode_row(row: Any) -> Event:
    """The engine event in a stored row, or CorruptEvent naming its position."""
    try:
        payload = json.loads(row.payload)
    except ValueError as exc:
        raise CorruptEvent(row.position, f"payload is not JSON ({exc})") from None
    try:
        return codec.decode(row.type, row.schema_version, row.version, payload)
    except codec.DecodeError as exc:
        raise CorruptEvent(row.position, str(exc)) from None


_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""The scanner inside json.loads (same decoder settings): the same values, without the
checks for whitespace around the document; a payload it does not read to its end
takes the full path."""


class _Slow(Exception):
    """A row the fast path leaves to `decode_row`."""


def decode_rows(rows: Iterable[Any]) -> list[Event]:
    """`decode_row` over (position, type, schema_version, version, payload) rows, faster.

    For a row that codec.decode would accept, the fast path does the same work with
    less overhead: the JSON scanner without json.loads' wrapper, the field check as one
    set comparison, and the special fields converted by codec's own functions. Any
    other row (unknown type or schema version, a payload that is not an object of
    exactly the type's fields, a conversion or constructor that fails) goes through
    `decode_row`, which returns the same event or raises the same CorruptEvent.
    """
    plans: dict[str, codec.Plan] = {}
    scan = _scan_json
    out: list[Event] = []
    append = out.append
    for row in rows:
        _position, name, schema, version, payload = row
        try:
            plan = plans.get(name)
            if plan is None:
                plan = plans[name] = _plan(name)
            cls, schema_version, fields, specials = plan
            if schema != schema_version:
                raise _Slow
            data, end = scan(payload, 0)
            if end != len(payload) or type(data) is not dict or data.keys() != fields:
                raise _Slow
            for f, convert in specials:
                data[f] = convert(data[f])
            append(cls(version=version, **data))
        except Exception:
            append(decode_row(_Row(*row)))
    return out


def _plan(name: str) -> codec.Plan:
    plan = codec.decode_plan(name)
    if plan is None:
        raise _Slow
    return plan


@dataclass(frozen=True, slots=True)
class _Row:
    position: int
    type: str
    schema_version: int
    version: int
    payload: str


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class EventStore:
    def __init__(self, engine: sa.Engine, clock: Callable[[], str] = utc_now) -> None:
        self.engine = engine
        self.clock = clock
        self.postgres = engine.dialect.name == "postgresql"

    # -- writing --------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """A write transaction: everything appended in it commits, or none of it."""
        with self.engine.connect() as conn:
            conn.execution_options(writes=True)
            with conn.begin() as tx:
                if self.postgres:  # writers queue here, before they read what they check
                    conn.execute(_LOCK, {"k": APPEND_LOCK})
                    conn.info["hazard_locked"] = tx
                yield conn

    def append(
        self,
        conn: sa.Connection,
        stream: str,
        expected_version: int,
        new_events: Sequence[Any],
        actor: str,
        idempotency_key: str | None = None,
    ) -> list[Recorded]:
        """Append `new_events` to `stream`, which must be at `expected_version`.

        Runs inside the caller's transaction `conn`, so that read models written in
        the same transaction commit with the events or not at all.
        """
        if self.postgres and conn.info.get("hazard_locked") is not conn.get_transaction():
            conn.execute(_LOCK, {"k": APPEND_LOCK})  # a caller's own transaction
        head = conn.execute(_HEAD, {"stream": stream}).first()
        version, prev = (head.version, head.hash) if head else (0, GENESIS)
        if version != expected_version:
            raise ConcurrencyError(stream, expected_version, version)
        position = conn.execute(_LAST_POSITION).scalar_one()
        recorded_at = self.clock()
        rows: list[Recorded] = []
        for event in new_events:
            position += 1
            version += 1
            if event.version != version:
                raise StoreError(
                    f"event {type(event).__name__} is numbered {event.version}, "
                    f"but it would be version {version} of {stream!r}"
                )
            name, schema, payload = codec.encode(event)
            text = codec.canonical(payload).decode()
            values = (position, stream, version, name, schema, text, actor, idempotency_key)
            unhashed = Recorded(*values, recorded_at, prev, "")
            digest = codec.chain_hash(prev, unhashed.hashed())
            rows.append(Recorded(*values, recorded_at, prev, digest))
            prev = digest
        if rows:
            try:
                # Straight to the driver: SQLAlchemy's per-row parameter handling cost
                # more than the insert itself (bench.store).
                sql = _INSERT_SQL.format("?" if conn.dialect.paramstyle == "qmark" else "%s")
                conn.exec_driver_sql(sql, [tuple(getattr(r, c) for c in _COLUMNS) for r in rows])
            except sa.exc.IntegrityError:
                # A writer that slipped past the check (no lock): the key still holds.
                raise ConcurrencyError(stream, expected_version, -1) from None
        return rows

    # -- reading --------------------------------------------------------------------

    def read(self, stream: str, after_version: int = 0) -> list[Recorded]:
        with self.engine.connect() as conn:
            result = conn.execute(
                sa.select(events_table)
                .where(events_table.c.stream == stream, events_table.c.version > after_version)
                .order_by(events_table.c.version)
            )
            return [Recorded(**row._mapping) for row in result]

    def load(self, stream: str, after_version: int = 0) -> list[Event]:
        """The stream's events, decoded; bad stored data fails loudly."""
        with self.engine.connect() as conn:
            result = conn.execute(
                sa.select(
                    events_table.c.position,
                    events_table.c.type,
                    events_table.c.schema_version,
                    events_table.c.version,
                    events_table.c.payload,
                )
                .where(events_table.c.stream == stream, events_table.c.version > after_version)
                .order_by(events_table.c.version)
            )
            return decode_rows(result)

    def read_all(
        self, after_position: int = 0, limit: int = 1000, conn: sa.Connection | None = None
    ) -> list[Recorded]:
        """Events of every stream after `after_position`, in order: how readers tail."""
        query = (
            sa.select(events_table)
            .where(events_table.c.position > after_position)
            .order_by(events_table.c.position)
            .limit(limit)
        )
        if conn is not None:
            return [Recorded(**row._mapping) for row in conn.execute(query)]
        with self.engine.connect() as own:
            return [Recorded(**row._mapping) for row in own.execute(query)]

    def stream_version(self, conn: sa.Connection, stream: str) -> int:
        """The stream's version as this transaction sees it."""
        return int(
            conn.execute(
                sa.select(sa.func.coalesce(sa.func.max(events_table.c.version), 0)).where(
                    events_table.c.stream == stream
                )
            ).scalar_one()
        )

    def version(self, stream: str) -> int:
        with self.engine.connect() as conn:
            return self.stream_version(conn, stream)

    def verify(self) -> Iterator[str]:
        """Recompute every stream's hash chain; yield a line per event that does not
        match (the first of each broken stream), naming its position."""
        heads: dict[str, tuple[int, str]] = {}
        broken: set[str] = set()
        after = 0
        while True:
            batch = self.read_all(after, limit=5000)
            if not batch:
                return
            for row in batch:
                after = row.position
                if row.stream in broken:
                    continue
                version, prev = heads.get(row.stream, (0, GENESIS))
                problem = None
                if row.version != version + 1:
                    problem = f"version {row.version} follows {version}"
                elif row.prev_hash != prev:
                    problem = "its previous hash is not the hash of the event before it"
                elif codec.chain_hash(prev, row.hashed()) != row.hash:
                    problem = "its hash does not match its contents"
                if problem is not None:
                    broken.add(row.stream)
                    yield f"position {row.position} ({row.stream} v{row.version}): {problem}"
                heads[row.stream] = (row.version, row.hash)


# The statements `append` runs, built once: building a statement costs more than
# running it from SQLAlchemy's compiled cache.
_LOCK = sa.text("SELECT pg_advisory_xact_lock(:k)")
_HEAD = (
    sa.select(events_table.c.version, events_table.c.hash)
    .where(events_table.c.stream == sa.bindparam("stream"))
    .order_by(events_table.c.version.desc())
    .limit(1)
)
_LAST_POSITION = sa.select(sa.func.coalesce(sa.func.max(events_table.c.position), 0))
_COLUMNS = Recorded.__slots__
_INSERT_SQL = (
    f"INSERT INTO events ({', '.join(_COLUMNS)}) VALUES ({', '.join(['{0}'] * len(_COLUMNS))})"
)
