"""A write stuck behind another writer is answered 503 `busy`, on both databases."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.api import create_app
from ledger.books.book import Book
from ledger.commands import Role
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.schema import commands, events, postings
from ledger.web.tokens import create
from tests.signing import SIGNER


def _counts(engine: sa.Engine) -> list[int]:
    with engine.connect() as conn:
        return [
            conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (events, postings, commands)
        ]


def test_a_write_behind_a_long_writer_is_503_busy_and_writes_nothing(database_url: str) -> None:
    engine = db.make_engine(database_url, lock_timeout=0.3)
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    app = create_app(book=Book(store), TESTING=True)
    auth = {"Authorization": f"Bearer {create(engine, Role.SETTER, 'bank')}"}
    client = app.test_client()
    assert client.post("/players", json={"name": "ann"}, headers=auth).status_code == 201
    other = EventStore(db.make_engine(database_url), signer=SIGNER)
    try:
        before = _counts(engine)
        with other.transaction():  # another writer holds the append lock (a rebuild, ...)
            answer = client.post(
                "/players/ann/deposits",
                json={"amount": 100},
                headers={**auth, "Idempotency-Key": "k1"},
            )
        assert answer.status_code == 503, answer.get_json()
        assert answer.headers["Retry-After"] == "1"
        assert answer.mimetype == "application/problem+json"
        assert answer.get_json()["type"] == "urn:hazard:busy"
        assert _counts(engine) == before
        # The same request, retried with the same key, now goes through once.
        again = client.post(
            "/players/ann/deposits", json={"amount": 100}, headers={**auth, "Idempotency-Key": "k1"}
        )
        assert again.status_code == 201, again.get_json()
        balance = client.get("/players/ann/balance", headers=auth).get_json()
        assert balance["balance"] == 100
    finally:
        other.close()
        other.engine.dispose()
        store.close()
        engine.dispose()


# -- every write answered within the lock timeout, whatever holds the lock ---------------

TIMEOUT = 1.0
"""The lock timeout of the app under test (HAZARD_LOCK_TIMEOUT)."""
MARGIN = 0.6
"""What a refused write may take beyond it: well below a second wait of TIMEOUT, which
is what a write took when its waits (the queue's, then SQLite's) added up."""

HOLD = r"""
import fcntl, sqlite3, sys, time

kind, path, flock_for, hold_for = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
if kind == "writer":  # another process's write transaction, as a projections rebuild holds
    from ledger.store import db
    from ledger.store.eventstore import EventStore

    store = EventStore(db.make_engine("sqlite:///" + path))
    with store.transaction():
        print("held", flush=True)
        time.sleep(hold_for)
    sys.exit()
plain = sqlite3.connect(path, isolation_level=None)
if "begin-immediate" in kind:  # a plain connection that takes no turn in the queue
    plain.execute("BEGIN IMMEDIATE")
if "flock" in kind:  # another process's turn in the writers' queue
    queue = open(path + ".writers", "a")
    fcntl.flock(queue, fcntl.LOCK_EX)
print("held", flush=True)
if "flock" in kind and flock_for < hold_for:
    time.sleep(flock_for)
    fcntl.flock(queue, fcntl.LOCK_UN)  # and the next holder is SQLite's lock alone
    hold_for -= flock_for
time.sleep(hold_for)
"""


def _holding(kind: str, path: Path, flock_for: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, kind, str(path), str(flock_for), str(5 * TIMEOUT)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


@pytest.mark.parametrize(
    ("kind", "flock_for"),
    [
        ("flock", 5 * TIMEOUT),  # another process's turn, held 5 timeouts
        ("writer", 5 * TIMEOUT),  # another process's whole write transaction
        ("begin-immediate", 0),  # a plain sqlite3 connection's write lock
        ("flock+begin-immediate", 0.8 * TIMEOUT),  # the one, then the other, in turn
    ],
)
def test_every_write_is_answered_within_the_lock_timeout_whatever_holds_the_lock(
    tmp_path: Path, kind: str, flock_for: float
) -> None:
    """Three deposits, while another process holds the lock: each is refused
    503 busy (with Retry-After) within the lock timeout in all, having written
    nothing; none waits for the holder past it and then commits."""
    path = tmp_path / "hazard.sqlite3"
    engine = db.make_engine(f"sqlite:///{path}", lock_timeout=TIMEOUT)
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    app = create_app(book=Book(store), TESTING=True)
    auth = {"Authorization": f"Bearer {create(engine, Role.SETTER, 'bank')}"}
    assert app.test_client().post("/players", json={"name": "ann"}, headers=auth).status_code == 201
    before = _counts(engine)
    answers: list[tuple[int, float, Any]] = []

    def deposit(n: int) -> None:
        started = time.monotonic()
        answer = app.test_client().post(
            "/players/ann/deposits",
            json={"amount": 100},
            headers={**auth, "Idempotency-Key": f"k{n}"},
        )
        answers.append((answer.status_code, time.monotonic() - started, answer))

    holder = _holding(kind, path, flock_for)
    try:
        threads = [threading.Thread(target=deposit, args=(n,)) for n in range(3)]
        for thread in threads:  # each a little after the last, as requests come
            thread.start()
            time.sleep(0.2 * TIMEOUT)
        for thread in threads:
            thread.join(10 * TIMEOUT)
        assert len(answers) == 3
        for status, took, answer in answers:
            assert status == 503, (round(took, 2), answer.get_json())
            assert answer.get_json()["type"] == "urn:hazard:busy"
            assert answer.headers["Retry-After"] == "1"
            assert took < TIMEOUT + MARGIN, [round(a[1], 2) for a in answers]
        assert _counts(engine) == before
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    again = app.test_client().post(
        "/players/ann/deposits", json={"amount": 100}, headers={**auth, "Idempotency-Key": "k0"}
    )
    assert again.status_code == 201, again.get_json()
    store.close()
    engine.dispose()


def test_on_postgresql_the_one_wait_is_the_append_lock_bounded_by_lock_timeout(
    postgres_server: str,
) -> None:
    """PostgreSQL's writers wait in one place, the append lock, for at most its
    lock_timeout: three deposits behind a session holding it are each refused within
    the lock timeout, having written nothing."""
    from ledger.store.eventstore import APPEND_LOCK

    name = f"busy_{os.getpid()}"
    admin = sa.create_engine(postgres_server, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = postgres_server.replace("/postgres?", f"/{name}?")
    engine = db.make_engine(url, lock_timeout=TIMEOUT)
    try:
        db.upgrade(engine)
        store = EventStore(engine, signer=SIGNER)
        app = create_app(book=Book(store), TESTING=True)
        auth = {"Authorization": f"Bearer {create(engine, Role.SETTER, 'bank')}"}
        client = app.test_client()
        assert client.post("/players", json={"name": "ann"}, headers=auth).status_code == 201
        before = _counts(engine)
        answers: list[tuple[int, float]] = []

        def deposit(n: int) -> None:
            started = time.monotonic()
            answer = app.test_client().post(
                "/players/ann/deposits",
                json={"amount": 100},
                headers={**auth, "Idempotency-Key": f"k{n}"},
            )
            answers.append((answer.status_code, time.monotonic() - started))

        holder = sa.create_engine(url, poolclass=sa.NullPool).connect()
        try:
            holder.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": APPEND_LOCK})
            threads = [threading.Thread(target=deposit, args=(n,)) for n in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10 * TIMEOUT)
        finally:
            holder.close()
        assert [a[0] for a in answers] == [503] * 3
        assert all(took < TIMEOUT + MARGIN for _, took in answers), answers
        assert _counts(engine) == before
        store.close()
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
