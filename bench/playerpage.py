"""The player's page as the log grows: server time p50 of GET /console/me (the newest
page of the statement), a page from the middle of the player's history (`before`), the
statement of one table, and of one evening, at 10^4 and 10^6 events, on SQLite. The
issue's target: within 1.5x across the two sizes.

    .venv/bin/python -m bench.playerpage                         # 10,000 and 1,000,000
    .venv/bin/python -m bench.playerpage --sizes 10000 200000 --repeat 30

The log is bench.console's (bench.grown: bench.seed's base grown by copies until it holds the
size, every player's history growing with it, as a club's does). The player is the
one with the most postings, the worst case; the middle page is before the median of
their postings, the table one of the middle copy's they played at, the evening the
club's day (UTC) of that median. Served in-process through Flask's test client,
signed in as that player, so the time is the server's alone; the receipts are checked
in the browser, not here. The statement's read (ledger.books.statements.page) is timed
alone too, newest and middle page. Each request is timed on its own after a warm-up;
the figures are the p50 and p90 of --repeat requests, and the ratio of the largest
size's p50 to the smallest's.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.console import TARGET, _app, _signed_in, timed
from bench.grown import closed, grow, grown_arguments
from bench.seed import key_for, seeded
from ledger.books import statements
from ledger.commands import Role
from ledger.store import db
from ledger.web.tokens import NameTaken, create, listing, revoke


def _busiest(path: Path) -> dict[str, Any]:
    """The player with the most postings, and where in their history to look."""
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        account, n = conn.execute(
            sa.text(
                "SELECT account, count(*) AS n FROM postings WHERE account LIKE 'player:%' "
                "GROUP BY account ORDER BY n DESC LIMIT 1"
            )
        ).one()
        middle = conn.execute(
            sa.text(
                "SELECT position FROM postings WHERE account = :a ORDER BY position "
                "LIMIT 1 OFFSET :half"
            ),
            {"a": account, "half": n // 2},
        ).scalar_one()
        at = conn.execute(
            sa.text("SELECT recorded_at FROM events WHERE position = :p"), {"p": middle}
        ).scalar_one()
        table = conn.execute(
            sa.text(
                "SELECT e.stream FROM postings p JOIN events e ON e.position = p.position "
                "WHERE p.account = :a AND p.position >= :p AND e.stream LIKE 'table:%' "
                "ORDER BY p.position LIMIT 1"
            ),
            {"a": account, "p": middle},
        ).scalar_one()
    name = account.removeprefix("player:")
    try:
        token = create(engine, Role.PLAYER, name)
    except NameTaken:  # a copy of a database that holds one: revoke it, as an operator would
        [held] = [t for t in listing(engine) if (t.name, t.revoked_at) == (name, None)]
        revoke(engine, held.id)
        token = create(engine, Role.PLAYER, name)
    engine.dispose()
    return {
        "name": name,
        "postings": int(n),
        "token": token,
        "before": int(middle),
        "table": table.removeprefix("table:"),
        "evening": at[:10],
    }


def _statement_alone(store: Any, who: dict[str, Any], repeat: int) -> dict[str, dict[str, float]]:
    """ledger.books.statements.page by itself, newest and middle page: what the page
    reads of the statement, without the rest of the page or the request."""
    account = f"player:{who['name']}"
    found = {}
    with store.engine.connect() as conn:
        for name, before in (("read, newest", None), ("read, middle", who["before"])):
            seconds = []
            for n in range(repeat + 5):
                started = time.perf_counter()
                statements.page(conn, account, who["name"], before=before)
                if n >= 5:  # after a warm-up, as the pages are timed
                    seconds.append(time.perf_counter() - started)
            found[name] = {"p50_ms": 1000 * statistics.median(seconds)}
    return found


def main(argv: list[str] | None = None) -> int:
    args = grown_arguments(__doc__).parse_args(argv)
    base = seeded(args.base, args.cache_dir, export=False)
    ended = closed(
        base.path, args.cache_dir / "player-closed.sqlite3", base.meta["token"], key_for(base.path)
    )
    results: dict[str, dict[int, dict[str, float]]] = {}
    for size in args.sizes:
        path = args.cache_dir / f"player-{size}.sqlite3"
        started = time.perf_counter()
        total, copies = grow(base.path, path, size, ended)
        who = _busiest(path)
        print(
            f"{total:,} events ({copies} copies of {args.base:,}) in "
            f"{time.perf_counter() - started:.1f} s; {who['name']}, "
            f"{who['postings']:,} postings",
            flush=True,
        )
        app, store = _app(path, key_for(base.path))
        client = _signed_in(app, who["token"])
        pages = {
            "newest page": "/console/me",
            "middle page": f"/console/me?before={who['before']}",
            "one table": f"/console/me?table={who['table']}",
            "one evening": f"/console/me?evening={who['evening']}",
        }
        for name, url in pages.items():
            figures = timed(client, url, args.repeat)
            results.setdefault(name, {})[total] = figures
            print(
                f"  {name:12} p50 {figures['p50_ms']:7.1f} ms  p90 {figures['p90_ms']:7.1f} ms",
                flush=True,
            )
        for name, figures in _statement_alone(store, who, args.repeat).items():
            results.setdefault(name, {})[total] = figures
            print(f"  {name:12} p50 {figures['p50_ms']:7.1f} ms  (the read alone)", flush=True)
        store.close()
    print()
    for name, by_size in results.items():
        sizes = sorted(by_size)
        if len(sizes) < 2:
            continue
        ratio = by_size[sizes[-1]]["p50_ms"] / by_size[sizes[0]]["p50_ms"]
        verdict = "within" if ratio <= TARGET else "OVER"
        print(f"{name:12} {sizes[0]:,} -> {sizes[-1]:,}: x{ratio:.2f} ({verdict} {TARGET}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
