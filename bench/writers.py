"""SQLite writers' queue alone (ledger.store.writers): processes of threads taking turns.

    .venv/bin/python -m bench.writers        # 2 processes x 4 threads, 6 runs of 4 s
    .venv/bin/python -m bench.writers --processes 3 --threads 8 --runs 3

Each thread takes a turn, holds it for a short critical section (asleep for --hold-ms, as
a commit's fsync, then a little work holding the GIL), lets go, and asks again, until
the run's seconds are up; the processes share one queue file, so turns pass between
them (through each process's broker, when another process holds the flock) as well
as between the threads of one. Reports, per run and as medians over the runs: turns a
second, and the wait for a turn at p50 and p99. Nothing is written to any database.

Run it from another checkout (`cd OTHER && PYTHONPATH=. python -m bench.writers`) to set
code side by side: it takes its turns as that checkout's queue asks (a deadline, or a
timeout before there was one).
"""

from __future__ import annotations

import argparse
import inspect
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
from typing import Any

import sqlalchemy as sa

from ledger.store import writers

FORK = multiprocessing.get_context("fork")
BY_DEADLINE = "deadline" in inspect.signature(writers.WriterQueue.turn).parameters


def _process(path: str, seconds: float, threads: int, hold: float, out: Any) -> None:
    queue = writers.for_engine(sa.create_engine(f"sqlite:///{path}"))
    assert queue is not None
    waits: list[float] = []
    stop = time.monotonic() + seconds

    def loop() -> None:
        mine = []
        while time.monotonic() < stop:
            asked = time.monotonic()
            with queue.turn(asked + 10 if BY_DEADLINE else 10):  # type: ignore[arg-type]
                mine.append(time.monotonic() - asked)
                time.sleep(hold)
                sum(range(300))
        waits.extend(mine)

    running = [threading.Thread(target=loop) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    out.put(waits)


def run(processes: int, threads: int, seconds: float, hold: float) -> tuple[float, float, float]:
    """(turns a second, p50 wait ms, p99 wait ms) of one run on a fresh queue file."""
    path = os.path.join(tempfile.mkdtemp(prefix="hazard-writers-"), "bench.sqlite3")
    out = FORK.Queue()
    children = [
        FORK.Process(target=_process, args=(path, seconds, threads, hold, out))
        for _ in range(processes)
    ]
    for child in children:
        child.start()
    waits: list[float] = []
    for _ in children:
        waits.extend(out.get())
    for child in children:
        child.join()
    waits.sort()

    def at(q: float) -> float:
        return waits[int(q * (len(waits) - 1))] * 1000

    return len(waits) / seconds, at(0.5), at(0.99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="threads a process")
    parser.add_argument("--seconds", type=float, default=4.0, help="each run")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--hold-ms", type=float, default=0.3, help="a turn's sleep")
    args = parser.parse_args()
    results = []
    for n in range(args.runs):
        turns, p50, p99 = run(args.processes, args.threads, args.seconds, args.hold_ms / 1000)
        results.append((turns, p50, p99))
        print(f"run {n + 1}: {turns:7.0f} turns/s  wait p50 {p50:6.3f} ms  p99 {p99:7.3f} ms")
    print(
        f"medians of {args.runs}: {statistics.median(r[0] for r in results):.0f} turns/s, "
        f"wait p50 {statistics.median(r[1] for r in results):.3f} ms, "
        f"p99 {statistics.median(r[2] for r in results):.3f} ms"
    )


if __name__ == "__main__":
    main()
