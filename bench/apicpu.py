"""The CPU one request costs in process: the service's WSGI app and the bare one
(bench/bare.py), each called directly, without gunicorn, sockets or the kernel's
hand-out of connections to workers.

    .venv/bin/python -m bench.apicpu                    # 10k events, 7 rounds
    .venv/bin/python -m bench.apicpu --events 100000 --rounds 9

bench.api's req/s ratios are what issue 27 asks for, but on a shared 2-core machine they
scatter with what else runs (0.36 to 1.51 in one run's repetitions). What the app itself
spends beyond the bare one is steadier, and is what a change to the app can cut: this
measures it (gunicorn and the socket add about the same to both, so the ratio here is
wider than bench.api's), for a settlement page by table and by player (the service's against the
bare view's, the same rows), a table's state, and /healthz (the request's hooks alone)
against the bare app's /readyz. Each is timed by process CPU time over a batch of
requests, in rounds that alternate service and bare; figures are medians over rounds.
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

from bench.api import PAGE, REPO, players_with_settlements
from bench.seed import SEED, key_for, seeded

Call = Callable[[], tuple[str, bytes]]


def _caller(app: Any, token: str | None) -> Callable[[str, str], tuple[str, bytes]]:
    def call(path: str, query: str) -> tuple[str, bytes]:
        environ = {
            "REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query,
            "SERVER_NAME": "bench", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr,
            "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
        }  # fmt: skip
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
        for name, (ours, theirs) in pairs.items():
            for request in (ours, theirs):
                status, body = request()
                if not status.startswith("200"):
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
            out[name] = {"service_us": round(ours, 1), "bare_us": round(theirs, 1)}
            print(
                f"  {name:32} service {ours:7.1f} us  bare {theirs:7.1f} us"
                f"  service/bare {ours / theirs:.2f}x, {ours - theirs:+.1f} us"
            )
        print(json.dumps(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
