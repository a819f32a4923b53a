"""How fast `hazard verify --deep` replays the log's tables through the engine's referee
(ledger.audit.refereed), and in how much memory, beside reading and decoding the same
events alone.

Run from the repository root:

    .venv/bin/python -m bench.refereed                        # 1,000,000 events, SQLite
    .venv/bin/python -m bench.refereed --events 100000 --repeat 5
    .venv/bin/python -m bench.refereed --url postgresql+psycopg://...   # a copy made by
                                         # python -m bench.seed --events N --to URL

The log is bench.seed's (tables played through the service's write path, cached in
--cache-dir). Each measurement runs in a child process of its own, so that its peak
RSS (ru_maxrss) is its own, and the two phases take turns within each of --repeat
rounds; figures are medians. Reported, never asserted:

  decode     every table's stream read a batch at a time and decoded by the store's
             batched decode (eventstore.decode_rows), as the replay reads them: the floor
  referee    ledger.audit.refereed.replay: the same reads, and every event run through
             the referee (every command run again, its events held to the stored ones)

Rates are of the tables' events (the events the referee runs), with the log's size
beside.
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

PHASES = ("decode", "referee")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _phase(phase: str, url: str) -> dict[str, Any]:
    """One measurement, in this (child) process."""
    from ledger.audit import refereed
    from ledger.store import db
    from ledger.store.eventstore import decode_rows

    engine = db.make_engine(url)
    started = time.perf_counter()
    if phase == "referee":
        found = refereed.replay(engine)
        assert found.ok, found.breach
        events = found.events
    else:
        events = 0
        with engine.connect() as conn, conn.begin():
            for stream in refereed.table_streams(conn):
                version = 0
                while rows := db.fetch(conn, refereed._EVENTS, (stream, version, refereed.BATCH)):
                    events += len(decode_rows([r[:4] for r in rows], lambda v: 0))
                    version = rows[-1][2]
    seconds = time.perf_counter() - started
    with engine.connect() as conn:
        size = int(conn.exec_driver_sql("SELECT count(*) FROM events").scalar_one())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"events": events, "log": size, "seconds": seconds, "rate": events / seconds,
            "rss_mib": rss}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.refereed", description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--url", help="a database to replay instead of the seeded SQLite file")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:  # a child: one measurement, as JSON
        print(json.dumps(_phase(args.phase, args.url)))
        return
    url = args.url
    if url is None:
        from bench.seed import seeded

        url = f"sqlite:///{seeded(args.events, args.cache_dir).path}"
    runs: dict[str, list[dict[str, Any]]] = {phase: [] for phase in PHASES}
    for _ in range(args.repeat):
        for phase in PHASES:
            out = subprocess.run(
                [sys.executable, "-m", "bench.refereed", "--phase", phase, "--url", url],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            runs[phase].append(json.loads(out.stdout))
            r = runs[phase][-1]
            _say(f"  {phase}: {r['rate']:,.0f} events/s, {r['seconds']:.1f} s, "
                 f"{r['rss_mib']:.0f} MiB")  # fmt: skip
    first = runs["referee"][0]
    results = {
        "log": first["log"],
        "table_events": first["events"],
        "phases": {
            phase: {
                "runs": len(done),
                "median_rate": statistics.median(r["rate"] for r in done),
                "median_seconds": statistics.median(r["seconds"] for r in done),
                "peak_rss_mib": max(r["rss_mib"] for r in done),
            }
            for phase, done in runs.items()
        },
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"the tables of a log of {results['log']:,} events: {results['table_events']:,} "
        "events (medians):"
    )
    for phase, r in results["phases"].items():
        print(
            f"  {phase:8} {r['median_rate']:>10,.0f} events/s  {r['median_seconds']:8.1f} s"
            f"  peak RSS {r['peak_rss_mib']:.0f} MiB  ({r['runs']} run(s))"
        )


if __name__ == "__main__":
    main()
