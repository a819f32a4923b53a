"""A witness for the pusher's tests, written from C2SP tlog-witness on the log's
primitives (a Cosigner, merkle.check_tree, open_checkpoint), served by http.server in a
thread of the test; and a club whose app pushes to it.

    with witness_on(api) as (witness, pushing):   # an app with HAZARD_POLICY naming it
        pushing.client().ok("post", "/players", {"name": "ann"})
        eventually(lambda: witness.size == 1)

It keeps one log's state (the last size and root it cosigned), as tlog-witness asks,
and can be told to misbehave: `hang` (hold each request until released), `refuse`
(answer every push with a status), `stop`/`start` (go away and come back on the same
port, its state kept), `lie` (answer with a forged cosignature, or a stranger's under
its name).
Part A's witness is the real one; this is what the pusher is held to meanwhile.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ledger.api import create_app
from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, NoteError, NoteSignature, open_note
from ledger.store.log.cosignature import Cosigner
from tests.api.conftest import Api
from tests.signing import VERIFIER

TREASURER = Cosigner("treasurer.example/w", hashlib.sha256(b"treasurer").digest())
AUDITOR = Cosigner("auditor.example/w", hashlib.sha256(b"auditor").digest())
INTERVAL = 0.05
"""The tests' push interval: small, so that a test waits little for a push."""
TIMEOUT = 0.5
"""The tests' witness timeout: a hanging witness is given up on quickly."""


@dataclass
class Push:
    old: int
    size: int
    status: int


class Witness:
    """One witness of the log signed by tests.signing's key."""

    def __init__(self, cosigner: Cosigner = TREASURER) -> None:
        self.cosigner = cosigner
        self.size = 0
        self.root = merkle.EMPTY_ROOT
        self.pushes: list[Push] = []
        self.refuse: int | None = None
        self.lie: str | None = None
        self.hang = threading.Event()  # set: each request is held until `released`
        self.released = threading.Event()
        self.holding = 0
        self._state = threading.Lock()  # tlog-witness: check and update at once
        self._server: ThreadingHTTPServer | None = None
        self._open: set[socket.socket] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        witness = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the spec asks

            def setup(self) -> None:
                super().setup()
                witness._open.add(self.connection)

            def finish(self) -> None:
                witness._open.discard(self.connection)
                super().finish()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/add-checkpoint":
                    return self._answer(404, b"")
                status, answer, kind = witness.add_checkpoint(body)
                self._answer(status, answer, kind)

            def _answer(self, status: int, body: bytes, kind: str = "text/plain") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Go away: the port refuses connections until `start` (the state is kept)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.drop()  # and the connections kept alive: gone too

    def drop(self) -> None:
        """Close the connections kept alive, as a server does with idle ones; stay up."""
        for sock in list(self._open):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def add_checkpoint(self, body: bytes) -> tuple[int, bytes, str]:
        """tlog-witness's add-checkpoint, as the spec says it, for one log."""
        if self.hang.is_set():
            self.holding += 1
            self.released.wait(30)
            self.holding -= 1
        if self.refuse is not None:
            return self._pushed(0, 0, self.refuse, b"refused\n")
        try:
            head, note = body.decode().split("\n\n", 1)
            old_line, *proof_lines = head.split("\n")
            old = int(old_line.removeprefix("old "))
            proof = [base64.b64decode(line, validate=True) for line in proof_lines]
        except ValueError:
            return self._pushed(-1, -1, 400, b"malformed\n")
        try:
            opened = open_note(note, [VERIFIER])
            checkpoint = Checkpoint.parse(opened.text)
        except NoteError:
            return self._pushed(old, -1, 403, b"not signed by the log\n")
        with self._state:
            if old > checkpoint.size:
                return self._pushed(old, checkpoint.size, 400, b"old > size\n")
            if old != self.size:
                answer = f"{self.size}\n".encode()
                return self._pushed(old, checkpoint.size, 409, answer, "text/x.tlog.size")
            try:
                if old == checkpoint.size:
                    assert not proof and checkpoint.root == self.root
                elif old == 0:
                    assert not proof
                else:
                    merkle.check_tree(proof, checkpoint.size, checkpoint.root, old, self.root)
            except (AssertionError, merkle.MerkleError):
                return self._pushed(old, checkpoint.size, 422, b"inconsistent\n")
            line = self._cosign(opened.text)
            self.size, self.root = checkpoint.size, checkpoint.root
        return self._pushed(old, checkpoint.size, 200, line.encode())

    def _cosign(self, text: str) -> str:
        made = self.cosigner.cosign(text, int(time.time()))
        if self.lie == "forged":  # its name and key id, a signature that does not verify
            forged = made.signature[:-1] + bytes([made.signature[-1] ^ 1])
            made = NoteSignature(made.name, made.key_id, forged)
        elif self.lie == "stranger":  # another key's, under its name
            made = Cosigner(self.cosigner.name, b"\x01" * 32).cosign(text, int(time.time()))
        return made.line()

    def _pushed(
        self, old: int, size: int, status: int, body: bytes, kind: str = "text/plain"
    ) -> tuple[int, bytes, str]:
        self.pushes.append(Push(old, size, status))
        return status, body, kind


def policy(path: Path, *witnesses: Witness, quorum: str | None = None) -> Path:
    lines = [f"log {VERIFIER.text()}"]
    lines += [f"witness w{i} {w.cosigner.key.text()} {w.url}" for i, w in enumerate(witnesses)]
    lines.append(f"quorum {quorum or ('w0' if witnesses else 'none')}")
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def pushing_to(api: Api, tmp_path: Path, *witnesses: Witness, **settings: Any) -> Iterator[Api]:
    """An app on `api`'s database, pushing to `witnesses` (started here, stopped after)."""
    for witness in witnesses:
        if witness._server is None:
            witness.start()
    app = create_app(
        book=api.book,
        TESTING=True,
        HAZARD_POLICY=str(policy(tmp_path / "club.policy", *witnesses)),
        HAZARD_WITNESS_INTERVAL=INTERVAL,
        WITNESS_TIMEOUT=TIMEOUT,
        **settings,
    )
    try:
        yield Api(app)
    finally:
        pusher = app.extensions["hazard.pusher"]
        for witness in witnesses:
            witness.released.set()
        if pusher is not None:
            pusher.stop()
        for witness in witnesses:
            witness.stop()


def eventually(check: Callable[[], Any], seconds: float = 30) -> Any:
    """The first true value of `check()`, asked until it gives one; a test failure after
    `seconds` (a generous bound: nothing here is timed, only waited for)."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"never: {check}"
        time.sleep(0.02)
