"""How fast `engine.referee.Referee` re-runs a recorded table, beside `engine.fold`.

Run from the repository root:

    .venv/bin/python -m bench.referee                  # 300,000 events of each stream
    .venv/bin/python -m bench.referee --events 1000000 --repeat 5

The streams are bench.fold's: a throws-only table and a mixed one with stakes, covers,
side bets, odds and settlements, generated once through the real commands. The
referee runs every command again and compares what it derives, so it does the fold's
work and the commands' work: it is the replay step of `hazard verify FILE`, whose goal
is 300,000 events a second end to end. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Sequence

from bench.fold import SEED, generate_mixed, generate_throws
from engine import events as ev
from engine.fold import fold
from engine.referee import Referee


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.referee", description=__doc__)
    parser.add_argument("--events", type=int, default=300_000, help="events per stream")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (median)")
    args = parser.parse_args(argv)
    for name, generate in (("throws", generate_throws), ("mixed", generate_mixed)):
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
