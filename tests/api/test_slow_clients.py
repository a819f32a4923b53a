"""Slow clients do not stall `hazard serve`: a real server with two workers, clients
that send half a body (or half a head) and then nothing, and other callers meanwhile."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import sqlalchemy as sa

from ledger.store import db
from ledger.store.schema import events
from tests.api.test_serve import _call, serving

IO_TIMEOUT = 2.0
SLOW_CLIENTS = 4
PROMPT = 1.0
"""The most another caller's request may take while the slow clients wait."""


def _slow(port: int, token: str, head_only: bool = False) -> socket.socket:
    """A connection that sent half of a `POST /players` that would make a player."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT * 5)
    body = json.dumps({"name": f"slow{sock.getsockname()[1]}"}).encode().ljust(1000)
    head = (
        "POST /players HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Idempotency-Key: slow-{sock.getsockname()[1]}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head[: len(head) // 2] if head_only else head + body[: len(body) // 2])
    return sock


def _until_closed(sock: socket.socket) -> bytes:
    """What the server sent before it closed the connection."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except OSError:
        pass  # reset: closed too
    return received


def test_slow_clients_delay_no_one_and_are_cut_off_having_written_nothing(
    tmp_path: Path,
) -> None:
    with serving(tmp_path, "--io-timeout", str(IO_TIMEOUT)) as served:  # 8 threads each
        banner = served.banner()
        docs = re.search(r"http://127\.0\.0\.1:(\d+)/docs", banner)
        assert docs is not None, banner
        port = int(docs.group(1))
        [token] = re.findall(r"^\s+(hz_\S+)$", banner, re.M)
        base = f"http://127.0.0.1:{port}"
        assert _call(f"{base}/players", token, {"name": "ann"})[0] == 201

        began = time.monotonic()
        slow = [_slow(port, token) for _ in range(SLOW_CLIENTS)]
        slow.append(_slow(port, token, head_only=True))
        time.sleep(0.3)  # they have reached the workers' threads

        for method, url, body in [
            ("read", f"{base}/players/ann/balance", None),
            ("write", f"{base}/players", {"name": "bob"}),
            ("read", f"{base}/healthz", None),
        ]:
            asked = time.monotonic()
            status, _, answer = _call(url, token, body)
            took = time.monotonic() - asked
            assert status in (200, 201), (method, url, answer)
            assert took < PROMPT, f"{method} {url} took {took:.2f}s behind slow clients"

        for sock in slow:
            with sock:
                received = _until_closed(sock)
                # The slack: a worker may still be loading the app just after the banner.
                assert time.monotonic() - began < IO_TIMEOUT + 2, "not cut off in time"
                if received:  # a body cut short is answered 408; a head cut short, closed
                    assert received.startswith(b"HTTP/1.1 408 "), received
                    assert b"application/problem+json" in received, received

    engine = db.make_engine(f"sqlite:///{tmp_path / 'serve.sqlite3'}")
    try:
        with engine.connect() as conn:
            rows = [
                f"{row.stream} {row.payload}"
                for row in conn.execute(sa.select(events.c.stream, events.c.payload))
            ]
    finally:
        engine.dispose()
    assert any("bob" in row for row in rows)  # the write made meanwhile
    assert not any("slow" in row for row in rows)  # nothing from a slow client
    assert not [line for line in served.err if "Traceback" in line], "".join(served.err)
