"""One store test suite, run against SQLite and against a real PostgreSQL server.

The session starts PostgreSQL itself: initdb on a temporary cluster, listening only on
a Unix socket in that directory. A machine without PostgreSQL skips the PostgreSQL
half with the reason; .ci/run installs it so that CI never does.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger import db
from ledger.store import EventStore


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _as_postgres_user(cmd: list[str]) -> list[str]:
    """initdb refuses to run as root; CI runs as root, so drop to `postgres`."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL is not installed (no initdb): its half of the store tests skipped")
    base = Path(tempfile.mkdtemp(prefix="hazard-pg-"))
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")
    subprocess.run(
        _as_postgres_user([initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    options = f"-k {sock} -c listen_addresses='' -c fsync=off -c max_connections=50"
    subprocess.run(
        _as_postgres_user(
            [pg_ctl, "-D", str(data), "-o", options, "-w", "-l", str(base / "log"), "start"]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={sock}"
    finally:
        subprocess.run(
            _as_postgres_user([pg_ctl, "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)


_counter = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'hazard.sqlite3'}"
        return
    server = request.getfixturevalue("postgres_server")
    name = f"test_{os.getpid()}_{next(_counter)}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield server.replace("/postgres?", f"/{name}?")
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    eng = db.make_engine(database_url)
    db.upgrade(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def store(engine: sa.Engine) -> EventStore:
    return EventStore(engine)
