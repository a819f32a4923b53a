"""Slow clients under `hazard serve`: each holds one thread, and for a bounded time.

gunicorn's default sync worker serves one connection at a time and reads the request
body in the app: two connections that sent half a body held both workers of a
two-worker server until gunicorn's worker timeout (30 s) killed them. gunicorn's
`timeout` and `keepalive` do not bound a body being sent; its threaded worker
(`gthread`) keeps a slow connection to one thread, and waits for a connection's first
bytes off the thread pool, but then reads the head and the body with no timeout at all.
So `hazard serve` runs:

  - `ThreadWorker`: gunicorn's gthread worker, whose sockets time out when the client
    sends (or takes) nothing for `io_timeout` seconds: SO_RCVTIMEO and SO_SNDTIMEO,
    set in the kernel on each connection before a thread reads from it, so gunicorn's
    own switches between blocking and non-blocking mode leave them in place;
  - `WholeBody`: WSGI middleware that reads a request's whole body before the app sees
    it. A body that stops arriving is answered 408 (a problem, `urn:hazard:http-error`)
    and its connection closed, with nothing done: the app never saw the request.

Like nginx's client_body_timeout, the timeout is between two reads, not for the whole
request: a client that trickles a byte at a time can keep one thread longer. The threads
of each worker bound how many such clients stall a worker; in production a buffering
reverse proxy in front (README) takes them all.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import socket
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gunicorn.workers.gthread import ThreadWorker as GThreadWorker

from ledger.api.problems import HTTP_OTHER, PREFIX, PROBLEM_JSON

DEFAULT_IO_TIMEOUT_S = 10.0
"""How long `hazard serve` waits for the next bytes of a request (or for a client to
take the next bytes of an answer) before giving up on the connection."""
DEFAULT_THREADS = 8
"""Threads per `hazard serve` worker: requests each worker serves at once."""

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _timeval(seconds: float) -> bytes:
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1_000_000))


def bound_io(sock: socket.socket, seconds: float) -> None:
    """Make each read and each write on `sock` fail after `seconds` with no progress."""
    value = _timeval(seconds)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


class ThreadWorker(GThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's gthread worker, whose connections time out (`io_timeout`)."""

    io_timeout = DEFAULT_IO_TIMEOUT_S
    """Set by `hazard serve` in the master, before it forks the workers."""

    def init_process(self) -> None:
        self.log.error_log.addFilter(_quiet_timeouts)
        super().init_process()

    def handle(self, conn: Any) -> Any:
        with contextlib.suppress(OSError):  # gone already: gunicorn finds out, closes it
            bound_io(conn.sock, self.io_timeout)
        return super().handle(conn)


def _quiet_timeouts(record: logging.LogRecord) -> bool:
    """gunicorn logs a head that stopped arriving as an error with its traceback: it is
    the timeout doing its job, logged as one line at info."""
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, BlockingIOError) and error.errno == errno.EAGAIN:
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = "a client stopped sending its request's head: closed", ()
        record.exc_info = record.exc_text = None
    return True


def request_timeout() -> bytes:
    return json.dumps(
        {
            "type": PREFIX + HTTP_OTHER,
            "title": "Request Timeout",
            "status": 408,
            "detail": "the request's body stopped arriving; nothing was done",
        }
    ).encode("ascii")


class _ThenHangUp:
    """A WSGI answer that ends its connection once it is sent (WSGI calls `close` then):
    what remains of the body is not worth waiting for."""

    def __init__(self, body: bytes, sock: socket.socket | None) -> None:
        self.body = body
        self.sock = sock

    def __iter__(self) -> Iterator[bytes]:
        yield self.body

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)  # gunicorn closes it next


class WholeBody:
    """WSGI middleware: the app sees a request only once its whole body has arrived.

    A body larger than `limit` (the app's MAX_CONTENT_LENGTH) is not read: the app
    refuses it (413) by its length. A body whose next bytes do not come in the socket's
    timeout is answered 408, and the connection closed."""

    def __init__(self, app: WSGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        length = environ.get("CONTENT_LENGTH") or ""
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not chunked and (not length.isdigit() or int(length) == 0 or int(length) > self.limit):
            return self.app(environ, start_response)  # nothing to wait for, or refused
        try:
            body = environ["wsgi.input"].read(self.limit + 1 if chunked else int(length))
        except OSError:  # the socket's timeout (BlockingIOError, TimeoutError), a reset
            problem = request_timeout()
            start_response(
                "408 Request Timeout",
                [("Content-Type", PROBLEM_JSON), ("Content-Length", str(len(problem)))],
            )
            return _ThenHangUp(problem, environ.get("gunicorn.socket"))
        environ["wsgi.input"] = io.BytesIO(body)
        if chunked:
            environ["CONTENT_LENGTH"] = str(len(body))
            del environ["HTTP_TRANSFER_ENCODING"]
        return self.app(environ, start_response)


def when_read(sock: socket.socket | None, release: Callable[[], None]) -> None:
    """Call `release` once the client has read what was sent on `sock`."""
    release()
