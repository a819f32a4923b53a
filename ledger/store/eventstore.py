"""The event store: an append-only, hash-chained log on SQLAlchemy Core.

Guarantees live in the database where they can: (stream, version) is unique, which is
the optimistic concurrency check; triggers refuse UPDATE and DELETE on events, and an
event recorded earlier than the one before it. Appends are serialised (an advisory
lock on PostgreSQL, BEGIN IMMEDIATE on SQLite) so that global positions become visible
in order and a reader tailing "after position P" never skips one.

Time only goes forward: each append stamps its events with the later of its clock and
the last event's `recorded_at`, under the append lock, so that the times rise with the
positions whichever app server's clock wrote them (a time is then looked up, or a time
range exported, exactly). An append whose clock was behind says so: a row of
`clock_holds` in its transaction, a log line, and `EventStore.held` (the API counts it).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

import sqlalchemy as sa

from engine.errors import HazardError
from engine.events import Event
from ledger.store import codec, db, writers
from ledger.store.log import merkle
from ledger.store.log.heads import Heads
from ledger.store.log.keys import Signer
from ledger.store.schema import events as events_table
from ledger.store.vocabulary import StoredEvent

log = logging.getLogger("hazard.store")

GENESIS = "0" * 64
STREAM_VERSION = "SELECT version FROM events WHERE stream = ? ORDER BY version DESC LIMIT 1"
APPEND_LOCK = 0x48415A415244  # "HAZARD": the advisory lock key that orders appends


class Refused(Exception):
    """Base of the ledger's refusals: a command it turned down on purpose (a missing
    name, a stale version, an overdraft, a racing writer), having written nothing.

    A refusal is the ledger saying no, not the connection failing, so the write
    connection it was raised on is sound: `EventStore.transaction` rolls back and
    keeps it after a refusal (or a rule of the engine broken) and discards it after
    anything else.
    """


class StoreError(Exception):
    """Base of the store's faults: what it cannot do, rather than what it refuses."""


class ConcurrencyError(Refused):
    """The stream moved on since the writer read it: nothing was written."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r} is at version {actual}, not {expected} as expected")
        self.stream, self.expected, self.actual = stream, expected, actual


class Busy(StoreError):
    """Another writer held the append lock for longer than the lock timeout
    (ledger.store.db): nothing was written, and the same write may be tried again."""


def is_busy(exc: BaseException) -> bool:
    """Whether `exc` is the database giving up on a lock: SQLite's "database is
    locked" once its busy timeout ran out, PostgreSQL's lock_not_available (55P03)
    once lock_timeout did. Raw or wrapped by SQLAlchemy: SQLite's BEGIN IMMEDIATE
    runs on the driver's cursor (ledger.store.db), so its error arrives unwrapped."""
    orig = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
    if getattr(orig, "sqlstate", None) == "55P03":
        return True
    return type(orig).__name__ == "OperationalError" and "database is locked" in str(orig)


def _busy() -> Busy:
    return Busy(
        "the database is busy: another writer held it past the lock timeout; "
        "nothing was written, try again"
    )


class NoSigningKey(StoreError):
    """A write on a store that has no key to sign its checkpoint: every write hands out
    a signed checkpoint as its receipt, so without a key nothing is written."""


class CorruptEvent(StoreError):
    """A stored event this code cannot read: the position says which."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"event at position {position}: {reason}")
        self.position = position


class Recorded(NamedTuple):
    """An event as stored, with where, when and by whom. A named tuple, so that the
    row an append builds is the row it inserts."""

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
            "payload": codec.loads(self.payload),
            "actor": self.actor,
            "idempotency_key": self.idempotency_key,
            "recorded_at": self.recorded_at,
        }

    def hashed(self) -> bytes:
        """The bytes the hash covers (codec.frame): `document()` in canonical form,
        built around the stored payload text rather than by parsing and re-encoding it."""
        return codec.frame(codec.Quoted(), *self[:9])

    def event(self) -> Event:
        return decode_row(self)


class Known(Recorded):
    """A row whose event is at hand: the one an append made it from, or the one a
    verifier decoded (ledger.exports.restore). Every reader of an appended row (its
    postings, the table's views, the write's answer) asks for its event: `event()`
    gives that one, rather than decode the payload it was just encoded to."""

    _event: Event

    def event(self) -> Event:
        return self._event

    @classmethod
    def of(cls, row: Iterable[Any], event: StoredEvent) -> Known:
        known = cls._make(row)
        # Typed as the engine's, as codec.decode types every stored event: an account's
        # event or a seal is read the same way.
        known._event = cast(Event, event)
        return known


def decode_row(row: Any) -> Event:
    """The engine event in a stored row, or CorruptEvent naming its position."""
    try:
        payload = codec.loads(row.payload)
    except ValueError as exc:
        raise CorruptEvent(row.position, f"payload is not JSON ({exc})") from None
    try:
        return codec.decode(row.type, row.schema_version, row.version, payload)
    except codec.DecodeError as exc:
        raise CorruptEvent(row.position, str(exc)) from None


class _Slow(Exception):
    """A row the fast path leaves to `decode_row`."""


def decode_rows(
    rows: Iterable[tuple[str, int, int, str]], position_of: Callable[[int], int]
) -> list[Event]:
    """`decode_row` over (type, schema_version, version, payload) rows of one stream,
    faster; `position_of(version)` says where a row that fails is, for its error.

    For a row that codec.decode would accept, the fast path does the same work with
    less overhead: msgspec's JSON decoder (codec.loads, json.loads' value, six times
    faster), the field check as one set comparison, the special fields converted by
    codec's own functions, and the event built positionally. A table's history
    repeats itself (36 throws, a few stakes), so the fields decoded from a payload text
    are kept for the next row with the same text, when they are all immutable. Any
    other row (unknown type or schema version, a payload that is not an object of
    exactly the type's fields, a conversion or constructor that fails) goes through
    `decode_row`, which returns the same event or raises the same CorruptEvent.
    """
    decode = RowDecoder().fast
    out: list[Event] = []
    append = out.append
    for row in rows:
        name, schema, version, payload = row
        try:
            append(decode(name, schema, version, payload))
        except Exception:
            append(decode_row(_Row(position_of(version), *row)))
    return out


class RowDecoder:
    """`decode_rows`' fast path for rows that come one at a time (the offline check of
    an export decodes each event as it reads its line), keeping what it has learnt of
    each type, and the fields of up to _SEEN_PER_TYPE payload texts per type, between
    rows."""

    def __init__(self, seen: int | None = None) -> None:
        self._kinds: dict[str, tuple[type, int, dict[str, tuple[Any, ...]], codec.Plan]] = {}
        self._seen = _SEEN_PER_TYPE if seen is None else seen
        """Payload texts remembered per type (a million events' worth of settlements,
        each its own text, would otherwise fill it with texts seen once)."""

    def __call__(self, position: int, name: str, schema: int, version: int, payload: str) -> Event:
        """The event in a row, or CorruptEvent naming `position`, as `decode_row`."""
        try:
            return self.fast(name, schema, version, payload)
        except Exception:
            return decode_row(_Row(position, name, schema, version, payload))

    def fast(self, name: str, schema: int, version: int, payload: str) -> Event:
        """The event, or any exception for a row that needs `decode_row` to say why."""
        kind = self._kinds.get(name)
        if kind is None:
            plan = codec.decode_plan(name)
            if plan is None:
                raise _Slow
            kind = self._kinds[name] = (plan[0], plan[1], {}, plan)
        cls, schema_version, known, plan = kind
        if schema != schema_version:
            raise _Slow
        values = known.get(payload)
        if values is None:
            values = _decode_values(codec.loads, payload, plan)
            if len(known) < self._seen and _immutable(values):
                known[payload] = values
        event: Event = cls(version, *values)
        return event


def _decode_values(parse: Callable[[str], Any], payload: str, plan: codec.Plan) -> tuple[Any, ...]:
    """The event's fields after `version`, in order, from a payload text that is a
    JSON object of exactly the type's fields; _Slow (or the converter's error) if not."""
    _cls, _schema, fields, specials, order = plan
    data = parse(payload)
    if type(data) is not dict or data.keys() != fields:
        raise _Slow
    for f, convert in specials:
        data[f] = convert(data[f])
    return tuple([data[f] for f in order])


_SEEN_PER_TYPE = 4096
"""Payload texts remembered per event type while decoding one batch."""


def _immutable(values: tuple[Any, ...]) -> bool:
    """Hashable means nothing in it can change (lists and dicts are not), so one
    decoded value may serve every row with the same text."""
    try:
        hash(values)
    except TypeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class _Row:
    position: int
    type: str
    schema_version: int
    version: int
    payload: str


def _fetched(cursor: Any, size: int = 10_000) -> Iterator[tuple[str, int, int, str]]:
    """A cursor's rows, fetched a batch at a time: psycopg hands rows over one by one
    to an iterating caller, which cost a tenth of a replay (bench.store)."""
    while batch := cursor.fetchmany(size):
        yield from batch


_pauses = 0
_was_enabled = False
_pause_lock = threading.Lock()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a stream is decoded.

    Decoding allocates a tracked row and a tracked event per event, none of them in a
    cycle, and the collector's passes over them cost a fifth of a full replay
    (bench.store). Reference counting still frees everything as usual; the
    collector resumes when the last concurrent load ends, if it was running before
    the first began.
    """
    global _pauses, _was_enabled
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


def _discard(conn: sa.Connection) -> None:
    """Close a connection that may be broken, and keep it out of the pool too."""
    try:
        conn.invalidate()
    finally:
        conn.close()


def _close_all(connections: list[sa.Connection]) -> None:
    while connections:
        connections.pop().close()


def utc_now() -> str:
    """Now, as every `recorded_at` is written: `2026-11-23T14:02:11.123456Z`, UTC to the
    microsecond, one width (the year has four digits), so that text order is time order
    (migration 0013's trigger refuses any other form)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


Held = Callable[[str, str], None]
"""Told (the clock's reading, the time recorded instead) when an append held its clock
back."""


def opened(conn: sa.Connection, stream: str) -> bool:
    """Whether `stream` has its first event."""
    e = events_table.c
    first = sa.select(e.position).where(e.stream == stream, e.version == 1)
    return conn.execute(first).first() is not None


class EventStore:
    IDLE_WRITERS = 8
    """Write connections kept open between transactions (one per concurrent writer)."""

    def __init__(
        self,
        engine: sa.Engine,
        clock: Callable[[], str] = utc_now,
        signer: Signer | None = None,
        key_path: str | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.signer = signer
        """Signs each write's checkpoint (ledger.store.log.tree); without one, a write that
        appends is refused (NoSigningKey) and the store only reads."""
        self.key_path = key_path
        """Where the key was looked for, to say so when there is none."""
        self.frontier: merkle.Frontier | None = None
        """The tree's right edge at the size last committed (ledger.store.log.tree), so
        that the next append need not read it."""
        self.seals = True
        """Whether each write ends with its seal (ledger.store.log.sealing). Always, but
        in bench.tlog's baseline, which measures what the seals cost a write."""
        self.heads: Heads | None = None
        """The log's heads at the size last committed (ledger.store.log.sealing), for
        the next write's seal; a write takes them and hands them back once committed."""
        self.postgres = engine.dialect.name == "postgresql"
        # The statements run on the driver's cursor, in its parameter style.
        mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        self._head_sql = _HEAD_SQL.format(mark)
        self._insert_sql = _INSERT_SQL.format(mark)
        self._load_sql = _LOAD_SQL.format(mark)
        self._hold_sql = _HOLD_SQL.format(mark)
        self._idle: list[sa.Connection] = []
        self._finalizer = weakref.finalize(self, _close_all, self._idle)
        self._writers = writers.for_engine(engine)  # SQLite's: see ledger.store.writers
        self._lock_timeout = db.lock_timeout(engine)
        self.held: Held | None = None
        """Told when an append held its clock back (the API counts it in its metrics)."""
        self.wrote: Callable[[], None] | None = None
        """Told after each write that appended has committed (ledger.unit_of_work): the
        service writes what its log of significant events counted with it."""
        self.refused: Callable[[], None] | None = None
        """Told when a write is refused because the lock was not had in time (Busy):
        the service counts them into its log of significant events (ledger.commands.
        significant.Tally), a flood as one event."""

    def close(self) -> None:
        """Close the write connections kept open; the store opens new ones if used."""
        _close_all(self._idle)

    # -- writing --------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """A write transaction: everything appended in it commits, or none of it.

        The connection is kept open for the next transaction: checking one out of
        SQLAlchemy's pool and back cost ~45 us, half of a raw single-row commit on
        SQLite (bench.store). A refused command (`Refused`, or an engine error: a
        broken rule) rolls back and keeps it; any other failure (a store fault
        included) discards it, so that a broken connection is not handed out again.
        One the server dropped while it was kept (a restart) fails as the transaction
        begins, and is replaced there, once.
        """
        # Every wait for the lock spends from one deadline: the writers' queue, then
        # SQLite's busy handler with what is left (PostgreSQL's one wait, for the
        # append lock, is bounded by its lock_timeout).
        deadline = time.monotonic() + self._lock_timeout
        try:
            with self._turn(deadline) as waited:
                yield from self._transaction(deadline if waited else None)
        except writers.QueueTimeout as exc:
            self._refused()
            raise _busy() from exc
        except Busy:
            self._refused()
            raise

    def _refused(self) -> None:
        if self.refused is not None:
            self.refused()

    def _turn(self, deadline: float) -> AbstractContextManager[bool]:
        """On SQLite, this write's turn among the writers of the file, taken before
        its BEGIN IMMEDIATE and let go after its commit (ledger.store.writers)."""
        if self._writers is None:
            return nullcontext(False)
        return self._writers.turn(deadline)

    def _transaction(self, deadline: float | None) -> Iterator[sa.Connection]:
        """`deadline`: when the BEGIN must give up, if the turn took part of the time."""
        try:
            conn, tx = self._begin(deadline)
        except Exception as exc:
            if is_busy(exc):
                raise _busy() from exc
            raise
        try:
            with tx:
                yield conn
        except (Refused, HazardError):
            self._keep(conn)
            raise
        except BaseException as exc:
            _discard(conn)
            if is_busy(exc):  # a lock taken inside the transaction (a caller's own)
                raise _busy() from exc
            raise
        self._keep(conn)

    def _begin(self, deadline: float | None) -> tuple[sa.Connection, sa.RootTransaction]:
        """A transaction holding the append lock, on a kept connection or a new one.
        A connection whose begin failed is discarded, never kept: a failed BEGIN
        IMMEDIATE (busy) leaves SQLAlchemy's connection half-begun."""
        try:
            kept = self._idle.pop()  # atomic: each connection goes to one thread
        except IndexError:
            return self._begin_new(deadline)
        try:
            return self._begin_on(kept, deadline)
        except sa.exc.DBAPIError as exc:
            _discard(kept)
            if not exc.connection_invalidated:
                raise
            # The server dropped it while it was kept (a restart): a new one, once.
            return self._begin_new(deadline)
        except BaseException:
            _discard(kept)
            raise

    def _begin_new(self, deadline: float | None) -> tuple[sa.Connection, sa.RootTransaction]:
        conn = self.engine.connect()
        conn.execution_options(writes=True)
        try:
            return self._begin_on(conn, deadline)
        except BaseException:
            _discard(conn)
            raise

    def _begin_on(
        self, conn: sa.Connection, deadline: float | None
    ) -> tuple[sa.Connection, sa.RootTransaction]:
        if deadline is not None:
            db.begin_within(conn, deadline - time.monotonic())
        tx = conn.begin()
        if self.postgres:  # writers queue here, before they read what they check
            conn.execute(_LOCK, {"k": APPEND_LOCK})
            conn.info["hazard_locked"] = tx
        return conn, tx

    def _keep(self, conn: sa.Connection) -> None:
        if not conn.invalidated and len(self._idle) < self.IDLE_WRITERS:
            self._idle.append(conn)
        else:
            conn.close()

    def append(
        self,
        conn: sa.Connection,
        stream: str,
        expected_version: int,
        new_events: Sequence[Any],
        actor: str,
        idempotency_key: str | None = None,
        at: str | None = None,
    ) -> list[Recorded]:
        """Append `new_events` to `stream`, which must be at `expected_version`,
        recorded at `at` (the write's time, when it has one already) or now.

        Runs inside the caller's transaction `conn`, so that read models written in
        the same transaction commit with the events or not at all.
        """
        if self.postgres and conn.info.get("hazard_locked") is not conn.get_transaction():
            conn.execute(_LOCK, {"k": APPEND_LOCK})  # a caller's own transaction
        # Straight to the driver, in the caller's transaction: SQLAlchemy's statement
        # and parameter handling cost more than the statements themselves (bench.store).
        cursor = conn.connection.cursor()
        try:
            cursor.execute(self._head_sql, (stream,))
            position, last_at, head_version, head_hash = cast(
                tuple[Any, Any, Any, Any], cursor.fetchone()
            )
            position = position or 0
            version, prev = (head_version, head_hash) if head_version else (0, GENESIS)
            if version != expected_version:
                raise ConcurrencyError(stream, expected_version, version)
            # Never before the last event: this server's clock may be behind another's,
            # or stepped back (text order is time order: utc_now). A write's later
            # appends take its first one's time (`at`), already held so.
            clock = recorded_at = at if at is not None else self.clock()
            if last_at is not None and clock < last_at:
                recorded_at = last_at
            rows: list[Recorded] = []
            quoted = codec.Quoted()  # the texts the write's events share, quoted once
            frame, chain_hash, new_row = codec.frame, codec.chain_hash, tuple.__new__
            for event in new_events:
                position += 1
                version += 1
                if event.version != version:
                    raise StoreError(
                        f"event {type(event).__name__} is numbered {event.version}, "
                        f"but it would be version {version} of {stream!r}"
                    )
                name, schema, text = codec.payload_text(event)
                digest = chain_hash(
                    prev,
                    frame(quoted, position, stream, version, name, schema, text, actor,
                          idempotency_key, recorded_at),
                )  # fmt: skip
                # tuple.__new__ rather than Known(...): the named tuple's own __new__ is a
                # Python function, and a batched append spent 7% of its CPU building rows
                # (CPU time of 100-event appends on SQLite in memory; see the commit).
                row = new_row(Known, (position, stream, version, name, schema, text, actor,
                                      idempotency_key, recorded_at, prev, digest))  # fmt: skip
                row._event = event
                rows.append(row)
                prev = digest
            if rows:
                try:
                    if len(rows) == 1:  # psycopg's executemany costs an extra round trip
                        cursor.execute(self._insert_sql, rows[0])
                    else:
                        cursor.executemany(self._insert_sql, rows)
                except conn.dialect.loaded_dbapi.IntegrityError as exc:
                    if "recorded_at" in str(exc):  # the time trigger: a clock's bad text
                        raise StoreError(
                            f"the database refused the time {recorded_at!r}: {exc}"
                        ) from None
                    # A writer that slipped past the check (no lock): the key still holds.
                    raise ConcurrencyError(stream, expected_version, -1) from None
                if recorded_at is not clock:
                    self._held(cursor, rows[0].position, clock, recorded_at)
        finally:
            cursor.close()
        return rows

    def _held(self, cursor: Any, position: int, clock: str, recorded_at: str) -> None:
        """Record that the append at `position` held its clock back to `recorded_at`,
        the last event's time: in its transaction, in the log, and to `held`."""
        cursor.execute(self._hold_sql, (position, clock, recorded_at))
        log.warning(
            "the clock is behind the log: events from position %d recorded at %s, not at "
            "the clock's %s",
            position, recorded_at, clock,
            extra={"position": position, "clock": clock, "recorded_at": recorded_at},
        )  # fmt: skip
        if self.held is not None:
            self.held(clock, recorded_at)

    # -- reading --------------------------------------------------------------------

    def read(self, stream: str, after_version: int = 0) -> list[Recorded]:
        with self.engine.connect() as conn:
            result = conn.execute(
                sa.select(events_table)
                .where(events_table.c.stream == stream, events_table.c.version > after_version)
                .order_by(events_table.c.version)
            )
            return [Recorded(**row._mapping) for row in result]

    def load(
        self, stream: str, after_version: int = 0, through_version: int | None = None
    ) -> list[Event]:
        """The stream's events after `after_version` (through `through_version`, when
        given), decoded; bad stored data fails loudly."""
        last = LAST_VERSION if through_version is None else through_version
        with self.engine.connect() as conn:
            # The driver's rows as they come: SQLAlchemy's result rows cost as much
            # again as fetching them (bench.store).
            cursor = conn.connection.cursor()
            try:
                cursor.execute(self._load_sql, (stream, after_version, last))
                rows = _fetched(cursor)
                with _collector_paused():
                    return decode_rows(rows, lambda v: self._position(conn, stream, v))
            finally:
                cursor.close()

    def _position(self, conn: sa.Connection, stream: str, version: int) -> int:
        query = sa.select(events_table.c.position).where(
            events_table.c.stream == stream, events_table.c.version == version
        )
        return int(conn.execute(query).scalar_one())

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
        """The stream's version as this transaction sees it (0 before its first event)."""
        # An index probe (max(version) scans the stream on PostgreSQL), asked by every
        # write and most reads: on the driver's cursor, as SQLAlchemy's statement cost
        # several times the probe.
        head = db.fetch(conn, STREAM_VERSION, (stream,))
        return int(head[0][0]) if head else 0

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
_HEAD_SQL = (
    # One round trip: the last event's position and time, and the stream's head (none
    # yet: NULLs). Each is a single index probe; max(version) ... WHERE stream = ? is not
    # one on PostgreSQL, which aggregates over the whole stream.
    "SELECT last.position, last.recorded_at, head.version, head.hash"
    " FROM (SELECT 1 AS one) AS here"
    " LEFT JOIN (SELECT position, recorded_at FROM events ORDER BY position DESC LIMIT 1)"
    " AS last ON 1 = 1"
    " LEFT JOIN"
    " (SELECT version, hash FROM events WHERE stream = {0} ORDER BY version DESC LIMIT 1)"
    " AS head ON 1 = 1"
)
_HOLD_SQL = "INSERT INTO clock_holds (position, clock, recorded_at) VALUES ({0}, {0}, {0})"
LAST_VERSION = 2**31 - 1
"""The largest version a stream's `version` column holds (a 32-bit integer)."""
_LOAD_SQL = (
    "SELECT type, schema_version, version, payload FROM events"
    " WHERE stream = {0} AND version > {0} AND version <= {0} ORDER BY version"
)
_COLUMNS = Recorded._fields
_INSERT_SQL = (
    f"INSERT INTO events ({', '.join(_COLUMNS)}) VALUES ({', '.join(['{0}'] * len(_COLUMNS))})"
)
