"""The dice-fairness report over a large log: what GET /reports/dice and `hazard
fairness` cost at a million events, on SQLite.

    .venv/bin/python -m bench.fairness                       # 1,000,000 events
    .venv/bin/python -m bench.fairness --events 200000 --repeat 3

The whole club's report reads the counts the books keep beside the events
(ledger.books.dicetallies, migration 0017). A report held to a table, a croupier or a
time range reads three things (ledger.audit.fairness): the throws, counted by the
database grouped by payload (one scan of the events, or of one table's stream); the
`rounds` read model, counted by table, main and result; and each table's TableOpened.
The copies take the kept counts with them (bench.console.copied_counts).
This times `fairness.report` for the whole club, one table, one croupier and one week,
and prints the median of --repeat runs of each.

bench.seed seeds a realistic log through the write path (cached), at about a thousand
events a second: half an hour for a million. So this seeds --base events that way
(20,000 by default, half a minute the first time) and copies them in SQL until the log
holds --events: each copy's streams renamed (`table:t3~7`), its positions and rounds'
positions moved on, its times moved a week on, and its actors spread over five
croupiers (`croupier:c0`..`c4`), so that each copy is other tables playing the same
game a week later. The hashes are copied as they are: nothing here reads them, and the
log check would refuse this log, which is a benchmark's and never a club's.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from bench.grown import copied_counts
from bench.seed import seeded
from ledger.audit import fairness
from ledger.store import db

CROUPIERS = 5


def grow(base: Path, path: Path, events: int) -> int:
    """A copy of the seeded database `base` at `path`, its log copied onto itself until
    it holds at least `events` events; how many it holds."""
    shutil.copyfile(base, path)
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        n = conn.execute(sa.text("SELECT max(position) FROM events")).scalar_one()
        copies = -(-events // n)
        for k in range(1, copies):
            shift = f"+{7 * k} days"
            conn.execute(
                sa.text(
                    "INSERT INTO events SELECT position + :moved, stream || '~' || :k, "
                    "version, type, schema_version, payload, :actor, NULL, "
                    "strftime('%Y-%m-%dT%H:%M:%f', recorded_at, :shift) || substr("
                    "recorded_at, 24), prev_hash, hash FROM events WHERE position <= :n"
                ),
                {
                    "moved": k * n,
                    "k": k,
                    "actor": f"croupier:c{k % CROUPIERS}",
                    "shift": shift,
                    "n": n,
                },
            )
            conn.execute(
                sa.text(
                    "INSERT INTO rounds SELECT stream || '~' || :k, round, caster, main, "
                    "chance, result, first_version, last_version, first_position + :moved, "
                    "last_position + :moved, started_at, "
                    "strftime('%Y-%m-%dT%H:%M:%f', ended_at, :shift) || substr(ended_at, 24) "
                    "FROM rounds WHERE stream NOT LIKE '%~%'"
                ),
                {"moved": k * n, "k": k, "shift": shift},
            )
        copied_counts(conn, copies, lambda k: f"~{k}")
        total = conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one()
    engine.dispose()
    return int(total)


def timed(engine: sa.Engine, scope: fairness.Scope, repeat: int) -> tuple[float, int]:
    """The median seconds of `repeat` reports of `scope`, and the throws it counted."""
    seconds, throws = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        with engine.connect() as conn:
            report = fairness.report(conn, scope)
        seconds.append(time.perf_counter() - started)
        throws = report["throws"]
    return statistics.median(seconds), throws


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--base", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    args = parser.parse_args(argv)
    base = seeded(args.base, args.cache_dir, export=False)
    path = args.cache_dir / f"fairness-{args.events}.sqlite3"
    started = time.perf_counter()
    total = grow(base.path, path, args.events)
    print(
        f"{total:,} events ({args.base:,} seeded, copied) in {time.perf_counter() - started:.1f} s"
    )
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        first = conn.execute(sa.text("SELECT min(recorded_at) FROM events")).scalar_one()
    week = datetime.fromisoformat(first.replace("Z", "+00:00")) + timedelta(days=14)
    since = week.isoformat(timespec="microseconds").replace("+00:00", "Z")
    until = (week + timedelta(days=7)).isoformat(timespec="microseconds").replace("+00:00", "Z")
    table = base.meta["tables"][0]
    scopes = [
        ("the whole club", fairness.Scope()),
        (f"one table ({table})", fairness.Scope(table=table)),
        ("one croupier (c1)", fairness.Scope(croupier="c1")),
        ("one week", fairness.Scope(since=since, until=until)),
    ]
    print(f"{'report of':<28} {'throws':>9} {'median s':>9} {'events/s':>12}")
    for label, scope in scopes:
        seconds, throws = timed(engine, scope, args.repeat)
        print(f"{label:<28} {throws:>9,} {seconds:>9.3f} {total / seconds:>12,.0f}")
    engine.dispose()
    path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
