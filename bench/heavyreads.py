"""One player's exports at once against `hazard serve`: what they cost everyone else.

Run from the repository root:

    .venv/bin/python -m bench.heavyreads                         # 16 exports, 100,000 events
    .venv/bin/python -m bench.heavyreads --exports 16 --seconds 30 --cache-dir /tmp/cache
    .venv/bin/python -m bench.heavyreads --code /tmp/old         # another checkout's ledger/

The log is bench.seed's (cached in --cache-dir). A copy of it is served by `hazard serve
--workers 2 --port 0` (with the key that signed it), and the player with the most
postings gets a token. Then --exports clients each ask for that player's own statement
(`GET /export?player=P`), read it to its end as fast as it comes and ask again, for
--seconds; a 429 is asked again after a pause of its Retry-After. Meanwhile --callers
other clients send `GET /healthz`, `GET /players/<another>/balance` and `GET
/tables/<t>` in turn, with a 60 s timeout. Reported, never asserted: the others' p50
and worst by kind, and the exports' answers (how many 200s, how long each took, and
how many 429s or 503s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.seed import key_for, seeded
from bench.slowclients import REPO, RULE, call, summary

CLIENT_TIMEOUT_S = 60.0


def start(workdir: Path, source: Path, code: Path) -> tuple[subprocess.Popen[str], str]:
    database = workdir / "heavy.sqlite3"
    shutil.copyfile(source, database)
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(DATABASE_URL=f"sqlite:///{database}", HAZARD_KEY=str(key_for(source)))
    env.update(TMPDIR=str(workdir), PYTHONPATH=str(code))
    cmd = [sys.executable, "-m", "ledger", "serve", "--port", "0", "--workers", "2"]
    proc = subprocess.Popen(
        cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    out = ""
    while out.count(RULE) < 2:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"hazard serve did not start: {out}")
        out += line
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain
    port = re.search(r"http://127\.0\.0\.1:(\d+)/docs", out)
    assert port is not None
    base = f"http://127.0.0.1:{port.group(1)}"
    while call(f"{base}/healthz", "") != 200:  # the workers have loaded the app
        time.sleep(0.1)
    return proc, base


def busiest_player(database: Path) -> tuple[str, str]:
    """The player with the most postings, and another player."""
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT account FROM postings WHERE account LIKE 'player:%' "
                "GROUP BY account ORDER BY count(*) DESC LIMIT 2"
            )
        ).all()
    engine.dispose()
    return rows[0][0].removeprefix("player:"), rows[1][0].removeprefix("player:")


def player_token(base_db: Path, name: str) -> str:
    from ledger.commands import Role
    from ledger.store import db
    from ledger.web.tokens import create

    engine = db.make_engine(f"sqlite:///{base_db}")
    try:
        return create(engine, Role.PLAYER, name)
    finally:
        engine.dispose()


def exporter(url: str, token: str, until: float, into: list[tuple[int, float, int]]) -> None:
    """One client: the export, read to its end, again and again until `until`."""
    while time.monotonic() < until:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        began = time.monotonic()
        size, status, wait = 0, 0, 0.0
        try:
            with urllib.request.urlopen(request, timeout=CLIENT_TIMEOUT_S) as response:
                while chunk := response.read(65536):
                    size += len(chunk)
                status = int(response.status)
        except urllib.error.HTTPError as error:
            with error:
                status = int(error.code)
                wait = float(error.headers.get("Retry-After") or 0)
        except OSError:
            status = 0
        into.append((status, time.monotonic() - began, size))
        time.sleep(min(wait, max(0.0, until - time.monotonic())))


def others(base: str, token: str, paths: list[str], until: float, into: list[Any]) -> None:
    while time.monotonic() < until:
        for path in paths:
            began = time.monotonic()
            status = call(base + path, token)
            into.append((f"GET {path}", time.monotonic() - began, status))


def run(args: argparse.Namespace) -> dict[str, Any]:
    found = seeded(args.events, Path(args.cache_dir))
    player, other = busiest_player(found.path)
    table = found.meta["tables"][0]
    with tempfile.TemporaryDirectory(prefix="bench-heavy-") as tmp:
        proc, base = start(Path(tmp), found.path, Path(args.code))
        try:
            token = player_token(Path(tmp) / "heavy.sqlite3", player)
            setter = found.meta["token"]
            paths = ["/healthz", f"/players/{other}/balance", f"/tables/{table}"]
            exported: list[tuple[int, float, int]] = []
            timed: list[Any] = []
            until = time.monotonic() + args.seconds
            url = f"{base}/export?player={player}"
            threads = [
                threading.Thread(target=exporter, args=(url, token, until, exported), daemon=True)
                for _ in range(args.exports)
            ]
            threads += [
                threading.Thread(target=others, args=(base, setter, paths, until, timed))
                for _ in range(args.callers)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=args.seconds + 2 * CLIENT_TIMEOUT_S)
        finally:
            proc.kill()
            proc.wait(timeout=10)
    served = [(seconds, size) for status, seconds, size in exported if status == 200]
    return {
        "events": found.meta["events"],
        "player": player,
        "exports": args.exports,
        "others": summary(timed, [f"GET {path}" for path in paths]),
        "exported": {
            "200": len(served),
            "p50_s": round(statistics.median(s for s, _ in served), 3) if served else None,
            "worst_s": round(max(s for s, _ in served), 3) if served else None,
            "bytes": max((size for _, size in served), default=0),
            "refused": {str(s): n for s in (429, 503, 0) if (n := _count(exported, s))},
        },
    }


def _count(exported: list[tuple[int, float, int]], status: int) -> int:
    return sum(1 for found, _, _ in exported if found == status)


def report(result: dict[str, Any], args: argparse.Namespace) -> str:
    exported = result["exported"]
    lines = [
        f"{result['exports']} clients exporting {result['player']}'s statement at once "
        f"({exported['bytes'] / 1e6:.1f} MB, {result['events']:,} events), {args.seconds:g} s",
        f"  {'others':<28} {'requests':>8} {'p50':>8} {'worst':>8} {'no answer':>9}",
    ]
    for kind, found in result["others"].items():
        kind = re.sub(r"/players/[^/]+/", "/players/P/", re.sub(r"/tables/\w+", "/tables/T", kind))
        p50 = "-" if found["p50_s"] is None else f"{found['p50_s']:.3f}"
        worst = "-" if found["worst_s"] is None else f"{found['worst_s']:.3f}"
        lines.append(
            f"  {kind:<28} {found['requests']:>8} {p50:>8} {worst:>8} {found['unanswered']:>9}"
        )
    lines.append(
        f"  exports served: {exported['200']} (p50 {exported['p50_s']} s, worst "
        f"{exported['worst_s']} s); refused: {exported['refused'] or 'none'}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exports", type=int, default=16, help="clients exporting at once")
    parser.add_argument("--events", type=int, default=100_000, help="the seeded log's size")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--callers", type=int, default=4, help="other clients, in parallel")
    parser.add_argument("--cache-dir", default=str(REPO / ".bench-cache"))
    parser.add_argument("--code", default=str(REPO), help="the checkout whose ledger/ to serve")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
