"""Slow clients against `hazard serve`: how long they delay everyone else.

Run from the repository root:

    .venv/bin/python -m bench.slowclients                    # 2 and 4 slow clients
    .venv/bin/python -m bench.slowclients --slow 2 --slow 8  # other counts
    .venv/bin/python -m bench.slowclients -- --threads 4     # options for `hazard serve`

Each run starts `hazard serve --workers 2 --port 0` on a fresh SQLite file in a
temporary directory (extra arguments after `--` go to `hazard serve`), makes a player,
then opens N slow clients: each sends a valid `POST /players` head with the setter's
token and `Content-Length: 1000`, then half the body, and nothing more. Meanwhile, from
other connections, it times a read (`GET /healthz`, then `GET /players/ann/balance`)
and a write (`POST /players`), each with a 60 s client timeout, and then how long the
server took to close the slow clients' connections (what it sent them, if anything).
Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
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


def start(workdir: Path, extra: Sequence[str]) -> tuple[subprocess.Popen[str], str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["DATABASE_URL"] = f"sqlite:///{workdir / 'slow.sqlite3'}"
    env["TMPDIR"] = str(workdir)
    env["PYTHONPATH"] = str(REPO)
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
    return proc, f"http://127.0.0.1:{port.group(1)}", token


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


def slow_client(base: str, token: str) -> socket.socket:
    """A connection that sent a whole head and half the body it announced."""
    port = int(base.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT_S)
    head = (
        "POST /players HTTP/1.1\r\n"
        "Host: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {BODY_LENGTH}\r\n"
        "\r\n"
    ).encode()
    sock.sendall(head + b" " * (BODY_LENGTH // 2))
    return sock


def cut_off(sock: socket.socket, opened: float, into: dict[str, Any]) -> None:
    """When the server ends the slow connection, and what it said."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except OSError:
        pass
    into["after_s"] = time.monotonic() - opened
    into["answer"] = received.split(b"\r\n", 1)[0].decode("latin-1") or "(closed)"


def timed(what: str, fn: Any) -> dict[str, Any]:
    began = time.monotonic()
    status = fn()
    return {"what": what, "status": status, "seconds": round(time.monotonic() - began, 3)}


def run(slow: int, extra: Sequence[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-slow-") as tmp:
        proc, base, token = start(Path(tmp), extra)
        try:
            assert call(f"{base}/players", token, {"name": "ann"}) == 201
            socks = []
            fates: list[dict[str, Any]] = []
            watchers = []
            for _ in range(slow):
                opened = time.monotonic()
                sock = slow_client(base, token)
                socks.append(sock)
                fate: dict[str, Any] = {}
                fates.append(fate)
                watcher = threading.Thread(target=cut_off, args=(sock, opened, fate), daemon=True)
                watcher.start()
                watchers.append(watcher)
            time.sleep(0.5)  # the slow clients reach the workers first
            calls = [
                timed("GET /healthz", lambda: call(f"{base}/healthz", token)),
                timed(
                    "GET /players/ann/balance",
                    lambda: call(f"{base}/players/ann/balance", token),
                ),
                timed("POST /players", lambda: call(f"{base}/players", token, {"name": "bob"})),
            ]
            for watcher in watchers:
                watcher.join(timeout=CLIENT_TIMEOUT_S)
            for sock in socks:
                sock.close()
            names = call(f"{base}/players/bob/balance", token)
        finally:
            proc.kill()
            proc.wait(timeout=10)
    return {"slow": slow, "calls": calls, "slow_clients": fates, "bob": names}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, action="append", help="slow clients (repeatable)")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    parser.add_argument("serve_args", nargs="*", help="after --: options for hazard serve")
    args = parser.parse_args(argv)
    results = [run(n, args.serve_args) for n in args.slow or [2, 4]]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"hazard serve --workers 2 {' '.join(args.serve_args)}".rstrip())
    for result in results:
        print(f"\n{result['slow']} slow clients (each: Content-Length {BODY_LENGTH}, half sent)")
        for c in result["calls"]:
            print(f"  {c['what']:<26} {c['status']:>3}  {c['seconds']:7.3f} s")
        for i, fate in enumerate(result["slow_clients"]):
            print(f"  slow client {i + 1}: closed after {fate['after_s']:.1f} s, {fate['answer']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
