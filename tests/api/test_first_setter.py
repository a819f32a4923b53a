"""Servers started at once on an empty database make one setter token between them,
and none fails: the check for "no tokens yet" and the insert are one serialised
transaction, and so is SQLite's own upgrade."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from ledger.store import db
from ledger.web.tokens import first_setter, listing

# What `hazard serve` does on start, before and after gunicorn binds its port.
START = """
import sys
from ledger.store import db
from ledger.bootstrap import open_book
from ledger.web.tokens import first_setter
store = open_book(sys.argv[1]).store
store.close()
store.engine.dispose()
engine = db.make_engine(sys.argv[1])
print("token" if first_setter(engine) else "none")
"""


def test_threads_racing_on_a_fresh_database_make_one_setter_token(database_url: str) -> None:
    engine = db.make_engine(database_url)
    db.upgrade(engine)
    barrier = threading.Barrier(6)
    made: list[str | None] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            made.append(first_setter(engine))
        except BaseException as exc:  # the test reports it, whatever it is
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len([t for t in made if t is not None]) == 1
    assert [(row.role, row.name) for row in listing(engine)] == [("setter", "bank")]
    engine.dispose()


@pytest.mark.parametrize("tries", range(2))  # the race was lost in 1 of 3 tries
def test_processes_starting_at_once_on_an_empty_database_make_one_token(
    database_url: str, tries: int
) -> None:
    if not database_url.startswith("sqlite"):
        # PostgreSQL is upgraded on purpose (`hazard db upgrade`), never by serve.
        engine = db.make_engine(database_url)
        db.upgrade(engine)
        engine.dispose()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", START, database_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [proc.communicate(timeout=60) for proc in procs]
    for proc, (_out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
    assert sorted(out.strip() for out, _ in results) == ["none", "none", "token"]
    engine = db.make_engine(database_url)
    assert len(listing(engine)) == 1
    engine.dispose()
