"""What the log's Merkle tree costs: appends with and without it, and proofs from the database.

Appends with the tree and its signed checkpoints against the same appends without
them; inclusion and consistency proofs read from the database at two sizes.

Run from the repository root:

    .venv/bin/python -m bench.tlog                       # readable report
    .venv/bin/python -m bench.tlog --json                # JSON on stdout
    .venv/bin/python -m bench.tlog --skip-postgres --repeat 3
    .venv/bin/python -m bench.tlog --sizes 10000,1000000 --proofs 200 --profile

The targets (issue 11, "Speed"; issue 25 for the seal), each measured side by side in one
run:

  seals     a write through the unit of work with its seal (the heads of every stream
            and account, and the seal event) against the same write without it
            (store.seals off): at most 10% slower, single events and batches alike.

  appends   a write through the unit of work (ledger.unit_of_work.UnitOfWork: store.append,
            projections, the tree's new hashes and a signed checkpoint) against the same
            write without the tree (store.append + projections.apply in one
            store.transaction, committed): at most 25% slower for batches of 100 events
            a transaction (one checkpoint each), at most 50% slower for single-event
            commits (a signature each). On SQLite and on PostgreSQL.
  proofs    an inclusion proof (merkle.prove_record) and a consistency proof
            (merkle.prove_tree) from the database (tree.reader), at 10**4 and 10**6
            records: p50 at the larger size within 1.5x of the smaller.
  verify    a full verify at 10**6 events: not measured yet; see `full_verify` below.

The events are `Deposited` on account streams (a new account for each run): each one
posts twice and moves a balance, as a deposit at the cage does. Proofs need only the
tree's table, so the proof databases are filled by inserting the stored hashes of
synthetic records (b"record <n>") straight into `tree_hashes` (no events): the proof
reads exactly what it reads on a real log of that size. Contenders run interleaved (one
untimed warm-up each, then R repetitions, the order rotated by one place each time);
figures are medians, proof latencies p50 and p90 over every call. Speed is reported,
never asserted. PostgreSQL is a temporary cluster the benchmark starts itself, durable
(fsync=on, synchronous_commit=on), as bench.store's is.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.fold import _machine, _say
from bench.store import (
    Contender,
    _profile,
    measure,
    pg_create,
    pg_durability,
    postgres_server,
    sqlite_durability,
    sqlite_url,
    summarise,
)
from ledger.books import projections
from ledger.books.accounts import account_stream
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log import merkle, tree
from ledger.store.log.keys import Signer
from ledger.store.vocabulary import Deposited
from ledger.unit_of_work import UnitOfWork

SEED = 1757
BATCH = 100
"""Events per transaction in the batched comparisons (one checkpoint each)."""
DEFAULT_BATCHED = 10_000
DEFAULT_SINGLE = 500
DEFAULT_SIZES = (10_000, 1_000_000)
DEFAULT_PROOFS = 200
"""Proofs of each kind per repetition, each timed on its own."""
FILL_CHUNK = 50_000
ACTOR = "bench"
ORIGIN = "bench.hazard/ledger"

APPEND_GOALS = {"batched": 1.25, "single": 1.5}
"""With the tree over without it, at most."""
PROOF_RATIO_GOAL = 1.5
"""p50 at the largest size over p50 at the smallest, at most."""


# -- appends ------------------------------------------------------------------------


def deposits(account: str, n: int) -> list[Deposited]:
    """n deposits to one account, amounts varied so that no two payloads are equal."""
    return [Deposited(version=v, account=account, amount=100 + v % 97) for v in range(1, n + 1)]


class _Accounts:
    """A new account (stream) for each run, so each run writes a fresh stream."""

    def __init__(self, prefix: str, n: int) -> None:
        self.prefix, self.n, self.count = prefix, n, 0

    def next(self) -> tuple[str, list[Deposited]]:
        self.count += 1
        account = f"{self.prefix}-{self.count}"
        return account_stream(account), deposits(account, self.n)


def with_tree(store: EventStore, mode: str) -> Callable[[tuple[str, list[Deposited]]], int]:
    """The write path the service takes: UnitOfWork.record + commit (tree, checkpoint)."""
    step = 1 if mode == "single" else BATCH

    def run(arg: tuple[str, list[Deposited]]) -> int:
        stream, events = arg
        receipts = 0
        for i in range(0, len(events), step):
            with UnitOfWork(store) as uow:
                uow.record(stream, i, events[i : i + step], ACTOR)
                uow.commit()
            receipts += "receipt" in uow.answer
        return receipts

    return run


def without_tree(store: EventStore, mode: str) -> Callable[[tuple[str, list[Deposited]]], int]:
    """The same write without the tree: store.append + projections.apply, committed."""
    step = 1 if mode == "single" else BATCH

    def run(arg: tuple[str, list[Deposited]]) -> int:
        stream, events = arg
        commits = 0
        for i in range(0, len(events), step):
            with store.transaction() as conn:
                rows = store.append(conn, stream, i, events[i : i + step], ACTOR)
                projections.apply(conn, rows)
            commits += 1
        return commits

    return run


def append_contenders(
    label: str, url_for: Callable[[str], str], signer: Signer, single: int, batched: int
) -> tuple[list[Contender], list[EventStore]]:
    group = f"{label} appends"
    out: list[Contender] = []
    stores: list[EventStore] = []
    for mode, n in (("single", single), ("batched", batched)):
        per = "1 event" if mode == "single" else f"{BATCH} events"
        commits = n if mode == "single" else -(-n // BATCH)
        for kind in ("tree", "plain", "unsealed"):
            name = f"{kind}_{mode}"
            signed = kind != "plain"
            store = EventStore(_migrated(url_for(name)), signer=signer if signed else None)
            store.seals = kind == "tree"
            stores.append(store)
            accounts = _Accounts(f"{label}-{name}", n)
            if kind == "tree":
                what = (
                    f"UnitOfWork.record + commit, {per} a transaction: tree + seal + signed "
                    "checkpoint"
                )
            elif kind == "unsealed":
                what = f"the same without the seal (store.seals off), {per} a transaction"
            else:
                what = f"store.append + projections.apply in store.transaction, {per} a transaction"
            out.append(
                Contender(
                    name,
                    group,
                    n,
                    (with_tree if signed else without_tree)(store, mode),
                    accounts.next,
                    what=what,
                    check=_expect(f"{name} commits", commits),
                )
            )
    # Side by side: tree_single, plain_single, unsealed_single, then the batched three.
    return out, stores


def _migrated(url: str) -> sa.Engine:
    engine = db.make_engine(url)
    db.upgrade(engine)
    return engine


def _expect(what: str, expected: Any) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        if result != expected:
            raise RuntimeError(f"{what}: {result!r}, expected {expected!r}")

    return check


def check_tree(store: EventStore) -> None:
    """After the runs: the stored tree's root is the one the last checkpoint signed."""
    with store.engine.connect() as conn:
        size, root = conn.execute(
            sa.text("SELECT size, root FROM checkpoints ORDER BY size DESC LIMIT 1")
        ).one()
        events = conn.execute(sa.text("SELECT count(*) FROM events")).scalar()
        if size != events or merkle.tree_hash(size, tree.reader(conn)).hex() != root:
            raise RuntimeError("the stored tree does not match its newest checkpoint")


# -- proofs -------------------------------------------------------------------------


def record(n: int) -> bytes:
    return b"record %d" % n


def synthetic_hashes(size: int) -> Iterator[list[tuple[int, bytes]]]:
    """The stored hashes of a tree of `size` synthetic records, a chunk at a time, in
    index order. Only the frontier is kept between leaves (as tree.Growth does)."""
    frontier = merkle.Frontier()
    chunk: list[tuple[int, bytes]] = []
    for n in range(size):
        first = merkle.stored_hash_index(0, n)
        for offset, digest in enumerate(frontier.append(merkle.leaf_hash(record(n)))):
            chunk.append((first + offset, digest))
        if len(chunk) >= FILL_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def fill_sqlite(path: Path, size: int) -> float:
    engine = _migrated(sqlite_url(path))
    engine.dispose()
    con = _raw_sqlite(path)
    t0 = time.perf_counter()
    for chunk in synthetic_hashes(size):
        con.execute("BEGIN IMMEDIATE")
        con.executemany("INSERT INTO tree_hashes (idx, hash) VALUES (?, ?)", chunk)
        con.execute("COMMIT")
    con.close()
    return time.perf_counter() - t0


def _raw_sqlite(path: Path) -> Any:
    from bench.store import raw_sqlite

    return raw_sqlite(path)


def fill_postgres(sock: str, name: str, size: int) -> tuple[str, float]:
    import psycopg

    url = pg_create(sock, name)
    t0 = time.perf_counter()
    with psycopg.connect(host=sock, dbname=name, user="postgres") as con:
        with con.cursor() as cur:
            for chunk in synthetic_hashes(size):
                with cur.copy("COPY tree_hashes (idx, hash) FROM STDIN") as copy:
                    for row in chunk:
                        copy.write_row(row)
        con.execute("ANALYZE tree_hashes")
    return url, time.perf_counter() - t0


def proof_contenders(
    group: str, engine: sa.Engine, size: int, calls: int, seed: int
) -> tuple[list[Contender], sa.Connection]:
    """Inclusion and consistency proofs at one size, each call on a connection held open
    (as a request's is), reading through tree.reader; checked against the root."""
    conn = engine.connect()
    root = merkle.tree_hash(size, tree.reader(conn))
    conn.rollback()
    rng = random.Random(seed)

    def inclusion(_: Any) -> tuple[int, list[bytes]]:
        n = rng.randrange(size)
        proof = merkle.prove_record(size, n, tree.reader(conn))
        conn.rollback()
        return n, proof

    def consistency(_: Any) -> tuple[int, list[bytes]]:
        m = rng.randrange(1, size + 1)
        proof = merkle.prove_tree(size, m, tree.reader(conn))
        conn.rollback()
        return m, proof

    def check_inclusion(result: tuple[int, list[bytes]]) -> None:
        n, proof = result
        merkle.check_record(proof, size, root, n, merkle.leaf_hash(record(n)))

    def check_consistency(result: tuple[int, list[bytes]]) -> None:
        m, proof = result
        old = merkle.tree_hash(m, tree.reader(conn))
        conn.rollback()
        merkle.check_tree(proof, size, root, m, old)

    label = f"{size:,}"
    return [
        Contender(
            f"inclusion@{label}",
            group,
            size,
            inclusion,
            calls=calls,
            what=f"merkle.prove_record(t={label}, random n, tree.reader(conn))",
            check=check_inclusion,
        ),
        Contender(
            f"consistency@{label}",
            group,
            size,
            consistency,
            calls=calls,
            what=f"merkle.prove_tree(t={label}, random m, tree.reader(conn))",
            check=check_consistency,
        ),
    ], conn


# -- the full verify (a hook) --------------------------------------------------------


def full_verify(label: str, url: str, events: int) -> dict[str, Any] | None:
    """HOOK: `hazard verify` (tree, checkpoints, --deep read models) over a real log of
    `events` events: events a second and peak RSS (goal >= 300,000 a second for the
    tree alone). It needs ledger/store/log/check.py, and a database of real events
    written through UnitOfWork (the synthetic proof databases have no events). Returns
    None while it is not measured; the caller reports it as skipped."""
    try:
        from ledger.store.log import check  # noqa: F401
    except ImportError:
        return None
    return None  # logcheck is here, but its measurement is not written yet


# -- reporting ----------------------------------------------------------------------


def _percentile(samples: Sequence[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def _cost_ratios(
    results: dict[str, dict[str, Any]], faster: str, slower: str, goals: dict[str, float]
) -> list[dict[str, Any]]:
    """The cost of `slower`'s appends over `faster`'s, each mode, each database: the
    ratio of their median rates, and the median of the ratios repetition by repetition
    (the two ran next to each other: steadier when the machine's load changes)."""
    out = []
    for label in ("sqlite", "postgres"):
        for mode, goal in goals.items():
            slow = results.get(f"{label} appends/{slower}_{mode}")
            fast = results.get(f"{label} appends/{faster}_{mode}")
            if slow is None or fast is None:
                continue
            # Rates: cost with over cost without = the rate without / the rate with.
            ratio = fast["median"] / slow["median"]
            paired = statistics.median(
                f / s for f, s in zip(fast["samples"], slow["samples"], strict=True)
            )
            out.append(
                {
                    "group": f"{label} appends",
                    "mode": mode,
                    "with": slow["median"],
                    "without": fast["median"],
                    "cost_ratio": round(ratio, 3),
                    "paired_ratio": round(paired, 3),
                    "goal": goal,
                    "met": ratio <= goal,
                }
            )
    return out


def append_ratios(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Appends with the Merkle tree over the same appends without it."""
    return _cost_ratios(results, "plain", "tree", APPEND_GOALS)


SEAL_GOAL = 1.10
"""Issue 25: appends with the seal (stream heads, account chains, the seal event) within
10% of the same appends without it, in the same run."""


def seal_ratios(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Appends with the seal over the same appends without it."""
    return _cost_ratios(results, "unsealed", "tree", dict.fromkeys(APPEND_GOALS, SEAL_GOAL))


def _ratio_lines(ratios: list[dict[str, Any]]) -> list[str]:
    return [
        f"  {a['group']:<18} {a['mode']:<8} {a['without']:>7,}/s / {a['with']:>7,}/s ="
        f" {a['cost_ratio']:.3f}  goal <= {a['goal']}  {'MET' if a['met'] else 'MISSED'}"
        f"  (per repetition, median: {a['paired_ratio']:.3f})"
        for a in ratios
    ]


def proof_ratios(
    results: dict[str, dict[str, Any]], contenders: list[Contender], sizes: Sequence[int]
) -> list[dict[str, Any]]:
    by_key = {f"{c.group}/{c.name}": c for c in contenders}
    out = []
    for label in ("sqlite", "postgres"):
        for kind in ("inclusion", "consistency"):
            small = by_key.get(f"{label} proofs/{kind}@{min(sizes):,}")
            large = by_key.get(f"{label} proofs/{kind}@{max(sizes):,}")
            if small is None or large is None or small is large:
                continue
            ratio = statistics.median(large.samples) / statistics.median(small.samples)
            out.append(
                {
                    "group": f"{label} proofs",
                    "kind": kind,
                    "sizes": [min(sizes), max(sizes)],
                    "p50_ratio": round(ratio, 3),
                    "goal": PROOF_RATIO_GOAL,
                    "met": ratio <= PROOF_RATIO_GOAL,
                }
            )
    return out


def _fmt(r: dict[str, Any]) -> str:
    if r["unit"] == "seconds per call":
        return (
            f"p50 {r['median'] * 1e3:7.3f} ms  p90 {r['p90'] * 1e3:7.3f} ms"
            f"  (min {r['min'] * 1e3:.3f}, max {r['max'] * 1e3:.3f}; {len(r['samples'])} calls)"
        )
    return f"{r['median']:>9,}/s  (min {r['min']:,}, max {r['max']:,}; {r['items']:,} events a run)"


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"bench.tlog  Python {m['python']} on {m['platform']}",
        f"  cpus: {m['cpu_count']}, affinity: {m['cpu_affinity']}   seed: {report['seed']}"
        f"   repetitions: {report['repeat']} (interleaved per group, plus one warm-up each)",
        "",
        "Durability:",
    ]
    for name, d in report["durability"].items():
        lines.append(f"  {name:<10} " + ", ".join(f"{k}={v}" for k, v in d.items()))
    lines += ["", "Set-up (not timed below):"]
    for name, s in report["setup"].items():
        lines.append(f"  {name:<34} {s}")
    group = None
    lines.append("")
    for r in report["results"].values():
        if r["group"] != group:
            group = r["group"]
            lines.append(group)
        lines.append(f"  {r['name']:<22} {_fmt(r)}")
    lines += ["", "Appends, cost with the tree over cost without (median rates, same run):"]
    lines += _ratio_lines(report["append_ratios"])
    lines += ["", "Appends, cost with the seal over cost without it (median rates, same run):"]
    lines += _ratio_lines(report["seal_ratios"])
    lines += ["", "Proofs, p50 at the largest size over p50 at the smallest:"]
    for p in report["proof_ratios"]:
        lines.append(
            f"  {p['group']:<18} {p['kind']:<12} {p['sizes'][1]:,} / {p['sizes'][0]:,}:"
            f" {p['p50_ratio']:.3f}  goal <= {p['goal']}  {'MET' if p['met'] else 'MISSED'}"
        )
    for skipped in report["skipped"]:
        lines.append(f"  skipped: {skipped}")
    lines.append(f"Total run time {report['total_seconds']:.1f} s.")
    return "\n".join(lines)


# -- the run ------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tlog", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--batched",
        type=int,
        default=DEFAULT_BATCHED,
        help=f"events a run, {BATCH} a transaction (default {DEFAULT_BATCHED:,})",
    )
    parser.add_argument(
        "--single",
        type=int,
        default=DEFAULT_SINGLE,
        help=f"events a run, one a transaction (default {DEFAULT_SINGLE:,})",
    )
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="tree sizes for the proofs (default 10000,1000000)",
    )
    parser.add_argument(
        "--proofs",
        type=int,
        default=DEFAULT_PROOFS,
        help=f"proofs of each kind a repetition (default {DEFAULT_PROOFS})",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions (default 5)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--skip-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--skip-proofs", action="store_true", help="appends only")
    parser.add_argument("--dir", type=Path, default=None, help="where the databases go")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile one batched and one single run with the tree (SQLite)",
    )
    args = parser.parse_args(argv)  # fmt: skip
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    if min(args.batched, args.single, args.repeat, args.proofs, *sizes) < 1:
        parser.error("every count must be at least 1")
    started = time.perf_counter()
    with ExitStack() as stack:
        parent = Path(tempfile.mkdtemp(prefix="hazard-bench-tlog-", dir=args.dir))
        stack.callback(shutil.rmtree, parent, True)
        report = run(args, sizes, parent, stack)
    report["total_seconds"] = round(time.perf_counter() - started, 3)
    profile = report.pop("profile", "")
    print(json.dumps(report, indent=2) if args.json else render(report))
    if profile:
        print(profile, file=sys.stderr if args.json else sys.stdout)
    return 0


def run(
    args: argparse.Namespace, sizes: list[int], parent: Path, stack: ExitStack
) -> dict[str, Any]:
    signer = Signer.generate(ORIGIN)
    durability: dict[str, Any] = {}
    setup: dict[str, Any] = {}
    skipped: list[str] = []
    contenders: list[Contender] = []
    profile = ""

    def group(cs: list[Contender], label: str) -> None:
        _say(f"timing {label}: {len(cs)} contenders x {args.repeat} repetitions...")
        measure(cs, args.repeat, label)
        contenders.extend(cs)

    backends: list[tuple[str, Callable[[str], str]]] = [
        ("sqlite", lambda name: sqlite_url(parent / f"{name}.sqlite3"))
    ]
    sock: str | None = None
    if args.skip_postgres:
        skipped.append("PostgreSQL: --skip-postgres")
    else:
        sock, why = stack.enter_context(postgres_server(args.dir))
        if sock is None:
            skipped.append(why)
        else:
            durability["postgres"] = pg_durability(sock)
            pg = sock
            backends.append(("postgres", lambda name: pg_create(pg, name)))

    for label, url_for in backends:
        appends, stores = append_contenders(label, url_for, signer, args.single, args.batched)
        if label == "sqlite":
            with stores[0].engine.connect() as conn:
                durability["sqlite"] = sqlite_durability(conn.connection.driver_connection)
        group(appends, f"{label} appends")
        for store, c in zip(stores, appends, strict=True):
            if c.name.startswith("tree"):
                check_tree(store)
        if args.profile and label == "sqlite":
            for c in appends:
                if c.name.startswith("tree"):
                    arg = c.prepare()
                    profile += _profile(f"{c.name} ({c.what}), {c.items} events",
                                        lambda c=c, arg=arg: c.run(arg))  # fmt: skip
        for store in stores:
            store.close()
            store.engine.dispose()

    if args.skip_proofs:
        skipped.append("proofs: --skip-proofs")
    else:
        for label, _url_for in backends:
            cs: list[Contender] = []
            conns: list[sa.Connection] = []
            for size in sizes:
                _say(f"  {label}: filling tree_hashes with a tree of {size:,} synthetic records...")
                if label == "sqlite":
                    path = parent / f"proofs-{size}.sqlite3"
                    seconds = fill_sqlite(path, size)
                    url = sqlite_url(path)
                else:
                    assert sock is not None
                    url, seconds = fill_postgres(sock, f"proofs_{size}", size)
                setup[f"{label} tree of {size:,} records"] = (
                    f"{merkle.stored_hash_count(size):,} hashes inserted in {seconds:.1f} s"
                )
                engine = db.make_engine(url)
                made, conn = proof_contenders(f"{label} proofs", engine, size, args.proofs,
                                              args.seed + size)  # fmt: skip
                cs.extend(made)
                conns.append(conn)
            # inclusion at each size side by side, then consistency.
            group(sorted(cs, key=lambda c: c.name.split("@")[0] != "inclusion"), f"{label} proofs")
            for conn in conns:
                engine = conn.engine
                conn.close()
                engine.dispose()

    verified = full_verify("sqlite", "", max(sizes))
    if verified is None:
        skipped.append(
            "full verify at 10**6 events: not measured here yet (bench.tlog.full_verify is "
            "the hook; it needs ledger/store/log/check.py and a log of real events)"
        )

    results = summarise(contenders)
    for c in contenders:
        if c.latency:
            results[f"{c.group}/{c.name}"]["p90"] = round(_percentile(c.samples, 90), 6)
    report: dict[str, Any] = {
        "benchmark": "bench.tlog",
        "machine": _machine(),
        "seed": args.seed,
        "repeat": args.repeat,
        "parameters": {
            "batched": args.batched,
            "single": args.single,
            "batch": BATCH,
            "sizes": sizes,
            "proofs": args.proofs,
            "events": "Deposited on account streams, a new account a run",
            "proof trees": "synthetic records b'record <n>', hashes inserted into tree_hashes",
        },
        "durability": durability,
        "setup": setup,
        "results": results,
        "append_ratios": append_ratios(results),
        "seal_ratios": seal_ratios(results),
        "proof_ratios": proof_ratios(results, contenders, sizes),
        "skipped": skipped,
    }
    if profile:
        report["profile"] = profile
    return report


if __name__ == "__main__":
    raise SystemExit(main())
