"""ledger.api.arrivals: when a request arriving in `hazard serve`'s loop has come whole.

The real server's tests (test_slow_clients.py) hold what clients see; here, byte by
byte, what the loop decides: a head is whole at its empty line, a body at its length or
at its last chunk (wherever the bytes are split), and what cannot be followed is handed
on for gunicorn to refuse."""

from __future__ import annotations

from typing import Any

import pytest
from gunicorn.config import Config

from ledger.api.arrivals import Arrival, Unreadable

CFG = Config()
HEAD = b"POST /players HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer hz_t\r\n"


class _Conn:
    client = ("127.0.0.1", 40000)


def _arrive(pieces: list[bytes]) -> list[tuple[bool, bool]]:
    """(head whole, body whole) after each piece, fed as the loop feeds them."""
    arrival = Arrival(_Conn(), b"", "127.0.0.1", 10)
    seen: list[tuple[bool, bool]] = []
    headed = False
    for piece in pieces:
        arrival.data += piece
        headed = headed or arrival.head(CFG)
        seen.append((headed, headed and arrival.body_arrived()))
    return seen


def _bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def test_a_head_is_whole_at_its_empty_line_and_a_body_at_its_length() -> None:
    request = HEAD + b"Content-Length: 5\r\n\r\n" + b"hello"
    seen = _arrive(_bytewise(request))
    head_end = request.index(b"\r\n\r\n") + 4
    assert [h for h, _ in seen].index(True) == head_end - 1
    assert [b for _, b in seen].index(True) == len(request) - 1
    arrival = Arrival(_Conn(), request, "127.0.0.1", 10)
    assert arrival.head(CFG)
    assert (arrival.length, arrival.header("AUTHORIZATION")) == (5, "Bearer hz_t")


@pytest.mark.parametrize("split", [1, 3, 7, 1000])
def test_a_chunked_body_is_whole_at_its_last_chunk_however_it_is_split(split: int) -> None:
    body = b"4\r\nwiki\r\n5;ext=1\r\npedia\r\n0\r\nX-Trailer: 1\r\n\r\n"
    request = HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + body
    pieces = [request[i : i + split] for i in range(0, len(request), split)]
    seen = _arrive(pieces)
    assert seen[-1] == (True, True)
    assert not any(whole for _, whole in seen[:-1])


@pytest.mark.parametrize(
    "request_bytes",
    [
        HEAD + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n",  # gunicorn's 400
        HEAD + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        b"NOT A REQUEST LINE\r\n\r\n",
    ],
)
def test_a_head_gunicorn_refuses_is_handed_on_at_once(request_bytes: bytes) -> None:
    with pytest.raises(Unreadable):
        Arrival(_Conn(), request_bytes, "127.0.0.1", 10).head(CFG)


@pytest.mark.parametrize("body", [b"zz\r\n", b"-1\r\n", b"0x1\r\n", b"1" * 2000])
def test_a_chunk_size_that_is_no_size_is_handed_on(body: bytes) -> None:
    arrival: Any = Arrival(
        _Conn(), HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + body, "127.0.0.1", 10
    )
    assert arrival.head(CFG)
    with pytest.raises(Unreadable):
        arrival.body_arrived()
