"""A server started beside another on a new SQLite file waits for the journal mode.

Turning a file to WAL needs its exclusive lock, and SQLite answers BUSY at once,
without its busy handler, while another connection holds the write lock (waiting
there could deadlock). So a connection opened while another process writes the new
file's first rows failed with "database is locked" however long its lock timeout
(test_first_setter's three servers starting at once lost this race now and then)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.store import db


@contextlib.contextmanager
def _write_lock_held(path: Path, at_most: float) -> Iterator[None]:
    """A new rollback-journal file (as a new one is) whose write lock another
    connection holds, for `at_most` seconds or until the block ends."""
    holding, done = threading.Event(), threading.Event()

    def writer() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("CREATE TABLE t (x)")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (1)")
        holding.set()
        done.wait(at_most)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(5)
        yield
    finally:
        done.set()
        thread.join()


def test_a_connection_waits_for_the_write_lock_to_turn_the_file_to_wal(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    with _write_lock_held(path, at_most=0.3):
        engine = db.make_engine(f"sqlite:///{path}", lock_timeout=5)
        try:
            with engine.connect() as conn:
                assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
        finally:
            engine.dispose()


def test_a_lock_held_past_the_timeout_still_refuses(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    with _write_lock_held(path, at_most=5):
        engine = db.make_engine(f"sqlite:///{path}", lock_timeout=0.2)
        try:
            with pytest.raises(sa.exc.OperationalError, match="locked"):
                engine.connect().close()
        finally:
            engine.dispose()
