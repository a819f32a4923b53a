"""The CPU one request costs in process: the service's WSGI app and the bare one
(bench/bare.py), each called directly, without gunicorn, sockets or the kernel's
hand-out of connections to workers.

    .venv/bin/python -m bench.apicpu                    # 10k events, 7 rounds
    .venv/bin/python -m bench.apicpu --events 100000 --rounds 9

bench.api's req/s ratios are what issue 27 asks for, but on a shared 2-core machine they
scatter with what else runs (0.36 to 1.51 in one run's repetitions). What the app itself
spends beyond the bare one is steadier, and is what a change to the app can cut: this
measures it (gunicorn and the socket add about the same to both, so the ratio here is
wider than bench.api's), for a settlement page by table and by player (the service's
against the bare view's, the same rows), /healthz (the request's hooks alone) against the
bare app's /readyz, and a throw against the bare durable insert (CPU only: the wait for
its fsync is not counted). Each is timed by process CPU time over a batch of requests,
in rounds that alternate service and bare; figures are medians over rounds.
Run it in another checkout (`cd OTHER && python -m bench.apicpu`) to set code side by
side. Reported, never asserted.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.api import PAGE, REPO, legal_dice, players_with_settlements
from bench.seed import SEED, key_for, seeded

Call = Callable[[], tuple[str, bytes]]


def _caller(app: Any, token: str | None) -> Callable[..., tuple[str, bytes]]:
    def call(path: str, query: str, body: bytes | None = None) -> tuple[str, bytes]:
        environ = {
            "REQUEST_METHOD": "GET" if body is None else "POST", "PATH_INFO": path,
            "QUERY_STRING": query, "SERVER_NAME": "bench", "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body or b""), "wsgi.errors": sys.stderr,
            "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
        }  # fmt: skip
        if body is not None:
            environ["CONTENT_TYPE"] = "application/json"
            environ["CONTENT_LENGTH"] = str(len(body))
        if token is not None:
            environ["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        status: list[str] = []
        body = app(environ, lambda s, _h, _e=None: status.append(s))
        data = b"".join(body)
        if hasattr(body, "close"):
            body.close()
        return status[0], data

    return call


def _cpu_us(request: Call, calls: int) -> float:
    began = time.process_time()
    for _ in range(calls):
        request()
    return (time.process_time() - began) / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.apicpu", description=__doc__)
    parser.add_argument("--events", type=int, default=10_000, help="database size (10000)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--calls", type=int, default=300, help="requests a batch (300)")
    parser.add_argument(
        "--throws", type=int, default=1, help="time throws too (1, the default; 0: not)"
    )
    parser.add_argument("--cache-dir", type=Path, default=REPO / ".bench-cache")
    args = parser.parse_args(argv)
    db = seeded(args.events, args.cache_dir, SEED)
    work = Path(tempfile.mkdtemp(prefix="hazard-bench-apicpu-"))
    try:
        served, bare_db = work / "served.sqlite3", work / "bare.sqlite3"
        shutil.copyfile(db.path, served)
        shutil.copyfile(db.path, bare_db)
        from bench import bare
        from ledger import jsonlogging

        bare.prepare(str(bare_db))
        # Each request's log line written, as under `hazard serve`, to nowhere.
        jsonlogging.configure(stream=open(os.devnull, "w"))  # noqa: SIM115
        os.environ["HAZARD_KEY"] = str(key_for(db.path))
        from ledger.api import create_app
        from ledger.bootstrap import open_book

        service = _caller(create_app(book=open_book(f"sqlite:///{served}")), db.meta["token"])
        os.environ["DATABASE_URL"] = f"sqlite:///{bare_db}"
        floor = _caller(bare.app, None)
        rng = random.Random(SEED)
        tables, players = db.meta["tables"], players_with_settlements(db.path)

        def page(call: Any, path: str, key: str, values: list[str]) -> Call:
            return lambda: call(path, f"{key}={rng.choice(values)}&limit={PAGE}")

        # Throws that neither win nor lose (bench.api's throw workload), each table's
        # own; the bare one is its durable insert. Each commits with an fsync, whose
        # wait is not CPU: only the CPU is counted, as for the queries.
        dice = []
        for table in db.meta["throw_tables"]:
            state = json.loads(service(f"/tables/{table}", "")[1])
            dice.append((table, legal_dice(state["main"], state["chance"])))

        def throw(call: Any, bare: bool) -> Call:
            def request() -> tuple[str, bytes]:
                table, pairs = rng.choice(dice)
                die1, die2 = rng.choice(pairs)
                body = f'{{"die1": {die1}, "die2": {die2}}}'.encode()
                if bare:
                    return call("/bare/throws", f"table={table}", body)
                return call(f"/tables/{table}/throws", "", body)

            return request

        pairs: dict[str, tuple[Call, Call]] = {
            "settlements by table": (
                page(service, "/settlements", "table", tables),
                page(floor, "/bare/settlements", "table", tables),
            ),
            "settlements by player": (
                page(service, "/settlements", "player", players),
                page(floor, "/bare/settlements", "player", players),
            ),
            "hooks alone: /healthz, /readyz": (
                lambda: service("/healthz", ""),
                lambda: floor("/readyz", ""),
            ),
        }
        if args.throws:
            pairs["throw"] = (throw(service, False), throw(floor, True))
        for name, (ours, theirs) in pairs.items():
            for request in (ours, theirs):
                status, body = request()
                if not status.startswith(("200", "201")):
                    raise SystemExit(f"{name}: {status} {body[:300]!r}")
                for _ in range(50):  # warm
                    request()
        results: dict[str, dict[str, list[float]]] = {n: {"ours": [], "bare": []} for n in pairs}
        for _ in range(args.rounds):
            for name, (ours, theirs) in pairs.items():
                results[name]["ours"].append(_cpu_us(ours, args.calls))
                results[name]["bare"].append(_cpu_us(theirs, args.calls))
        load = os.getloadavg()[0]
        print(
            f"bench.apicpu: {db.meta['events']:,} events, CPU a request in process, medians"
            f" of {args.rounds} rounds of {args.calls} (load average {load:.2f})"
        )
        out = {}
        for name, got in results.items():
            ours, theirs = statistics.median(got["ours"]), statistics.median(got["bare"])
            # The least of the rounds too: on a loaded machine a batch's CPU grows with
            # what else runs on the core (caches, the other hyperthread), and the least
            # disturbed round is the steadier figure to set two checkouts side by side.
            low, floor_low = min(got["ours"]), min(got["bare"])
            out[name] = {
                "service_us": round(ours, 1),
                "bare_us": round(theirs, 1),
                "service_least_us": round(low, 1),
                "bare_least_us": round(floor_low, 1),
            }
            print(
                f"  {name:32} service {ours:7.1f} us  bare {theirs:7.1f} us"
                f"  service/bare {ours / theirs:.2f}x, {ours - theirs:+.1f} us"
                f"  (least: {low:.1f}, {floor_low:.1f} us, {low / floor_low:.2f}x)"
            )
        print(json.dumps(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
