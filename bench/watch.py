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
  apart;
- **http**: `hazard watch --url ...` of the first kind, as a player's or an auditor's
  watcher runs it: the same log served by `hazard serve` (a copy, with its key), read
  without a token, a request a proof;
- **check**: `hazard watch check FILE --policy ...`, start to exit: one tlog-proof of a
  deposit (in a small log of its own, cosigned by two of the three witnesses) checked
  offline.

With `--code DIR`, each command (command, baseline, http, check) is also run with
another checkout's `ledger/` (PYTHONPATH=DIR), interleaved with this one's: the two
side by side. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
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


@contextlib.contextmanager
def served(path: Path, work: Path) -> Iterator[str]:
    """`hazard serve` on a copy of the log at `path`, signing with its key: its URL."""
    from bench.witnessing import serve
    from ledger.store.log.keys import write_secret

    key = work / "log.key"
    if not key.exists():
        write_secret(key, SIGNER.text())
    with serve(path, work, "served", {}, workers=2, key=key) as server:
        yield f"http://127.0.0.1:{server.port}"


def receipt_file(work: Path) -> Path:
    """A deposit's tlog-proof, as a player keeps it: a log of its own (a player opened,
    then the deposit), its newest checkpoint cosigned by two of the three witnesses."""
    from ledger.books.book import Book
    from ledger.service import Club
    from ledger.store.eventstore import EventStore
    from ledger.store.log import tlogproof
    from ledger.store.vocabulary import Deposited

    proof = work / "deposit.tlog-proof"
    database = work / "receipt.sqlite3"
    for leftover in [proof, *work.glob("receipt.sqlite3*")]:
        leftover.unlink(missing_ok=True)
    engine = db.make_engine(f"sqlite:///{database}")
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    club.create_player("ann", "setter")
    receipt = club.account_command("ann", Deposited, 250, "setter")["receipt"]
    size = receipt["positions"][-1]
    text = receipt["checkpoint"][: receipt["checkpoint"].rindex("\n\n") + 1]
    with engine.begin() as conn:
        for witness in WITNESSES[:2]:
            witnessed.record(conn, size, witness.key, witness.cosign(text, 1_790_000_000), AT)
    with engine.connect() as conn:
        proof.write_text(tlogproof.of(conn, receipt["positions"][0]))
    store.close()
    engine.dispose()
    return proof


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
    parser.add_argument(
        "--code", type=Path, help="also run the commands with this checkout's ledger/, beside"
    )
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
    proof = receipt_file(work)
    hazard = [sys.executable, "-m", "ledger", "watch"]
    watching = ["--policy", "club.policy", "--state", "w.json"]
    database = ["--database-url", f"sqlite:///{path.resolve()}"]
    codes = {"": dict(os.environ), **({"@code": _on(args.code)} if args.code else {})}

    def command(argv: list[str], env: dict[str, str]) -> Callable[[], None]:
        def run() -> None:
            state.save(work / "w.json", first_state)
            done = subprocess.run(hazard + argv, cwd=work, capture_output=True, text=True, env=env)
            assert done.returncode == 0, done.stdout + done.stderr

        return run

    with served(path, work) as url:
        runs: dict[str, Callable[[], None]] = {"first": first, "steady": steady}
        for suffix, env in codes.items():
            runs["command" + suffix] = command([*database, *watching], env)
            runs["baseline" + suffix] = command(["--help"], env)
            runs["http" + suffix] = command(["--url", url, *watching], env)
            runs["check" + suffix] = command(["check", proof.name, "--policy", "club.policy"], env)
        results: dict[str, list[float]] = {name: [] for name in runs}
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
        "http": "over HTTP: `hazard watch --url`, start to exit (first run)",
        "check": "`hazard watch check FILE`, start to exit",
    }
    if args.code:
        print(f"  (@code: the same command with {args.code}'s ledger/)")
    for name, label in what.items():
        for key, shown in ((name, label), (name + "@code", "  @code")):
            if key in report["median_ms"]:
                median, least = report["median_ms"][key], report["min_ms"][key]
                print(f"  {shown:<58} {median:8.1f} ms  (min {least:.1f})")


def _on(code: Path) -> dict[str, str]:
    """The environment that runs `hazard` with the checkout at `code`."""
    return {**os.environ, "PYTHONPATH": str(code.resolve())}


if __name__ == "__main__":
    main()
