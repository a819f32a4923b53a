"""bench.tenfold's log (a seeded log grown by copies of itself, appended through the
service's unit of work) is one the service could have written: its export passes the
offline check (`hazard verify FILE`: every hash, chain, seal, checkpoint and signature,
and the referee's replay of every table), the import takes it, and the log check on
the database (`hazard verify`) and the deep check (every read model replayed from the
events and compared) find nothing. Unlike bench.grown's copies, which keep the seeded
log's hashes and which the log check refuses. SQLite: the bench grows an SQLite file."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from bench.seed import exported, key_for, seeded
from bench.tenfold import grow
from ledger.books import deep
from ledger.exports import offline, restore
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log import check
from ledger.store.log.keys import load_signer

TABLES = "SELECT count(DISTINCT stream) FROM events WHERE stream LIKE 'table:%'"


def _scalar(path: Path, sql: str) -> int:
    engine = db.make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            return int(conn.exec_driver_sql(sql).scalar_one())
    finally:
        engine.dispose()


def test_a_tenfold_log_verifies_imports_and_is_what_its_events_make(tmp_path: Path) -> None:
    base = seeded(600, tmp_path, export=False)
    n, tables = _scalar(base.path, "SELECT max(position) FROM events"), _scalar(base.path, TABLES)
    grown = tmp_path / "grown.sqlite3"
    # Several commits a copy (batch 200), the last copy stopped part of the way.
    total, parts = grow(base.path, grown, 3 * n + n // 2, batch=200)
    assert total >= 3 * n + n // 2 and parts == 4
    assert _scalar(grown, "SELECT max(position) FROM events") == total
    assert _scalar(grown, "SELECT count(*) FROM events WHERE stream = 'table:t0001-x2'") > 0
    assert tables < _scalar(grown, TABLES) <= parts * tables
    # The copies' events are new ones, hashed and chained where they stand.
    assert _scalar(grown, "SELECT count(DISTINCT hash) FROM events") == total

    key = key_for(base.path)
    engine = db.make_engine(f"sqlite:///{grown}")
    try:
        checked = check.verify(engine, load_signer(key).verifier)
        assert checked.ok, checked.report
        store = EventStore(engine)
        assert [str(d) for d in deep.differences(store)] == []
    finally:
        engine.dispose()

    # bench.seed's export of it (what bench.exports and bench.verify read), checked
    # offline against the log's key and imported.
    copy = tmp_path / "copy.sqlite3"
    grown.rename(copy)
    key.rename(key_for(copy))
    verifier = load_signer(key_for(copy)).verifier
    with open(exported(copy), "rb") as f:
        verified = offline.verify(f, key=verifier)
    assert (verified.first, verified.last, verified.events) == (1, total, total)
    assert verified.tables == _scalar(copy, TABLES)
    target = db.make_engine(f"sqlite:///{tmp_path / 'imported.sqlite3'}")
    try:
        db.upgrade(target)
        with open(exported(copy), "rb") as f:
            restore.restore(target, f, key=verifier)
        with target.connect() as conn:
            imported = conn.execute(sa.text("SELECT max(position) FROM events")).scalar_one()
        assert imported == total
    finally:
        target.dispose()
