"""What gunicorn answers itself, before the app sees the request: problem details too.

gunicorn refuses some requests before they reach the app: a request line over 4 KB
(414), a header too large or too many of them (431), a byte HTTP does not allow in a
header (400), ... Its worker's `handle_error` picks the status, reason and message,
then calls `gunicorn.util.write_error(sock, status, reason, message)`, which writes an
HTML page. `install` replaces that function with one writing the same answer as
application/problem+json, with the type HTTP_KINDS gives the status in the app.

Why this hook rather than a worker class of our own: `handle_error` looks the function
up on the module at each call (`util.write_error`), so replacing it reaches every
worker class (sync, gthread, the async ones) under `hazard serve` and under plain
`gunicorn ledger.wsgi:app` alike, with no `-k` option for an operator to forget. Its
four arguments have not changed since gunicorn 19, while `handle_error` itself (which
exception is which status) changes with most releases: a worker subclass would have
to copy it, or replace `write_error` all the same. Should gunicorn ever rename it,
nothing is replaced, its HTML pages come back, and tests/api/test_serve.py says so.
"""

from __future__ import annotations

import json
from typing import Any

from ledger.api.problems import HTTP_KINDS, HTTP_OTHER, PREFIX, PROBLEM_JSON

INTERNAL = "an unexpected error; it is logged"
"""What a 500 says, as the app's own 500s do."""


def problem_bytes(status: int, reason: str, message: str) -> bytes:
    """The whole HTTP answer gunicorn sends for its own error, as a problem."""
    kind = "internal" if status == 500 else HTTP_KINDS.get(status, HTTP_OTHER)
    detail = INTERNAL if status == 500 else message or reason
    body = json.dumps(
        {"type": PREFIX + kind, "title": reason, "status": status, "detail": detail}
    ).encode("ascii")  # json escapes anything else; the head is latin-1, as gunicorn's
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Connection: close\r\n"
        f"Content-Type: {PROBLEM_JSON}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "\r\n"
    ).encode("latin-1")
    return head + body


def install() -> None:
    """Have gunicorn write its own errors as problems, in this process (a worker, or a
    master that preloads the app and forks them). Outside gunicorn, nothing to do."""
    try:
        from gunicorn import util
    except ImportError:
        return
    if not hasattr(util, "write_error") or getattr(util.write_error, "hazard", False):
        return
    write_nonblock = util.write_nonblock

    def write_error(sock: Any, status_int: Any, reason: str, mesg: str) -> None:
        write_nonblock(sock, problem_bytes(int(status_int), str(reason), str(mesg)))

    write_error.hazard = True  # type: ignore[attr-defined]  # installed once
    util.write_error = write_error
