"""Writes while two witnesses are pushed to, against writes with none: what the pushes cost.

Run from the repository root:

    .venv/bin/python -m bench.witnessing                     # 5 repetitions, about 5 minutes
    .venv/bin/python -m bench.witnessing --repeat 9 --seconds 15 --json > witnessing.json
    .venv/bin/python -m bench.witnessing --quick             # one short repetition

The issue's target (issue 24): writes with two witnesses pushing in the background, at
most 5% slower than writes with none, in the same run.

bench.seed's log (--events, cached) is served by `hazard serve --workers 2 --port 0`,
with the key that signed it, twice at once, each on a fresh copy of its own:

  none        no HAZARD_POLICY: nothing is pushed;
  witnessed   HAZARD_POLICY naming two witnesses, real ones (`hazard witness serve`, each
              a process with a state directory of its own, made by `hazard witness
              init` for the repetition) and HAZARD_WITNESS_INTERVAL=--interval (1 s):
              the newest checkpoint is pushed to each, and its cosignature kept, every
              second, all through the run.

Both witnesses run through both ways (idle while `none` is driven), so the only
difference is the policy. Each repetition runs every write workload on both servers,
with bench.api's machinery (closed-loop clients, each on its own HTTP/1.1 connection):
an untimed warm-up on each, then the timed run, each way's --seconds taken in slices of
--slice seconds, one way's slice then the other's, who goes first alternating (ABBA),
so that whatever else the machine does meanwhile falls on both ways alike.

  throw     POST /tables/<t>/throws on the tables bench.seed left in the chance phase,
            dice that are neither the main nor the chance (bench.api's workload);
  deposit   POST /players/<p>/deposits {amount}, a seeded player at random.

Reported: per way and workload, writes a second, p50/p99 of one write and the server's
CPU a write, medians over the repetitions; and the ratio witnessed / none per
repetition and its median, against the target (writes a second at least 0.95 of
none's). So that the comparison is real, each witnessed run is checked to have been
cosigned all along: /readyz's witnesses are `ok`, the size each cosigned advanced
during the run and reaches the log's newest within a few intervals after it, and the
cosignatures kept in the database are counted (about one a second a witness). Speed is
reported, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.api import (
    HOST,
    Request,
    Run,
    Server,
    Workload,
    _children,
    _cpu_of,
    _Http,
    _rotated,
    drive,
    percentile,
    run_summary,
    scan_log,
    throw_workload,
)
from bench.fold import _machine, _say
from bench.seed import SEED, key_for, seeded

DEFAULT_EVENTS = 10_000
WITNESSES = 2
INTERVAL_S = 1.0
CLIENTS = 4
SECONDS = 12.0
SLICE = 3.0
WARMUP = 2.0
TARGET = 0.95
"""Witnessed writes a second over none's: at least this (at most 5% slower)."""
WAYS = ("none", "witnessed")
WORKLOADS = ("throw", "deposit")
RULE = "=" * 78
REPO = Path(__file__).resolve().parent.parent


# -- the witnesses ------------------------------------------------------------------


@dataclass
class Witness:
    name: str
    vkey: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def cpu_seconds(self) -> float:
        """CPU time of the witness's gunicorn master and its workers so far."""
        return _cpu_of(self.process.pid) + sum(_cpu_of(p) for p in _children(self.process.pid))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env.setdefault("PYTHONPATH", str(REPO))  # this checkout's, unless told another's
    return env


def _hazard(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"hazard {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def _banner(log: Path, process: subprocess.Popen[bytes], what: str, timeout: float = 60) -> str:
    """The banner a server prints between two rules, once it has printed it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if text.count(RULE) >= 2:
            return text
        if process.poll() is not None:
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    raise SystemExit(f"{what} did not start:\n{log.read_text(errors='replace')[-3000:]}")


@contextlib.contextmanager
def witnesses(workdir: Path, log_vkey: str, count: int) -> Iterator[list[Witness]]:
    """`count` fresh witnesses of the log, each `hazard witness serve` on a free port."""
    running: list[Witness] = []
    try:
        for i in range(count):
            where = workdir / f"witness{i}"
            shutil.rmtree(where, ignore_errors=True)
            name = f"w{i}.bench.example/witness"
            out = _hazard(
                "witness",
                "init",
                "--name",
                name,
                "--log",
                log_vkey,
                "--dir",
                str(where),
                cwd=workdir,
            )
            vkey = out.splitlines()[0].strip()
            log = workdir / f"witness{i}.log"
            with open(log, "wb") as sink:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "ledger",
                        "witness",
                        "serve",
                        "--dir",
                        str(where),
                        "--port",
                        "0",
                    ],
                    cwd=workdir,
                    env=_env(),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            found = re.search(r"serving at (http://\S+)", _banner(log, process, "a witness"))
            assert found is not None
            running.append(Witness(f"w{i}", vkey, found.group(1), process, log))
        yield running
    finally:
        for witness in running:
            _stop(witness.process)


def policy(path: Path, log_vkey: str, found: Sequence[Witness]) -> Path:
    lines = [f"log {log_vkey}"]
    lines += [f"witness {w.name} {w.vkey} {w.url}" for w in found]
    lines += [f"group all all {' '.join(w.name for w in found)}", "quorum all"]
    path.write_text("\n".join(lines) + "\n")
    return path


# -- the service --------------------------------------------------------------------


@contextlib.contextmanager
def serve(
    source: Path,
    workdir: Path,
    name: str,
    settings: dict[str, str],
    workers: int,
    key: Path | None = None,
) -> Iterator[Server]:
    """`hazard serve --port 0` on a fresh copy of `source`, signing with `key` (default:
    the key bench.seed keeps beside it), with `settings` in its environment, until the
    block ends."""
    workdir = workdir.resolve()  # the server runs in it
    database = workdir / f"{name}.sqlite3"
    for leftover in workdir.glob(f"{name}.sqlite3*"):
        leftover.unlink()
    shutil.copyfile(source, database)
    fd = os.open(database, os.O_RDONLY)
    try:
        os.fsync(fd)  # written back now, not during the timed runs
    finally:
        os.close(fd)
    env = _env()
    env.update(
        DATABASE_URL=f"sqlite:///{database}", HAZARD_KEY=str((key or key_for(source)).resolve())
    )
    env.update(TMPDIR=str(workdir), **settings)
    log = workdir / f"serve-{name}.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "ledger", "serve", "--port", "0", "--workers", str(workers)],
            cwd=workdir,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        found = re.search(
            r"serving at http://127\.0\.0\.1:(\d+)", _banner(log, process, "hazard serve")
        )
        assert found is not None
        server = Server(int(found.group(1)), process, log, database)
        _wait_workers(server, workers)
        yield server
    finally:
        _stop(process)


def _wait_workers(server: Server, workers: int, timeout: float = 60) -> None:
    """Until /healthz answers and every worker has forked (each loads the app then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, http.client.HTTPException):
            if (
                _get(server.port, "/healthz")[0] == 200
                and len(_children(server.process.pid)) >= workers
            ):
                return
        time.sleep(0.1)
    raise SystemExit(f"hazard serve did not answer:\n{server.log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # gunicorn's graceful stop
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _get(port: int, path: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return response.status, json.loads(body) if body[:1] in (b"{", b"[") else body


def log_size(port: int) -> int:
    status, body = _get(port, "/log/checkpoint")
    return int(body["size"]) if status == 200 else 0


def cosigned_sizes(port: int) -> dict[str, tuple[str, int]]:
    """Each pushed-to witness's state and the size it cosigned, by /readyz."""
    status, body = _get(port, "/readyz")
    if status != 200:
        raise SystemExit(f"/readyz answered {status}: {body!r}")
    return {w["name"]: (w["state"], int(w["cosigned_size"])) for w in body["witnesses"]}


# -- the workloads --------------------------------------------------------------------


def deposit_workload(players: Sequence[str]) -> Workload:
    paths = [f"/players/{p}/deposits" for p in players]

    def request(rng: random.Random) -> Request:
        amount = rng.randrange(1, 100) * 100
        return "POST", rng.choice(paths), f'{{"amount": {amount}}}'.encode()

    return Workload(
        "deposit",
        201,
        f"POST /players/<p>/deposits over {len(players)} players",
        request,
        kind="write",
    )


def workloads(names: Sequence[str], port: int, meta: dict[str, Any]) -> list[Workload]:
    found = []
    for name in names:
        if name == "throw":
            found.append(throw_workload(_Http(port, meta["token"]), meta["throw_tables"]))
        else:
            found.append(deposit_workload(meta["players"]))
    return found


# -- the run --------------------------------------------------------------------------


def merged(runs: Sequence[Run]) -> Run:
    """Slices of one way's run, as one run: every request, and the time and CPU of all."""
    whole = Run()
    for run in runs:
        whole.latencies += run.latencies
        whole.errors += run.errors
        for key, text in run.examples.items():
            whole.examples.setdefault(key, text)
        whole.seconds += run.seconds
        whole.reconnects += run.reconnects
        whole.client_cpu += run.client_cpu
        whole.server_cpu += run.server_cpu
        whole.machine_cpu += run.machine_cpu
    return whole


def sliced(
    args: argparse.Namespace,
    r: int,
    servers: dict[str, Server],
    w: dict[str, Workload],
    token: str,
) -> dict[str, Run]:
    """Each way's timed run of a workload, in slices taken in turn (ABBA...), so that
    whatever else the machine does falls on both alike."""
    if args.warmup > 0:
        for way in _rotated(list(WAYS), r):
            drive(servers[way].port, token, w[way], args.clients, args.warmup, args.seed)
    slices = max(1, round(args.seconds / args.slice))
    taken: dict[str, list[Run]] = {way: [] for way in WAYS}
    for k in range(slices):
        for way in WAYS if (k + r) % 2 == 0 else WAYS[::-1]:
            seed = args.seed + 1000 * r + 10 * k + 1
            run = drive(
                servers[way].port,
                token,
                w[way],
                args.clients,
                args.seconds / slices,
                seed,
                servers[way],
            )
            taken[way].append(run)
    return {way: merged(runs) for way, runs in taken.items()}


def repetition(
    args: argparse.Namespace,
    r: int,
    source: Path,
    meta: dict[str, Any],
    workdir: Path,
    club: Path,
    found: Sequence[Witness],
) -> list[dict[str, Any]]:
    """Both ways served at once, each on its own copy, and every workload run on both
    in slices taken in turn: a summary per way and workload."""
    settings = {
        "none": {},
        "witnessed": {"HAZARD_POLICY": str(club), "HAZARD_WITNESS_INTERVAL": f"{args.interval:g}"},
    }
    out = []
    with contextlib.ExitStack() as stack:
        servers = {
            way: stack.enter_context(serve(source, workdir, way, settings[way], args.workers))
            for way in WAYS
        }
        by_way = {way: workloads(args.workloads, servers[way].port, meta) for way in WAYS}
        for i in _rotated(range(len(args.workloads)), r):
            w = {way: by_way[way][i] for way in WAYS}
            witnessed = servers["witnessed"].port
            before = cosigned_sizes(witnessed)
            kept0 = cosignatures_kept(servers["witnessed"].database)
            cpu0 = sum(x.cpu_seconds() for x in found)
            runs = sliced(args, r, servers, w, meta["token"])
            spent = sum(x.cpu_seconds() for x in found) - cpu0
            cosigned = _cosigned(witnessed, before, args.interval)
            kept = cosignatures_kept(servers["witnessed"].database)
            cosigned["pushes_cosigned"] = {k: n - kept0.get(k, 0) for k, n in kept.items()}
            for way, run in runs.items():
                summary = run_summary(run)
                summary.update(way=way, workload=w[way].name, repetition=r + 1, what=w[way].what)
                if way == "witnessed":
                    summary["cosigned"] = cosigned
                    summary["witness_cpu_cores"] = round(spent / run.seconds, 3)
                out.append(summary)
                failed = f", {summary['failed']} FAILED" if summary["failed"] else ""
                _say(
                    f"  {way:<10} {w[way].name:<8} {summary['throughput']:>8.1f} writes/s  "
                    f"p50 {summary['p50_ms']:.2f} ms  p99 {summary['p99_ms']:.2f} ms  "
                    f"(CPU server {summary['server_cpu_cores']:.2f}, other "
                    f"{summary['other_cpu_cores']:.2f}){failed}"
                    + (f"  {_said(cosigned)}" if way == "witnessed" else "")
                )
    for way, server in servers.items():
        scanned = scan_log(server.log)
        if scanned["tracebacks"] or scanned["error_lines"]:
            keep = workdir / f"serve-{way}-r{r + 1}.log"
            shutil.copyfile(server.log, keep)
            _say(
                f"  {way}: server log has {scanned['tracebacks']} tracebacks, "
                f"{scanned['error_lines']} error lines (kept: {keep})"
            )
            for s in out:
                if s["way"] == way:
                    s["server_log"] = {**scanned, "log": str(keep)}
    return out


def cosignatures_kept(database: Path) -> dict[str, int]:
    """How many checkpoints each witness has cosigned in `database`, by its vkey's name."""
    con = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT witness, count(*) FROM cosignatures GROUP BY witness")
        return {vkey.split("+")[0]: n for vkey, n in rows}
    finally:
        con.close()


def _cosigned(port: int, before: dict[str, tuple[str, int]], interval: float) -> dict[str, Any]:
    """What the witnesses cosigned over the timed run, and whether they reach the log's
    newest within a few intervals after it (they keep up)."""
    after = cosigned_sizes(port)
    newest = log_size(port)
    deadline = time.monotonic() + 5 * interval + 5
    caught = after
    while time.monotonic() < deadline and any(size < newest for _, size in caught.values()):
        time.sleep(interval / 4)
        caught = cosigned_sizes(port)
    started = {name: before.get(name, ("waiting", 0))[1] for name in after}
    return {
        "log_size": newest,
        "witnesses": {
            name: {
                "state": caught[name][0],
                "before": started[name],
                "at_end": after[name][1],
                "caught_up": caught[name][1] >= newest,
            }
            for name in after
        },
        "real": bool(after)
        and all(
            state == "ok" and size >= newest and after[name][1] > started[name]
            for name, (state, size) in caught.items()
        ),
    }


def _said(cosigned: dict[str, Any]) -> str:
    sizes = ", ".join(
        f"{name} {w['before']:,}->{w['at_end']:,}" for name, w in cosigned["witnesses"].items()
    )
    real = "ok" if cosigned["real"] else "NOT COSIGNED"
    pushes = "/".join(str(n) for n in cosigned.get("pushes_cosigned", {}).values())
    return f"cosigned {sizes} of {cosigned['log_size']:,} ({pushes} pushes): {real}"


def measure(
    args: argparse.Namespace, source: Path, meta: dict[str, Any], workdir: Path
) -> list[dict[str, Any]]:
    from ledger.store.log.keys import load_signer

    log_vkey = load_signer(key_for(source)).verifier.text()
    runs: list[dict[str, Any]] = []
    for r in range(args.repeat):
        _say(f"repetition {r + 1}/{args.repeat}")
        # Fresh witnesses each time: each served copy starts the log's history afresh,
        # which a witness of the last copy would rightly call a fork.
        with witnesses(workdir, log_vkey, args.witnesses) as found:
            club = policy(workdir / "club.policy", log_vkey, found)
            runs += repetition(args, r, source, meta, workdir, club, found)
    return runs


def push_cost(
    args: argparse.Namespace, source: Path, meta: dict[str, Any], workdir: Path
) -> dict[str, Any]:
    """What one push costs the process that pushes, in-process: `--writes-a-push`
    deposits on a copy of the log, then a push to each witness (ledger.pusher.Pusher.push,
    as its threads make it), `--pushes` times; each push's wall time and the CPU this
    thread spent on it (time.thread_time: the HTTP wait is not CPU). With --profile, a
    cProfile of the pushes alone."""
    import cProfile
    import pstats

    from ledger.books.book import Book
    from ledger.pusher import Pusher, State
    from ledger.service import Club
    from ledger.store import db
    from ledger.store.eventstore import EventStore
    from ledger.store.log.keys import load_signer
    from ledger.store.log.policy import Policy
    from ledger.store.vocabulary import Deposited

    signer = load_signer(key_for(source))
    database = workdir / "pushed.sqlite3"
    shutil.copyfile(source, database)
    walls: list[float] = []
    cpus: list[float] = []
    profile = cProfile.Profile() if args.profile else None
    with witnesses(workdir, signer.verifier.text(), args.witnesses) as found:
        club_policy = Policy.read_file(
            str(policy(workdir / "club.policy", signer.verifier.text(), found))
        )
        store = EventStore(db.make_engine(f"sqlite:///{database}"), signer=signer)
        club = Club(Book(store))
        pusher = Pusher(store, club_policy, args.interval)
        rng = random.Random(args.seed)
        try:
            for _ in range(args.pushes):
                for _ in range(args.writes_a_push):
                    player = rng.choice(meta["players"])
                    club.account_command(player, Deposited, rng.randrange(1, 100) * 100, "setter")
                for witness in pusher.witnesses:
                    wall, cpu = time.perf_counter(), time.thread_time()
                    if profile is not None:
                        profile.enable()
                    outcome = pusher.push(witness)
                    if profile is not None:
                        profile.disable()
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.thread_time() - cpu)
                    if outcome.state is not State.OK:
                        raise SystemExit(f"a push to {witness.name}: {outcome}")
        finally:
            store.close()
            store.engine.dispose()
    for leftover in workdir.glob("pushed.sqlite3*"):
        leftover.unlink()
    walls.sort()
    cpus.sort()
    found_cost = {
        "pushes": len(walls),
        "writes_a_push": args.writes_a_push,
        "wall_p50_ms": round(percentile(walls, 0.5) * 1000, 3),
        "wall_p99_ms": round(percentile(walls, 0.99) * 1000, 3),
        "cpu_p50_ms": round(percentile(cpus, 0.5) * 1000, 3),
        "cpu_p99_ms": round(percentile(cpus, 0.99) * 1000, 3),
        "cpu_mean_ms": round(statistics.fmean(cpus) * 1000, 3),
    }
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(25)
        found_cost["profile"] = out.getvalue()
    return found_cost


def summarise(runs: list[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    rows, ratios = [], []
    for name in names:
        for way in WAYS:
            mine = [x for x in runs if x["way"] == way and x["workload"] == name]
            rows.append(
                {
                    "way": way,
                    "workload": name,
                    "repetitions": len(mine),
                    "throughput": statistics.median(x["throughput"] for x in mine),
                    "p50_ms": statistics.median(x["p50_ms"] for x in mine),
                    "p99_ms": statistics.median(x["p99_ms"] for x in mine),
                    "failed": sum(x["failed"] for x in mine),
                    "server_cpu_cores": statistics.median(x["server_cpu_cores"] for x in mine),
                    # The server's CPU a write: what the pushes add, whatever the machine's load.
                    "server_cpu_ms_per_write": statistics.median(
                        1000 * x["server_cpu_cores"] / x["throughput"]
                        for x in mine
                        if x["throughput"]
                    ),
                    "other_cpu_cores": statistics.median(x["other_cpu_cores"] for x in mine),
                }
            )
        pairs: dict[int, dict[str, dict[str, Any]]] = {}
        for x in runs:
            if x["workload"] == name:
                pairs.setdefault(x["repetition"], {})[x["way"]] = x
        per = [
            (
                p["witnessed"]["throughput"] / p["none"]["throughput"],
                p["witnessed"]["p50_ms"] / p["none"]["p50_ms"],
                p["witnessed"]["p99_ms"] / p["none"]["p99_ms"],
            )
            for _, p in sorted(pairs.items())
            if len(p) == 2 and p["none"]["throughput"]
        ]
        ratio = statistics.median(t for t, _, _ in per)
        ratios.append(
            {
                "workload": name,
                "throughput_ratio": round(ratio, 3),
                "p50_ratio": round(statistics.median(p for _, p, _ in per), 3),
                "p99_ratio": round(statistics.median(p for _, _, p in per), 3),
                "throughput_ratio_per_repetition": [round(t, 3) for t, _, _ in per],
                "target": TARGET,
                "met": ratio >= TARGET,
            }
        )
    witnessed = [x["cosigned"] for x in runs if x["way"] == "witnessed"]
    return {
        "witness_cpu_cores": statistics.median(
            x["witness_cpu_cores"] for x in runs if x["way"] == "witnessed"
        ),
        "rows": rows,
        "ratios": ratios,
        "cosigned_every_run": all(c["real"] for c in witnessed),
        "witnessed_runs": len(witnessed),
    }


def render(report: dict[str, Any]) -> str:
    m, p, s = report["machine"], report["parameters"], report["summary"]
    lines = [
        f"bench.witnessing: hazard serve ({p['workers']} workers, SQLite, {p['events']:,}"
        f" events) with no witness, then with {p['witnesses']} pushed every"
        f" {p['interval']:g} s; {p['clients']} clients, {p['seconds']:g} s a run after"
        f" {p['warmup']:g} s warm-up, {p['repeat']} repetitions",
        f"machine: Python {m['python']} on {m['platform']}, {m['cpu_count']} CPUs"
        f" (affinity {m['cpu_affinity']})",
        "",
        f"{'way':<10} {'workload':<8} {'writes/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}"
        f" {'CPU: server':>11} {'ms/write':>8} {'other':>6}",
    ]
    for r in s["rows"]:
        lines.append(
            f"{r['way']:<10} {r['workload']:<8} {r['throughput']:>9.1f} {r['p50_ms']:>8.2f}"
            f" {r['p99_ms']:>8.2f} {r['failed']:>7} {r['server_cpu_cores']:>11.2f}"
            f" {r['server_cpu_ms_per_write']:>8.2f} {r['other_cpu_cores']:>6.2f}"
        )
    lines += [
        "",
        f"Witnessed / none (medians of the per-repetition ratios; target writes/s >= {TARGET:g}):",
    ]
    for x in s["ratios"]:
        each = ", ".join(f"{v:.3f}" for v in x["throughput_ratio_per_repetition"])
        lines.append(
            f"  {x['workload']:<8} writes/s {x['throughput_ratio']:.3f}"
            f"  p50 {x['p50_ratio']:.3f}  p99 {x['p99_ratio']:.3f}"
            f"  {'MET' if x['met'] else 'MISSED'}  (writes/s per repetition {each})"
        )
    lines += [
        "",
        f"Cosigned: {'every' if s['cosigned_every_run'] else 'NOT every'} witnessed run of"
        f" {s['witnessed_runs']} (both witnesses ok, their cosigned size advanced during the"
        " run and reached the log's newest after it); the two witnesses' CPU while"
        f" witnessed: {s['witness_cpu_cores']:.3f} cores",
        *_push_lines(report),
        "",
        "writes/s: successful writes a second over all clients; p50/p99: one write as the",
        "client sees it; each figure is the median over the repetitions. CPU in cores over",
        "the run: server, hazard serve's workers (ms/write: their CPU a write); other, every",
        "other process (the witnesses included): well above 0, the figures are noisy, and",
        "the ratios, of slices taken in turn, are what to read.",
        f"Total run time {report['total_seconds']:.0f} s.",
    ]
    return "\n".join(lines)


def _push_lines(report: dict[str, Any]) -> list[str]:
    """The in-process push, and what the pushes take of the server at the interval."""
    cost, p = report.get("push"), report["parameters"]
    if not cost:
        return []
    a_second = p["witnesses"] / p["interval"]
    cpu = cost["cpu_mean_ms"] * a_second  # ms of CPU a second
    lines = [
        "",
        f"One push, in-process ({cost['pushes']} pushes, {cost['writes_a_push']} deposits"
        f" before each): wall p50 {cost['wall_p50_ms']:.2f} ms, p99 {cost['wall_p99_ms']:.2f};"
        f" CPU p50 {cost['cpu_p50_ms']:.2f} ms, p99 {cost['cpu_p99_ms']:.2f}, mean"
        f" {cost['cpu_mean_ms']:.2f}.",
        f"At {a_second:g} pushes a second: {cpu:.1f} ms of CPU a second, "
        f"{cpu / 10:.2f}% of one core",
    ]
    for row in report["summary"]["rows"]:
        if row["way"] == "none" and row["server_cpu_ms_per_write"]:
            writes = cpu / row["server_cpu_ms_per_write"]
            lines.append(
                f"  = the CPU of {writes:.1f} {row['workload']}s a second"
                f" ({row['server_cpu_ms_per_write']:.2f} ms each), "
                f"{100 * writes / row['throughput']:.2f}% of none's {row['throughput']:.0f}/s"
            )
    if "profile" in cost:
        lines += ["", cost["profile"]]
    return lines


QUICK: dict[str, Any] = {"seconds": 4.0, "slice": 2.0, "warmup": 1.0, "repeat": 1}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.witnessing", description=(__doc__ or "").split("\n")[0]
    )
    add = parser.add_argument
    add("--events", type=int, default=DEFAULT_EVENTS, help="the seeded log's size (10000)")
    add("--seconds", type=float, default=SECONDS, help="timed run, each way (default 12)")
    add("--slice", type=float, default=SLICE, help="taken in slices this long, in turn (3)")
    add("--warmup", type=float, default=WARMUP, help="untimed run before, each way (2)")
    add("--repeat", type=int, default=5, help="repetitions (default 5)")
    add("--clients", type=int, default=CLIENTS, help="concurrent clients (4)")
    add("--workers", type=int, default=2, help="hazard serve's workers (2)")
    add("--witnesses", type=int, default=WITNESSES, help="witnesses (2)")
    add("--interval", type=float, default=INTERVAL_S, help="HAZARD_WITNESS_INTERVAL, s (1)")
    add("--workloads", default=",".join(WORKLOADS), help="of throw,deposit (default both)")
    add("--seed", type=int, default=SEED, help=f"seed (default {SEED})")
    add("--cache-dir", type=Path, default=REPO / ".bench-cache", help="seeded databases")
    add("--dir", type=Path, default=None, help="served copies, witnesses (default: a temp dir)")
    add("--json", action="store_true", help="print JSON instead of a table")
    add("--quick", action="store_true", help="a smoke run: one repetition of 4 s runs")
    add("--pushes", type=int, default=50, help="in-process pushes timed, a witness (50; 0: none)")
    add("--writes-a-push", type=int, default=100, help="deposits before each push (100)")
    add("--profile", action="store_true", help="also cProfile the in-process pushes")
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**QUICK)
        args = parser.parse_args(argv)
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if not args.workloads or set(args.workloads) - set(WORKLOADS):
        parser.error(f"--workloads: of {', '.join(WORKLOADS)}")
    if args.repeat < 1 or args.clients < 1 or args.seconds <= 0 or args.witnesses < 1:
        parser.error("--repeat, --clients, --seconds and --witnesses positive")

    started = time.perf_counter()
    found = seeded(args.events, args.cache_dir, args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="hazard-bench-witnessing-", dir=args.dir))
    try:
        runs = measure(args, found.path, found.meta, workdir)
        cost = push_cost(args, found.path, found.meta, workdir) if args.pushes > 0 else None
    except BaseException:
        _say(f"stopped: {workdir} is kept for inspection (the served database, the logs)")
        raise
    if not any("server_log" in x for x in runs):
        shutil.rmtree(workdir, ignore_errors=True)
    report: dict[str, Any] = {
        "benchmark": "bench.witnessing",
        "machine": _machine(),
        "parameters": {
            "events": found.meta["events"],
            "seconds": args.seconds,
            "slice": args.slice,
            "warmup": args.warmup,
            "repeat": args.repeat,
            "clients": args.clients,
            "workers": args.workers,
            "witnesses": args.witnesses,
            "interval": args.interval,
            "workloads": args.workloads,
            "seed": args.seed,
        },
        "summary": summarise(runs, args.workloads),
        "push": cost,
        "runs": runs,
    }
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2, default=str) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
