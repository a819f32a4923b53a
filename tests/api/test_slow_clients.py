"""Slow clients do not stall `hazard serve`: a real server with two workers, clients
that send half a body (or half a head) and then nothing, or trickle one, with a token
or none, and other callers meanwhile; and a token's exports, capped across workers."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ledger.api.slowclients import PER_PEER
from ledger.commands import Role
from ledger.store import db
from ledger.store.schema import events
from ledger.web.tokens import create
from tests.api.servekit import call, serving

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
        assert call(f"{base}/players", token, {"name": "ann"})[0] == 201

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
            status, _, answer = call(url, token, body)
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


# -- trickling clients, tokens checked before bodies, and heavy reads across workers ---
# (issue 22, items 7 and 9)

TRICKLE_S = 0.5
"""How often a trickling client sends its next byte: well inside the io timeout."""


def _started(served: Any) -> tuple[int, str]:
    """The port and the setter's token, from the banner, once a worker answers (the
    banner comes before the workers have loaded the app)."""
    banner = served.banner()
    docs = re.search(r"http://127\.0\.0\.1:(\d+)/docs", banner)
    assert docs is not None, banner
    [token] = re.findall(r"^\s+(hz_\S+)$", banner, re.M)
    assert call(f"http://127.0.0.1:{docs.group(1)}/healthz")[0] == 200
    return int(docs.group(1)), token


def _head(token: str | None, length: int = 1000, path: str = "/players") -> bytes:
    auth = "" if token is None else f"Authorization: Bearer {token}\r\n"
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


@dataclass
class Trickle:
    """A client that sends `first`, then `rest` a byte every TRICKLE_S, until the
    server closes the connection or `until` seconds have passed: what it was sent, when
    the first of it came, and when the server closed the connection."""

    port: int
    first: bytes
    rest: bytes
    until: float = 8.0
    answer: bytes = b""
    answered_after: float | None = None
    done_after: float | None = None

    def run(self) -> None:
        began = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.port), timeout=TRICKLE_S) as sock:
            sock.sendall(self.first)
            for byte in self.rest:
                if time.monotonic() - began > self.until:
                    return
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    with contextlib.suppress(OSError):
                        sock.sendall(bytes([byte]))
                    continue
                except OSError:
                    data = b""
                if data and not self.answer:
                    self.answered_after = time.monotonic() - began
                self.answer += data
                if not data:  # closed: what came before it is the answer
                    self.done_after = time.monotonic() - began
                    return

    @property
    def status(self) -> bytes:
        return self.answer.split(b"\r\n", 1)[0]


def _trickling(trickles: list[Trickle]) -> list[threading.Thread]:
    threads = [threading.Thread(target=t.run, daemon=True) for t in trickles]
    for thread in threads:
        thread.start()
    return threads


def test_a_body_without_a_live_token_is_refused_at_once_having_read_nothing(
    tmp_path: Path,
) -> None:
    """Regression: the whole body was read before the token was checked, so a client
    with no token held a thread as long as it trickled, and was answered 408 at the
    timeout rather than 401. Now the head alone decides: 401 (or 404 for no such path)
    at once, and the connection closed."""
    with serving(tmp_path, "--io-timeout", "5") as served:
        port, _ = _started(served)
        trickles = [
            Trickle(port, _head(None) + b"{", b" " * 999),
            Trickle(port, _head("hz_" + "x" * 43) + b"{", b" " * 999),
            Trickle(port, _head(None, path="/no/such/path") + b"{", b" " * 999),
        ]
        for thread in _trickling(trickles):
            thread.join(timeout=10)
    statuses = [t.status for t in trickles]
    assert statuses == [b"HTTP/1.1 401 UNAUTHORIZED"] * 2 + [b"HTTP/1.1 404 NOT FOUND"], statuses
    for trickle in trickles:
        assert b"application/problem+json" in trickle.answer, trickle.answer
        assert trickle.answered_after is not None and trickle.answered_after < PROMPT
        # closed as soon as the client has had time to read it, whatever it still sends
        assert trickle.done_after is not None and trickle.done_after < 3.5
    assert b"WWW-Authenticate: Bearer" in trickles[0].answer


def test_trickling_clients_hold_no_thread_and_are_cut_off_in_time(tmp_path: Path) -> None:
    """Regression: a client that sent a byte every few seconds kept a thread as long as
    it liked (the timeout ran between two reads), so as many as the threads, with a
    token or none, body or head, stalled every other caller, /healthz included. Here
    18 of them against 2 workers of 2 threads: the others are answered at once, a
    trickled body is answered 408 within the timeout of its head, and a trickled head
    is closed within the timeout."""
    timeout = 2.0
    with serving(tmp_path, "--io-timeout", str(timeout), "--threads", "2") as served:
        port, token = _started(served)
        base = f"http://127.0.0.1:{port}"
        assert call(f"{base}/players", token, {"name": "ann"})[0] == 201
        with_token = [Trickle(port, _head(token) + b"{", b" " * 999) for _ in range(6)]
        without = [Trickle(port, _head(None) + b"{", b" " * 999) for _ in range(6)]
        heads = [Trickle(port, b"P", _head(token)[1:]) for _ in range(6)]
        threads = _trickling(with_token + without + heads)
        time.sleep(TRICKLE_S * 2)  # they have all begun
        for url, body in [
            (f"{base}/healthz", None),
            (f"{base}/readyz", None),
            (f"{base}/players/ann/balance", None),
            (f"{base}/players", {"name": "bob"}),
        ]:
            asked = time.monotonic()
            status, _, answer = call(url, token, body)
            took = time.monotonic() - asked
            assert status in (200, 201), (url, answer)
            assert took < PROMPT, f"{url} took {took:.2f}s behind trickling clients"
        for thread in threads:
            thread.join(timeout=15)
    for trickle in with_token:
        assert trickle.status == b"HTTP/1.1 408 Request Timeout", trickle.answer
        assert trickle.done_after is not None and trickle.done_after < timeout + 1.5
    for trickle in without:
        assert trickle.status == b"HTTP/1.1 401 UNAUTHORIZED", trickle.answer
        assert trickle.answered_after is not None and trickle.answered_after < PROMPT
    for trickle in heads:
        assert trickle.answer == b"", trickle.answer
        assert trickle.done_after is not None and trickle.done_after < timeout + 1.5


def test_one_address_has_so_many_connections_arriving_at_once(tmp_path: Path) -> None:
    """A connection that sends nothing holds no thread, but each is one of the
    worker's connections: one address gets PER_PEER arriving at a worker at once, and
    the rest are closed as they come; another address is served meanwhile."""
    with serving(tmp_path, "--workers", "1") as served:
        port, _ = _started(served)
        idle = [
            socket.create_connection(("127.0.0.1", port), timeout=1.0) for _ in range(PER_PEER + 8)
        ]
        try:
            time.sleep(0.5)
            closed = 0
            for sock in idle:
                sock.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    closed += sock.recv(1) == b""
            assert closed == 8
            other = socket.socket()
            other.bind(("127.0.0.2", 0))  # another address on the loopback
            other.settimeout(PROMPT)
            with other:
                other.connect(("127.0.0.1", port))
                other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert other.recv(65536).startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in idle:
                sock.close()


def test_one_tokens_exports_are_capped_across_workers_until_read(tmp_path: Path) -> None:
    """A token's heavy reads are capped on every worker together, and an export's slot
    is held until the client has read the file: two exports its client reads nothing
    of hold both, whichever workers they reached, and the next ones are a 429 with
    Retry-After; once a client goes, another is taken."""
    with serving(tmp_path) as served:  # 2 workers
        port, token = _started(served)
        base = f"http://127.0.0.1:{port}"
        assert call(f"{base}/players", token, {"name": "ann"})[0] == 201
        for _ in range(100):  # a statement of some 50 KB
            assert call(f"{base}/players/ann/deposits", token, {"amount": 1})[0] == 201
        engine = db.make_engine(f"sqlite:///{tmp_path / 'serve.sqlite3'}")
        try:
            ann = create(engine, Role.PLAYER, "ann")
        finally:
            engine.dispose()
        held = [_unread_export(port, ann) for _ in range(2)]
        try:
            for _ in range(6):
                status, headers, answer = call(f"{base}/export?player=ann", ann)
                assert status == 429, answer[:200]
                assert json.loads(answer)["type"] == "urn:hazard:too-many-requests"
                assert headers["Retry-After"].isdigit()
            assert call(f"{base}/healthz")[0] == 200
            held.pop().close()  # that client went away
            deadline = time.monotonic() + 3
            while (status := call(f"{base}/export?player=ann", ann)[0]) == 429:
                assert time.monotonic() < deadline, "the slot was not let go"
                time.sleep(0.2)
            assert status == 200
        finally:
            for sock in held:
                sock.close()


def _unread_export(port: int, token: str) -> socket.socket:
    """A connection that asked for ann's statement and read only the head of the
    answer, with a small receive buffer: the rest waits in the server's kernel."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    auth = f"Authorization: Bearer {token}\r\n"
    sock.sendall(f"GET /export?player=ann HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
    head = sock.recv(1024)
    assert head.startswith(b"HTTP/1.1 200 "), head
    return sock


def test_heavy_reads_one_after_another_on_a_kept_connection_are_all_served(
    tmp_path: Path,
) -> None:
    """Regression: a heavy read's slot was let go only at the loop's next sweep (0.2 s)
    after the client had read its answer, so a client asking again at once on its kept
    connection (as a generated client does) was refused 429 most of the time, though it
    ran one read at a time. A request that arrives is let in only after the reads its
    connections have taken are let go."""
    import http.client

    with serving(tmp_path) as served:
        port, token = _started(served)
        assert call(f"http://127.0.0.1:{port}/players", token, {"name": "ann"})[0] == 201
        kept = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            statuses = []
            for _ in range(30):
                kept.request("GET", "/audit/head", headers={"Authorization": f"Bearer {token}"})
                answer = kept.getresponse()
                answer.read()
                statuses.append(answer.status)
        finally:
            kept.close()
        assert statuses == [200] * 30, statuses
