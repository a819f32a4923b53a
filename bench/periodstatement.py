"""A player's statement for a period (ledger.books.periodstatement) over an account of
many postings, against reading the period's postings once.

    .venv/bin/python -m bench.periodstatement                  # SQLite and PostgreSQL
    .venv/bin/python -m bench.periodstatement --events 90000 --no-postgres

Fills a migrated database (SQL rows alone, no engine: what is measured is the reads)
with one player's history spread evenly over 30 days of November: in turn a deposit, a
stake into a bet's escrow, and the bet's settlement (won every other time: its payout
posted; lost: nothing posted), each settlement with its party row and its `sources`.
Then times, for an evening (a day), a week and the month, the statement
(`periodstatement.of`, its period found from its times by `periods.asked`) and the
baseline: the period's postings read once (`asof.postings_between`, every posting in
the span to Python), which any statement of the period must at least do. Medians of 5
runs, in milliseconds, and their ratio; each statement is checked to add up.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ledger.books import asof, periods, periodstatement
from ledger.store import db
from ledger.store.schema import events, postings, settlement_parties, settlements

ACCOUNT = "player:ann"
START = datetime(2026, 11, 1, tzinfo=UTC)
BATCH = 10_000


def _rows(n: int) -> tuple[list[dict[str, Any]], ...]:
    step = timedelta(days=30) / n
    evs, posts, settled, parties = [], [], [], []
    balance = 0
    for x in range(1, n + 1):
        at = (START + step * x).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        kind, bet = x % 3, f"b{x - x % 3 + 2}"
        evs.append({
            "position": x, "stream": "table:t1" if kind != 1 else "account:player:ann",
            "version": x, "type": ("BetSettled", "Deposited", "CasterStaked")[kind],
            "schema_version": 1, "payload": "{}", "actor": "bench", "idempotency_key": None,
            "recorded_at": at, "prev_hash": "0", "hash": "0",
        })  # fmt: skip
        moved, other = 0, f"escrow:t1:{bet}"
        if kind == 1:
            moved, other = 10, "cash"
        elif kind == 2:
            moved = -5
        else:
            won = x % 2 == 0
            moved = 10 if won else 0
            settled.append({
                "position": x, "stream": "table:t1", "round": x, "bet_id": bet,
                "kind": "caster", "outcome": "settled", "winner": "ann" if won else "setter",
                "reason": None, "recorded_at": at, "transfers": "[]",
                "sources": f"[{x - 1}]", "adjusted": 0,
            })  # fmt: skip
            parties.append({"position": x, "party": ACCOUNT})
        if moved:
            balance += moved
            posts.append({
                "position": x, "account": ACCOUNT, "amount": moved, "counterparty": other,
                "balance": balance,
            })  # fmt: skip
    return evs, posts, settled, parties


def _fill(engine: sa.Engine, n: int) -> None:
    tables = (events, postings, settlements, settlement_parties)
    with engine.begin() as conn:
        for table, rows in zip(tables, _rows(n), strict=True):
            for i in range(0, len(rows), BATCH):
                conn.execute(table.insert(), rows[i : i + BATCH])
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql("ANALYZE")


def _ms(run: Callable[[], Any], repeat: int = 5) -> tuple[float, Any]:
    times, answer = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        answer = run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), answer


def measure(engine: sa.Engine, n: int) -> None:
    _fill(engine, n)
    print(f"{engine.dialect.name}, {n} events of {ACCOUNT} over 30 days")
    print(f"{'period':>8}  {'postings':>9}  {'statement':>12}  {'read once':>12}  {'ratio':>6}")
    with engine.connect() as conn:
        for kind, key in (("evening", "2026-11-15"), ("week", "2026-W47"), ("month", "2026-11")):

            def statement(kind: str = kind, key: str = key) -> periodstatement.Statement:
                period = periods.asked(conn, "UTC", **{kind: key})
                return periodstatement.of(conn, "ann", period)

            took, found = _ms(statement)
            assert found.check() == [], found.check()
            span = found.period
            base, read = _ms(partial(asof.postings_between, conn, ACCOUNT, span.after + 1,
                                     span.through))  # fmt: skip
            print(f"{kind:>8}  {len(read):>9}  {took:>9.1f} ms  {base:>9.1f} ms  "
                  f"{took / base:>5.1f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = db.make_engine(f"sqlite:///{Path(tmp) / 'periods.sqlite3'}")
        db.upgrade(engine)
        measure(engine, args.events)
        engine.dispose()
    if args.no_postgres:
        return
    from tests import pgcluster

    with pgcluster.temporary_cluster({"fsync": "off"}) as sock:
        engine = db.make_engine(pgcluster.url(sock))
        db.upgrade(engine)
        measure(engine, args.events)
        engine.dispose()


if __name__ == "__main__":
    main()
