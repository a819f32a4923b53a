"""bench.console's grown log (bench.grown: a seeded log grown by copies of itself) is
one the service could have written, as far as its read models go: the deep check
(every read model replayed from the events and compared) finds nothing. Each copy's
bets are escrowed in its own tables' accounts (`escrow:<table>-c<k>:<bet>`), as a
club's would be, and only the newest copy's tables are in play; before, every copy
posted to the first copy's escrows, so one escrow held a hundred bets' postings at
10^6 and the office's exposure read grew with the log. SQLite: the bench grows its log
in SQLite's SQL."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from bench.grown import closed, grow
from bench.seed import key_for, seeded
from ledger.books import deep
from ledger.store import db
from ledger.store.eventstore import EventStore

OPENED = "SELECT count(*) FROM events WHERE type = 'AccountOpened'"
ESCROWS = "SELECT count(DISTINCT account) FROM postings WHERE account LIKE 'escrow:%'"
HELD = "SELECT count(*) FROM accounts WHERE account LIKE 'escrow:%' AND balance != 0"


def _counts(path: Path) -> tuple[int, int, int, int]:
    """The events, the accounts opened, the escrows and the escrows holding money (the
    open bets) at `path`."""
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        found = tuple(
            int(conn.execute(sa.text(sql)).scalar_one())
            for sql in ("SELECT max(position) FROM events", OPENED, ESCROWS, HELD)
        )
    engine.dispose()
    return found[0], found[1], found[2], found[3]


def test_a_grown_log_is_what_its_events_make_each_copy_with_its_own_escrows(
    tmp_path: Path,
) -> None:
    base = seeded(600, tmp_path, export=False)
    n, opened, escrows, held = _counts(base.path)
    assert opened > 0 and held > 0  # the seeded log opens accounts and ends with bets open
    ended = closed(base.path, tmp_path / "closed.sqlite3", base.meta["token"], key_for(base.path))
    size = _counts(ended)[0]
    grown = tmp_path / "grown.sqlite3"
    total, copies = grow(base.path, grown, 2 * size, ended)
    # Two copies of the closed evening and the newest, the accounts opened once: each
    # copy's own escrows, and the bets of the newest copy alone still open.
    assert (total, copies) == (2 * size + n - 2 * opened, 3)
    assert _counts(grown) == (total, opened, copies * escrows, held)
    engine = db.make_engine(f"sqlite:///{grown}")
    try:
        assert [str(d) for d in deep.differences(EventStore(engine))] == []
    finally:
        engine.dispose()
    # At the seeded log's size, the seeded log itself.
    assert grow(base.path, grown, n, ended) == (n, 1)
