"""A request as its bytes arrive, before any thread takes it: has its head come whole,
what does it say, and has its body come whole?

`hazard serve`'s workers gather each request here, in their event loop
(ledger.api.slowclients). What is decided here only says when a request is ready for a
thread: gunicorn's own parser reads the same bytes again on that thread, and refuses
what it refuses (a malformed head is a 400 there, as it always was). A request this
module cannot read is handed on at once, for gunicorn to answer.
"""

from __future__ import annotations

import enum
import re
import time
from typing import Any

from gunicorn.http.body import LengthReader
from gunicorn.http.message import Request
from gunicorn.http.unreader import IterUnreader

HEAD_END = b"\r\n\r\n"
HEAD_LIMIT = 64 * 1024
"""The largest head taken: every head this service reads is a few hundred bytes (a
console session's cookie, a token, an Idempotency-Key of at most 100 characters)."""
HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
SIZE_LINE_LIMIT = 1024
"""The longest line a chunked body's chunk size may take, extensions included."""


class Stage(enum.Enum):
    HEAD = "head"
    """Its head is arriving."""
    ASKING = "asking"
    """Its head came without all of its body: the app is asked whether it wants it."""
    BODY = "body"
    """The app wants its body, which is arriving."""


class Unreadable(ValueError):
    """Bytes that are not a request this module can follow: gunicorn answers them."""


class Arrival:
    """One request arriving on a connection: its bytes so far, and by when the rest
    must come."""

    def __init__(self, conn: Any, data: bytes, peer: str, timeout: float) -> None:
        self.conn = conn
        self.data = bytearray(data)
        self.peer = peer
        self.stage = Stage.HEAD
        self.deadline = time.monotonic() + timeout
        self.registered = False
        self.request: Any = None
        self.body_start = 0
        self.length: int | None = None
        """The body's length, from Content-Length; None for a chunked body."""
        self.chunks: Chunks | None = None

    def head(self, cfg: Any) -> bool:
        """Whether the head has come whole; once it has, read it (Unreadable if it
        cannot be: gunicorn will say why)."""
        end = self.data.find(HEAD_END)
        if end < 0:
            return False
        self.body_start = end + len(HEAD_END)
        try:
            unreader = IterUnreader([bytes(self.data[: self.body_start])])
            self.request = Request(cfg, unreader, self.conn.client)
        except Exception as exc:  # any of gunicorn's parse errors, or no request at all
            raise Unreadable(str(exc)) from exc
        reader = self.request.body.reader
        if isinstance(reader, LengthReader):
            self.length = reader.length
        else:
            self.chunks = Chunks(self.body_start)
        return True

    def header(self, name: str) -> str | None:
        """The head's first `name` header (as gunicorn names them: upper case)."""
        return next((value for key, value in self.request.headers if key == name), None)

    def body_size(self) -> int:
        """How large the body is or, chunked, how much of it has come."""
        if self.length is not None:
            return self.length
        assert self.chunks is not None
        return self.chunks.size

    def body_arrived(self) -> bool:
        """Whether the whole body has come (Unreadable for chunks that are not)."""
        if self.length is not None:
            return len(self.data) - self.body_start >= self.length
        assert self.chunks is not None
        return self.chunks.end(self.data) is not None


class Chunks:
    """Where a chunked body ends (RFC 9112, section 7.1), found as its bytes come: a
    size line, that many bytes and CRLF, again, until a size of 0, then trailer lines
    up to an empty one. Each call goes on from where the last one stopped."""

    def __init__(self, start: int) -> None:
        self.at = start
        self.size = 0
        self.trailers = False

    def end(self, data: bytearray) -> int | None:
        """Where the body ends in `data`, or None if it has not all come."""
        while self.at <= len(data):
            line_end = data.find(b"\r\n", self.at)
            if line_end < 0:
                if len(data) - self.at > SIZE_LINE_LIMIT:
                    raise Unreadable("a chunked body's line is too long")
                return None
            if self.trailers:
                if line_end == self.at:
                    return line_end + 2
                self.at = line_end + 2
                continue
            text = bytes(data[self.at : line_end]).split(b";", 1)[0].strip()
            if not HEX.fullmatch(text):
                raise Unreadable(f"a chunk size of {text[:20]!r}")
            size = int(text, 16)
            self.size += size
            self.trailers = size == 0
            self.at = line_end + 2 + (size + 2 if size else 0)
        return None
