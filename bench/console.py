"""Every console page as the log grows: the server time of each page, p50 and p90, at
10^4 and 10^6 events on SQLite, and the ratio of the two p50s. The issue's target:
within 1.5x across the two sizes.

    .venv/bin/python -m bench.console                         # 10,000 and 1,000,000
    .venv/bin/python -m bench.console --sizes 10000 200000 --repeat 30

bench.seed seeds --base events through the write path (cached; 10,000 by default, a
quarter of a minute the first time), and each size is that log copied onto itself in
SQL until it holds the size, as bench.fairness grows its log: each copy's streams
renamed (`table:t3-c7`), its positions moved on, its times a week on, and with the
events their postings (to the same players and the setter, so that every account's
history grows with the log, as a club's does, and to the copy's own escrows,
`escrow:t3-c7:b9`, as the service names a bet's escrow after its table: each escrow
holds its one bet's postings at any size), settlements (their sources moved on, their
transfers naming the copy's escrows) and their parties, rounds, disputes and
snapshots (each copy's running balances on its postings moved on by what the copies
before it netted), and the dice report's kept counts (each copy's throws and rounds
the first's again); then every balance is set to the sum of its postings, and checked
to be its last posting's running balance. The deep check (ledger.books.deep: every
read model replayed from the events) finds a grown log what its events make
(tests/ledger/test_bench_grown.py). The hashes are copied as they are: nothing timed
here reads them, and the log check would refuse this log, which is a benchmark's and
never a club's.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.seed import key_for, seeded
from ledger.commands import Role
from ledger.store import db
from ledger.web.tokens import create

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
        conn.execute(
            sa.text(
                "CREATE TEMP TABLE first_escrows AS SELECT account, credit_limit FROM accounts "
                "WHERE account LIKE 'escrow:%'"
            )
        )
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
            # Each copy's bets are escrowed in its own tables' accounts, as the service
            # names them (`escrow:t3-c7:b9`), and those start empty; every other
            # account is the same person's or the setter's, its running balances the
            # original's plus k times what it netted over the original (the k copies
            # before it).
            conn.execute(
                sa.text(
                    "INSERT INTO postings (position, account, amount, counterparty, balance) "
                    f"SELECT p.position + :moved, {_escrow('p.account')}, p.amount, "
                    f"{_escrow('p.counterparty')}, CASE WHEN p.account LIKE 'escrow:%' "
                    "THEN p.balance ELSE p.balance + :copy * t.net END FROM postings AS p "
                    "JOIN (SELECT account, sum(amount) AS net FROM postings WHERE position "
                    "<= :n GROUP BY account) AS t ON t.account = p.account "
                    "WHERE p.position <= :n ORDER BY p.id"
                ),
                {**args, "copy": k},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO accounts (account, balance, credit_limit) "
                    f"SELECT {_escrow('account')}, 0, credit_limit FROM first_escrows"
                ),
                args,
            )
            conn.execute(
                sa.text(
                    "INSERT INTO settlements (position, stream, round, bet_id, kind, outcome, "
                    "winner, reason, recorded_at, transfers, sources, adjusted) "
                    "SELECT position + :moved, stream || :k, round, bet_id, kind, outcome, "
                    f"winner, reason, {when.format('recorded_at')}, "
                    "replace(transfers, '\"escrow:' || substr(stream, 7) || ':', "
                    "'\"escrow:' || substr(stream, 7) || :k || ':'), "
                    "(SELECT json_group_array(value + :moved) FROM json_each(sources)), "
                    "adjusted FROM settlements WHERE position <= :n"
                ),
                args,
            )
            conn.execute(
                sa.text(
                    "INSERT INTO settlement_parties (position, party) "
                    "SELECT position + :moved, party FROM settlement_parties WHERE position <= :n"
                ),
                args,
            )
            conn.execute(
                sa.text(
                    "INSERT INTO disputes SELECT stream || :k, dispute_id, round, claimant, "
                    "role, claim, throw, die1, die2, opened_version, opened_position + :moved, "
                    f"opened_by, {when.format('opened_at')}, resolution, reason, "
                    "resolved_throw, resolved_die1, resolved_die2, resolved_version, "
                    f"resolved_position + :moved, resolved_by, {when.format('resolved_at')} "
                    "FROM disputes WHERE opened_position <= :n"
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
        copied_counts(conn, copies, lambda k: f"{SUFFIX}{k}")
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


def _escrow(column: str) -> str:
    """SQL for `column` with an escrow's table renamed as copy :k's (`escrow:t3:b9` to
    `escrow:t3-c7:b9`); any other account as it is. A table's name holds no colon."""
    rest = f"instr(substr({column}, 8), ':')"
    return (
        f"CASE WHEN {column} LIKE 'escrow:%' THEN substr({column}, 1, 6 + {rest}) || :k || "
        f"substr({column}, 7 + {rest}) ELSE {column} END"
    )


def copied_counts(conn: sa.Connection, copies: int, renamed: Callable[[int], str]) -> None:
    """The dice-fairness report's kept counts (ledger.books.dicetallies) of a log copied
    onto itself `copies` times over, each copy's streams `renamed(k)`: each copy throws
    and decides what the first did, and its tables are listed under their new names.
    (The copies take no dispute, and the seeded log corrects no throw: each copy's
    throws count as the first's do.)"""
    first = conn.execute(sa.text("SELECT stream, rules FROM main_tables")).all()
    conn.execute(sa.text("UPDATE dice_counts SET throws = throws * :c"), {"c": copies})
    conn.execute(sa.text("UPDATE main_counts SET rounds = rounds * :c"), {"c": copies})
    listed = [{"s": s + renamed(k), "r": r} for k in range(1, copies) for s, r in first]
    if listed:
        conn.execute(sa.text("INSERT INTO main_tables (stream, rules) VALUES (:s, :r)"), listed)


def _app(path: Path, key: Path, **store: Any) -> Any:
    from ledger.api import create_app
    from ledger.books.book import Book
    from ledger.store.eventstore import EventStore
    from ledger.store.log.keys import load_signer

    engine = db.make_engine(f"sqlite:///{path}")
    kept = EventStore(engine, signer=load_signer(key), **store)
    return create_app(book=Book(kept)), kept


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
    Merkle tree is not stored), and its copies do not copy the dispute, so the dispute
    page is timed for this one, in the log's first copy, at every size."""
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


def grown_arguments(doc: str) -> argparse.ArgumentParser:
    """The command line of a bench over the grown log (`grow`): the sizes to grow it to,
    the seeded log it grows from, the requests a figure, and where the logs are kept."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--base", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    return parser


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
    results: dict[str, dict[int, dict[str, float]]] = {}
    for size in args.sizes:
        path = args.cache_dir / f"console-{size}.sqlite3"
        started = time.perf_counter()
        total, copies = grow(start, path, size)
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
    start.unlink()
    for extra in start.parent.glob(start.name + "-*"):
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
