"""Slow clients against `hazard serve`: what they cost everyone else.

Run from the repository root:

    .venv/bin/python -m bench.slowclients                       # every scenario, 40 s each
    .venv/bin/python -m bench.slowclients --scenario body-no-token:24 --seconds 20
    .venv/bin/python -m bench.slowclients --code /tmp/old       # another checkout's ledger/
    .venv/bin/python -m bench.slowclients -- --io-timeout 2     # options for `hazard serve`

Each scenario starts `hazard serve --workers 2 --port 0` on a fresh SQLite file in a
temporary directory (extra arguments after `--` go to `hazard serve`; `--code DIR`
serves DIR's `ledger/` instead of this repository's), makes a player, then opens its
slow clients, all at once:

  body-no-token:N   N connections each send a `POST /players` head with no token and
                    `Content-Length: 1000`, then a byte of the body every --every s
  body-token:N      the same with the setter's token
  half-head:N       N connections each send half of such a head, then nothing
  half-body:N       N connections each send a whole head with the setter's token and
                    half the body, then nothing
  none:0            no slow client: the baseline

For --seconds, meanwhile, --callers other clients each send, one after the other on
new connections, `GET /healthz`, `GET /players/ann/balance` and `POST
/players/ann/deposits`, with a 60 s timeout. Reported, never asserted: for each
request the others sent, the p50 and the worst time by kind, and how many had no answer
in 60 s; for the slow clients, what the server answered and when it closed them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RULE = "=" * 78
BODY_LENGTH = 1000
CLIENT_TIMEOUT_S = 60.0
SCENARIOS = ["body-no-token:16", "body-no-token:24", "body-token:16", "body-token:24",
             "half-head:24"]  # fmt: skip
KINDS = ("GET /healthz", "GET /players/ann/balance", "POST /players/ann/deposits")


def start(
    workdir: Path, code: Path, extra: Sequence[str]
) -> tuple[subprocess.Popen[str], str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["DATABASE_URL"] = f"sqlite:///{workdir / 'slow.sqlite3'}"
    env["TMPDIR"] = str(workdir)
    env["PYTHONPATH"] = str(code)
    cmd = [sys.executable, "-m", "ledger", "serve", "--port", "0", "--workers", "2", *extra]
    proc = subprocess.Popen(
        cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    out = ""
    deadline = time.monotonic() + 60
    while out.count(RULE) < 2:
        line = proc.stdout.readline()
        if not line or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"hazard serve did not start: {out}")
        out += line
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain
    port = re.search(r"http://127\.0\.0\.1:(\d+)/docs", out)
    [token] = re.findall(r"^\s+(hz_\S+)$", out, re.M)
    assert port is not None
    base = f"http://127.0.0.1:{port.group(1)}"
    while call(f"{base}/healthz", token) != 200:  # the workers have loaded the app
        time.sleep(0.1)
    return proc, base, token


def call(url: str, token: str, body: Any = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data)
    request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=CLIENT_TIMEOUT_S) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        with error:
            return int(error.code)
    except OSError:
        return 0  # no answer in the client's timeout, or the connection refused


def head(token: str | None) -> bytes:
    auth = "" if token is None else f"Authorization: Bearer {token}\r\n"
    return (
        f"POST /players HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
        f"Content-Type: application/json\r\nContent-Length: {BODY_LENGTH}\r\n\r\n"
    ).encode()


class Slow:
    """One slow client: what it sends first, then whether it trickles the rest of the
    body a byte every `every` seconds; what it was answered, and when it was closed."""

    def __init__(self, port: int, first: bytes, every: float | None, seconds: float) -> None:
        self.port, self.first, self.every, self.seconds = port, first, every, seconds
        self.answer = b""
        self.closed_after: float | None = None

    def run(self) -> None:
        began = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                sock.sendall(self.first)
                sock.settimeout(self.every or self.seconds)
                while time.monotonic() - began < self.seconds:
                    try:
                        data = sock.recv(65536)
                    except TimeoutError:
                        if self.every is not None:
                            sock.sendall(b" ")
                        continue
                    self.answer += data
                    if not data:
                        break
                else:
                    return  # still open at the end
        except OSError:
            pass
        self.closed_after = time.monotonic() - began

    def fate(self) -> str:
        status = self.answer.split(b"\r\n", 1)[0].decode("latin-1")
        status = status.removeprefix("HTTP/1.1 ") or "no answer"
        if self.closed_after is None:
            return f"{status}, still open"
        return f"{status}, closed at {self.closed_after:.1f} s"


def slow_clients(kind: str, count: int, port: int, token: str, every: float, seconds: float):
    if kind == "body-no-token":
        return [Slow(port, head(None) + b"{", every, seconds) for _ in range(count)]
    if kind == "body-token":
        return [Slow(port, head(token) + b"{", every, seconds) for _ in range(count)]
    if kind == "half-head":
        half = head(token)[: len(head(token)) // 2]
        return [Slow(port, half, None, seconds) for _ in range(count)]
    if kind == "none":
        return []
    if kind == "half-body":
        return [Slow(port, head(token) + b" " * (BODY_LENGTH // 2), None, seconds)
                for _ in range(count)]  # fmt: skip
    raise SystemExit(f"no scenario {kind!r}: body-no-token, body-token, half-head, half-body, none")


def others(base: str, token: str, until: float, into: list[tuple[str, float, int]]) -> None:
    """One caller: the three requests in turn, until `until`."""
    while time.monotonic() < until:
        for kind in KINDS:
            method, path = kind.split(" ", 1)
            body = {"amount": 1} if method == "POST" else None
            began = time.monotonic()
            status = call(base + path, token, body)
            into.append((kind, time.monotonic() - began, status))


def run(scenario: str, args: argparse.Namespace) -> dict[str, Any]:
    kind, _, count = scenario.partition(":")
    with tempfile.TemporaryDirectory(prefix="bench-slow-") as tmp:
        proc, base, token = start(Path(tmp), Path(args.code), args.serve_args)
        try:
            assert call(f"{base}/players", token, {"name": "ann"}) == 201
            port = int(base.rsplit(":", 1)[1])
            slow = slow_clients(kind, int(count), port, token, args.every, args.seconds)
            threads = [threading.Thread(target=s.run, daemon=True) for s in slow]
            for thread in threads:
                thread.start()
            time.sleep(0.5)  # the slow clients are in first
            timed: list[tuple[str, float, int]] = []
            until = time.monotonic() + args.seconds - 0.5
            callers = [
                threading.Thread(target=others, args=(base, token, until, timed), daemon=True)
                for _ in range(args.callers)
            ]
            for caller in callers:
                caller.start()
            for thread in [*callers, *threads]:
                thread.join(timeout=args.seconds + CLIENT_TIMEOUT_S)
        finally:
            proc.kill()
            proc.wait(timeout=10)
    return {"scenario": scenario, "others": summary(timed), "slow": fates(slow)}


def summary(timed: list[tuple[str, float, int]], kinds: Sequence[str] = KINDS) -> dict[str, Any]:
    found = {}
    for kind in (*kinds, "all"):
        times = [t for k, t, _ in timed if kind in ("all", k)]
        statuses = [s for k, _, s in timed if kind in ("all", k)]
        found[kind] = {
            "requests": len(times),
            "p50_s": round(statistics.median(times), 3) if times else None,
            "worst_s": round(max(times), 3) if times else None,
            "unanswered": statuses.count(0),
        }
    return found


def fates(slow: list[Slow]) -> dict[str, int]:
    """How many slow clients met each fate (the close rounded to the second)."""
    counted: dict[str, int] = {}
    for client in slow:
        fate = client.fate()
        fate = re.sub(r"at (\d+)\.\d s", lambda m: f"at {m.group(1)} s", fate)
        counted[fate] = counted.get(fate, 0) + 1
    return dict(sorted(counted.items()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", help="KIND:N (repeatable); see above")
    parser.add_argument("--seconds", type=float, default=40.0, help="each scenario's length")
    parser.add_argument("--every", type=float, default=4.0, help="seconds between trickled bytes")
    parser.add_argument("--callers", type=int, default=4, help="other clients, in parallel")
    parser.add_argument("--code", default=str(REPO), help="the checkout whose ledger/ to serve")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    parser.add_argument("serve_args", nargs="*", help="after --: options for hazard serve")
    args = parser.parse_args(argv)
    results = []
    for scenario in args.scenario or SCENARIOS:
        results.append(run(scenario, args))
        if not args.json:
            print(report(results[-1], args), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


def report(result: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"\n{result['scenario']} ({args.seconds:g} s, a byte every {args.every:g} s; "
        f"hazard serve --workers 2 {' '.join(args.serve_args)}".rstrip()
        + ")",
        f"  {'others':<28} {'requests':>8} {'p50':>8} {'worst':>8} {'no answer':>9}",
    ]
    for kind, found in result["others"].items():
        p50 = "-" if found["p50_s"] is None else f"{found['p50_s']:.3f}"
        worst = "-" if found["worst_s"] is None else f"{found['worst_s']:.3f}"
        lines.append(
            f"  {kind:<28} {found['requests']:>8} {p50:>8} {worst:>8} {found['unanswered']:>9}"
        )
    for fate, count in result["slow"].items():
        lines.append(f"  slow clients: {count} x {fate}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
