"""The event store's guarantees, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.store import db
from ledger.store.eventstore import GENESIS, Busy, ConcurrencyError, CorruptEvent, EventStore
from tests.signing import SIGNER

STREAM = "table:1"


def opened() -> tuple[hz.TableState, list[hz.Event]]:
    events = hz.open_table(hz.BUILTIN["english"], hz.Limits(min_stake=10))
    return hz.fold(events), events


def append(store: EventStore, stream: str, expected: int, events: list[hz.Event]) -> None:
    with store.transaction() as conn:
        store.append(conn, stream, expected, events, actor="setter")


def test_appended_events_load_back_equal(store: EventStore) -> None:
    state, events = opened()
    append(store, STREAM, 0, events)
    seated = hz.seat(state, "ann")
    append(store, STREAM, 1, seated)
    assert store.load(STREAM) == [*events, *seated]
    assert hz.fold(store.load(STREAM)) == hz.fold(seated, state)
    assert store.version(STREAM) == 2


def test_a_stale_expected_version_conflicts_and_writes_nothing(store: EventStore) -> None:
    state, events = opened()
    append(store, STREAM, 0, events)
    append(store, STREAM, 1, hz.seat(state, "ann"))
    with pytest.raises(ConcurrencyError) as info:
        append(store, STREAM, 1, hz.seat(state, "bob"))
    assert info.value.actual == 2
    assert [r.version for r in store.read(STREAM)] == [1, 2]
    assert hz.fold(store.load(STREAM)).seats == ("ann",)


def test_the_database_refuses_update_and_delete(store: EventStore, engine: sa.Engine) -> None:
    _, events = opened()
    append(store, STREAM, 0, events)
    for statement in ("UPDATE events SET actor = 'mallory'", "DELETE FROM events"):
        with pytest.raises(sa.exc.DatabaseError, match="immutable"), engine.begin() as conn:
            conn.exec_driver_sql(statement)
    assert store.read(STREAM)[0].actor == "setter"


def test_each_stream_is_a_hash_chain(store: EventStore) -> None:
    state, events = opened()
    append(store, STREAM, 0, events)
    append(store, STREAM, 1, hz.seat(state, "ann"))
    append(store, "table:2", 0, opened()[1])
    first, second = store.read(STREAM)
    assert first.prev_hash == GENESIS
    assert second.prev_hash == first.hash
    assert store.read("table:2")[0].prev_hash == GENESIS
    assert list(store.verify()) == []


def test_verify_names_the_first_event_that_does_not_match(
    store: EventStore, engine: sa.Engine
) -> None:
    state, events = opened()
    append(store, STREAM, 0, events)
    append(store, STREAM, 1, hz.seat(state, "ann"))
    # Tamper behind the triggers' back, as someone with the database file could.
    with engine.begin() as conn:
        _drop_immutability(conn)
        conn.exec_driver_sql(
            """UPDATE events SET payload = '{"player":"eve"}' WHERE position = 2"""
        )
    problems = list(store.verify())
    assert len(problems) == 1
    assert problems[0].startswith("position 2 (table:1 v2)")
    assert "hash does not match" in problems[0]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("payload", "not json", "payload is not JSON"),
        ("type", "DiceExploded", "unknown event type"),
        ("schema_version", 99, "schema version 99"),
        ("payload", json.dumps({"wrong": 1}), "payload has fields"),
    ],
)
def test_bad_stored_data_fails_loudly_naming_the_position(
    store: EventStore, engine: sa.Engine, column: str, value: object, message: str
) -> None:
    state, events = opened()
    append(store, STREAM, 0, events)
    append(store, STREAM, 1, hz.seat(state, "ann"))
    with engine.begin() as conn:
        _drop_immutability(conn)
        conn.execute(sa.text(f"UPDATE events SET {column} = :v WHERE position = 2"), {"v": value})
    with pytest.raises(CorruptEvent, match=message) as info:
        store.load(STREAM)
    assert info.value.position == 2
    assert "position 2" in str(info.value)


def test_concurrent_writers_never_let_a_tailing_reader_skip(store: EventStore) -> None:
    """Positions become visible in order: a reader tailing 'after P' sees every one."""
    writers, appends = 4, 15
    done = threading.Event()
    seen: list[int] = []

    def write(n: int) -> None:
        stream = f"table:w{n}"
        _, events = opened()
        append(store, stream, 0, events)
        state = hz.fold(events)
        for i in range(appends):
            new = hz.seat(state, f"p{i}")
            append(store, stream, state.version, new)
            state = hz.fold(new, state)

    def tail() -> None:
        after = 0
        while True:
            finished = done.is_set()
            for row in store.read_all(after):
                seen.append(row.position)
                after = row.position
            if finished:
                return

    reader = threading.Thread(target=tail)
    reader.start()
    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    reader.join()
    total = writers * (appends + 1)
    assert seen == list(range(1, total + 1))


def test_the_schema_is_current_after_upgrade_and_behind_before(database_url: str) -> None:
    eng = db.make_engine(database_url)
    with pytest.raises(db.SchemaBehind, match="hazard db upgrade"):
        db.require_current(eng)
    db.upgrade(eng)
    db.require_current(eng)
    eng.dispose()


def _drop_immutability(conn: sa.Connection) -> None:
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("DROP TRIGGER events_refuse_update")
        conn.exec_driver_sql("DROP TRIGGER events_refuse_delete")
    else:
        conn.exec_driver_sql("DROP TRIGGER events_refuse_update_delete ON events")


def test_a_server_database_behind_the_code_refuses_to_start(database_url: str) -> None:
    from ledger.bootstrap import open_book

    if database_url.startswith("sqlite"):
        book = open_book(database_url)  # the embedded default upgrades itself
        db.require_current(book.store.engine)
        book.store.engine.dispose()
        return
    with pytest.raises(db.SchemaBehind, match="run `hazard db upgrade`"):
        open_book(database_url)


def test_sqlite_runs_durable_wal_with_a_busy_timeout(tmp_path: object) -> None:
    eng = db.make_engine(f"sqlite:///{tmp_path}/d.sqlite3")
    with eng.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == db.BUSY_TIMEOUT_MS
    eng.dispose()


def test_sqlites_wal_is_cut_back_once_a_long_reader_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite checkpoints its WAL no further than its oldest reader, so a long read
    lets it grow while others write; once the reader is gone, the next checkpoint's
    restart cuts the file back (journal_size_limit) rather than leave it that size."""
    monkeypatch.setattr(db, "WAL_KEPT_BYTES", 64 * 1024, raising=False)
    path = tmp_path / "h.sqlite3"
    eng = db.make_engine(f"sqlite:///{path}")
    db.upgrade(eng)
    store = EventStore(eng, signer=SIGNER)
    wal = Path(f"{path}-wal")
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM events").fetchall()  # a read that stays open
    _, events = opened()
    n = 0
    while wal.stat().st_size < 6 * 1024 * 1024:  # past an automatic checkpoint (1,000 pages)
        n += 1
        append(store, f"table:{n}", 0, events)
    grown = wal.stat().st_size
    reader.rollback()
    reader.close()
    for _ in range(3):  # a checkpoint that now completes, then a write that starts over
        n += 1
        append(store, f"table:{n}", 0, events)
    assert wal.stat().st_size <= 256 * 1024 < grown
    store.close()
    eng.dispose()


# -- the write connections kept between transactions ---------------------------------


def _driver_connection(store: EventStore) -> object:
    """The driver connection the next write transaction runs on."""
    with store.transaction() as conn:
        return conn.connection.dbapi_connection


def test_a_refused_write_keeps_its_connection_and_a_failed_one_does_not(
    store: EventStore,
) -> None:
    state, events = opened()
    append(store, STREAM, 0, events)
    first = _driver_connection(store)
    with pytest.raises(ConcurrencyError):
        append(store, STREAM, 0, hz.seat(state, "ann"))
    assert _driver_connection(store) is first  # the refusal rolled back; all is well
    with pytest.raises(RuntimeError), store.transaction():
        raise RuntimeError("something unexpected")
    assert _driver_connection(store) is not first  # it might be broken: not reused
    append(store, STREAM, 1, hz.seat(state, "ann"))
    assert store.version(STREAM) == 2


def test_a_kept_connection_the_server_dropped_is_replaced_unseen(
    store: EventStore, database_url: str
) -> None:
    """A server restart between two writes costs the second one nothing."""
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has no server to drop a connection")
    state, events = opened()
    append(store, STREAM, 0, events)
    with store.transaction() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    admin = sa.create_engine(database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as other:
        assert other.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})").scalar_one()
    admin.dispose()
    append(store, STREAM, 1, hz.seat(state, "ann"))
    assert store.version(STREAM) == 2


def test_loading_leaves_the_garbage_collector_as_it_found_it(store: EventStore) -> None:
    """Loads hold the cyclic collector off while they decode; it must come back on,
    and stay off for a caller who had turned it off."""
    import gc

    _, events = opened()
    append(store, STREAM, 0, events)
    assert gc.isenabled()
    assert store.load(STREAM) == events
    assert gc.isenabled()
    gc.disable()
    try:
        assert store.load(STREAM) == events
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_concurrent_loads_resume_the_collector_when_the_last_ends() -> None:
    import gc

    from ledger.store.eventstore import _collector_paused

    assert gc.isenabled()
    first, second = _collector_paused(), _collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second load is still decoding
    second.__exit__(None, None, None)
    assert gc.isenabled()


# -- a write that waits too long for the append lock ------------------------------------


def test_a_write_that_waits_out_the_lock_timeout_is_busy_and_writes_nothing(
    database_url: str,
) -> None:
    """Another writer holds the append lock (here a second store's open transaction,
    as `hazard projections rebuild` would): a write gives up after the lock timeout
    with Busy, not a driver error and not a wait without end, and writes nothing. Its
    kept connection is not reused half-begun: the next write succeeds."""
    eng = db.make_engine(database_url, lock_timeout=0.3)
    db.upgrade(eng)
    store, other = (
        EventStore(eng, signer=SIGNER),
        EventStore(db.make_engine(database_url), signer=SIGNER),
    )
    state, events = opened()
    append(store, STREAM, 0, events)  # the store now keeps a write connection
    try:
        with other.transaction():  # holds the append lock
            for _ in range(2):  # on the kept connection, then on a new one
                started = time.monotonic()
                with pytest.raises(Busy, match="busy"):
                    append(store, STREAM, 1, hz.seat(state, "ann"))
                assert 0.2 < time.monotonic() - started < 5
        append(store, STREAM, 1, hz.seat(state, "ann"))
        assert store.version(STREAM) == 2
        assert len(store.read_all()) == 2
    finally:
        store.close()
        other.close()
        eng.dispose()
        other.engine.dispose()


def test_the_lock_timeout_is_set_on_both_databases(database_url: str) -> None:
    eng = db.make_engine(database_url, lock_timeout=1.5)
    with eng.connect() as conn:
        if database_url.startswith("sqlite"):
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1500
        else:
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == "1500ms"
    eng.dispose()
    assert db.default_lock_timeout() == db.LOCK_TIMEOUT_S == 10


def test_a_write_that_waited_its_turn_gives_sqlite_only_what_is_left(tmp_path: Path) -> None:
    """The busy timeout of a write's BEGIN IMMEDIATE is what its turn left it
    (db.begin_within); the next transaction on the connection, a read or a write that
    did not wait, has the whole lock timeout again."""
    eng = db.make_engine(f"sqlite:///{tmp_path}/d.sqlite3", lock_timeout=2)

    def busy(conn: sa.Connection) -> int:
        return int(conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one())

    with eng.connect().execution_options(writes=True) as conn:
        written_on = conn.connection.dbapi_connection
        db.begin_within(conn, 0.25)
        with conn.begin():
            assert busy(conn) == 250
        with conn.begin():
            assert busy(conn) == 2000
        db.begin_within(conn, -1)  # its time already spent: takes the lock only if free
        with conn.begin():
            assert busy(conn) == 0
    with eng.connect() as conn, conn.begin():  # a read, on the same connection
        assert conn.connection.dbapi_connection is written_on
        assert busy(conn) == 2000
    eng.dispose()
