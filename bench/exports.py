"""Exports, offline verification and import of a real log, side by side: how fast, and
in how much memory.

Run from the repository root:

    .venv/bin/python -m bench.exports                          # 1,000,000 events, SQLite
    .venv/bin/python -m bench.exports --events 20000 --repeat 3 --json
    .venv/bin/python -m bench.exports --cache-dir /work/bench-cache
    .venv/bin/python -m bench.exports --postgres               # import into PostgreSQL too
    .venv/bin/python -m bench.exports --postgres URL           # ... on that server

The log is bench.seed's (the API benchmarks' database: tables played through the
service's write path, cached in --cache-dir). Each measurement runs in a child process
of its own, so that its peak RSS (ru_maxrss) is that command's alone, and the phases
run in turn within each of --repeat rounds, so that drift in the machine falls on all
of them alike; figures are medians. Reported, never asserted:

  export jsonl   ledger.exports.jsonl of the whole log to a file: events a second, peak
                 RSS, time to the first byte (goals: >= 300,000 events/s, < 100 MB)
  export csv     ledger.exports.sheets, the club's settlements sheet: rows a second, peak
                 RSS (goal: < 100 MB)
  verify         ledger.exports.offline.verify of the JSONL file, every round replayed:
                 events a second, peak RSS (goals: >= 300,000 events/s, < 100 MB)
  import         ledger.exports.restore of the JSONL file into a new SQLite database
                 (every line checked, events, tree, checkpoints and every read model):
                 events a second
  raw insert     the same event rows alone, executemany'd in batches into the events
                 table of a new database, in one transaction: the baseline the import is
                 a ratio of (goal: import >= 25% of raw). Only the inserts and the
                 commit are timed, not reading the rows from the seeded database.
  import pg      (with --postgres) the import into a new PostgreSQL database, and its
  raw insert pg  raw baseline there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BATCH = 5000
"""Rows an executemany in the raw baseline (as the import writes them)."""

PHASES = ("export-jsonl", "export-csv", "verify", "import", "raw")
PG_PHASES = ("import-pg", "raw-pg")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# -- the phases, each in a child process ------------------------------------------------


def _export_jsonl(source: str, key: str, out: str) -> dict[str, Any]:
    from ledger.exports import jsonl
    from ledger.exports.scope import scope_of
    from ledger.store import db
    from ledger.store.log.keys import load_signer

    engine = db.make_engine(source)
    verifier = load_signer(key).verifier
    started = time.perf_counter()
    first_byte = None
    prepared = jsonl.prepare(engine, scope_of(everything=True), key=verifier)
    with open(out, "wb") as f:
        for chunk in prepared.chunks():
            if first_byte is None:
                first_byte = time.perf_counter() - started
            f.write(chunk)
    seconds = time.perf_counter() - started
    events = prepared.total
    return {
        "events": events,
        "seconds": seconds,
        "rate": events / seconds,
        "first_byte_s": first_byte,
        "bytes": os.path.getsize(out),
        "rss_mib": _rss_mib(),
    }


def _export_csv(source: str, key: str, out: str) -> dict[str, Any]:
    from ledger.exports import sheets  # type: ignore[attr-defined, unused-ignore]
    from ledger.exports.scope import scope_of
    from ledger.store import db

    engine = db.make_engine(source)
    started = time.perf_counter()
    prepared = sheets.prepare(engine, scope_of(everything=True))
    rows = 0
    with open(out, "wb") as f:
        for chunk in prepared.chunks():
            rows += chunk.count(b"\n")
            f.write(chunk)
    seconds = time.perf_counter() - started
    rows -= 1  # the header row
    return {"rows": rows, "seconds": seconds, "rate": rows / seconds, "rss_mib": _rss_mib()}


def _verify(source: str, key: str, out: str) -> dict[str, Any]:
    from ledger.exports import offline  # type: ignore[attr-defined, unused-ignore]
    from ledger.store.log.keys import load_signer

    verifier = load_signer(key).verifier
    started = time.perf_counter()
    with open(out, "rb") as f:
        verified = offline.verify(f, verifier)
    seconds = time.perf_counter() - started
    events = verified.events
    return {"events": events, "seconds": seconds, "rate": events / seconds, "rss_mib": _rss_mib()}


def _import(target: str, key: str, out: str) -> dict[str, Any]:
    from ledger.exports import restore
    from ledger.store import db
    from ledger.store.log.keys import load_signer

    engine = db.make_engine(target)
    db.upgrade(engine)
    verifier = load_signer(key).verifier
    started = time.perf_counter()
    with open(out, "rb") as f:
        restored = restore.restore(engine, f, key=verifier)
    seconds = time.perf_counter() - started
    engine.dispose()
    events = restored.events
    return {"events": events, "seconds": seconds, "rate": events / seconds, "rss_mib": _rss_mib()}


def _raw(source: str, target: str) -> dict[str, Any]:
    """The event rows of `source`, executemany'd into the events table of the new
    database `target` (migrated, so with its keys and triggers) in one transaction."""
    import sqlalchemy as sa

    from ledger.store import db
    from ledger.store.eventstore import Recorded

    read, write = db.make_engine(source), db.make_engine(target)
    db.upgrade(write)
    fields = Recorded._fields
    seconds = 0.0
    events = 0
    with read.connect() as src, write.connect().execution_options(writes=True) as dst:
        mark = "?" if dst.dialect.paramstyle == "qmark" else "%s"
        insert = f"INSERT INTO events ({', '.join(fields)}) VALUES ({', '.join([mark] * 11)})"
        tx = dst.begin()
        cursor = dst.connection.cursor()
        query = sa.text(f"SELECT {', '.join(fields)} FROM events ORDER BY position")
        for batch in src.execute(query).partitions(BATCH):
            rows = [tuple(r) for r in batch]
            started = time.perf_counter()
            cursor.executemany(insert, rows)
            seconds += time.perf_counter() - started
            events += len(rows)
        started = time.perf_counter()
        tx.commit()
        seconds += time.perf_counter() - started
    write.dispose()
    return {"events": events, "seconds": seconds, "rate": events / seconds, "rss_mib": _rss_mib()}


def _fresh_postgres(server: str, name: str) -> str:
    """A new, empty database `name` on the PostgreSQL server of `server` (dropped first)."""
    import sqlalchemy as sa

    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    url = sa.engine.make_url(server).set(database=name)
    return url.render_as_string(hide_password=False)


def _phase(
    phase: str, source: str, key: str, out: str, work: str, pg: str | None
) -> dict[str, Any]:
    target = f"sqlite:///{work}/{phase}.sqlite3"
    for leftover in Path(work).glob(f"{phase}.sqlite3*"):
        leftover.unlink()
    if phase == "export-jsonl":
        return _export_jsonl(source, key, out)
    if phase == "export-csv":
        return _export_csv(source, key, f"{work}/settlements.csv")
    if phase == "verify":
        return _verify(source, key, out)
    if phase == "import":
        return _import(target, key, out)
    if phase == "raw":
        return _raw(source, target)
    assert pg is not None
    target = _fresh_postgres(pg, f"bench_{phase.replace('-', '_')}")
    if phase == "import-pg":
        return _import(target, key, out)
    return _raw(source, target)


# -- the parent ------------------------------------------------------------------------


def _child(phase: str, source: str, key: str, out: str, work: str, pg: str | None) -> Any:
    command = [sys.executable, "-m", "bench.exports", "--phase", phase, "--source", source,
               "--key", key, "--out", out, "--work", work]  # fmt: skip
    if pg:
        command += ["--postgres", pg]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout)


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"error": runs[-1]["error"]}
    out: dict[str, Any] = {
        "runs": len(good),
        "median_rate": statistics.median(r["rate"] for r in good),
        "median_seconds": statistics.median(r["seconds"] for r in good),
        "peak_rss_mib": max(r["rss_mib"] for r in good),
    }
    if good[0].get("first_byte_s") is not None:
        out["median_first_byte_s"] = statistics.median(r["first_byte_s"] for r in good)
    for n in ("events", "rows", "bytes"):
        if n in good[0]:
            out[n] = good[0][n]
    return out


GOALS = {
    "export-jsonl": (300_000, 100),
    "export-csv": (None, 100),
    "verify": (300_000, 100),
}


def report(results: dict[str, Any]) -> str:
    lines = [f"exports at {results['events']:,} events (medians of {results['repeat']} runs):"]
    for phase, r in results["phases"].items():
        if "error" in r:
            lines.append(f"  {phase:13} not measured: {r['error']}")
            continue
        unit = "rows/s" if phase == "export-csv" else "events/s"
        extra = ""
        if "median_first_byte_s" in r:
            extra = f"  first byte {1000 * r['median_first_byte_s']:.0f} ms"
        goal, rss_goal = GOALS.get(phase, (None, None))
        met = []
        if goal is not None:
            met.append(f"rate goal {goal:,}: {'met' if r['median_rate'] >= goal else 'missed'}")
        if rss_goal is not None:
            met.append(
                f"RSS goal {rss_goal} MB: {'met' if r['peak_rss_mib'] < rss_goal else 'missed'}"
            )
        lines.append(
            f"  {phase:13} {r['median_rate']:>10,.0f} {unit:8} {r['median_seconds']:7.1f} s"
            f"  peak RSS {r['peak_rss_mib']:4.0f} MiB{extra}"
            + (f"  ({'; '.join(met)})" if met else "")
        )
    for name, (imp, raw) in {
        "SQLite": ("import", "raw"),
        "PostgreSQL": ("import-pg", "raw-pg"),
    }.items():
        a, b = results["phases"].get(imp, {}), results["phases"].get(raw, {})
        if "median_rate" in a and "median_rate" in b:
            ratio = a["median_rate"] / b["median_rate"]
            lines.append(
                f"  import / raw insert on {name}: {ratio:.1%} (goal >= 25%: "
                f"{'met' if ratio >= 0.25 else 'missed'})"
            )
    return "\n".join(lines)


def _run(
    args: argparse.Namespace, phases: list[str], source: str, key: str
) -> dict[str, list[dict[str, Any]]]:
    """Every phase, --repeat times, in turn: the runs of each."""
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in phases}
    with tempfile.TemporaryDirectory(prefix="bench-exports-", dir=args.cache_dir) as work:
        out = f"{work}/all.jsonl"
        if "export-jsonl" not in phases:  # the other phases read the file it writes
            _child("export-jsonl", source, key, out, work, None)
        for r in range(args.repeat):
            for phase in phases:
                result = _child(phase, source, key, out, work, args.postgres)
                runs[phase].append(result)
                said = result.get("error") or (
                    f"{result['rate']:,.0f}/s, {result['seconds']:.1f} s, "
                    f"{result['rss_mib']:.0f} MiB"
                )
                _say(f"  run {r + 1}: {phase}: {said}")
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.exports",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument("--only", action="append", choices=PHASES + PG_PHASES,
                        help="run only this phase (repeatable)")  # fmt: skip
    parser.add_argument(
        "--postgres",
        metavar="URL",
        nargs="?",
        const="temporary",
        help="import into PostgreSQL too: the server at URL, or without one a temporary "
        "cluster started for the run (tests.pgcluster, durable commits as bench.store's)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:  # a child: one measurement, as JSON
        print(
            json.dumps(
                _phase(args.phase, args.source, args.key, args.out, args.work, args.postgres)
            )
        )
        return

    from bench.seed import key_for, seeded

    found = seeded(args.events, args.cache_dir)
    source, key = f"sqlite:///{found.path}", str(key_for(found.path))
    phases = list(args.only or PHASES) + ([] if args.only or not args.postgres else list(PG_PHASES))
    with contextlib.ExitStack() as stack:
        if args.postgres == "temporary":
            from bench.store import PG_SETTINGS
            from tests import pgcluster

            sock = stack.enter_context(
                pgcluster.temporary_cluster(PG_SETTINGS, args.cache_dir, "bench-exports-pg-")
            )
            args.postgres = pgcluster.url(sock)
        runs = _run(args, phases, source, key)
    results = {
        "events": found.meta.get("events", args.events),
        "database": str(found.path),
        "repeat": args.repeat,
        "phases": {p: _summary(rs) for p, rs in runs.items()},
    }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(report(results))


if __name__ == "__main__":
    main()
