"""How fast `engine.referee.Referee` re-runs a recorded table, beside `engine.fold`.

Run from the repository root:

    .venv/bin/python -m bench.referee                  # 300,000 events of each stream
    .venv/bin/python -m bench.referee --events 1000000 --repeat 5
    .venv/bin/python -m bench.referee --events 30000 --repeat 5 --against /path/to/main
                                         # this checkout's referee beside another's

The streams are bench.fold's: a throws-only table and a mixed one with stakes, covers,
side bets, odds and settlements, generated once through the real commands. The
referee runs every command again and compares what it derives, so it does the fold's
work and the commands' work: it is the replay step of `hazard verify FILE`, whose goal
is 300,000 events a second end to end. Speed is reported, never asserted.

With --against CHECKOUT (another copy of the project, say `git archive main` unpacked),
the referee of each checkout runs in child processes of its own, in turn, --repeat
times: events a second of CPU time (the best of three passes in each child, so that
other work on a shared machine disturbs it least), medians, and their ratio; each
stream twice, with the round book a referee keeps to judge disputes, and without it
("no book": `Referee(disputes=False)`, as `hazard verify FILE` runs a table no
dispute comes on).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.fold import SEED, generate_mixed, generate_throws
from engine import events as ev
from engine.fold import fold
from engine.referee import Referee

STREAMS = (("throws", generate_throws), ("mixed", generate_mixed))

# Run in a child, in either checkout: it uses only what bench.fold and engine.referee
# have long had.
_CHILD = """
import gc, json, sys, time
from bench.fold import SEED, generate_mixed, generate_throws
from engine.referee import Referee
rates = {}
for name, generate in (("throws", generate_throws), ("mixed", generate_mixed)):
    events = generate(int(sys.argv[1]), SEED)
    for book in (True, False):
        best = 0.0
        for _ in range(3):
            gc.collect()
            start = time.process_time()
            r = Referee(disputes=book)
            for e in events:
                r.check(e)
            r.finish()
            best = max(best, len(events) / (time.process_time() - start))
        rates[name if book else name + ", no book"] = best
print(json.dumps(rates))
"""


def referee_rate(events: Sequence[ev.Event]) -> float:
    gc.collect()
    start = time.perf_counter()
    r = Referee()
    check = r.check
    for e in events:
        check(e)
    r.finish()
    return len(events) / (time.perf_counter() - start)


def fold_rate(events: Sequence[ev.Event]) -> float:
    gc.collect()
    start = time.perf_counter()
    fold(events)
    return len(events) / (time.perf_counter() - start)


def _child_rates(checkout: Path, events: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(events)],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=True,
    )
    rates: dict[str, float] = json.loads(done.stdout)
    return rates


def against(other: Path, events: int, repeat: int) -> None:
    here = Path(__file__).resolve().parent.parent
    runs: dict[str, list[dict[str, float]]] = {"here": [], "other": []}
    for n in range(repeat):
        print(f"round {n + 1} of {repeat}...", file=sys.stderr, flush=True)
        runs["here"].append(_child_rates(here, events))
        runs["other"].append(_child_rates(other, events))
    for name in [n + book for n, _ in STREAMS for book in ("", ", no book")]:
        mine = statistics.median(r[name] for r in runs["here"])
        theirs = statistics.median(r[name] for r in runs["other"])
        print(
            f"{name:16} {events:>9,} events  referee here {mine:>10,.0f} ev/s (CPU)   "
            f"{other}: {theirs:>10,.0f} ev/s   {mine / theirs:.2f}x"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.referee", description=__doc__)
    parser.add_argument("--events", type=int, default=300_000, help="events per stream")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (median)")
    parser.add_argument(
        "--against", type=Path, help="another checkout, whose referee runs beside this one's"
    )
    args = parser.parse_args(argv)
    if args.against is not None:
        against(args.against.resolve(), args.events, args.repeat)
        return 0
    for name, generate in STREAMS:
        print(f"generating the {name} stream...", file=sys.stderr, flush=True)
        events = generate(args.events, SEED)
        ref = statistics.median(referee_rate(events) for _ in range(args.repeat))
        fld = statistics.median(fold_rate(events) for _ in range(args.repeat))
        print(
            f"{name:7} {len(events):>9,} events  referee {ref:>10,.0f} ev/s   "
            f"fold {fld:>11,.0f} ev/s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
