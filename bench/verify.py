"""How fast the log is verified, and in how much memory: `hazard verify`'s pass over
the events (chains, tree, checkpoints), the tree alone, and the deep check; and issue
27's target for the deep check on played tables, beside its baseline.

Run from the repository root:

    .venv/bin/python -m bench.verify                      # 1,000,000 events, SQLite
    .venv/bin/python -m bench.verify --events 100000 --json
    .venv/bin/python -m bench.verify --skip-deep          # the deep check takes minutes
    .venv/bin/python -m bench.verify --events 20000 --played-only --repeat 3

Two logs. The plain one is made here: Deposited and Withdrawn events on 1,000 account
streams, written through the UnitOfWork in writes of 1,000 events (one signed
checkpoint each), kept in --dir for the next run. The played one is bench.seed's
(tables played through the service's write path, cached in --dir as bench.exports
finds it). Each measurement runs in a child process of its own, so that its peak RSS
(VmHWM) is its own, and is repeated --repeat times (the plain log's deep check once);
the played log's two phases take turns in each round. Figures are medians. Reported,
never asserted:

  tree alone    (plain) every event read (raw cursor), its leaf hashed and folded into
                the tree's right edge, the root compared with the stored tree's
  log check     (plain) ledger.store.log.check.check_log, as `hazard verify` runs it:
                gaps, chains, leaves and every stored hash, every checkpoint's signature
  deep          (plain) ledger.books.deep.differences, as `hazard verify --deep` adds it
  pipeline      (played) the baseline: bench.pipeline (json and hashlib) over the events'
                rows read by a plain SELECT through the driver: each row's canonical
                bytes hashed, its postings summed, the root built (held to the stored
                tree's, after the clock stops)
  verify deep   (played) what `hazard verify --deep` runs: the log check, every table
                through the referee (ledger.audit.refereed.replay) and the read models
                replayed and compared (deep.differences), each part's seconds given;
                the target: >= 100,000 events a second, MET or MISSED, beside the
                pipeline's rate
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.exports import MB_A_MIB, RSS_GOAL_MB, _rss_mib

DEEP_GOAL = 100_000
"""Issue 27: `hazard verify --deep` on played tables, events a second."""

WRITE = 1_000
"""Events a write (and a checkpoint) in the generated log."""
ACCOUNTS = 1_000


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def build(path: Path, events: int) -> None:
    """A log of `events` real events at `path` (made once, then reused)."""
    from ledger.books.accounts import account_stream
    from ledger.store import db
    from ledger.store.eventstore import EventStore
    from ledger.store.log.keys import create_key, load_signer
    from ledger.store.vocabulary import Deposited, Withdrawn
    from ledger.unit_of_work import UnitOfWork

    if path.exists():
        return
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    key = path.with_suffix(".key")
    key.unlink(missing_ok=True)
    create_key(key, "bench.hazard/verify")
    engine = db.make_engine(f"sqlite:///{partial}")
    db.upgrade(engine)
    store = EventStore(engine, signer=load_signer(key))
    versions = [0] * ACCOUNTS
    started = time.perf_counter()
    written = 0
    while written < events:
        n = min(WRITE, events - written)
        a = (written // WRITE) % ACCOUNTS
        name = f"p{a:04d}"
        stream = account_stream(name)
        v = versions[a]
        batch = [
            Deposited(version=v + i, account=name, amount=100)
            if i % 2
            else Withdrawn(version=v + i, account=name, amount=50)
            for i in range(1, n + 1)
        ]
        if v == 0:
            batch[0] = Deposited(version=1, account=name, amount=1_000_000)
        with UnitOfWork(store) as uow:
            uow.record(stream, v, batch, "setter")
            uow.commit()
        versions[a] = v + n
        written += n
        if written % 100_000 == 0:
            _say(f"  {written:,} events written ({time.perf_counter() - started:.0f} s)")
    store.close()
    engine.dispose()
    partial.rename(path)


def _phase(phase: str, url: str, key: str) -> dict[str, Any]:
    """One measurement, in this (child) process."""
    from ledger.store import db
    from ledger.store.eventstore import EventStore, Recorded
    from ledger.store.log import merkle, tree
    from ledger.store.log.keys import load_signer

    engine = db.make_engine(url)
    verifier = load_signer(key).verifier
    started = time.perf_counter()
    cpu = time.process_time()
    seconds: float | None = None  # set by a phase that checks its result off the clock
    parts: dict[str, float] = {}
    if phase == "pipeline":
        from bench import pipeline

        with engine.connect() as conn:
            cursor = conn.connection.cursor()
            cursor.execute(f"SELECT {', '.join(pipeline.COLUMNS)} FROM events ORDER BY position")
            done = pipeline.from_rows(_fetched(cursor))
            seconds = time.perf_counter() - started
            stored_root = merkle.tree_hash(done.events, tree.reader(conn)).hex()
        assert done.root == stored_root, "the pipeline's root is not the stored tree's"
        events = done.events
    elif phase == "verify-deep":
        from ledger.audit import refereed
        from ledger.books import deep

        report = _log_checked(engine, verifier)
        parts["log check"] = time.perf_counter() - started
        rules = refereed.replay(engine)
        assert rules.breach is None, rules.breach
        parts["referee"] = time.perf_counter() - started - parts["log check"]
        found = list(deep.differences(EventStore(engine)))
        assert not found, found[:3]
        seconds = time.perf_counter() - started
        parts["read models"] = seconds - parts["log check"] - parts["referee"]
        events = report.events
    elif phase == "tree":
        frontier = merkle.Frontier()  # the right edge: all a pass keeps of the tree
        with engine.connect() as conn:
            cursor = conn.connection.cursor()
            cursor.execute(f"SELECT {', '.join(Recorded._fields)} FROM events ORDER BY position")
            for row in _fetched(cursor):
                frontier.append(merkle.leaf_hash(Recorded(*row).hashed()))
            stored = merkle.tree_hash(frontier.size, tree.reader(conn))
        assert frontier.root() == stored, "the tree the events give is not the stored one"
        events = frontier.size
    elif phase == "log":
        events = _log_checked(engine, verifier).events
    else:
        from ledger.books import deep

        store = EventStore(engine)
        found = list(deep.differences(store))
        assert not found, found[:3]
        with engine.connect() as conn:
            events = int(conn.exec_driver_sql("SELECT count(*) FROM events").scalar_one())
    if seconds is None:
        seconds = time.perf_counter() - started
    return {
        "events": events,
        "seconds": seconds,
        # The process's own CPU time: on a machine shared with other work, what the phase
        # cost when the wall clock says mostly how long it waited for a core.
        "cpu_seconds": time.process_time() - cpu,
        "rate": events / seconds,
        "rss_mib": _rss_mib(),
        "parts": parts,
    }


def _log_checked(engine: Any, verifier: Any) -> Any:
    """The log check's report on `engine`'s database, which must find nothing."""
    from ledger.store.log import check

    with engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, verifier)
    assert report.ok, report.findings[:3]
    return report


def _fetched(cursor: Any) -> Iterator[tuple[Any, ...]]:
    while rows := cursor.fetchmany(10_000):
        yield from rows


def _measured(phase: str, url: str, key: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.verify", "--phase", phase, "--url", url, "--key", key],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    run: dict[str, Any] = json.loads(out.stdout)
    parts = "".join(f", {name} {s:.1f} s" for name, s in run["parts"].items())
    _say(
        f"  {phase}: {run['rate']:,.0f} events/s, {run['cpu_seconds']:.1f} s of CPU,"
        f" {run['rss_mib']:.0f} MiB{parts}"
    )
    return run


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {
        "runs": len(runs),
        "events": runs[0]["events"],
        "median_rate": statistics.median(r["rate"] for r in runs),
        "median_seconds": statistics.median(r["seconds"] for r in runs),
        "median_cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
        "peak_rss_mib": max(r["rss_mib"] for r in runs),
    }
    if runs[0]["parts"]:
        out["median_parts"] = {
            name: statistics.median(r["parts"][name] for r in runs) for name in runs[0]["parts"]
        }
    return out


def _plain(args: argparse.Namespace) -> dict[str, Any]:
    """The plain log's phases, each --repeat times (the deep check once)."""
    path = args.dir / f"verify-{args.events}.sqlite3"
    _say(f"plain log of {args.events:,} events at {path}")
    build(path, args.events)
    url, key = f"sqlite:///{path}", str(path.with_suffix(".key"))
    phases = ["tree", "log"] + ([] if args.skip_deep else ["deep"])
    return {
        phase: _summary(
            [_measured(phase, url, key) for _ in range(args.repeat if phase != "deep" else 1)]
        )
        for phase in phases
    }


def _played(args: argparse.Namespace) -> dict[str, Any]:
    """bench.seed's log: the pipeline and `hazard verify --deep`, in turn in each round."""
    from bench.seed import key_for, seeded

    found = seeded(args.events, args.dir)
    _say(f"played log of {args.events:,} events at {found.path}")
    url, key = f"sqlite:///{found.path}", str(key_for(found.path))
    phases = ["pipeline"] + ([] if args.skip_deep else ["verify-deep"])
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in phases}
    for _ in range(args.repeat):
        for phase in phases:
            runs[phase].append(_measured(phase, url, key))
    return {phase: _summary(rs) for phase, rs in runs.items()}


def report(results: dict[str, Any]) -> str:
    lines = []
    if results.get("plain"):
        lines.append(f"plain log, {results['events']:,} events (medians):")
        for phase, r in results["plain"].items():
            lines.append(
                f"  {phase:5}  {r['median_rate']:>10,.0f} events/s  {r['median_seconds']:8.1f} s"
                f"  peak RSS {r['peak_rss_mib']:.0f} MiB  ({r['runs']} run(s))"
            )
    played = results.get("played", {})
    if played:
        lines.append(f"played log (bench.seed's), {results['events']:,} events (medians):")
        for phase, r in played.items():
            parts = "".join(f", {n} {s:.1f} s" for n, s in r.get("median_parts", {}).items())
            lines.append(
                f"  {phase:11}  {r['median_rate']:>10,.0f} events/s  {r['median_seconds']:8.1f} s"
                f"  ({r['median_cpu_seconds']:.1f} s of CPU)"
                f"  peak RSS {r['peak_rss_mib']:.0f} MiB  ({r['runs']} run(s){parts})"
            )
        deep, pipe = played.get("verify-deep"), played.get("pipeline")
        lines.append("issue 27's target, beside its baseline from this run:")
        if deep is None:
            lines.append("  verify --deep on played tables: not measured (--skip-deep)")
        else:
            rate = deep["median_rate"]
            against = f"{rate / pipe['median_rate']:.2f}x the pipeline's {pipe['median_rate']:,.0f}"
            verdict = "MET" if rate >= DEEP_GOAL else "MISSED"
            mb = deep["peak_rss_mib"] * MB_A_MIB
            lines.append(
                f"  verify --deep on played tables  {rate:,.0f} events/s  {against}"
                f"  goal >= {DEEP_GOAL:,} events/s  {verdict}"
            )
            by_cpu = pipe["median_cpu_seconds"] / deep["median_cpu_seconds"]
            per_cpu = deep["events"] / deep["median_cpu_seconds"]
            lines.append(
                f"  the same by CPU time  {per_cpu:,.0f} events a CPU-second"
                f"  {by_cpu:.2f}x the pipeline's"
            )
            lines.append(
                f"  peak RSS, verify --deep  {mb:.0f} MB  goal < {RSS_GOAL_MB} MB  "
                + ("MET" if mb < RSS_GOAL_MB else "MISSED")
            )
    lines.append(f"load average before the run: {results['load']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.verify",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--skip-deep", action="store_true")
    parser.add_argument("--played-only", action="store_true",
                        help="only the played log's phases (issue 27's target)")  # fmt: skip
    parser.add_argument("--plain-only", action="store_true",
                        help="only the plain log's phases")  # fmt: skip
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:  # a child: one measurement, as JSON
        print(json.dumps(_phase(args.phase, args.url, args.key)))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "events": args.events,
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    if not args.played_only:
        results["plain"] = _plain(args)
    if not args.plain_only:
        results["played"] = _played(args)
    print(json.dumps(results, indent=2) if args.json else report(results))


if __name__ == "__main__":
    main()
