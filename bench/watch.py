"""How long `hazard watch` takes over a log of a million events with fifty receipts.

Run from the repository root:

    .venv/bin/python -m bench.watch                          # 10**6 events, 50 receipts
    .venv/bin/python -m bench.watch --events 100000 --repeat 9

The log is a SQLite database whose tree is built directly (bench.tlog's synthetic
records: the watcher reads the tree's stored hashes and the signed checkpoints, never
an event), with a checkpoint at each receipt's size, at the size the watcher held
before, and at the newest, which two witnesses cosign; five checkpoints are reported
to the gossip. It is made once and kept in `.bench-cache/`.

Three runs are timed, each `--repeat` times, and the median reported:

- **first**: a watcher that holds nothing but 50 receipts never checked: one
  consistency proof for each, and the gossip read (ledger.watch.verdicts.watch over a
  LocalSource, in process);
- **steady**: the same watcher on its next run, the log grown a little: its receipts
  are prefixes of what it held, so one proof, from what it held to the newest;
- **command**: `hazard watch --database-url ... --policy ... --state ...` of the first
  kind, as a process of its own, start to exit (Python's start-up and imports in it);
- **baseline**: `hazard watch --help`, start to exit: Python's start-up and the same
  imports, doing nothing, timed beside it (interleaved), so that the two can be told
  apart.

Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa

from bench.tlog import fill_sqlite
from ledger.store import db
from ledger.store.log import merkle, tree, witnessed
from ledger.store.log.cosignature import Cosigner
from ledger.store.log.keys import Signer
from ledger.store.log.policy import Policy
from ledger.watch import state, verdicts
from ledger.watch.evidence import Outcome
from ledger.watch.sources import LocalSource
from ledger.watch.state import Receipt, State

SIGNER = Signer("bench.hazard/ledger", hashlib.sha256(b"bench watch log").digest())
WITNESSES = [
    Cosigner(f"w{i}.bench/w", hashlib.sha256(b"witness %d" % i).digest()) for i in range(3)
]
AT = "2026-11-26T15:00:00Z"
VERSION = 1
"""Bump when what is built changes: cached files of other versions are not used."""


def policy_text() -> str:
    lines = [f"log {SIGNER.verifier.text()}"]
    lines += [f"witness w{i} {w.key.text()}" for i, w in enumerate(WITNESSES)]
    return "\n".join([*lines, "group all3 2 w0 w1 w2", "quorum all3", ""])


def sizes(events: int, receipts: int) -> tuple[list[int], int, int]:
    """The receipts' sizes (spread over the log), the size held before, the newest."""
    held = events - events // 100
    step = held // (receipts + 1)
    return [step * (i + 1) + i for i in range(receipts)], held, events


def build(path: Path, events: int, receipts: int) -> None:
    fill_sqlite(path, events)
    engine = db.make_engine(f"sqlite:///{path}")
    spread, held, newest = sizes(events, receipts)
    with engine.begin() as conn:
        for size in sorted({*spread, held, newest, 1, 2, 3, 4, 5}):
            root = merkle.tree_hash(size, tree.reader(conn))
            tree.issue(conn, SIGNER, size, root, AT)
    with engine.begin() as conn:
        for size in (held, newest):
            note = conn.execute(
                sa.text("SELECT note FROM checkpoints WHERE size = :s"), {"s": size}
            ).scalar_one()
            text = note[: note.rindex("\n\n") + 1]
            for witness in WITNESSES[:2]:
                witnessed.record(conn, size, witness.key, witness.cosign(text, 1_790_000_000), AT)
        for size in (1, 2, 3, 4, 5):
            note = conn.execute(
                sa.text("SELECT note FROM checkpoints WHERE size = :s"), {"s": size}
            ).scalar_one()
            witnessed.report(conn, note, SIGNER.verifier, "bench", AT)
    engine.dispose()


def cached(cache: Path, events: int, receipts: int) -> Path:
    path = cache / f"watch-v{VERSION}-{events}-{receipts}.sqlite3"
    if not path.exists():
        cache.mkdir(exist_ok=True)
        partial = path.with_suffix(".partial")
        for leftover in cache.glob(partial.name + "*"):
            leftover.unlink()
        print(f"building {path} (once) ...", file=sys.stderr)
        build(partial, events, receipts)
        partial.rename(path)
    return path


def notes(engine: sa.Engine, wanted: list[int]) -> dict[int, str]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT size, note FROM checkpoints WHERE size IN :s").bindparams(
                sa.bindparam("s", expanding=True)
            ),
            {"s": wanted},
        ).all()
    return {int(size): note for size, note in rows}


def timed(run: object, repeat: int) -> list[float]:
    assert callable(run)
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--receipts", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cache", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    path = cached(args.cache, args.events, args.receipts)
    engine = db.make_engine(f"sqlite:///{path}")
    policy = Policy.parse(policy_text())
    spread, held, _ = sizes(args.events, args.receipts)
    found = notes(engine, [*spread, held])
    receipts = tuple(Receipt(f"r{size}.txt", found[size]) for size in spread)
    first_state = State(receipts=receipts)
    source = LocalSource(engine)

    def first() -> None:
        verdict = verdicts.watch(first_state, source, policy)
        assert verdict.outcome is Outcome.CONSISTENT, verdict.lines

    settled = State(found[held], tuple(Receipt(r.name, r.text, held) for r in receipts), 5)

    def steady() -> None:
        verdict = verdicts.watch(settled, source, policy)
        assert verdict.outcome is Outcome.CONSISTENT, verdict.lines

    work = args.cache / "watch-command"
    work.mkdir(exist_ok=True)
    (work / "club.policy").write_text(policy_text())
    command = [
        sys.executable, "-m", "ledger", "watch", "--database-url", f"sqlite:///{path.resolve()}",
        "--policy", "club.policy", "--state", "w.json",
    ]  # fmt: skip

    def whole() -> None:
        state.save(work / "w.json", first_state)
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, env=os.environ)
        assert done.returncode == 0, done.stdout + done.stderr

    def bare() -> None:
        help_ = [sys.executable, "-m", "ledger", "watch", "--help"]
        done = subprocess.run(help_, capture_output=True)
        assert done.returncode == 0

    results: dict[str, list[float]] = {"first": [], "steady": [], "command": [], "baseline": []}
    runs = {"first": first, "steady": steady, "command": whole, "baseline": bare}
    for _ in range(args.repeat):  # interleaved, so that a busy spell falls on each alike
        for name, run in runs.items():
            results[name] += timed(run, 1)
    engine.dispose()
    report = {
        "events": args.events,
        "receipts": args.receipts,
        "held": held,
        "repeat": args.repeat,
        "median_ms": {k: round(statistics.median(v) * 1000, 1) for k, v in results.items()},
        "min_ms": {k: round(min(v) * 1000, 1) for k, v in results.items()},
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"hazard watch over {args.events:,} events, {args.receipts} receipts", end="")
    print(f" (median of {args.repeat})")
    what = {
        "first": f"first run: {args.receipts} receipts never checked, nothing held",
        "steady": f"next run: held {held:,}, receipts settled",
        "command": "the command, a process start to exit (first run)",
        "baseline": "baseline: `hazard watch --help`, start to exit",
    }
    for name, label in what.items():
        print(
            f"  {label:<52} {report['median_ms'][name]:8.1f} ms  (min {report['min_ms'][name]:.1f})"
        )


if __name__ == "__main__":
    main()
