"""How many checkpoints a witness cosigns a second: in-process, and over HTTP.

Run from the repository root:

    .venv/bin/python -m bench.witness                     # readable report
    .venv/bin/python -m bench.witness --json              # JSON on stdout
    .venv/bin/python -m bench.witness --pushes 200 --repeat 3 --size 10000

A log of `--size` records (1,000,000 by default) is built in memory once, with the
log's own code (ledger.store.log: merkle, checkpoint), and a chain of `--pushes`
add-checkpoint bodies is made from it before anything is timed: the first from the
empty tree to `--size`, then `--step` records at a time, each with its consistency
proof (about 2 log2 n hashes) and the log's signature. Each repetition gives a fresh
witness (its key and its state, ledger.witness.home.init, in `--dir`) the whole chain,
one push after the other as a log sends them, in three ways, rotated in turn, beside
a baseline:

  commit       the floor the disk sets: one IMMEDIATE transaction updating one row of
               an SQLite file in the same directory, WAL and synchronous FULL, per push
               (what the witness's own transaction costs, less everything else)
  in-process   Witness.add_checkpoint, the witness's whole work: read the body, verify
               the log's signature, and in one IMMEDIATE transaction judge the proof,
               cosign and store the tree (SQLite, WAL, synchronous FULL: an fsync each)
  keep-alive   POST /add-checkpoint to `hazard witness serve` (its defaults: one
               worker, four threads) over one kept-alive HTTP/1.1 connection, as
               tlog-witness asks clients to
  new-conn     the same with a new connection for each push, for comparison

Figures: cosignatures a second over the chain, median of the repetitions, and as a
share of the baseline's rate in the same run; and the p50/p99 of one push over every
push of every repetition. A witness is bound by its disk: each cosignature waits for
an fsync (the spec asks that the new tree be on disk before the answer), so the figures
move with the disk, and with whatever else is writing to it. The target (issue 24): at
least 200 a second. Speed is reported, never asserted. Standard library and the
project's dependencies only.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.fold import _machine, _say
from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, sign_checkpoint
from ledger.store.log.keys import Signer
from ledger.witness import home
from ledger.witness.cosigning import Witness

ORIGIN = "bench.example/hazard"
MODES = ("commit", "in-process", "keep-alive", "new-conn")


def chain(size: int, pushes: int, step: int) -> tuple[Signer, list[bytes]]:
    """The log's key, and `pushes` add-checkpoint bodies, each from the last one's size."""
    signer = Signer.generate(ORIGIN)
    stored: list[bytes] = []
    frontier = merkle.Frontier()
    end = size + (pushes - 1) * step
    for n in range(end):
        stored += frontier.append(merkle.leaf_hash(b"record %d" % n))

    def read(indexes: Sequence[int]) -> list[bytes]:
        return [stored[i] for i in indexes]

    bodies = []
    old = 0
    for new in range(size, end + 1, step):
        proof = merkle.prove_tree(new, old, read) if old else []
        note = sign_checkpoint(Checkpoint(ORIGIN, new, merkle.tree_hash(new, read)), signer)
        lines = "".join(base64.b64encode(h).decode() + "\n" for h in proof)
        bodies.append(f"old {old}\n{lines}\n{note}".encode())
        old = new
    return signer, bodies


def fresh(where: Path, signer: Signer) -> Path:
    shutil.rmtree(where, ignore_errors=True)
    home.init(where, "bench.example/witness", signer.verifier)
    return where


def in_process(where: Path, bodies: list[bytes]) -> list[float]:
    witness = Witness(home.open_state(where), home.load_cosigner(where))
    times = []
    for body in bodies:
        began = time.perf_counter()
        witness.add_checkpoint(body)
        times.append(time.perf_counter() - began)
    witness.state.close()
    return times


def commit(where: Path, bodies: list[bytes]) -> list[float]:
    conn = sqlite3.connect(where / "baseline.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE logs (origin TEXT PRIMARY KEY, size INTEGER, note TEXT)")
    conn.execute("INSERT INTO logs VALUES (?, 0, '')", (ORIGIN,))
    times = []
    for size, body in enumerate(bodies):
        began = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("SELECT size FROM logs WHERE origin = ?", (ORIGIN,)).fetchone()
        conn.execute("UPDATE logs SET size = ?, note = ? WHERE origin = ?", (size, body, ORIGIN))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - began)
    conn.close()
    return times


def serving(where: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", "witness", "serve", "--port", "0", "--dir", str(where)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = ""
    for line in proc.stdout:
        seen += line
        found = re.search(r"serving at http://127\.0\.0\.1:(\d+)", seen)
        if found:
            return proc, int(found[1])
    raise RuntimeError(f"hazard witness serve did not start: {seen}")


def over_http(where: Path, bodies: list[bytes], keep_alive: bool) -> list[float]:
    proc, port = serving(where)
    times = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for body in bodies:
            began = time.perf_counter()
            if not keep_alive:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/add-checkpoint", body=body)
            answer = conn.getresponse()
            answer.read()
            if not keep_alive:
                conn.close()
            times.append(time.perf_counter() - began)
            if answer.status != 200:
                raise RuntimeError(f"the witness answered {answer.status}")
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    return times


def run(args: argparse.Namespace) -> dict[str, Any]:
    _say(f"building a log of {args.size:,} records and {args.pushes} pushes ...")
    signer, bodies = chain(args.size, args.pushes, args.step)
    where = Path(args.dir or tempfile.mkdtemp(prefix="bench-witness-")) / "witness"
    contenders: dict[str, Callable[[Path, list[bytes]], list[float]]] = {
        "commit": commit,
        "in-process": in_process,
        "keep-alive": lambda w, b: over_http(w, b, keep_alive=True),
        "new-conn": lambda w, b: over_http(w, b, keep_alive=False),
    }
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    pushes: dict[str, list[float]] = {mode: [] for mode in MODES}
    try:
        for repeat in range(args.repeat):
            turn = repeat % len(MODES)
            order = MODES[turn:] + MODES[:turn]  # rotated, so none is always first
            for mode in order:
                times = contenders[mode](fresh(where, signer), bodies)
                rates[mode].append(len(times) / sum(times))
                pushes[mode] += times
                _say(f"  {repeat + 1}/{args.repeat} {mode:<10} {rates[mode][-1]:8.0f} /s")
    finally:
        shutil.rmtree(where.parent if args.dir is None else where, ignore_errors=True)
    return {
        "machine": _machine(),
        "size": args.size,
        "pushes": args.pushes,
        "step": args.step,
        "repeat": args.repeat,
        "modes": {
            mode: {
                "cosignatures_per_s": statistics.median(rates[mode]),
                "of_baseline": statistics.median(
                    r / b for r, b in zip(rates[mode], rates["commit"], strict=True)
                ),
                "runs": rates[mode],
                "p50_ms": _quantile(pushes[mode], 50),
                "p99_ms": _quantile(pushes[mode], 99),
            }
            for mode in MODES
        },
    }


def _quantile(times: list[float], q: int) -> float:
    return statistics.quantiles(times, n=100)[q - 1] * 1000


def report(result: dict[str, Any]) -> str:
    lines = [
        f"witness: {result['pushes']} pushes a run ({result['step']} records each, "
        f"from a log of {result['size']:,}), {result['repeat']} runs, medians",
        f"{'':<12}{'cosignatures/s':>16}{'of commit':>11}{'p50 ms':>10}{'p99 ms':>10}",
    ]
    for mode, figures in result["modes"].items():
        lines.append(
            f"{mode:<12}{figures['cosignatures_per_s']:>16,.0f}{figures['of_baseline']:>11.0%}"
            f"{figures['p50_ms']:>10.2f}{figures['p99_ms']:>10.2f}"
        )
    lines.append("(commit: one SQLite transaction a push, no witness: the disk's floor)")
    lines.append("target: at least 200 cosignatures a second")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size", type=int, default=1_000_000, help="the log's size at the first push"
    )
    parser.add_argument("--pushes", type=int, default=500, help="pushes a run")
    parser.add_argument("--step", type=int, default=10, help="records between two pushes")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each mode")
    parser.add_argument("--dir", help="where the witness's state is kept (its disk is timed)")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    args = parser.parse_args(argv)
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
