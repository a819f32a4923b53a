"""Every console page as the log grows: the server time of each page, p50 and p90, at
10^4 and 10^6 events on SQLite, and the ratio of the two p50s. The issue's target:
within 1.5x across the two sizes.

    .venv/bin/python -m bench.console                         # 10,000 and 1,000,000
    .venv/bin/python -m bench.console --sizes 10000 200000 --repeat 30

bench.seed seeds --base events through the write path (cached; 10,000 by default, a
quarter of a minute the first time), and each size is that log grown by copies of
itself in SQL (bench.grown): every copy but the newest an evening whose tables the
setter closed, the newest the seeded log with its tables in play, each copy's tables,
escrows, postings and read models its own, as a club's log would hold them (the deep
check finds a grown log what its events make). The hashes are copied as they are:
nothing timed here reads them, and the log check would refuse this log, which is a
benchmark's and never a club's.

The pages are found, not listed: every GET route of the console's blueprint, with the
ids its URL needs, as the setter (or, for the player's own pages, a player of the
seeded log), and the sign-in page as no one; a route this cannot time is named, with
why (SKIPPED: a download, a redirect, the verify page's check). A table's pages (its
view, the panel its screen polls, a round's replay at a step in its middle, its dice
report) are timed for a table of the middle copy (the history before it and after it
as long) and for one of the last (the newest, what a croupier's screen shows); the
club's pages (home, the office, the audit log's newest page and its first, the whole
club's dice report, the player's page and a receipt) once. A grown log takes no write,
so the one dispute, whose page is timed, is opened in the seeded log before it grows.

They are served in-process by the app (ledger.api.create_app) through Flask's test
client, so the time is the server's: the request through the app, the reads and the
template, and no network. Each request is timed on its own after a warm-up; the
figures are the p50 and p90 of --repeat requests, and the ratio of the largest size's
p50 to the smallest's.
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

from bench.grown import SUFFIX, _app, closed, grow, grown_arguments
from bench.seed import key_for, seeded
from ledger.commands import Role
from ledger.store import db
from ledger.web.tokens import create

TARGET = 1.5


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


SKIPPED = {
    "console.static": "the package's files",
    "console.export": "a file to download: bench.exports measures exports",
    "console.replay_pick": "a redirect to a round's replay",
    "console.verify_step": "the verify page's check: bench.verify times the check, and on "
    "this grown log (its copies' hashes are the original's) it would stop at the first copy",
}
"""The console's GET routes that are not pages to time here, and why."""


def _queries(endpoint: str, ids: dict[str, Any]) -> list[str]:
    """The ways each page is asked for: the replay at a step in its round's middle, the
    audit's newest page and its first, and the dice report of the club (every throw: it
    grows with the log, by design) and of one table. (The verify page is timed without
    its check: see SKIPPED.)"""
    return {
        "console.replay": [f"step={ids['step']}"],
        "console.audit": ["", "after=0"],
        "console.fairness_report": ["", f"table={ids['table']}"],
    }.get(endpoint, [""])


def pages(app: Any, ids: dict[str, Any]) -> tuple[dict[str, tuple[str, bool]], list[str]]:
    """Every console page found in the app's GET routes: its URL with `ids`, and whether
    it is a table's (timed for the middle table and the newest); and the routes left
    out, and why. A page the console gains is timed without a line here."""
    found: dict[str, tuple[str, bool]] = {}
    left: list[str] = []
    for rule in app.url_map.iter_rules():
        endpoint = rule.endpoint
        if not endpoint.startswith("console.") or "GET" not in (rule.methods or ()):
            continue
        if endpoint in SKIPPED:
            left.append(f"{rule.rule}: {SKIPPED[endpoint]}")
            continue
        if endpoint == "console.dispute":  # the one dispute there is (`disputed`)
            ids = {**ids, **ids["dispute"]}
        missing = set(rule.arguments) - set(ids)
        if missing:
            left.append(f"{rule.rule}: needs {sorted(missing)}, which bench.console lacks")
            continue
        url = rule.build({k: ids[k] for k in rule.arguments}, append_unknown=False)[1]
        for query in _queries(endpoint, ids):
            name = endpoint.removeprefix("console.") + (f"?{query.split('=')[0]}" if query else "")
            tables = ("table" in rule.arguments and endpoint != "console.dispute") or (
                query.startswith("table=")
            )
            found[name] = (url + (f"?{query}" if query else ""), tables)
    return found, left


def disputed(base: Path, cache_dir: Path, token: str, table: str) -> tuple[Path, dict[str, Any]]:
    """A copy of the seeded database with a dispute opened over one of `table`'s rounds
    (by the setter, through the API), to grow: a grown log takes no write (its copies'
    Merkle tree is not stored), so the dispute page is timed for this one, in the log's
    first copy, at every size (each copy holds its own)."""
    path = cache_dir / "console-base.sqlite3"
    shutil.copyfile(base, path)
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        last = conn.execute(sa.text("SELECT max(recorded_at) FROM events")).scalar_one()
    engine.dispose()
    # At the seeded log's own (simulated) time: its copies, a week on each, come after.
    app, store = _app(path, key_for(base), clock=lambda: last)
    round_, _ = _round(path, table)
    opened = app.test_client().post(
        f"/tables/{table}/rounds/{round_}/disputes",
        json={"claim": "bench.console"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert opened.status_code == 201, opened.get_json()
    store.close()
    store.engine.dispose()
    return path, {"table": table, "dispute_id": opened.get_json()["dispute_id"]}


def _ids(path: Path, table: str, player: str) -> dict[str, Any]:
    """What the pages' URLs need for `table`: one of its rounds in the middle of them
    and the step in that round's middle, and the player's first statement line's
    position (a receipt the log's first checkpoint holds)."""
    round_, step = _round(path, table)
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        position = conn.execute(
            sa.text("SELECT min(position) FROM events WHERE stream = :s"),
            {"s": f"account:player:{player}"},
        ).scalar_one()
    engine.dispose()
    return {"table": table, "round": round_, "step": step, "position": position, "name": player}


def _reader(people: dict[str, Any], url: str) -> str | None:
    """Who of `people` is shown the page (200): the setter, or else the player."""
    for who in ("setter", "player"):
        if people[who].get(url).status_code == 200:
            return who
    return None


def main(argv: list[str] | None = None) -> int:
    parser = grown_arguments(__doc__)
    parser.add_argument(
        "--only", nargs="+", default=[], metavar="WORD",
        help="time only the pages whose label holds one of these words (table, office, ...)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    base = seeded(args.base, args.cache_dir, export=False)
    table0, player = base.meta["tables"][0], base.meta["players"][0]
    start, dispute = disputed(base.path, args.cache_dir, base.meta["token"], table0)
    ended = closed(
        start, args.cache_dir / "console-closed.sqlite3", base.meta["token"], key_for(base.path)
    )
    results: dict[str, dict[int, dict[str, float]]] = {}
    for size in args.sizes:
        path = args.cache_dir / f"console-{size}.sqlite3"
        started = time.perf_counter()
        total, copies = grow(start, path, size, ended)
        print(f"{total:,} events ({copies} copies of {args.base:,}) in "
              f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
        app, store = _app(path, key_for(base.path))
        people = {
            "setter": _signed_in(app, base.meta["token"]),
            "player": _signed_in(app, create(store.engine, Role.PLAYER, player)),
        }
        left: list[str] = []
        made: dict[str, dict[str, Any]] = {}
        for where, k in (("middle", copies // 2), ("newest", copies - 1)):
            table = table0 if k == 0 else f"{table0}{SUFFIX}{k}"
            if table not in made:
                made[table] = {**_ids(path, table, player), "dispute": dispute}
            ids = made[table]
            found, skipped = pages(app, ids)
            left += skipped
            if where == "middle" and (not args.only or "sign-in" in args.only):  # to no one
                results.setdefault("sign-in", {})[size] = _timed(app.test_client(), "/", args)
            for page, (url, tables) in found.items():
                if not tables and where == "newest":
                    continue  # the club's pages: timed once, with the middle table
                label = f"{page} ({where})" if tables else page
                if args.only and not any(word in label for word in args.only):
                    continue
                who = _reader(people, url)
                if who is None:
                    left.append(f"{url}: neither the setter nor a player is shown it")
                    continue
                results.setdefault(label, {})[size] = _timed(people[who], url, args, label)
        for why in sorted(set(left)):
            print(f"  not timed: {why}")
        store.close()
        store.engine.dispose()
        path.unlink()
        for extra in path.parent.glob(path.name + "-*"):
            extra.unlink()
    for kept in (start, ended):
        kept.unlink()
        for extra in kept.parent.glob(kept.name + "-*"):
            extra.unlink()
    small, large = min(args.sizes), max(args.sizes)
    print(f"\n{'page':<32} {f'p50 at {small:,}':>14} {f'p50 at {large:,}':>16} {'ratio':>6}  "
          f"target <= {TARGET}")  # fmt: skip
    for label, by_size in results.items():
        if not {small, large} <= set(by_size):
            print(f"{label:<32} timed at {', '.join(f'{n:,}' for n in by_size)} only")
            continue
        ratio = by_size[large]["p50_ms"] / by_size[small]["p50_ms"]
        verdict = "MET" if ratio <= TARGET else "MISSED"
        print(f"{label:<32} {by_size[small]['p50_ms']:>11.2f} ms {by_size[large]['p50_ms']:>13.2f} "
              f"ms {ratio:>6.2f}  {verdict}")  # fmt: skip
    return 0


def _timed(
    client: Any, url: str, args: argparse.Namespace, label: str = "sign-in"
) -> dict[str, float]:
    figures = timed(client, url, args.repeat)
    print(f"  {label:<32} {url[:56]:<56} p50 {figures['p50_ms']:8.2f} ms  "
          f"p90 {figures['p90_ms']:8.2f} ms", flush=True)  # fmt: skip
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
