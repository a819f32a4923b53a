"""A player's balance as of a position, over an account of a million postings.

    .venv/bin/python -m bench.asof                 # SQLite and PostgreSQL, 1M postings
    .venv/bin/python -m bench.asof --postings 200000

Fills the `events` and `postings` tables of a migrated database with one account's
postings, each with its running balance (SQL alone, no engine: what is measured is the
query), then times, for
positions at 1%, 50% and 99% of the account's history, each way of answering
"ann's balance as of position P" (ledger.books.asof):

- `sum-before`: the sum of the postings at or before P (the history up to P);
- `minus-after`: the balance now, minus the sum of the postings after P;
- `nearer-side` (what ledger.books.asof did before migration 0007): whichever of
  the two reads fewer postings, chosen from the index alone;
- `stored` (what ledger.books.asof.balance_at does): the running balance stored on
  the account's last posting at or before P (postings.balance), one index probe.

Medians of 5 runs, in milliseconds; the answer of every way is checked to agree.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import sqlalchemy as sa

from ledger.books import asof
from ledger.store import db
from ledger.store.schema import postings

ACCOUNT = "player:ann"


def _fill(engine: sa.Engine, n: int) -> None:
    """`n` events, each posting +1 or -1 to ann (alternately 3 and -1: the balance grows)."""
    sqlite = engine.dialect.name == "sqlite"
    series = (
        f"WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < {n}) "
        "SELECT x FROM g"
        if sqlite
        else f"SELECT x FROM generate_series(1, {n}) AS g(x)"
    )
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO events (position, stream, version, type, schema_version, payload, "
            "actor, idempotency_key, recorded_at, prev_hash, hash) "
            f"SELECT x, 'account:player:ann', x, 'Deposited', 1, '{{}}', 'bench', NULL, "
            f"'2026-01-01T00:00:00.000000Z', '0', '0' FROM ({series}) AS s"
        )
        # After x postings, (x + 1) / 2 of them +3 and x / 2 of them -1.
        conn.exec_driver_sql(
            "INSERT INTO postings (position, account, amount, counterparty, balance) "
            f"SELECT x, '{ACCOUNT}', CASE WHEN x - (x / 2) * 2 = 0 THEN -1 ELSE 3 END, 'cash', "
            f"3 * ((x + 1) / 2) - x / 2 FROM ({series}) AS s"
        )
        total = conn.exec_driver_sql(
            f"SELECT sum(amount) FROM postings WHERE account = '{ACCOUNT}'"
        ).scalar_one()
        conn.exec_driver_sql(
            "INSERT INTO accounts (account, balance, credit_limit) "
            f"VALUES ('{ACCOUNT}', {total}, 0)"
        )
        if not sqlite:
            conn.exec_driver_sql("ANALYZE")


def _nearer_side(conn: sa.Connection, account: str, position: int) -> int:
    """What ledger.books.asof.balance_at read before postings held their running
    balance: sum-before or minus-after, whichever side of `position` the account's first
    and last postings' positions suggest holds fewer postings."""
    p = postings.c
    ends = sa.select(p.position).where(p.account == account).limit(1)
    first = conn.execute(ends.order_by(p.position)).scalar()
    if first is None or position < first:
        return 0
    last = conn.execute(ends.order_by(p.position.desc())).scalar()
    assert last is not None
    if position - first <= last - position:
        return asof.balance_by_sum_before(conn, account, position)
    return asof.balance_by_minus_after(conn, account, min(position, last))


def _ms(run: Callable[[], int], repeat: int = 5) -> tuple[float, int]:
    times, answer = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        answer = run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), answer


def measure(engine: sa.Engine, n: int) -> None:
    _fill(engine, n)
    ways = {
        "sum-before": asof.balance_by_sum_before,
        "minus-after": asof.balance_by_minus_after,
        "nearer-side": _nearer_side,
        "stored": asof.balance_at,
    }
    print(f"{engine.dialect.name}, {n} postings to {ACCOUNT}")
    print(f"{'at':>6}  " + "  ".join(f"{w:>12}" for w in ways))
    for share in (0.01, 0.5, 0.99):
        position = int(n * share)
        cells, answers = [], set()
        with engine.connect() as conn:
            for way in ways.values():
                took, answer = _ms(partial(way, conn, ACCOUNT, position))
                cells.append(f"{took:>9.2f} ms")
                answers.add(answer)
        assert len(answers) == 1, answers
        print(f"{share:>6.0%}  " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postings", type=int, default=1_000_000)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = db.make_engine(f"sqlite:///{Path(tmp) / 'asof.sqlite3'}")
        db.upgrade(engine)
        measure(engine, args.postings)
        engine.dispose()
    if args.no_postgres:
        return
    from tests import pgcluster

    with pgcluster.temporary_cluster({"fsync": "off"}) as sock:
        engine = db.make_engine(pgcluster.url(sock))
        db.upgrade(engine)
        measure(engine, args.postings)
        engine.dispose()


if __name__ == "__main__":
    main()
