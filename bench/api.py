"""The REST API under gunicorn on SQLite, driven over loopback: throughput and latency.

Run from the repository root:

    .venv/bin/python -m bench.api                                  # 10k and 1M events
    .venv/bin/python -m bench.api --quick        # smoke: 10k and 100k, one short run
    .venv/bin/python -m bench.api --json > api.json                # JSON on stdout

The target (from the issue): serve with gunicorn (2 workers) on SQLite, drive it with a
load generator on loopback, and measure throughput and p50/p99 latency for recording a
throw and for a settlement query, with 10,000 and with 1,000,000 events in the
database. The query latency must stay flat as history grows: within 1.5x from the
smaller database to the larger.

Each database is seeded once by `bench.seed` (the service's own write path: engine
command, UnitOfWork.play) and cached; every repetition serves a fresh copy
of it, so the throws one repetition records are not in the next one's database. The
sizes run interleaved: repetition r serves each size in turn (in an order rotated by r),
and runs every workload on it (also rotated): an untimed warm-up, then a timed run of
a fixed duration with a few concurrent clients, each a closed loop (the next request
goes as soon as the last is answered) on its own HTTP/1.1 connection (http.client, kept
open where the server keeps it open; gunicorn's sync workers close it after every
response, and the client reconnects).

  throw               POST /tables/<t>/throws {die1, die2} on THROW_TABLES tables left in
                      the chance phase; the dice are never the main nor the chance, so
                      every throw is legal and none ends the round (one DiceThrown each).
  settlements-table   GET /settlements?table=<t>&limit=50, t a seeded table at random.
  settlements-player  GET /settlements?player=<p>&limit=50, p a seeded player at random.

With --bare (the default), a bare Flask app (bench/bare.py: the stdlib sqlite3 and
jsonify, one durable insert for a throw) is served beside the service, on its own copy of
the same database, with the same gunicorn settings (`hazard serve`'s threaded workers),
and every workload runs on it too, just before or after the service's (in turn): the
report then gives, per workload and size, service / bare for req/s and p50/p99, and
issue 27's targets, each beside its baseline from the same run, MET or MISSED (a query
>= 0.85x the bare view's req/s; a throw >= 0.75x the bare durable insert's, with a p99
within 1.5x its). With --no-bare, the output of old (gunicorn's sync workers by default).

Every answer that is not the success expected (201, 200), and every connection error,
is counted and reported with an example; latencies are of successful requests. After
each server run its log is searched for tracebacks and gunicorn errors. Figures are
medians over the repetitions; speed is reported, never asserted.

Also, informational, per size: the same two settlement queries timed in-process through
ledger.books.tableviews.settlements (no HTTP, no gunicorn), and SQLite's EXPLAIN QUERY PLAN
for each, to show where the time goes.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import json
import math
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.fold import _machine, _say
from bench.seed import SEED, Seeded, key_for, restored_at, seeded

DEFAULT_EVENTS = (10_000, 1_000_000)
WORKERS = 2
CLIENTS = 4
SECONDS = 10.0
WARMUP = 2.0
PAGE = 50
TARGET_RATIO = 1.5
"""The query's latency at the largest size over the smallest: at most this."""
HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parent.parent

Request = tuple[str, str, bytes | None]
"""(method, path with query, body)."""


# -- the server ---------------------------------------------------------------------


def app_spec(choice: str) -> str:
    """The WSGI app gunicorn loads: ledger.wsgi:app if it exists, else the factory."""
    if choice == "auto":
        return "ledger.wsgi:app" if importlib.util.find_spec("ledger.wsgi") else "factory"
    return choice


def _gunicorn_target(spec: str) -> str:
    return "ledger.api:create_app()" if spec == "factory" else spec


BARE_APP = "bench.bare:app"
"""The bare baseline (bench/bare.py): Flask and the stdlib sqlite3, nothing else."""


def serve_like() -> list[str]:
    """gunicorn's worker settings as `hazard serve` sets them (ledger.api.server.serve):
    its threaded worker class, its threads, its worker timeout."""
    from ledger.api import server, slowclients

    return [
        "--worker-class", "ledger.api.slowclients.ThreadWorker",
        "--threads", str(slowclients.DEFAULT_THREADS),
        "--timeout", str(server.WORKER_TIMEOUT_S),
    ]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    database: Path

    def cpu_seconds(self) -> float:
        """CPU time (user + system) of the gunicorn master's workers so far."""
        total = 0.0
        for pid in _children(self.process.pid):
            total += _cpu_of(pid)
        return total


def machine_busy_seconds() -> float:
    """CPU time all processes have used since boot, by /proc/stat (0 off Linux)."""
    try:
        with open("/proc/stat") as f:
            values = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0.0
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(x) for x in f.read().split()]
    return found


def _cpu_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def serve(
    source: Path,
    workdir: Path,
    spec: str,
    workers: int,
    extra: Sequence[str],
    name: str = "served",
) -> Iterator[Server]:
    """gunicorn on a fresh copy of `source` (workdir/<name>.sqlite3), until the block ends."""
    database = workdir / f"{name}.sqlite3"
    for leftover in workdir.glob(f"{name}.sqlite3*"):
        leftover.unlink()
    shutil.copyfile(source, database)
    if spec == BARE_APP:
        from bench import bare

        bare.prepare(str(database))
    # Written back to disk now, not by the kernel during the timed runs (where the
    # write-back of a 0.5 GB copy would queue ahead of the throws' fsyncs).
    fd = os.open(database, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    log = workdir / f"gunicorn-{name}.log"
    port = _free_port()
    # The key that signed the log, beside the database copied (not the copy's name).
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{database}", HAZARD_KEY=str(key_for(source)))
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    cmd = [
        sys.executable, "-m", "gunicorn",
        "--workers", str(workers),
        "--bind", f"{HOST}:{port}",
        *extra,
        _gunicorn_target(spec),
    ]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Server(port, process, log, database)
    try:
        _wait_ready(server)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # gunicorn's graceful stop
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(server: Server, timeout: float = 60.0) -> None:
    """Until the server answers /readyz (or, without it, anything at all) and every
    worker has booted."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"gunicorn exited ({server.process.returncode}):\n{_tail(server.log)}"
            )
        try:
            conn = http.client.HTTPConnection(HOST, server.port, timeout=5)
            conn.request("GET", "/readyz")
            response = conn.getresponse()
            response.read()
            conn.close()
            if response.status in (200, 404):  # 404: a build without /readyz
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"gunicorn did not answer within {timeout:.0f} s:\n{_tail(server.log)}")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def scan_log(path: Path) -> dict[str, Any]:
    """What went wrong in the server, by its log: tracebacks, error lines, timeouts."""
    text = path.read_text(errors="replace") if path.exists() else ""
    lines = text.splitlines()
    errors = [
        ln
        for ln in lines
        if "[ERROR]" in ln
        or "WORKER TIMEOUT" in ln
        or '"level": "error"' in ln
        or '"level": "critical"' in ln
    ]
    tracebacks = text.count("Traceback (most recent call last)")
    example = ""
    if tracebacks:
        start = text.index("Traceback (most recent call last)")
        example = "\n".join(text[max(0, start - 600) :].splitlines()[:60])
    elif errors:
        example = "\n".join(errors[:5])
    return {"tracebacks": tracebacks, "error_lines": len(errors), "example": example}


# -- workloads ----------------------------------------------------------------------


@dataclass
class Workload:
    name: str
    expect: int
    """The status a successful request gets."""
    what: str
    request: Callable[[random.Random], Request] = lambda _rng: ("GET", "/", None)
    kind: str = "query"


def legal_dice(main: int, chance: int) -> list[tuple[int, int]]:
    """Every (die1, die2) that neither throws the chance (a win) nor the main (a loss):
    in the chance phase, the only totals that decide the round."""
    return [(a, b) for a in range(1, 7) for b in range(1, 7) if a + b not in (main, chance)]


def throw_workload(base: _Http, tables: Sequence[str]) -> Workload:
    """Throws on tables in the chance phase, at random over the tables."""
    dice: list[tuple[str, list[tuple[int, int]]]] = []
    for table in tables:
        status, body = base.get(f"/tables/{table}")
        state = json.loads(body) if status == 200 else {}
        if status != 200 or state.get("phase") != "chance":
            raise RuntimeError(
                f"throw table {table}: expected 200 and the chance phase, got {status} "
                f"{body[:300]!r}"
            )
        dice.append((f"/tables/{table}/throws", legal_dice(state["main"], state["chance"])))

    def request(rng: random.Random) -> Request:
        path, pairs = rng.choice(dice)
        die1, die2 = rng.choice(pairs)
        return "POST", path, f'{{"die1": {die1}, "die2": {die2}}}'.encode()

    return Workload(
        "throw",
        201,
        f"POST /tables/<t>/throws over {len(tables)} tables in the chance phase; "
        "never the main nor the chance",
        request,
        kind="write",
    )


def query_workload(name: str, param: str, values: Sequence[str]) -> Workload:
    paths = [f"/settlements?{urlencode({param: v, 'limit': PAGE})}" for v in values]

    def request(rng: random.Random) -> Request:
        return "GET", rng.choice(paths), None

    return Workload(
        name,
        200,
        f"GET /settlements?{param}=<{param}>&limit={PAGE}, over {len(values)} {param}s",
        request,
    )


BARE = "bare:"
"""The prefix of a bare workload's name: bare:throw is the floor under throw."""


def bare_throw_workload(tables: Sequence[str]) -> Workload:
    """One durable insert a request (bench.bare), with bodies like the throws'."""
    paths = [f"/bare/throws?{urlencode({'table': t})}" for t in tables]

    def request(rng: random.Random) -> Request:
        die1, die2 = rng.randint(1, 6), rng.randint(1, 6)
        return "POST", rng.choice(paths), f'{{"die1": {die1}, "die2": {die2}}}'.encode()

    return Workload(
        BARE + "throw",
        201,
        f"POST /bare/throws over {len(tables)} tables: BEGIN IMMEDIATE, one INSERT, COMMIT",
        request,
        kind="write",
    )


def bare_query_workload(name: str, param: str, values: Sequence[str]) -> Workload:
    """The rows the service's query reads, by sqlite3 and jsonify alone (bench.bare)."""
    paths = [f"/bare/settlements?{urlencode({param: v, 'limit': PAGE})}" for v in values]

    def request(rng: random.Random) -> Request:
        return "GET", rng.choice(paths), None

    return Workload(
        BARE + name,
        200,
        f"GET /bare/settlements?{param}=<{param}>&limit={PAGE}, over {len(values)} {param}s",
        request,
    )


class _Http:
    """One-off requests with the bench token (set-up and probes, not timed)."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def probe_settlements(base: _Http, table: str, player: str) -> str | None:
    """None if GET /settlements answers pages of items by table and by player; else
    why the query workloads cannot run."""
    for query in (f"table={table}", f"player={player}"):
        status, body = base.get(f"/settlements?{query}&limit={PAGE}")
        if status != 200:
            return f"GET /settlements?{query} answered {status}: {body[:300]!r}"
        try:
            page = json.loads(body)
        except ValueError:
            return f"GET /settlements?{query} did not answer JSON: {body[:300]!r}"
        if not isinstance(page, dict) or not page.get("items"):
            return f"GET /settlements?{query} answered no items: {body[:300]!r}"
    return None


# -- the load generator -------------------------------------------------------------


@dataclass
class Run:
    """One timed run of one workload: every client's requests, merged."""

    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    reconnects: int = 0
    client_cpu: float = 0.0
    server_cpu: float = 0.0
    machine_cpu: float = 0.0

    @property
    def ok(self) -> int:
        return len(self.latencies)

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


def drive(
    port: int,
    token: str,
    workload: Workload,
    clients: int,
    seconds: float,
    seed: int,
    server: Server | None = None,
) -> Run:
    """`clients` closed loops for `seconds`, each on its own connection."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    run = Run()
    lock = threading.Lock()
    start_line = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        latencies: list[float] = []
        errors: Counter[str] = Counter()
        examples: dict[str, str] = {}
        reconnects = 0
        clock = time.perf_counter
        start_line.wait()
        while clock() < stop_at[0]:
            method, path, body = workload.request(rng)
            began = clock()
            try:
                if conn.sock is None:
                    reconnects += 1
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                key = f"connection: {type(exc).__name__}"
                errors[key] += 1
                examples.setdefault(key, f"{method} {path}: {exc!r}")
                continue
            elapsed = clock() - began
            if response.status == workload.expect:
                latencies.append(elapsed)
            else:
                key = f"HTTP {response.status}"
                errors[key] += 1
                examples.setdefault(key, f"{method} {path}: {data[:500]!r}")
        conn.close()
        with lock:
            run.latencies += latencies
            run.errors += errors
            run.reconnects += reconnects
            for key, text in examples.items():
                run.examples.setdefault(key, text)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    cpu0 = time.process_time()
    server0 = server.cpu_seconds() if server else 0.0
    machine0 = machine_busy_seconds()
    began = time.perf_counter()
    stop_at[0] = began + seconds
    start_line.wait()
    for t in threads:
        t.join()
    run.seconds = time.perf_counter() - began
    run.client_cpu = time.process_time() - cpu0
    run.server_cpu = (server.cpu_seconds() - server0) if server else 0.0
    run.machine_cpu = machine_busy_seconds() - machine0
    return run


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    if not sorted_values:
        return math.nan
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def run_summary(run: Run) -> dict[str, Any]:
    lat = sorted(run.latencies)
    return {
        "requests": run.ok,
        "failed": run.failed,
        "errors": dict(run.errors),
        "seconds": round(run.seconds, 3),
        "throughput": round(run.ok / run.seconds, 1) if run.seconds else 0.0,
        "p50_ms": round(percentile(lat, 0.50) * 1000, 3),
        "p99_ms": round(percentile(lat, 0.99) * 1000, 3),
        "max_ms": round(lat[-1] * 1000, 3) if lat else math.nan,
        "reconnects": run.reconnects,
        "client_cpu_cores": round(run.client_cpu / run.seconds, 2) if run.seconds else 0.0,
        "server_cpu_cores": round(run.server_cpu / run.seconds, 2) if run.seconds else 0.0,
        # Everything else the machine ran meanwhile: other people's work, the noise.
        "other_cpu_cores": round(
            max(0.0, run.machine_cpu - run.server_cpu - run.client_cpu) / run.seconds, 2
        )
        if run.seconds
        else 0.0,
        "examples": run.examples,
    }


def players_with_settlements(database: Path) -> list[str]:
    """The seeded players party to at least one settlement: whom the player query asks
    for (a player who never bet would get an empty page, a cheaper query)."""
    con = sqlite3.connect(f"file:{database}?immutable=1", uri=True)
    try:
        rows = con.execute(
            "SELECT DISTINCT party FROM settlement_parties WHERE party LIKE 'player:%'"
        ).fetchall()
    finally:
        con.close()
    return sorted(party.removeprefix("player:") for (party,) in rows)


# -- in-process: the query alone, and its plan --------------------------------------


def direct_queries(database: Path, meta: dict[str, Any], calls: int, seed: int) -> dict[str, Any]:
    """tableviews.settlements in-process (no HTTP): latency and EXPLAIN QUERY PLAN."""

    from ledger.books import tableviews
    from ledger.books.accounts import player_account
    from ledger.service import table_stream
    from ledger.store import db

    engine = db.make_engine(f"sqlite:///{database}")
    rng = random.Random(seed)
    kinds: dict[str, tuple[str, Callable[[str], dict[str, Any]], list[str]]] = {
        "settlements-table": ("table", lambda t: {"stream": table_stream(t)}, meta["tables"]),
        "settlements-player": (
            "player",
            lambda p: {"party": player_account(p)},
            meta["query_players"],
        ),
    }
    out: dict[str, Any] = {}
    try:
        with engine.connect() as conn:
            for name, (_param, kwargs, values) in kinds.items():
                # The statement it runs on the driver's cursor, for its plan.
                statement, params = tableviews.settlement_query(limit=PAGE, **kwargs(values[0]))
                raw = conn.connection.driver_connection
                assert raw is not None
                plan = [row[-1] for row in raw.execute("EXPLAIN QUERY PLAN " + statement, params)]
                for _ in range(20):  # warm the page cache and the statement cache
                    tableviews.settlements(conn, limit=PAGE, **kwargs(rng.choice(values)))
                times, full = [], 0
                for _ in range(calls):
                    args = kwargs(rng.choice(values))
                    began = time.perf_counter()
                    items = tableviews.settlements(conn, limit=PAGE, **args)
                    times.append(time.perf_counter() - began)
                    full += len(items) == PAGE
                times.sort()
                out[name] = {
                    "calls": calls,
                    "full_pages": round(full / calls, 3),
                    "p50_ms": round(percentile(times, 0.5) * 1000, 3),
                    "p99_ms": round(percentile(times, 0.99) * 1000, 3),
                    "sql": " ".join(statement.split()),
                    "plan": plan,
                }
    finally:
        engine.dispose()
    return out


# -- the run ------------------------------------------------------------------------


def _rotated(items: Sequence[Any], r: int) -> list[Any]:
    k = r % len(items) if items else 0
    return [*items[k:], *items[:k]]


def measure(
    args: argparse.Namespace, dbs: dict[int, Seeded], workdir: Path, spec: str
) -> tuple[dict[tuple[str, int], list[dict[str, Any]]], dict[str, Any]]:
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    notes: dict[str, Any] = {"unavailable": {}, "server_logs": [], "direct": {}}
    sizes = sorted(dbs)
    extra = args.gunicorn_args
    for r in range(args.repeat):
        for size in _rotated(sizes, r):
            db = dbs[size]
            meta = db.meta
            _say(f"repetition {r + 1}/{args.repeat}: serving {meta['events']:,} events...")
            servers: list[Server] = []
            with contextlib.ExitStack() as stack:
                server = stack.enter_context(serve(db.path, workdir, spec, args.workers, extra))
                servers.append(server)
                bare_server: Server | None = None
                if args.bare:  # beside it, on its own copy of the same database
                    bare_server = stack.enter_context(
                        serve(db.path, workdir, BARE_APP, args.workers, extra, name="bare")
                    )
                    servers.append(bare_server)
                if args.direct:  # on the served copy, while the workers are idle
                    found = direct_queries(server.database, meta, args.direct, args.seed + r)
                    notes["direct"].setdefault(size, []).append(found)
                base = _Http(server.port, meta["token"])
                rng = random.Random(args.seed + r)
                workloads: list[Workload] = []
                if "throw" in args.workloads:
                    workloads.append(throw_workload(base, meta["throw_tables"]))
                queries = [w for w in args.workloads if w.startswith("settlements")]
                if queries:
                    why = probe_settlements(
                        base, rng.choice(meta["tables"]), meta["query_players"][0]
                    )
                    if why is not None:
                        for w in queries:
                            notes["unavailable"][w] = why
                        _say(f"  query workloads skipped: {why}")
                    else:
                        if "settlements-table" in queries:
                            workloads.append(
                                query_workload("settlements-table", "table", meta["tables"])
                            )
                        if "settlements-player" in queries:
                            workloads.append(
                                query_workload(
                                    "settlements-player", "player", meta["query_players"]
                                )
                            )
                runs: list[tuple[Workload, Server]] = []
                for w in _rotated(workloads, r):
                    pair = [(w, server)]
                    if bare_server is not None:
                        pair.append((bare_of(w, meta), bare_server))
                    runs += pair if r % 2 == 0 else pair[::-1]  # who goes first, in turn
                for w, on in runs:
                    if args.warmup > 0:
                        drive(on.port, meta["token"], w, args.clients, args.warmup, args.seed)
                    run = drive(
                        on.port,
                        meta["token"],
                        w,
                        args.clients,
                        args.seconds,
                        args.seed + 7 * r + 1,
                        on,
                    )
                    summary = run_summary(run)
                    summary["what"] = w.what
                    summary["repetition"] = r + 1
                    results.setdefault((w.name, size), []).append(summary)
                    failed = f", {summary['failed']} FAILED" if summary["failed"] else ""
                    _say(
                        f"  {w.name:<24} {summary['throughput']:>8.1f} req/s  "
                        f"p50 {summary['p50_ms']:.2f} ms  p99 {summary['p99_ms']:.2f} ms"
                        f"  (CPU server {summary['server_cpu_cores']:.2f}, other"
                        f" {summary['other_cpu_cores']:.2f}){failed}"
                    )
            for on in servers:
                scanned = scan_log(on.log)
                scanned.update(
                    repetition=r + 1,
                    events=meta["events"],
                    app="bare" if on is not server else "ledger",
                )
                notes["server_logs"].append(scanned)
                if scanned["tracebacks"] or scanned["error_lines"]:
                    _say(
                        f"  {scanned['app']} server log: {scanned['tracebacks']} tracebacks, "
                        f"{scanned['error_lines']} error lines"
                    )
                    keep = workdir / f"gunicorn-{scanned['app']}-r{r + 1}-{size}.log"
                    shutil.copyfile(on.log, keep)
                    scanned["log"] = str(keep)
            for leftover in [*workdir.glob("served.sqlite3*"), *workdir.glob("bare.sqlite3*")]:
                leftover.unlink()
    return results, notes


def bare_of(w: Workload, meta: dict[str, Any]) -> Workload:
    """The bare workload under a real one: the same requests, minus the service."""
    if w.name == "throw":
        return bare_throw_workload(meta["throw_tables"])
    if w.name == "settlements-table":
        return bare_query_workload(w.name, "table", meta["tables"])
    if w.name == "settlements-player":
        return bare_query_workload(w.name, "player", meta["query_players"])
    raise ValueError(f"no bare baseline for {w.name}")


def summarise(
    results: dict[tuple[str, int], list[dict[str, Any]]], sizes: Sequence[int]
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for (name, size), runs in sorted(results.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        rows.append(
            {
                "workload": name,
                "size": size,
                "what": runs[0]["what"],
                "repetitions": len(runs),
                "throughput": statistics.median(x["throughput"] for x in runs),
                "p50_ms": statistics.median(x["p50_ms"] for x in runs),
                "p99_ms": statistics.median(x["p99_ms"] for x in runs),
                "requests": sum(x["requests"] for x in runs),
                "failed": sum(x["failed"] for x in runs),
                "errors": sum((Counter(x["errors"]) for x in runs), Counter()),
                "examples": {k: v for x in runs for k, v in x["examples"].items()},
                "server_cpu_cores": statistics.median(x["server_cpu_cores"] for x in runs),
                "client_cpu_cores": statistics.median(x["client_cpu_cores"] for x in runs),
                "other_cpu_cores": statistics.median(x["other_cpu_cores"] for x in runs),
                "reconnects": sum(x["reconnects"] for x in runs),
                "runs": runs,
            }
        )
    ratios = []
    small, large = min(sizes), max(sizes)
    by = {(r["workload"], r["size"]): r for r in rows}
    for name in sorted({r["workload"] for r in rows}):
        a, b = by.get((name, small)), by.get((name, large))
        if a is None or b is None or small == large:
            continue
        # Per repetition too: the two sizes ran side by side in each.
        paired = [y["p50_ms"] / x["p50_ms"] for x, y in zip(a["runs"], b["runs"], strict=False)]
        entry = {
            "workload": name,
            "small": small,
            "large": large,
            "p50_ratio": round(b["p50_ms"] / a["p50_ms"], 3),
            "p99_ratio": round(b["p99_ms"] / a["p99_ms"], 3),
            "throughput_ratio": round(b["throughput"] / a["throughput"], 3),
            "p50_ratio_per_repetition": [round(x, 3) for x in paired],
            "target": TARGET_RATIO if name.startswith("settlements") else None,
        }
        if entry["target"] is not None:
            entry["met"] = entry["p50_ratio"] <= TARGET_RATIO and entry["p99_ratio"] <= TARGET_RATIO
        ratios.append(entry)
    return {"rows": rows, "ratios": ratios, "bare": against_bare(by)}


BARE_GOALS: dict[str, tuple[float, float | None]] = {
    "settlements-table": (0.85, None),
    "settlements-player": (0.85, None),
    "throw": (0.75, 1.5),
}
"""Per workload (issue 27's targets): the least throughput over the bare view's, and
the most p99 over the bare view's (None: no bound)."""

TARGET_NAMES = {
    "settlements-table": "HTTP settlement query, table",
    "settlements-player": "HTTP settlement query, player",
    "throw": "HTTP throw",
}


def against_bare(by: dict[tuple[str, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """Per workload and size: the service over the bare view, both run side by side."""
    out = []
    for (name, size), real in sorted(by.items()):
        bare = by.get((BARE + name, size))
        if name.startswith(BARE) or bare is None:
            continue
        least, most_p99 = BARE_GOALS.get(name, (0.0, None))
        entry = {
            "workload": name,
            "size": size,
            "throughput": real["throughput"],
            "bare_throughput": bare["throughput"],
            "throughput_ratio": round(real["throughput"] / bare["throughput"], 3),
            "p50_ms": real["p50_ms"],
            "bare_p50_ms": bare["p50_ms"],
            "p99_ms": real["p99_ms"],
            "bare_p99_ms": bare["p99_ms"],
            "p99_ratio": round(real["p99_ms"] / bare["p99_ms"], 3),
            # Per repetition too: the two ran side by side in each.
            "throughput_ratio_per_repetition": [
                round(x["throughput"] / y["throughput"], 3) if y["throughput"] else math.nan
                for x, y in zip(real["runs"], bare["runs"], strict=False)
            ],
            # The workers' CPU a request (ms), service over bare: less swayed than req/s
            # by what else the machine runs (the other cores' load, the kernel's hand-out
            # of connections to workers), though not immune to it.
            "cpu_ms": _cpu_ms(real),
            "bare_cpu_ms": _cpu_ms(bare),
            "cpu_ratio": round(_cpu_ms(real) / _cpu_ms(bare), 3) if _cpu_ms(bare) else math.nan,
            "goal_throughput_ratio": least,
            "goal_p99_ratio": most_p99,
        }
        entry["met"] = entry["throughput_ratio"] >= least and (
            most_p99 is None or entry["p99_ratio"] <= most_p99
        )
        out.append(entry)
    return out


def _cpu_ms(row: dict[str, Any]) -> float:
    """The median over the repetitions of the workers' CPU per successful request, ms."""
    per = [x["server_cpu_cores"] / x["throughput"] * 1000 for x in row["runs"] if x["throughput"]]
    return round(statistics.median(per), 3) if per else math.nan


def summarise_direct(direct: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """The in-process timings: medians over the repetitions, per query and size."""
    out: dict[str, Any] = {}
    for size, reps in direct.items():
        for name in reps[0]:
            runs = [rep[name] for rep in reps]
            entry = out.setdefault(name, {"sizes": {}})
            entry["sizes"][size] = {
                "p50_ms": statistics.median(x["p50_ms"] for x in runs),
                "p99_ms": statistics.median(x["p99_ms"] for x in runs),
                "full_pages": statistics.median(x["full_pages"] for x in runs),
                "calls": sum(x["calls"] for x in runs),
                "sql": runs[0]["sql"],
                "plan": runs[0]["plan"],
            }
    for entry in out.values():
        sizes = entry["sizes"]
        if len(sizes) > 1:
            small, large = sizes[min(sizes)], sizes[max(sizes)]
            entry["p50_ratio"] = round(large["p50_ms"] / small["p50_ms"], 3)
            entry["p99_ratio"] = round(large["p99_ms"] / small["p99_ms"], 3)
    return out


def _events(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return f"{n:,}"


def _targets(against: Sequence[dict[str, Any]]) -> list[str]:
    """Issue 27's HTTP targets, per workload and size, each beside the bare view's
    figures from the same run: MET or MISSED (as bench.exports and bench.verify say theirs)."""
    lines = []
    for x in against:
        goal = f">= {x['goal_throughput_ratio']:g}x req/s"
        measured = f"{x['throughput_ratio']:.2f}x req/s"
        if x["goal_p99_ratio"] is not None:
            goal += f", p99 <= {x['goal_p99_ratio']:g}x"
            measured += f", p99 {x['p99_ratio']:.2f}x"
        name = f"{TARGET_NAMES.get(x['workload'], x['workload'])}, {_events(x['size'])}"
        service = f"{x['throughput']:,.0f} req/s p50 {x['p50_ms']:.2f} p99 {x['p99_ms']:.2f} ms"
        bare = (f"bare {x['bare_throughput']:,.0f} req/s p50 {x['bare_p50_ms']:.2f}"
                f" p99 {x['bare_p99_ms']:.2f} ms")  # fmt: skip
        cpu = (f"server CPU a request {x['cpu_ms']:.2f} ms against {x['bare_cpu_ms']:.2f}"
               f" ({x['cpu_ratio']:.2f}x)")  # fmt: skip
        lines.append(
            f"  {name:36} {measured:24} {goal:30} {'MET' if x['met'] else 'MISSED'}\n"
            f"  {'':36} {service} against {bare}\n  {'':36} {cpu}"
        )
    return lines


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    p = report["parameters"]
    lines = [
        f"bench.api: gunicorn {p['gunicorn']} ({p['app']}), {p['workers']} workers"
        f"{' ' + ' '.join(p['gunicorn_args']) if p['gunicorn_args'] else ''}, SQLite;"
        f" {p['clients']} clients on loopback, {p['seconds']:g} s a run after"
        f" {p['warmup']:g} s warm-up, {p['repeat']} repetitions",
        f"machine: Python {m['python']} on {m['platform']}, {m['cpu_count']} CPUs"
        f" (affinity {m['cpu_affinity']})",
        "",
        "Databases (seeded by bench.seed through UnitOfWork.play, cached):",
    ]
    for size, d in sorted(report["databases"].items(), key=lambda kv: int(kv[0])):
        c = d["counts"]
        lines.append(
            f"  {_events(int(size)):>5}: {d['events']:,} events, {c['settlements']:,} settlements,"
            f" {len(d['tables'])} tables + {len(d['throw_tables'])} throw tables,"
            f" {len(d['players'])} players ({len(d['query_players'])} with settlements),"
            f" {d['bytes'] / 2**20:,.0f} MiB;"
            f" seeded in {d['seconds']:,.0f} s{' (cached)' if d['cached'] else ''}"
            + (f", imported in {d['imported_seconds']:,.0f} s" if "imported_seconds" in d else "")
        )
    lines += [
        "",
        f"{'workload':<24} {'events':>9} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9}"
        f" {'failed':>7} {'CPU: server':>11} {'client':>6} {'other':>6}",
    ]
    for r in report["summary"]["rows"]:
        lines.append(
            f"{r['workload']:<24} {r['size']:>9,} {r['throughput']:>9.1f} {r['p50_ms']:>9.2f}"
            f" {r['p99_ms']:>9.2f} {r['failed']:>7} {r['server_cpu_cores']:>11.2f}"
            f" {r['client_cpu_cores']:>6.2f} {r['other_cpu_cores']:>6.2f}"
        )
    rows = report["summary"]["rows"]
    sent = sum(r["requests"] + r["failed"] for r in rows)
    if sent:
        fresh = sum(r["reconnects"] for r in rows) / sent
        lines.append(
            f"(a new connection for {fresh:.0%} of the requests"
            + (": the sync workers close every connection)" if fresh > 0.9 else ")")
        )
    lines += ["", "Largest over smallest (medians; the query's target is <= 1.5x):"]
    for x in report["summary"]["ratios"]:
        verdict = ""
        if x["target"] is not None:
            verdict = f"  target <= {x['target']:g}x  {'MET' if x['met'] else 'MISSED'}"
        lines.append(
            f"  {x['workload']:<20} {_events(x['large'])} / {_events(x['small'])}:"
            f" p50 {x['p50_ratio']:.2f}x, p99 {x['p99_ratio']:.2f}x,"
            f" req/s {x['throughput_ratio']:.2f}x"
            f"  (p50 per repetition {', '.join(f'{v:.2f}' for v in x['p50_ratio_per_repetition'])})"
            f"{verdict}"
        )
    for name, why in report["notes"]["unavailable"].items():
        lines.append(f"  {name}: NOT MEASURED: {why}")
    if report["summary"]["bare"]:
        lines += [
            "",
            "Against a bare Flask view (bench.bare: sqlite3 and jsonify, the same gunicorn,",
            "a copy of the same database, run side by side; service / bare, medians):",
            f"  {'workload':<20} {'events':>9} {'req/s':>15} {'ratio':>6}"
            f" {'p50 ms':>15} {'p99 ms':>15} {'p99 ratio':>9}",
        ]
        for x in report["summary"]["bare"]:
            goal = f">= {x['goal_throughput_ratio']:g}x"
            if x["goal_p99_ratio"] is not None:
                goal += f", p99 <= {x['goal_p99_ratio']:g}x"
            lines.append(
                f"  {x['workload']:<20} {x['size']:>9,}"
                f" {x['throughput']:>7.1f}/{x['bare_throughput']:<7.1f}"
                f" {x['throughput_ratio']:>5.2f}x"
                f" {x['p50_ms']:>7.2f}/{x['bare_p50_ms']:<7.2f}"
                f" {x['p99_ms']:>7.2f}/{x['bare_p99_ms']:<7.2f}"
                f" {x['p99_ratio']:>8.2f}x  goal {goal}: {'MET' if x['met'] else 'MISSED'}"
                f"  (req/s ratio per repetition"
                f" {', '.join(f'{v:.2f}' for v in x['throughput_ratio_per_repetition'])})"
            )
    if report["summary"]["bare"]:
        lines += ["", "issue 27's targets, each beside its baseline from this run (medians):"]
        lines += _targets(report["summary"]["bare"])
    failures = [r for r in report["summary"]["rows"] if r["failed"]]
    if failures:
        lines += ["", "FAILED REQUESTS (counted above, excluded from the latencies):"]
        for r in failures:
            lines.append(f"  {r['workload']} at {r['size']:,} events: {dict(r['errors'])}")
            for key, text in r["examples"].items():
                lines.append(f"    {key}: {text[:400]}")
    bad_logs = [s for s in report["notes"]["server_logs"] if s["tracebacks"] or s["error_lines"]]
    if bad_logs:
        lines += ["", "SERVER LOG ERRORS:"]
        for s in bad_logs:
            lines.append(
                f"  {s.get('app', 'ledger')}, repetition {s['repetition']},"
                f" {s['events']:,} events: {s['tracebacks']}"
                f" tracebacks, {s['error_lines']} error lines (log kept: {s.get('log')})"
            )
        lines.append(
            "  first example:\n"
            + "\n".join("    " + x for x in bad_logs[0]["example"].splitlines())
        )
    direct = report["summary"].get("direct", {})
    if direct:
        lines += [
            "",
            "In-process, no HTTP (ledger.books.tableviews.settlements alone; medians over the"
            " repetitions, informational):",
        ]
        for name, by_size in direct.items():
            for size, d in sorted(by_size["sizes"].items(), key=lambda kv: int(kv[0])):
                lines.append(
                    f"  {name:<20} {int(size):>9,} events  p50 {d['p50_ms']:.3f} ms"
                    f"  p99 {d['p99_ms']:.3f} ms  full pages {d['full_pages']:.0%}"
                )
            if "p50_ratio" in by_size:
                lines.append(
                    f"  {'':<20} {'largest/smallest':>16}  p50 {by_size['p50_ratio']:.2f}x"
                    f"  p99 {by_size['p99_ratio']:.2f}x"
                )
            for size, d in sorted(by_size["sizes"].items(), key=lambda kv: int(kv[0])):
                lines.append(f"  {'':<20} plan at {int(size):,}: {' | '.join(d['plan'])}")
    lines += [
        "",
        "req/s: successful requests a second over all clients; p50/p99: latency of one",
        "request as the client sees it (connect, send, wait, read), nearest rank over every",
        "request of a run; each figure is the median over the repetitions. CPU, in cores",
        f"(of {report['machine']['cpu_count']}) over the run: server, the gunicorn workers;"
        " client, the load generator;",
        "other, every other process on the machine: well above 0, the figures are noise.",
        f"Total run time {report['total_seconds']:.0f} s.",
    ]
    return "\n".join(lines)


WORKLOADS = ("throw", "settlements-table", "settlements-player")
QUICK: dict[str, Any] = {
    "events": "10000,100000",
    "seconds": 3.0,
    "warmup": 1.0,
    "repeat": 1,
    "direct": 100,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.api", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--events",
        default=",".join(str(n) for n in DEFAULT_EVENTS),
        help="database sizes, comma-separated (default 10000,1000000); ratios are of the "
        "largest to the smallest",
    )
    parser.add_argument("--seconds", type=float, default=SECONDS, help="timed run (default 10)")
    parser.add_argument("--warmup", type=float, default=WARMUP, help="untimed run before (2)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--clients", type=int, default=CLIENTS, help="concurrent clients (4)")
    parser.add_argument("--workers", type=int, default=WORKERS, help="gunicorn workers (2)")
    parser.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma-separated, of {', '.join(WORKLOADS)} (default all)",
    )
    parser.add_argument(
        "--app",
        default="auto",
        help="what gunicorn serves: ledger.wsgi:app, 'factory' (ledger.api:create_app()), "
        "or auto (the first if ledger/wsgi.py exists)",
    )
    parser.add_argument(
        "--gunicorn-arg",
        action="append",
        help="an extra gunicorn argument, e.g. --gunicorn-arg=--threads=4 (repeatable)",
    )
    parser.add_argument(
        "--bare",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also serve the bare baseline (bench.bare) beside the service, run each "
        "workload on both in turn, and report service / bare (default on). With "
        "--no-bare, gunicorn's workers are its default sync ones unless --gunicorn-arg "
        "says otherwise (the output of old); with --bare, `hazard serve`'s (threaded)",
    )
    parser.add_argument(
        "--direct",
        type=int,
        default=500,
        help="in-process query calls per size and query (default 500; 0: skip)",
    )
    parser.add_argument("--seed", type=int, default=SEED, help=f"seed (default {SEED})")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=REPO / ".bench-cache",
        help="where seeded databases are kept (default .bench-cache/)",
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="where served copies go (default: a temp dir)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--seed-by-import",
        action="store_true",
        help="serve databases made by import of the cached whole-log export "
        "(bench.seed.restored_at), not the cached databases themselves",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a smoke run: the defaults become {QUICK['events']} events, "
        f"{QUICK['seconds']:g} s runs, {QUICK['warmup']:g} s warm-up, "
        f"{QUICK['repeat']} repetition (options given still win)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**QUICK)
        args = parser.parse_args(argv)
    try:
        sizes = sorted({int(x.replace("_", "")) for x in args.events.split(",") if x.strip()})
    except ValueError:
        parser.error("--events takes whole numbers separated by commas")
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    if not sizes or min(sizes) < 1000 or args.repeat < 1 or args.clients < 1 or args.seconds <= 0:
        parser.error("sizes of 1000 or more; --repeat, --clients and --seconds positive")
    # The same for both servers: hazard serve's workers when comparing with the bare view.
    args.gunicorn_args = args.gunicorn_arg or (serve_like() if args.bare else [])
    if shutil.which("gunicorn") is None and importlib.util.find_spec("gunicorn") is None:
        parser.error("gunicorn is not installed (.venv/bin/pip install -e '.[serve]')")

    started = time.perf_counter()
    dbs = {n: seeded(n, args.cache_dir, args.seed) for n in sizes}
    spec = app_spec(args.app)
    workdir = Path(tempfile.mkdtemp(prefix="hazard-bench-api-", dir=args.dir))
    if args.seed_by_import:
        dbs = {n: _imported(n, args, workdir) for n in sizes}
    for d in dbs.values():
        d.meta["query_players"] = players_with_settlements(d.path)
    try:
        results, notes = measure(args, dbs, workdir, spec)
    except BaseException:
        _say(f"stopped: {workdir} is kept for inspection (the served database, the log)")
        raise
    if not any("log" in s for s in notes["server_logs"]):
        shutil.rmtree(workdir, ignore_errors=True)
    from importlib.metadata import version

    report: dict[str, Any] = {
        "benchmark": "bench.api",
        "machine": _machine(),
        "parameters": {
            "sizes": sizes,
            "workloads": args.workloads,
            "seconds": args.seconds,
            "warmup": args.warmup,
            "repeat": args.repeat,
            "clients": args.clients,
            "workers": args.workers,
            "app": _gunicorn_target(spec),
            "gunicorn": version("gunicorn"),
            "gunicorn_args": args.gunicorn_args,
            "bare": BARE_APP if args.bare else None,
            "page": PAGE,
            "seed": args.seed,
        },
        "databases": {
            str(n): {k: v for k, v in d.meta.items() if k != "token"} for n, d in dbs.items()
        },
        "summary": {
            **summarise(results, sizes),
            "direct": summarise_direct(notes.pop("direct")),
        },
        "notes": notes,
    }
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        for row in report["summary"]["rows"]:
            row["errors"] = dict(row["errors"])
        slim = json.loads(json.dumps(report, default=str))
        for d in slim["databases"].values():
            for key in ("tables", "players", "query_players"):
                d[key] = len(d[key])
        print(json.dumps(slim, indent=2))
    else:
        print(render(report))
    return 0


def _imported(events: int, args: argparse.Namespace, workdir: Path) -> Seeded:
    """A database of `events` events made in `workdir` by import of the cached export."""
    path = workdir / f"imported-{events}.sqlite3"
    meta = restored_at(f"sqlite:///{path}", events, args.cache_dir, args.seed)
    shutil.copy2(key_for(seeded(events, args.cache_dir, args.seed).path), key_for(path))
    meta["bytes"] = path.stat().st_size
    return Seeded(path, meta)


if __name__ == "__main__":
    raise SystemExit(main())
