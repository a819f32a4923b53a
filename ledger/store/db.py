"""Connecting to the database and keeping its schema current.

SQLite is the embedded default; PostgreSQL is reached with
DATABASE_URL=postgresql+psycopg://... . Either way the schema comes from the Alembic
migrations in migrations/.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
DEFAULT_URL = "sqlite:///hazard.sqlite3"
LOCK_TIMEOUT_ENV = "HAZARD_LOCK_TIMEOUT"
LOCK_TIMEOUT_S = 10
"""How long a write waits for another writer before it gives up as busy (503): well
below gunicorn's worker timeout (ledger.api.server.WORKER_TIMEOUT_S), so that a
waiting request is answered rather than its worker killed."""
BUSY_TIMEOUT_MS = LOCK_TIMEOUT_S * 1000
WAL_KEPT_BYTES = 64 * 1024 * 1024
"""What SQLite's WAL file is cut back to when it starts over after a checkpoint
(journal_size_limit). A checkpoint goes no further than the oldest reader, so a long
read lets the WAL grow while others write; without a limit the file keeps that size
for good. Everyday writing keeps it to a few MB (a checkpoint every 1,000 pages)."""


class BadSetting(ValueError):
    """A setting from the environment that cannot be used, saying which."""


class NoDatabase(RuntimeError):
    """An SQLite file that is not there, where a command needs one that is."""


def require_exists(url: str) -> None:
    """Refuse an SQLite URL whose file is not there, saying which path was looked at;
    opening it would make an empty database in its place. Other databases (and an
    in-memory SQLite) are not files: connecting to them says whether they exist."""
    parsed = sa.engine.make_url(url)
    where = sqlite_file(parsed)
    if where is not None and not where.exists():
        raise NoDatabase(
            f"no database at {where} ({parsed.render_as_string(hide_password=True)}): "
            "run `hazard db upgrade` to make it there, or point DATABASE_URL (or "
            "--database-url) at the one you mean"
        )


def sqlite_file(url: str | sa.URL) -> Path | None:
    """The file an SQLite URL names, made absolute; None for another database, or an
    SQLite that is no plain file (in memory, or a URI)."""
    parsed = sa.engine.make_url(url)
    path = parsed.database
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:":
        return None
    if path.startswith("file:") or parsed.query.get("uri"):
        return None
    return Path(path).absolute()


class SchemaBehind(RuntimeError):
    """The database's schema is older than this code."""


def database_url() -> str:
    return os.environ.get("DATABASE_URL", DEFAULT_URL)


def default_lock_timeout() -> float:
    """The lock timeout in seconds: HAZARD_LOCK_TIMEOUT, or 10."""
    text = os.environ.get(LOCK_TIMEOUT_ENV)
    if not text:
        return LOCK_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1
    if not 0 < seconds < 3600:
        raise BadSetting(f"{LOCK_TIMEOUT_ENV} is a number of seconds above 0, not {text!r}")
    return seconds


def make_engine(
    url: str | None = None, lock_timeout: float | None = None, **kwargs: Any
) -> sa.Engine:
    """The engine for `url`, whose connections wait at most `lock_timeout` seconds
    (default: `default_lock_timeout()`) for a lock another connection holds."""
    url = url or database_url()
    seconds = default_lock_timeout() if lock_timeout is None else lock_timeout
    wait_ms = round(1000 * seconds)
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"timeout": wait_ms / 1000}, **kwargs)
        _sqlite_durability(engine, wait_ms)
    else:
        engine = sa.create_engine(url, pool_pre_ping=True, **kwargs)
        _postgres_lock_timeout(engine, wait_ms)
    _lock_timeouts[engine] = seconds
    return engine


_lock_timeouts: weakref.WeakKeyDictionary[sa.Engine, float] = weakref.WeakKeyDictionary()


def lock_timeout(engine: sa.Engine) -> float:
    """How long `engine`'s connections wait for a lock (`make_engine`'s lock_timeout)."""
    return _lock_timeouts.get(engine, LOCK_TIMEOUT_S)


def _postgres_lock_timeout(engine: sa.Engine, wait_ms: int) -> None:
    """Every session waits at most `wait_ms` for a lock (the append lock above all),
    then fails with lock_not_available (55P03), which the store reports as Busy."""

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(f"SET lock_timeout = {int(wait_ms)}")
        dbapi_connection.commit()  # or the pool's reset on return would roll it back


def _turn_to_wal(cursor: Any, wait_ms: int) -> None:
    """`PRAGMA journal_mode=WAL`, tried again until the lock timeout while the file is
    busy. Turning a file to WAL needs its exclusive lock, and SQLite answers BUSY at
    once, without the busy handler, while another connection holds the write lock
    (waiting there could deadlock): a server started beside another on a new file
    failed with "database is locked" however long its timeout. A file already in WAL
    (every file after its first connection) answers at once."""
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def _sqlite_durability(engine: sa.Engine, wait_ms: int) -> None:
    """WAL, fsync on every commit, and writers that take the lock up front.

    pysqlite's own transaction handling defers BEGIN and so lets two writers both read
    and then one fail to upgrade its lock; BEGIN IMMEDIATE takes the write lock at the
    start, so the busy timeout queues writers instead. A connection opened with
    `execution_options(writes=True)` begins that way; readers begin deferred, so WAL
    lets them read while a writer writes.
    """

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        _turn_to_wal(cursor, wait_ms)
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={int(wait_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA journal_size_limit={int(WAL_KEPT_BYTES)}")
        cursor.close()
        record.info[_BUSY_MS] = wait_ms

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        writes = connection.get_execution_options().get("writes", False)
        # On the driver's own cursor: through SQLAlchemy's execute, this one statement
        # cost more than a whole raw transaction (bench.store).
        cursor = connection.connection.cursor()
        # The busy timeout this transaction waits: for a write's BEGIN IMMEDIATE, what
        # `begin_within` left it, else the whole lock timeout, as for a read (on a
        # connection a write left with less). Set only when it differs from the
        # connection's, so that a write that did not wait its turn sets nothing.
        info = connection.info
        wait = info.pop(_BEGIN_WITHIN_MS, wait_ms) if writes else wait_ms
        if info.get(_BUSY_MS) != wait:
            cursor.execute(f"PRAGMA busy_timeout={int(wait)}")
            info[_BUSY_MS] = wait
        cursor.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
        cursor.close()


_BUSY_MS = "hazard_busy_ms"
"""A connection's info: the busy timeout it has now, in ms."""
_BEGIN_WITHIN_MS = "hazard_begin_within_ms"
"""A connection's info: the busy timeout its next BEGIN IMMEDIATE is to wait, in ms."""


def begin_within(connection: sa.Connection, seconds: float) -> None:
    """Have the next write transaction begun on `connection` (SQLite's BEGIN
    IMMEDIATE) wait at most `seconds` for the write lock, rather than the whole lock
    timeout: what is left of a write's time after its turn in ledger.store.writers.
    At 0 it takes the lock only if it stands free."""
    connection.info[_BEGIN_WITHIN_MS] = max(int(seconds * 1000), 0)


def _alembic_config(connection: sa.Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


UPGRADE_LOCK = 0x48415A555047  # "HAZUPG": the advisory lock that orders upgrades


def upgrade(engine: sa.Engine) -> None:
    """Apply every migration the database has not had (`hazard db upgrade`).

    One upgrade at a time: two servers started at once on a new SQLite file both
    upgrade it, and the second must wait and find the work done rather than fail with
    "database is locked". So the transaction takes the write lock up front (BEGIN
    IMMEDIATE on SQLite, an advisory lock on PostgreSQL) before it reads the revision.
    """
    with serialised(engine, UPGRADE_LOCK) as connection:
        command.upgrade(_alembic_config(connection), "head")


@contextlib.contextmanager
def serialised(engine: sa.Engine, key: int) -> Iterator[sa.Connection]:
    """A write transaction that runs alone among those asking for `key`: BEGIN
    IMMEDIATE on SQLite (the whole file's write lock, whatever the key), the
    transaction-scoped advisory lock `key` on PostgreSQL. Either waits at most the
    lock timeout."""
    with engine.connect().execution_options(writes=True) as connection, connection.begin():
        if connection.dialect.name == "postgresql":
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
        yield connection


@contextlib.contextmanager
def short_read(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A read transaction that sees one state of the database (REPEATABLE READ on
    PostgreSQL; SQLite's read transaction does already), to be ended at once: a long
    read (an export) is done a page at a time, each page in one of these, and holds
    nothing between them, neither a snapshot that keeps SQLite's WAL from being
    checkpointed nor a PostgreSQL transaction that holds back its xmin horizon."""
    with engine.connect() as connection, connection.begin():
        snapshot(connection)
        yield connection


def snapshot(connection: sa.Connection) -> None:
    """Make the transaction just begun on `connection` read one state throughout, so
    that a write committed meanwhile (its events, hashes and checkpoint) is seen whole
    or not at all: PostgreSQL reads each statement afresh unless told; SQLite's read
    transaction already keeps the state of its first read."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


@functools.cache
def code_head() -> str:
    """The newest migration this code has. Read from migrations/ once per process: the
    files do not change under a running service, and /readyz asks on every probe."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None
    return head


def schema_status(engine: sa.Engine) -> tuple[str | None, str]:
    """(the database's revision, the code's head revision)."""
    with engine.connect() as connection:
        current = MigrationContext.configure(connection).get_current_revision()
    return current, code_head()


def require_current(engine: sa.Engine) -> None:
    """Refuse to run against a schema that is behind, saying what to run."""
    current, head = schema_status(engine)
    if current != head:
        raise SchemaBehind(
            f"the database schema is at {current or 'nothing'}, this code needs {head}: "
            "run `hazard db upgrade`"
        )


COPY_ROWS = 100
"""Rows from which PostgreSQL is sent COPY rather than INSERTs: three times as fast for
a restore's batches of events (bench.exports), and no gain for an append's few rows."""


def insert_rows(conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Insert `rows` (dicts with the same keys) into `table` in `conn`'s transaction,
    as `insert_tuples` does."""
    if not rows:
        return
    columns = list(rows[0])
    insert_tuples(conn, table.name, columns, [tuple([row[c] for c in columns]) for row in rows])


def insert_tuples(
    conn: sa.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Insert `rows` (values of `columns`, in order) into `table` on the driver's own
    cursor, in `conn`'s transaction: one executemany (one execute for a single row,
    which spares psycopg a round trip), or on PostgreSQL a COPY for COPY_ROWS or more.
    SQLAlchemy's handling of each row's parameters cost more than the inserts
    themselves in a replay of a million events (bench.exports)."""
    if not rows:
        return
    names = ", ".join(columns)
    cursor = conn.connection.cursor()
    try:
        if conn.dialect.name == "postgresql" and len(rows) >= COPY_ROWS:
            with cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join([mark] * len(columns))})"
        if len(rows) == 1:
            cursor.execute(sql, rows[0])
        else:
            cursor.executemany(sql, rows)
    finally:
        cursor.close()


def driver_sql(conn: sa.Connection, sql: str) -> str:
    """`sql`, written with `?` marks, in the marks `conn`'s driver takes (psycopg: %s).
    The statements written so have no other `?` and no `%`."""
    return sql if conn.dialect.paramstyle == "qmark" else sql.replace("?", "%s")


def execute(conn: sa.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """Run one statement (written with `?` marks) on the driver's own cursor, in
    `conn`'s transaction: for the few statements every append runs, where SQLAlchemy
    building, caching and running them cost more than the database (bench.api)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(driver_sql(conn, sql), tuple(params))
    finally:
        cursor.close()


def fetch(conn: sa.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """Every row of `sql` (written with `?` marks) through the driver's own cursor, in
    `conn`'s transaction: for the long reads (the log check, exports), where
    SQLAlchemy's rows cost as much again as fetching them (bench.store)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(driver_sql(conn, sql), tuple(params))
        return list(cursor.fetchall())
    finally:
        cursor.close()
