"""`hazard serve` for real: gunicorn with two workers on a fresh SQLite file, on a port
the OS picks (--port 0), stopped with SIGTERM as a process manager would."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.api import server
from ledger.api.problems import PROBLEM_JSON
from ledger.store import db
from ledger.web.tokens import listing
from tests.api.servekit import START_SECONDS, Served, call, drain, serving


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    _dead_servers_metrics(tmp_path)  # left by a SIGKILL: the start removes it
    with serving(tmp_path) as served:
        yield served


def _dead_servers_metrics(parent: Path, name: str = "hazard-metrics-dead") -> Path:
    """What a server killed by SIGKILL leaves: its directory, no longer locked."""
    path = parent / name
    path.mkdir()
    (path / server.IN_USE).touch()
    (path / "counter_4242.db").write_bytes(b"\0" * 64)
    return path


def test_a_start_sweeps_dead_servers_metrics_but_not_a_live_ones(tmp_path: Path) -> None:
    dead = _dead_servers_metrics(tmp_path)
    live = _dead_servers_metrics(tmp_path, "hazard-metrics-live")
    older = tmp_path / "hazard-metrics-older"  # from before the lock file, long dead
    older.mkdir()
    os.utime(older, (time.time() - 3600, time.time() - 3600))
    young = tmp_path / "hazard-metrics-young"  # just made, its lock not yet taken
    young.mkdir()
    unlocked = tmp_path / "hazard-metrics-unlocked"  # an older server's, still running
    unlocked.mkdir()
    (unlocked / f"counter_{os.getpid()}.db").write_bytes(b"\0" * 64)
    os.utime(unlocked, (time.time() - 3600, time.time() - 3600))
    other = tmp_path / "unrelated"
    other.mkdir()
    fd = os.open(live / server.IN_USE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a server running now
        removed = server.sweep_stale_metrics(str(tmp_path))
    finally:
        os.close(fd)
    assert sorted(removed) == sorted([str(dead), str(older)])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "hazard-metrics-live",
        "hazard-metrics-unlocked",
        "hazard-metrics-young",
        "unrelated",
    ]
    assert any(live.iterdir())


def test_hazard_serve_for_real(served: Served, tmp_path: Path) -> None:
    banner = served.banner()
    docs = re.search(r"http://127\.0\.0\.1:(\d+)/docs", banner)
    assert docs is not None, banner
    base = docs.group(0).removesuffix("/docs")
    [token] = re.findall(r"^\s+(hz_\S+)$", banner, re.M)  # shown once, on its own line

    status, _, _ = call(f"{base}/healthz")
    assert status == 200

    status, headers, body = call(
        f"{base}/players",
        token,
        {"name": "ann"},
        {"Idempotency-Key": "serve-1", "X-Request-Id": "serve-test-1"},
    )
    assert status == 201, body
    assert headers["X-Request-Id"] == "serve-test-1"
    # Signed as it starts: after what the start recorded in the log of significant
    # events (the club's settings, the first setter token), the player's opening.
    [first] = json.loads(body)["receipt"]["positions"]
    status, _, body = call(f"{base}/events?after=0&limit=50", token)
    before = [e["type"] for e in json.loads(body)["items"] if e["position"] < first]
    assert set(before) == {"SettingChanged", "TokenCreated", "LogSealed"}, before
    assert "Checkpoints are signed by test.hazard/ledger+" in banner
    status, _, body = call(f"{base}/players/ann/balance", token)
    assert (status, json.loads(body)["balance"]) == (200, 0)
    assert call(f"{base}/players/ann/balance")[0] == 401

    status, _, page = call(docs.group(0))
    assert status == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.decode())
    assert assets and all(call(f"{base}{asset}")[0] == 200 for asset in assets)
    assert call(f"{base}/readyz")[0] == 200

    # Counted across both workers: multiprocess mode sums every worker's files.
    for _ in range(8):
        assert call(f"{base}/healthz")[0] == 200
    _, _, text = call(f"{base}/metrics")
    assert 'hazard_http_requests_total{method="GET",route="/healthz",status="200"} 9.0' in (
        text.decode()
    )
    metrics_dirs = list(tmp_path.glob("hazard-metrics-*"))
    assert len(metrics_dirs) == 1 and any(metrics_dirs[0].iterdir())

    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(timeout=20) == 0
    assert not list(tmp_path.glob("hazard-metrics-*"))  # removed at exit

    engine = db.make_engine(f"sqlite:///{tmp_path / 'serve.sqlite3'}")
    [bank] = listing(engine)  # one token, two workers
    assert (bank.role, bank.name) == ("setter", "bank")
    engine.dispose()

    time.sleep(0.1)  # the pump threads reach EOF
    lines = [json.loads(line) for line in served.err if line.strip()]  # all JSON
    [write] = [line for line in lines if line.get("route") == "/players"]
    assert write["request_id"] == "serve-test-1"
    assert write["actor"] == f"setter:bank#{bank.tag}" and write["status"] == 201
    assert "".join(served.out).count("hz_") == 1


# -- what gunicorn answers before the app: problem details too -------------------------

REFUSED_BY_GUNICORN = [
    # (what is wrong, the request, status, problem type)
    (
        "a request line over 4 KB",
        b"GET /events?after=" + b"1" * 5000 + b" HTTP/1.1\r\n",
        414,
        "urn:hazard:too-large",
    ),
    (
        "a header of 10,000 bytes",
        b"GET /events HTTP/1.1\r\nAuthorization: Bearer " + b"x" * 10_000 + b"\r\n",
        431,
        "urn:hazard:too-large",
    ),
    (
        "a DEL byte in a header",
        b"GET /events HTTP/1.1\r\nIdempotency-Key: a\x7fb\r\n",
        400,
        "urn:hazard:bad-request",
    ),
]


def _raw(port: int, head: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `head` (a request line and headers) and read the answer to its end."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(head + b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    top, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = top.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
    return int(status_line.split()[1]), headers, body


def _refused_as_problems(port: int) -> None:
    for what, head, status, kind in REFUSED_BY_GUNICORN:
        got, headers, body = _raw(port, head)
        assert (got, headers["content-type"]) == (status, PROBLEM_JSON), (what, headers, body)
        assert int(headers["content-length"]) == len(body), what
        problem = json.loads(body)
        assert (problem["status"], problem["type"]) == (status, kind), (what, problem)
        assert problem["title"] and problem["detail"], (what, problem)
    # The app still answers what reaches it, as before.
    status, headers, _ = _raw(port, b"GET /healthz HTTP/1.1\r\n")
    assert status == 200


def test_what_gunicorn_refuses_under_hazard_serve_is_a_problem(served: Served) -> None:
    port = re.search(r"http://127\.0\.0\.1:(\d+)/docs", served.banner())
    assert port is not None
    _refused_as_problems(int(port.group(1)))


def test_what_gunicorn_refuses_under_plain_gunicorn_is_a_problem(tmp_path: Path) -> None:
    """docs/operating.md's production recipe, `gunicorn ledger.wsgi:app`, with nothing added."""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'plain.sqlite3'}"
    gunicorn = Path(sys.executable).with_name("gunicorn")
    proc = subprocess.Popen(
        [str(gunicorn), "-w", "1", "-b", "127.0.0.1:0", "ledger.wsgi:app"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    err: list[str] = []
    pump = threading.Thread(target=drain, args=(proc.stderr, err), daemon=True)
    pump.start()
    try:
        deadline = time.monotonic() + START_SECONDS
        while not (booted := re.search(r"Booting worker", "".join(err))):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(err)
            time.sleep(0.05)
        listening = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", "".join(err))
        assert booted and listening, "".join(err)
        port = int(listening.group(1))
        for _ in range(100):  # the worker has booted; it answers once the app is loaded
            try:
                if _raw(port, b"GET /healthz HTTP/1.1\r\n")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        _refused_as_problems(port)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        pump.join(timeout=5)
        assert proc.stderr is not None
        proc.stderr.close()
