"""bench.console's grown log (a seeded log copied onto itself) is one the service could
have written, as far as its read models go: the deep check (every read model replayed
from the events and compared) finds nothing. Each copy's bets are escrowed in its own
tables' accounts (`escrow:<table>-c<k>:<bet>`), as a club's would be; before, every
copy posted to the first copy's escrows, so one escrow held a hundred bets' postings
at 10^6 and the office's exposure read grew with the log. SQLite: the bench grows its
log in SQLite's SQL."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from bench.console import grow
from bench.seed import seeded
from ledger.books import deep
from ledger.store import db
from ledger.store.eventstore import EventStore


def test_a_grown_log_is_what_its_events_make_each_copy_with_its_own_escrows(
    tmp_path: Path,
) -> None:
    base = seeded(600, tmp_path, export=False)
    seeded_engine = db.make_engine(f"sqlite:///{base.path}")
    with seeded_engine.connect() as conn:
        n = conn.execute(sa.text("SELECT max(position) FROM events")).scalar_one()
    seeded_engine.dispose()
    total, copies = grow(base.path, tmp_path / "grown.sqlite3", 3 * n)
    assert (total, copies) == (3 * n, 3)
    engine = db.make_engine(f"sqlite:///{tmp_path / 'grown.sqlite3'}")
    try:
        with engine.connect() as conn:
            escrows = conn.execute(
                sa.text(
                    "SELECT count(DISTINCT account) FROM postings WHERE account LIKE 'escrow:%'"
                )
            ).scalar_one()
            first = conn.execute(
                sa.text(
                    "SELECT count(DISTINCT account) FROM postings WHERE account LIKE 'escrow:%' "
                    "AND position <= :n"
                ),
                {"n": n},
            ).scalar_one()
        assert first > 0 and escrows == copies * first
        assert [str(d) for d in deep.differences(EventStore(engine))] == []
    finally:
        engine.dispose()
