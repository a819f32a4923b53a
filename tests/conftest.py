"""Test-wide settings, and the databases every suite that stores runs against.

The session starts PostgreSQL itself: initdb on a temporary cluster, listening only on
a Unix socket in that directory. A machine without PostgreSQL skips the PostgreSQL
half with the reason; .ci/run installs it so that CI never does.

Hypothesis explores new examples on every local run, which is how it finds bugs; on
CI (CI=true) it is derandomised, so a landing is judged on the same examples every
time and a failure there is reproducible from the log.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import settings

from ledger.store import db
from ledger.store.eventstore import EventStore
from tests import pgcluster
from tests.signing import SIGNER

# The log of significant events writes what it counted once a window (10 s by default)
# with the next count or write: a long test would see a sign-in's count written in the
# middle of what it counts. Its own tests write when they say (Tally.flush).
os.environ.setdefault("HAZARD_SIGNIFICANT_WINDOW", "3600")

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session", autouse=True)
def signing_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's key (tests.signing) in a file, as HAZARD_KEY, for every `hazard`
    command and server a test runs; a test about a missing key sets its own."""
    path = tmp_path_factory.mktemp("key") / "hazard.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (SIGNER.text() + "\n").encode())
    os.close(fd)
    before = os.environ.get("HAZARD_KEY")
    os.environ["HAZARD_KEY"] = str(path)
    yield path
    if before is None:
        del os.environ["HAZARD_KEY"]
    else:
        os.environ["HAZARD_KEY"] = before


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    with ExitStack() as stack:
        try:
            sock = stack.enter_context(pgcluster.temporary_cluster({"fsync": "off"}))
        except pgcluster.Unavailable as exc:
            pytest.skip(f"{exc}: the PostgreSQL half of the store tests is skipped")
        yield pgcluster.url(sock)


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
def store(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, signer=SIGNER)
    yield store
    store.close()


@pytest.fixture(autouse=True)
def verify_in_shares_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every offline check a test makes (`offline.verify`) is made twice, serially and
    on two processes (ledger.exports.offline.shares), and the two must agree: the same
    `Verified` on a good file, verified in shares (not by falling back to the serial
    check), and on a bad one `verify(..., jobs=2)` must raise the serial check's
    Disagreement (line and words). What the test sees is the serial check's; the check alone is
    `offline.verify.__wrapped__`."""
    from ledger.exports import offline
    from ledger.exports.offline import shares

    serial = offline.verify

    @functools.wraps(serial)
    def both(
        lines: Any, key: Any = None, progress: Any = None, policy: Any = None, jobs: int = 1
    ) -> Any:
        lines = list(lines)
        try:
            verified = serial(lines, key, progress, policy)
        except offline.Disagreement as exc:
            # Shares that verified it would return, not raise.
            with pytest.raises(offline.Disagreement) as caught:
                serial(lines, key, None, policy, jobs=2)
            assert (caught.value.line, str(caught.value)) == (exc.line, str(exc))
            raise
        # shared() itself, which raises where verify would fall back to the serial check.
        assert shares.shared(lines, key, None, policy, 2) == verified
        return verified

    monkeypatch.setattr(offline, "verify", both)
