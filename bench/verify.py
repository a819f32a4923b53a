"""How fast the log is verified, and in how much memory: `hazard verify`'s pass over
the events (chains, tree, checkpoints), the tree alone, and the deep check.

Run from the repository root:

    .venv/bin/python -m bench.verify                      # 1,000,000 events, SQLite
    .venv/bin/python -m bench.verify --events 100000 --json
    .venv/bin/python -m bench.verify --skip-deep          # the deep check takes minutes

The log is real: Deposited and Withdrawn events on 1,000 account streams, written
through the UnitOfWork in writes of 1,000 events (one signed checkpoint each), kept
in --dir for the next run. Each measurement runs in a child process of its own, so
that its peak RSS (ru_maxrss) is its own, and is repeated --repeat times; figures
are medians. Reported, never asserted:

  tree alone    every event read (raw cursor), its leaf hashed and folded into the
                tree's right edge, the root compared with the newest checkpoint's
                (goal: 300,000 events a second)
  log check     ledger.store.log.check.check_log, as `hazard verify` runs it: gaps,
                chains, leaves and every stored hash, every checkpoint's signature
  deep          ledger.books.deep.differences, as `hazard verify --deep` adds it
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
    from ledger.store.log import check, merkle, tree
    from ledger.store.log.keys import load_signer

    engine = db.make_engine(url)
    verifier = load_signer(key).verifier
    started = time.perf_counter()
    if phase == "tree":
        frontier = merkle.Frontier()  # the right edge: all a pass keeps of the tree
        with engine.connect() as conn:
            cursor = conn.connection.cursor()
            cursor.execute(f"SELECT {', '.join(Recorded._fields)} FROM events ORDER BY position")
            while rows := cursor.fetchmany(10_000):
                for row in rows:
                    frontier.append(merkle.leaf_hash(Recorded(*row).hashed()))
            stored = merkle.tree_hash(frontier.size, tree.reader(conn))
        assert frontier.root() == stored, "the tree the events give is not the stored one"
        events = frontier.size
    elif phase == "log":
        with engine.connect() as conn, conn.begin():
            check.snapshot(conn)
            report = check.check_log(conn, verifier)
        assert report.ok, report.findings[:3]
        events = report.events
    else:
        from ledger.books import deep

        store = EventStore(engine)
        found = list(deep.differences(store))
        assert not found, found[:3]
        with engine.connect() as conn:
            events = int(conn.exec_driver_sql("SELECT count(*) FROM events").scalar_one())
    seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"events": events, "seconds": seconds, "rate": events / seconds, "rss_mib": rss}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.verify", description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--skip-deep", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:  # a child: one measurement, as JSON
        print(json.dumps(_phase(args.phase, args.url, args.key)))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"verify-{args.events}.sqlite3"
    _say(f"log of {args.events:,} events at {path}")
    build(path, args.events)
    url, key = f"sqlite:///{path}", str(path.with_suffix(".key"))
    phases = ["tree", "log"] + ([] if args.skip_deep else ["deep"])
    results: dict[str, Any] = {"events": args.events, "phases": {}}
    for phase in phases:
        runs = []
        for _ in range(args.repeat if phase != "deep" else 1):
            out = subprocess.run(
                [sys.executable, "-m", "bench.verify", "--phase", phase, "--url", url,
                 "--key", key],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            runs.append(json.loads(out.stdout))
            _say(f"  {phase}: {runs[-1]['rate']:,.0f} events/s, {runs[-1]['rss_mib']:.0f} MiB")
        results["phases"][phase] = {
            "runs": len(runs),
            "median_rate": statistics.median(r["rate"] for r in runs),
            "median_seconds": statistics.median(r["seconds"] for r in runs),
            "peak_rss_mib": max(r["rss_mib"] for r in runs),
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"verify at {args.events:,} events (medians):")
    for phase, r in results["phases"].items():
        print(
            f"  {phase:5}  {r['median_rate']:>10,.0f} events/s  {r['median_seconds']:8.1f} s"
            f"  peak RSS {r['peak_rss_mib']:.0f} MiB  ({r['runs']} run(s))"
        )


if __name__ == "__main__":
    main()
