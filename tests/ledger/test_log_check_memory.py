"""What the log check (ledger.store.log.check, `hazard verify` on the database) keeps
while it reads the log: a batch of events at a time, the tree's frontier and each
stream's head; nothing that grows with the log's length, so that a million events are
checked in the memory a thousand take. On SQLite and PostgreSQL."""

from __future__ import annotations

import tracemalloc

import sqlalchemy as sa

from ledger.books.accounts import account_stream
from ledger.store.eventstore import EventStore
from ledger.store.log import check
from ledger.store.vocabulary import Deposited
from ledger.unit_of_work import UnitOfWork
from tests.signing import SIGNER, VERIFIER

ACCOUNTS = 10
WRITE = 100
"""Events a write: each of its own amount, so that no two payloads read the same (a
settlement's seldom does)."""


def write(engine: sa.Engine, events: int) -> None:
    """`events` more deposits, in writes of WRITE, round the accounts in turn."""
    store = EventStore(engine, signer=SIGNER)
    with engine.connect() as conn:
        written = conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one()
    for n in range(written, written + events, WRITE):
        name = f"p{(n // WRITE) % ACCOUNTS:02d}"
        stream = account_stream(name)
        with engine.connect() as conn:
            version = conn.execute(
                sa.text("SELECT count(*) FROM events WHERE stream = :s"), {"s": stream}
            ).scalar_one()
        with UnitOfWork(store) as uow:
            uow.record(
                stream,
                version,
                [
                    Deposited(version=version + i + 1, account=name, amount=1_000 + n + i)
                    for i in range(WRITE)
                ],
                "setter",
            )
            uow.commit()
    store.close()


def traced_peak(engine: sa.Engine) -> int:
    """The most memory the log check of the whole log held at once, in bytes."""
    with engine.connect() as conn, conn.begin():
        tracemalloc.start()
        try:
            report = check.check_log(conn, VERIFIER, batch=200)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert report.findings == [] and report.events > 0
    return peak


def test_the_log_check_holds_as_much_for_a_long_log_as_for_a_short_one(
    engine: sa.Engine,
) -> None:
    write(engine, 1_000)
    traced_peak(engine)  # the driver's once-only costs (PostgreSQL prepares the queries)
    short = traced_peak(engine)
    write(engine, 3_000)
    long = traced_peak(engine)
    assert long <= short * 1.15, f"{long:,} bytes at 4,000 events, {short:,} at 1,000"
