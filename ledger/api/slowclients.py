"""Slow clients under `hazard serve`: no thread waits for a request to arrive.

gunicorn's threaded worker (gthread) accepts connections in its event loop, then hands
each to a thread of its pool, which waits there for the first bytes and reads the head
and the body. The sockets' timeout (`io_timeout`, SO_RCVTIMEO) ran between two reads
only: a client that sent a byte every 4 s kept its thread as long as it liked, and the
body was read before the app checked the token. So 16 connections with no token at all,
each trickling a body, held every thread of both workers, /healthz included, for 40 s;
24 half-sent heads, for 20 s.

`hazard serve` runs `ThreadWorker`: gthread, whose requests arrive in its event loop.

  - A connection's bytes are read in the loop, without blocking, until its head has
    come whole (ledger.api.arrivals); only then does a thread take it. The head must
    come whole within `io_timeout` of the wait for it, however it trickles (as
    nginx's client_header_timeout), or the connection is closed.
  - A head whose body has not all come with it is shown to the app first, on a thread,
    for the time of a token lookup (`ledger.api.may_send_body`): a request the app
    refuses from its head alone (no token where one is needed, or not a live one; no
    such path) goes to the app at once, which answers it (401, 404) without reading
    the body, and the connection is closed. Otherwise its body is gathered in the loop
    too, whole within `io_timeout` of that answer, or it is answered 408
    (`urn:hazard:http-error`) and cut off: the app never saw it, nothing was written.
  - One peer (an address) has at most PER_PEER connections arriving at a worker at
    once; more are closed as they come. Behind a proxy every connection is the proxy's,
    but a buffering proxy sends each request whole, so its arrive at once.
So a slow client holds a connection and a few kilobytes, never a thread, and for a
bounded time whatever it trickles: the threads go to requests that have arrived.

What threads still wait for is a client taking an answer: a thread writes it, and gives
up on a client that takes nothing for `io_timeout` (SO_SNDTIMEO). Answers are small but
for the heavy reads', which are capped per token and per worker (ledger.web.heavy); and
an export's slot is let go only once the kernel holds nothing more of it for the client
(`when_read`), which the loop checks without a thread.

This builds on gunicorn 27's gthread (`enqueue_req`, `handle`, `murder_pending`, its pool
and its method queue); tests/api/test_slow_clients.py runs it for real.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import selectors
import socket
import struct
import termios
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from gunicorn.workers.gthread import ThreadWorker as GThreadWorker

from ledger.api.arrivals import HEAD_LIMIT, Arrival, Stage, Unreadable
from ledger.api.servererrors import problem_bytes
from ledger.web import heavy

DEFAULT_IO_TIMEOUT_S = 10.0
"""How long `hazard serve` waits for a request's head, then for its body, each whole
(or for a client to take the next bytes of an answer) before giving up on it."""
DEFAULT_THREADS = 8
"""Threads per `hazard serve` worker: requests each worker serves at once."""
PER_PEER = 64
"""Connections one address may have arriving at one worker at once."""
READ_SIZE = 64 * 1024
SWEEP_S = 0.2
"""How often the loop looks for requests out of time and answers read to the end."""
DEFAULT_BODY_LIMIT = 64 * 1024
CLOSE_LINGER_S = 2.0
CLOSE_DRAIN = 64 * 1024
"""How long, and how much, a closing connection is read from for its client to close
too (gunicorn's own close_graceful's figures)."""

log = logging.getLogger("hazard.server")
Release = Callable[[], None]


def _timeval(seconds: float) -> bytes:
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1_000_000))


def bound_io(sock: socket.socket, seconds: float) -> None:
    """Make each read and each write on `sock` fail after `seconds` with no progress."""
    value = _timeval(seconds)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


_worker: ThreadWorker | None = None
"""This process's worker, once its loop runs: who watches answers being read."""


def when_read(sock: socket.socket | None, release: Release) -> None:
    """Call `release` once the client has read what was sent to it on `sock`: at once
    outside `hazard serve`, or with nothing left in the kernel for it; otherwise when
    the kernel holds nothing more for it, or the connection has closed."""
    worker = _worker
    if worker is None or sock is None:
        release()
        return
    # Queued here, on the thread that sent the answer, before the connection goes back
    # to the loop: so the loop sees it before that connection's next request, and lets
    # it go first if the client has read the answer (ThreadWorker._dispatch). A read
    # let go only at the loop's next sweep had a client asking again at once on its kept
    # connection refused 429, though it ran one read at a time.
    worker.sent.append((sock, release))
    worker.method_queue.defer(worker.let_go_read)


def _unsent(sock: socket.socket) -> int:
    """Bytes the kernel still holds to send on `sock` (Linux's SIOCOUTQ); 0 if it
    cannot say, or the socket is closed."""
    try:
        found = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except (OSError, ValueError):
        return 0
    return int(struct.unpack("i", found)[0])


def _peer(client: Any) -> str:
    return str(client[0]) if isinstance(client, tuple) and client else "local"


class ThreadWorker(GThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's gthread worker, whose requests arrive in its loop, not on a thread."""

    io_timeout = DEFAULT_IO_TIMEOUT_S
    """Set by `hazard serve` in the master, before it forks the workers."""

    def init_process(self) -> None:
        global _worker
        self.arriving: dict[Any, Arrival] = {}
        self.peers: Counter[str] = Counter()
        self.refusing: set[str] = set()
        self.lingering: list[tuple[socket.socket, Release]] = []
        self.sent: deque[tuple[socket.socket, Release]] = deque()
        """Answers sent whose reads wait to be let go (`when_read`), from the threads."""
        self.closing: dict[socket.socket, list[float]] = {}
        self.swept = 0.0
        self.log.error_log.addFilter(_quiet_timeouts)
        _worker = self
        heavy.released_by(when_read)  # a heavy read's token slot: once its client has it
        super().init_process()

    @property
    def body_limit(self) -> int:
        return int(getattr(self.wsgi, "config", {}).get("MAX_CONTENT_LENGTH") or DEFAULT_BODY_LIMIT)

    # -- a request arriving, in the loop --------------------------------------------

    def enqueue_req(self, conn: Any) -> None:
        """Where gthread hands a connection to a thread (a new one, a kept-alive one
        that became readable, one with a request already read ahead): here it starts
        to arrive instead."""
        before = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        peer = _peer(conn.client)
        if self.peers[peer] >= PER_PEER:
            if peer not in self.refusing:  # said once while it lasts, not per connection
                self.refusing.add(peer)
                log.warning("%s has %d connections arriving: more are closed", peer, PER_PEER)
            self._close(conn)
            return
        arrival = Arrival(conn, before, peer, self.io_timeout)
        self.arriving[conn] = arrival
        self.peers[peer] += 1
        conn.sock.setblocking(False)
        self._advance(arrival)
        if self.arriving.get(conn) is arrival and arrival.stage is not Stage.ASKING:
            self._listen(arrival)

    def _listen(self, arrival: Arrival) -> None:
        self._register(arrival.conn.sock, partial(self._readable, arrival))
        arrival.registered = True

    def _register(self, sock: socket.socket, callback: Callable[[Any], None]) -> None:
        try:
            self.poller.register(sock, selectors.EVENT_READ, callback)
        except KeyError:  # registered already: a loop's callback must not raise
            self.poller.modify(sock, selectors.EVENT_READ, callback)

    def _readable(self, arrival: Arrival, _sock: Any) -> None:
        try:
            data = arrival.conn.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client has gone
            self._forget(arrival)
            self._close(arrival.conn)
            return
        arrival.data += data
        self._advance(arrival)

    def _advance(self, arrival: Arrival) -> None:
        """On to the next stage, as far as what has come allows."""
        try:
            if arrival.stage is Stage.HEAD:
                if not arrival.head(self.cfg):
                    if len(arrival.data) > HEAD_LIMIT:
                        self._answer(
                            arrival,
                            431,
                            "Request Header Fields Too Large",
                            f"a request's head is at most {HEAD_LIMIT} bytes",
                        )
                    return
                if arrival.body_size() == 0 and arrival.length is not None:
                    self._dispatch(arrival)
                elif arrival.body_size() > self.body_limit:
                    self._dispatch(arrival, cut=True)  # the app refuses it by its length
                elif arrival.body_arrived():
                    self._dispatch(arrival)
                else:
                    self._ask(arrival)
                return
            if arrival.stage is Stage.BODY:
                if arrival.body_arrived():
                    self._dispatch(arrival)
                elif arrival.body_size() > self.body_limit:
                    self._answer(
                        arrival,
                        413,
                        "Content Too Large",
                        f"a request's body is at most {self.body_limit} bytes",
                    )
        except Unreadable:
            self._dispatch(arrival, cut=arrival.stage is Stage.BODY)  # gunicorn says why

    def _ask(self, arrival: Arrival) -> None:
        """Whether the app wants this request's body: asked on a thread (it looks the
        token up), answered in the loop (`_asked`)."""
        self._quiet(arrival)
        arrival.stage = Stage.ASKING
        request = arrival.request
        asked = self.tpool.submit(
            self._may_send_body, request.method, request.path, arrival.header("AUTHORIZATION")
        )
        asked.add_done_callback(lambda done: self.method_queue.defer(self._asked, arrival, done))

    def _may_send_body(self, method: str, path: str, authorization: str | None) -> bool:
        from ledger.api import may_send_body

        if "hazard.protected" not in getattr(self.wsgi, "extensions", {}):
            return True  # not this service's app: it reads its bodies as it likes
        return may_send_body(self.wsgi, method, path, authorization)

    def _asked(self, arrival: Arrival, asked: Future[bool]) -> None:
        if self.arriving.get(arrival.conn) is not arrival:
            return  # gone meanwhile
        if asked.exception() is not None or not asked.result():
            self._dispatch(arrival, cut=True)  # the app answers it without its body
            return
        arrival.stage = Stage.BODY
        arrival.deadline = time.monotonic() + self.io_timeout
        if (arrival.header("EXPECT") or "").lower() == "100-continue":
            with contextlib.suppress(OSError):  # the client waits for this to send it
                arrival.conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            arrival.conn.hazard_continued = True
        self._listen(arrival)

    # -- leaving the loop ------------------------------------------------------------

    def _quiet(self, arrival: Arrival) -> None:
        if arrival.registered:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(arrival.conn.sock)
            arrival.registered = False

    def _forget(self, arrival: Arrival) -> None:
        self._quiet(arrival)
        if self.arriving.pop(arrival.conn, None) is arrival:
            self.peers[arrival.peer] -= 1
            if not self.peers[arrival.peer]:
                del self.peers[arrival.peer]
                self.refusing.discard(arrival.peer)

    def _dispatch(self, arrival: Arrival, cut: bool = False) -> None:
        """To a thread, with what has come. `cut`: its body will not be read, so the
        connection closes after the answer (gthread would read the rest of the body,
        on the thread, to keep it)."""
        self._forget(arrival)
        self.let_go_read()  # before this request asks for a slot (when_read)
        arrival.conn.hazard_arrived = bytes(arrival.data)
        arrival.conn.hazard_cut = cut
        super().enqueue_req(arrival.conn)

    def _answer(self, arrival: Arrival, status: int, reason: str, detail: str) -> None:
        """Answer from the loop (a problem), and close: what fits in the socket's
        buffer is sent, and nothing waits for the client to take it."""
        self._forget(arrival)
        with contextlib.suppress(OSError):
            arrival.conn.sock.send(problem_bytes(status, reason, detail))
        self.nr_conns -= 1
        self._close_gently(arrival.conn.sock)

    def _close(self, conn: Any) -> None:
        self.nr_conns -= 1
        conn.close()

    def handle(self, conn: Any) -> Any:
        """On a thread: a request that has arrived, served by gthread as it came."""
        arrived = conn.__dict__.pop("hazard_arrived", None)
        with contextlib.suppress(OSError):  # gone already: gunicorn finds out, closes it
            bound_io(conn.sock, self.io_timeout)
        if arrived is not None:
            conn.data_ready = True  # gthread's own wait for the first bytes: none
            conn.init()
            conn.parser.unreader.unread(arrived)
        return super().handle(conn)

    def handle_request(self, req: Any, conn: Any) -> Any:
        if conn.__dict__.pop("hazard_cut", False):
            req.force_close()
        if conn.__dict__.pop("hazard_continued", False):
            req._expected_100_continue = False  # the loop has said it (`_asked`)
        return super().handle_request(req, conn)

    # -- closing, in the loop ----------------------------------------------------------

    def finish_request(self, conn: Any, done: Future[Any]) -> None:
        """gthread closes a connection it does not keep as RFC 9112 asks, in the loop's
        own thread: it shuts the writing side, then waits up to 2 s for the client to
        close too, reading what it sends meanwhile. A client that keeps sending (a
        body the app did not want) or never closes held the whole loop that long:
        here the loop does the same without waiting (`_close_gently`)."""
        if done.cancelled() or done.exception() is not None or done.result():
            super().finish_request(conn, done)
            return
        self.nr_conns -= 1
        self._close_gently(conn.sock)

    def _close_gently(self, sock: socket.socket) -> None:
        """Send what is left and a FIN, then read and drop what the client sends until
        it closes too, or CLOSE_LINGER_S, or CLOSE_DRAIN bytes: so that no bytes left
        unread make the kernel reset the connection before the client has read it all."""
        try:
            sock.setblocking(False)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        self.closing[sock] = [time.monotonic() + CLOSE_LINGER_S, CLOSE_DRAIN]
        self._register(sock, self._drain)
        self._drain(sock)

    def _drain(self, sock: socket.socket) -> None:
        left = self.closing.get(sock)
        if left is None:
            return
        try:
            while left[1] > 0:
                data = sock.recv(READ_SIZE)
                if not data:
                    break
                left[1] -= len(data)
            else:
                raise OSError("drained enough")
        except (BlockingIOError, InterruptedError):
            return  # more may come
        except OSError:
            pass
        self._closed(sock)

    def _closed(self, sock: socket.socket) -> None:
        del self.closing[sock]
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(sock)
        sock.close()

    # -- every turn of the loop ------------------------------------------------------

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        if now - self.swept < SWEEP_S:
            return
        self.swept = now
        for arrival in [a for a in self.arriving.values() if a.deadline <= now]:
            if arrival.stage is Stage.BODY:
                self._answer(
                    arrival,
                    408,
                    "Request Timeout",
                    "the request's body stopped arriving; nothing was done",
                )
            elif arrival.stage is Stage.HEAD:
                if arrival.data:
                    log.info("a client stopped sending its request's head: closed")
                self._forget(arrival)
                self._close(arrival.conn)
        for sock in [s for s, (deadline, _) in self.closing.items() if deadline <= now]:
            self._closed(sock)
        self.let_go_read()

    def let_go_read(self) -> None:
        """In the loop: each read whose answer was sent (`when_read`) let go once its
        client has it all, the kernel holding nothing more to send it; the others are
        looked at again at the next sweep, or the next request's arrival."""
        while self.sent:
            self.lingering.append(self.sent.popleft())
        self.lingering = [(s, r) for s, r in self.lingering if not self._let_go(s, r)]

    def _let_go(self, sock: socket.socket, release: Release) -> bool:
        if _unsent(sock) > 0:
            return False
        try:
            release()
        except Exception:
            log.exception("letting go of a heavy read")
        return True


def _quiet_timeouts(record: logging.LogRecord) -> bool:
    """gunicorn logs a head that stopped arriving as an error with its traceback: it is
    the timeout doing its job, logged as one line at info."""
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, BlockingIOError) and error.errno == errno.EAGAIN:
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = "a client stopped sending its request's head: closed", ()
        record.exc_info = record.exc_text = None
    return True
