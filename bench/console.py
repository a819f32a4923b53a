"""The console's table view and replay page as the log grows: server time p50 of
GET /console/tables/<t> and GET /console/audit/replay/<t>/<round>?step=N at 10^4 and
10^6 events, on SQLite. The issue's target: within 1.5x across the two sizes.

    .venv/bin/python -m bench.console                         # 10,000 and 1,000,000
    .venv/bin/python -m bench.console --sizes 10000 200000 --repeat 30

bench.seed seeds --base events through the write path (cached; 10,000 by default, a
quarter of a minute the first time), and each size is that log copied onto itself in
SQL until it holds the size, as bench.fairness grows its log: each copy's streams
renamed (`table:t3-c7`), its positions moved on, its times a week on, and with the
events their postings (to the same players and the setter, so that every account's
history grows with the log, as a club's does), settlements (their sources moved on),
rounds and snapshots (each copy's running balances on its postings moved on by
what the copies before it netted); then every balance is set to the sum of its
postings, and checked to be its last posting's running balance. The hashes are
copied as they are: nothing timed here reads them, and the log check would refuse
this log, which is a benchmark's and never a club's.

The pages are served in-process by the app (ledger.api.create_app) through Flask's test
client, signed in as the setter, so the time is the server's: the request through the
app, the reads and the template, and no network. Measured for a table of the middle
copy (the history before it and after it as long) and for one of the last (the
newest, what a croupier's screen shows): its table view, and the replay page of one of
its rounds at a step in its middle. Each request is timed on its own after a warm-up;
the figures are the p50 and p90 of --repeat requests, and the ratio of the largest
size's p50 to the smallest's.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.seed import key_for, seeded
from ledger.store import db

TARGET = 1.5
SUFFIX = "-c"


def grow(base: Path, path: Path, events: int) -> tuple[int, int]:
    """A copy of the seeded database `base` at `path`, its log copied onto itself until
    it holds at least `events` events: how many it holds, and how many copies."""
    shutil.copyfile(base, path)
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        n = conn.execute(sa.text("SELECT max(position) FROM events")).scalar_one()
        copies = max(1, -(-events // n))
        for k in range(1, copies):
            shift = f"+{7 * k} days"
            moved = k * n
            args = {"moved": moved, "k": f"{SUFFIX}{k}", "shift": shift, "n": n}
            when = "strftime('%Y-%m-%dT%H:%M:%f', {0}, :shift) || substr({0}, 24)"
            conn.execute(
                sa.text(
                    "INSERT INTO events SELECT position + :moved, stream || :k, "
                    f"version, type, schema_version, payload, actor, NULL, "
                    f"{when.format('recorded_at')}, prev_hash, hash "
                    f"FROM events WHERE position <= :n"
                ),
                args,
            )
            # Copy k's running balances: the original's, plus k times what the account
            # netted over the original (the k copies before it).
            conn.execute(
                sa.text(
                    "INSERT INTO postings (position, account, amount, counterparty, balance) "
                    "SELECT p.position + :moved, p.account, p.amount, p.counterparty, "
                    "p.balance + :copy * t.net FROM postings AS p JOIN (SELECT account, "
                    "sum(amount) AS net FROM postings WHERE position <= :n GROUP BY account) "
                    "AS t ON t.account = p.account WHERE p.position <= :n ORDER BY p.id"
                ),
                {**args, "copy": k},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO settlements (position, stream, round, bet_id, kind, outcome, "
                    "winner, reason, recorded_at, transfers, sources, adjusted) "
                    "SELECT position + :moved, stream || :k, round, bet_id, kind, outcome, "
                    f"winner, reason, {when.format('recorded_at')}, transfers, "
                    "(SELECT json_group_array(value + :moved) FROM json_each(sources)), "
                    "adjusted FROM settlements WHERE position <= :n"
                ),
                args,
            )
            conn.execute(
                sa.text(
                    "INSERT INTO rounds SELECT stream || :k, round, caster, main, chance, "
                    "result, first_version, last_version, first_position + :moved, "
                    f"last_position + :moved, {when.format('started_at')}, "
                    f"{when.format('ended_at')} FROM rounds WHERE first_position <= :n"
                ),
                args,
            )
            conn.execute(
                sa.text(
                    "INSERT INTO snapshots SELECT stream || :k, version, state FROM snapshots "
                    "WHERE stream IN (SELECT DISTINCT stream FROM rounds "
                    "WHERE first_position <= :n)"
                ),
                args,
            )
        conn.execute(
            sa.text(
                "UPDATE accounts SET balance = (SELECT coalesce(sum(amount), 0) FROM postings "
                "WHERE postings.account = accounts.account)"
            )
        )
        wrong = conn.execute(
            sa.text(
                "SELECT count(*) FROM accounts AS a WHERE a.balance != coalesce((SELECT "
                "p.balance FROM postings AS p WHERE p.account = a.account "
                "ORDER BY p.position DESC, p.id DESC LIMIT 1), 0)"
            )
        ).scalar_one()
        assert wrong == 0, f"{wrong} accounts' last running balance is not their balance"
        total = conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one()
    engine.dispose()
    return int(total), copies


def _app(path: Path, key: Path) -> Any:
    from ledger.api import create_app
    from ledger.books.book import Book
    from ledger.store.eventstore import EventStore
    from ledger.store.log.keys import load_signer

    engine = db.make_engine(f"sqlite:///{path}")
    store = EventStore(engine, signer=load_signer(key))
    return create_app(book=Book(store)), store


def _signed_in(app: Any, token: str) -> Any:
    client = app.test_client()
    page = client.get("/").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    answer = client.post("/console/sign-in", data={"csrf_token": csrf.group(1), "token": token})
    assert answer.status_code == 302, answer.status_code
    return client


def _round(path: Path, table: str) -> tuple[int, int]:
    """A round of `table` in the middle of its rounds, of at least 5 events, and the
    step in its middle."""
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT round, last_version - first_version + 1 AS n FROM rounds "
                "WHERE stream = :s AND last_version - first_version >= 4 ORDER BY round"
            ),
            {"s": f"table:{table}"},
        ).all()
    engine.dispose()
    row = rows[len(rows) // 2]
    return int(row.round), max(1, int(row.n) // 2)


def timed(client: Any, path: str, repeat: int, warmup: int = 5) -> dict[str, float]:
    for _ in range(warmup):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.status_code)
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = client.get(path)
        seconds.append(time.perf_counter() - started)
        assert answer.status_code == 200, (path, answer.status_code)
    seconds.sort()
    return {
        "p50_ms": 1000 * statistics.median(seconds),
        "p90_ms": 1000 * seconds[int(0.9 * (len(seconds) - 1))],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--base", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    args = parser.parse_args(argv)
    base = seeded(args.base, args.cache_dir, export=False)
    table0 = base.meta["tables"][0]
    results: dict[str, dict[int, dict[str, float]]] = {}
    for size in args.sizes:
        path = args.cache_dir / f"console-{size}.sqlite3"
        started = time.perf_counter()
        total, copies = grow(base.path, path, size)
        print(f"{total:,} events ({copies} copies of {args.base:,}) in "
              f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
        app, store = _app(path, key_for(base.path))
        client = _signed_in(app, base.meta["token"])
        for where, k in (("middle", copies // 2), ("newest", copies - 1)):
            table = table0 if k == 0 else f"{table0}{SUFFIX}{k}"
            round_, step = _round(path, table)
            pages = {
                f"table view ({where})": f"/console/tables/{table}",
                f"replay step ({where})": f"/console/audit/replay/{table}/{round_}?step={step}",
            }
            for label, url in pages.items():
                figures = timed(client, url, args.repeat)
                results.setdefault(label, {})[size] = figures
                print(f"  {label:<24} {url:<48} p50 {figures['p50_ms']:7.2f} ms  "
                      f"p90 {figures['p90_ms']:7.2f} ms", flush=True)  # fmt: skip
        store.close()
        store.engine.dispose()
        path.unlink()
        for extra in path.parent.glob(path.name + "-*"):
            extra.unlink()
    small, large = min(args.sizes), max(args.sizes)
    print(f"\n{'page':<24} {f'p50 at {small:,}':>14} {f'p50 at {large:,}':>16} {'ratio':>6}  "
          f"target <= {TARGET}")  # fmt: skip
    for label, by_size in results.items():
        ratio = by_size[large]["p50_ms"] / by_size[small]["p50_ms"]
        verdict = "MET" if ratio <= TARGET else "MISSED"
        print(f"{label:<24} {by_size[small]['p50_ms']:>11.2f} ms {by_size[large]['p50_ms']:>13.2f} "
              f"ms {ratio:>6.2f}  {verdict}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
