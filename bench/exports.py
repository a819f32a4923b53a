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
of its own, so that its peak RSS (VmHWM) is that command's alone, and the phases
run in turn within each of --repeat rounds, so that drift in the machine falls on all
of them alike; figures are medians. Reported, never asserted:

  export jsonl   ledger.exports.jsonl of the whole log to a file: events a second, peak
                 RSS, time to the first byte
  raw read       the baseline the export is a ratio of: a plain SELECT of the events'
                 columns through the driver, in position order, each row written to a
                 file as tab-separated text
  export csv     ledger.exports.sheets, the club's settlements sheet: rows a second, peak
                 RSS
  pipeline       the baseline the offline verify is a ratio of: bench.pipeline, the
                 standard library alone (json, hashlib), over the JSONL file: each line
                 decoded, its postings summed, its leaf hashed, the Merkle root built and
                 held to the closing's
  verify         ledger.exports.offline.verify of the JSONL file, every round replayed:
                 events a second, peak RSS
  verify x2      the same on 2 processes (offline.verify(..., jobs=2); peak RSS: its
                 largest process's), and the CPU time of its busiest process against
                 the verify's: how fast it would run on two cores of its own, which a
                 machine shared with other work does not give it
  import         ledger.exports.restore of the JSONL file into a new SQLite database
                 (every line checked, events, tree, checkpoints and every read model):
                 events a second
  raw insert     the same event rows alone, executemany'd in batches into the events
                 table of a new database, in one transaction: the baseline the import is
                 a ratio of. Only the inserts and the commit are timed, not reading the
                 rows from the seeded database.
  import pg      (with --postgres) the import into a new PostgreSQL database, and its
  raw insert pg  raw baseline there.

Then issue 27's targets, each beside its baseline from the same run, MET or MISSED:
offline verify >= 200,000 events/s on one core and >= 0.8x the pipeline, >= 1.8x that
on 2 processes; export >= 500,000 events/s, first byte < 100 ms (against the raw read);
import >= 25% of the raw insert, on each database; peak RSS < 100 MB in every pass.
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

PHASES = ("export-jsonl", "raw-read", "export-csv", "pipeline", "verify", "verify-x2", "import",
          "raw")  # fmt: skip
PG_PHASES = ("import-pg", "raw-pg")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _rss_mib() -> float:
    """This process's peak RSS, MiB. VmHWM, not ru_maxrss: Linux carries ru_maxrss over
    fork and exec, so a child's would be at least the parent's peak (this benchmark's
    parent holds the seeded database's code, about 68 MiB), where VmHWM is the peak of
    the child's own memory since its exec."""
    with contextlib.suppress(OSError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
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
    started, cpu = time.perf_counter(), time.process_time()
    with open(out, "rb") as f:
        verified = offline.verify(f, verifier)
    seconds = time.perf_counter() - started
    events = verified.events
    return {
        "events": events,
        "seconds": seconds,
        "rate": events / seconds,
        "rss_mib": _rss_mib(),
        "cpu_s": time.process_time() - cpu,
    }


def _raw_read(source: str, out: str) -> dict[str, Any]:
    """The export's baseline: the events' columns read by a plain SELECT through the
    driver, in position order, each row written to `out` as a line of tab-separated
    text."""
    from ledger.store import db
    from ledger.store.eventstore import Recorded

    engine = db.make_engine(source)
    started = time.perf_counter()
    first_byte = None
    events = 0
    with engine.connect() as conn, open(out, "wb") as f:
        cursor = conn.connection.cursor()
        cursor.execute(f"SELECT {', '.join(Recorded._fields)} FROM events ORDER BY position")
        while rows := cursor.fetchmany(BATCH):
            f.write("".join("\t".join(map(str, row)) + "\n" for row in rows).encode())
            if first_byte is None:
                first_byte = time.perf_counter() - started
            events += len(rows)
    seconds = time.perf_counter() - started
    engine.dispose()
    return {
        "events": events,
        "seconds": seconds,
        "rate": events / seconds,
        "first_byte_s": first_byte,
        "rss_mib": _rss_mib(),
    }


def _pipeline(out: str) -> dict[str, Any]:
    """The offline verify's baseline: bench.pipeline (json and hashlib alone) over the
    file, its root held to the closing line's."""
    from bench import pipeline

    started = time.perf_counter()
    with open(out, "rb") as f:
        done = pipeline.from_export(f)
    seconds = time.perf_counter() - started
    events = done.events
    return {"events": events, "seconds": seconds, "rate": events / seconds, "rss_mib": _rss_mib()}


def _verify_jobs(key: str, out: str, jobs: int) -> dict[str, Any]:
    """The offline verify on `jobs` processes (offline.verify(..., jobs=)). Its peak RSS
    is its largest process's: the parent's VmHWM, or a forked process's ru_maxrss (which
    counts the parent's memory at the fork, as the processes share it until written)."""
    from ledger.exports import offline  # type: ignore[attr-defined, unused-ignore]
    from ledger.store.log.keys import load_signer

    verifier = load_signer(key).verifier
    started, cpu = time.perf_counter(), time.process_time()
    with open(out, "rb") as f:
        verified = offline.verify(f, verifier, jobs=jobs)
    seconds = time.perf_counter() - started
    parent = time.process_time() - cpu
    events = verified.events
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "events": events,
        "seconds": seconds,
        "rate": events / seconds,
        "rss_mib": max(_rss_mib(), children.ru_maxrss / 1024),  # KiB
        # The CPU of its busiest process (the children's summed: one, at jobs=2).
        "cpu_s": max(parent, children.ru_utime + children.ru_stime),
    }


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
    """One phase's figures, with the CPU time of its process where the phase gives none
    of its own (`--json`'s median_cpu_s): on a machine shared with other work, the rate
    by CPU moves less with the load than the rate by the clock (bench.tenfold's
    figures set 10^7 beside 10^6 by both)."""
    cpu = time.process_time()
    result = _measured(phase, source, key, out, work, pg)
    result.setdefault("cpu_s", time.process_time() - cpu)
    return result


def _measured(
    phase: str, source: str, key: str, out: str, work: str, pg: str | None
) -> dict[str, Any]:
    target = f"sqlite:///{work}/{phase}.sqlite3"
    for leftover in Path(work).glob(f"{phase}.sqlite3*"):
        leftover.unlink()
    if phase == "export-jsonl":
        return _export_jsonl(source, key, out)
    if phase == "raw-read":
        return _raw_read(source, f"{work}/raw.tsv")
    if phase == "pipeline":
        return _pipeline(out)
    if phase == "verify-x2":
        return _verify_jobs(key, out, 2)
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
    if good[0].get("cpu_s") is not None:
        out["median_cpu_s"] = statistics.median(r["cpu_s"] for r in good)
    if good[0].get("first_byte_s") is not None:
        out["median_first_byte_s"] = statistics.median(r["first_byte_s"] for r in good)
    for n in ("events", "rows", "bytes"):
        if n in good[0]:
            out[n] = good[0][n]
    return out


RSS_GOAL_MB = 100
"""Every pass's peak RSS, the issue's goal (at 10^6 events), in MB (10^6 bytes)."""

MB_A_MIB = 1.048576


def _verdict(met: bool) -> str:
    return "MET" if met else "MISSED"


def _targets(phases: dict[str, Any]) -> list[str]:
    """Issue 27's targets, each beside its baseline from the same run: MET or MISSED."""

    def rate(phase: str) -> float | None:
        found = phases.get(phase, {}).get("median_rate")
        return None if found is None else float(found)

    lines = []

    def target(name: str, measured: str, against: str, goal: str, met: bool | None) -> None:
        said = "not measured" if met is None else _verdict(met)
        lines.append(f"  {name:30} {measured:24} {against:36} {goal:26} {said}")

    verify, pipe, x2 = rate("verify"), rate("pipeline"), rate("verify-x2")
    if verify is not None:
        target("offline verify, one core", f"{verify:,.0f} events/s", "", ">= 200,000 events/s",
               verify >= 200_000)  # fmt: skip
    if verify is not None and pipe is not None:
        ratio = verify / pipe
        target("offline verify / pipeline", f"{ratio:.2f}x", f"pipeline {pipe:,.0f} events/s",
               ">= 0.8x", ratio >= 0.8)  # fmt: skip
    if "verify-x2" in phases:
        if x2 is not None and verify is not None:
            ratio = x2 / verify
            target("offline verify, 2 processes", f"{x2:,.0f} events/s",
                   f"{ratio:.2f}x one core's {verify:,.0f}", ">= 1.8x one core",
                   ratio >= 1.8)  # fmt: skip
            cpu, cpu_x2 = phases["verify"].get("median_cpu_s"), phases["verify-x2"]["median_cpu_s"]
            if cpu is not None:  # what two idle cores would give at most (not a target)
                lines.append(
                    f"  {'  by CPU, its busiest process':30} {cpu / cpu_x2:.2f}x "
                    f"{'':18} {cpu_x2:.2f} s against one core's {cpu:.2f} s of CPU"
                )
        else:
            lines.append(f"  {'offline verify, 2 processes':30} {phases['verify-x2']['error']}")
    export, raw_read = phases.get("export-jsonl", {}), phases.get("raw-read", {})
    if "median_rate" in export:
        against = ""
        if "median_rate" in raw_read:
            ratio = export["median_rate"] / raw_read["median_rate"]
            against = f"{ratio:.2f}x raw read's {raw_read['median_rate']:,.0f}"
        target("export JSON Lines", f"{export['median_rate']:,.0f} events/s", against,
               ">= 500,000 events/s", export["median_rate"] >= 500_000)  # fmt: skip
        first = export["median_first_byte_s"]
        against = ""
        if "median_first_byte_s" in raw_read:
            against = f"raw read's {1000 * raw_read['median_first_byte_s']:.0f} ms"
        target("export, first byte", f"{1000 * first:.0f} ms", against, "< 100 ms",
               first < 0.1)  # fmt: skip
    for name, (imp, raw) in {
        "SQLite": ("import", "raw"),
        "PostgreSQL": ("import-pg", "raw-pg"),
    }.items():
        a, b = rate(imp), rate(raw)
        if a is not None and b is not None:
            target(f"import, {name}", f"{a / b:.1%} of raw",
                   f"{a:,.0f} against raw's {b:,.0f} events/s", ">= 25% of raw",
                   a / b >= 0.25)  # fmt: skip
    for phase, r in phases.items():
        if "peak_rss_mib" in r and phase not in ("raw-read", "pipeline", "raw", "raw-pg"):
            mb = r["peak_rss_mib"] * MB_A_MIB
            target(f"peak RSS, {phase}", f"{mb:.0f} MB", "", f"< {RSS_GOAL_MB} MB",
                   mb < RSS_GOAL_MB)  # fmt: skip
    return lines


def report(results: dict[str, Any]) -> str:
    lines = [f"exports at {results['events']:,} events (medians of {results['repeat']} runs):"]
    for phase, r in results["phases"].items():
        if "error" in r:
            lines.append(f"  {phase:13} {r['error']}")
            continue
        unit = "rows/s" if phase == "export-csv" else "events/s"
        extra = ""
        if "median_first_byte_s" in r:
            extra = f"  first byte {1000 * r['median_first_byte_s']:.0f} ms"
        lines.append(
            f"  {phase:13} {r['median_rate']:>10,.0f} {unit:8} {r['median_seconds']:7.1f} s"
            f"  peak RSS {r['peak_rss_mib']:4.0f} MiB{extra}"
        )
    lines.append("issue 27's targets, each beside its baseline from this run:")
    lines += _targets(results["phases"])
    if "load" in results:
        lines.append(f"load average before the run: {results['load']}")
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
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    phases = list(args.only or PHASES) + ([] if args.only or not args.postgres else list(PG_PHASES))
    with contextlib.ExitStack() as stack:
        if args.postgres == "temporary":
            from bench.store import PG_SETTINGS
            from tests import pgcluster

            sock = stack.enter_context(
                pgcluster.temporary_cluster(
                    PG_SETTINGS, args.cache_dir.resolve(), "bench-exports-pg-"
                )
            )
            args.postgres = pgcluster.url(sock)
        runs = _run(args, phases, source, key)
    results = {
        "load": load,
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
