"""`hazard witness serve` for real: a witness killed between two pushes, or in the
middle of a stream of them, resumes where it was from its state on disk; a slow
client holds no thread from the log's pushes; a body over the limit is 413."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.cli import main
from ledger.store.log.checkpoint import parse_note
from ledger.witness.state import origin_hash
from ledger.witness.submission import MAX_BODY
from tests.witness.servingkit import witness_serving
from tests.witness.witnesskit import ORIGIN, Log

NAME = "treasurer.example/witness"


@pytest.fixture
def log() -> Log:
    return Log.new()


@pytest.fixture
def home(tmp_path: Path, log: Log) -> Path:
    where = tmp_path / "witness"
    made = CliRunner().invoke(
        main, ["witness", "init", "--name", NAME, "--log", log.signer.verifier.text(),
               "--dir", str(where)],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    return where


def newest_size(served: object) -> int:
    status, _, body = served.request("GET", f"/{origin_hash(ORIGIN)}/checkpoint")  # type: ignore[attr-defined]
    assert status == 200, body
    return int(parse_note(body.decode())[0].split("\n")[1])


def test_killed_between_two_pushes_it_resumes_where_it_was(home: Path, log: Log) -> None:
    with witness_serving(home) as served:
        assert served.request("POST", "/add-checkpoint", log.push(0, 5))[0] == 200
        assert served.request("POST", "/add-checkpoint", log.push(5, 9))[0] == 200
        served.kill()
    with witness_serving(home) as served:
        assert newest_size(served) == 9
        assert served.request("POST", "/add-checkpoint", log.push(5, 14)) == (
            409, "text/x.tlog.size", b"9\n",
        )  # fmt: skip
        assert served.request("POST", "/add-checkpoint", log.push(9, 14))[0] == 200
        assert newest_size(served) == 14


def test_killed_in_the_middle_of_pushes_it_keeps_every_cosignature_it_answered(
    home: Path, log: Log
) -> None:
    """A log pushing as fast as it can, the witness killed whole under it: the tree it
    comes back with is the last it answered 200 for, or the one after (cosigned and on
    disk, its answer lost); never one before. A push from that tree goes on."""
    log.grow(2000)
    answered = [0]
    tried = [0]
    with witness_serving(home) as served:
        stop = threading.Event()

        def pushing() -> None:
            conn = served.connection()
            size = 0
            try:
                while not stop.is_set() and size < 1990:
                    tried[0] = size + 3
                    conn.request("POST", "/add-checkpoint", body=log.push(size, size + 3))
                    answer = conn.getresponse()
                    answer.read()
                    if answer.status != 200:
                        return
                    size += 3
                    answered[0] = size
            except (OSError, http.client.HTTPException):
                return  # killed
            finally:
                conn.close()

        pusher = threading.Thread(target=pushing)
        pusher.start()
        time.sleep(1.0)
        served.kill()
        stop.set()
        pusher.join(timeout=20)
    assert answered[0] > 0, "no push was answered before the kill"
    with witness_serving(home) as served:
        size = newest_size(served)
        assert answered[0] <= size <= tried[0], (answered[0], size, tried[0])
        assert served.request("POST", "/add-checkpoint", log.push(size, size + 5))[0] == 200


def test_clients_trickling_their_requests_hold_no_thread_from_the_log(home: Path, log: Log) -> None:
    with witness_serving(home, "--threads", "2") as served:
        slow = []
        for n in range(8):
            sock = socket.create_connection(("127.0.0.1", served.port))
            head = b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: 500\r\n\r\nold"
            sock.sendall(head if n % 2 else head[:20])  # half a body, or half a head
            slow.append(sock)
        try:
            started = time.monotonic()
            assert served.request("POST", "/add-checkpoint", log.push(0, 5))[0] == 200
            assert time.monotonic() - started < 5
        finally:
            for sock in slow:
                sock.close()


def test_a_body_over_the_limit_is_413_over_http(home: Path) -> None:
    with witness_serving(home) as served:
        status, _, _ = served.request("POST", "/add-checkpoint", b"old 0\n\n" + b"x" * MAX_BODY)
        assert status == 413
        assert served.request("GET", "/key")[0] == 200  # and the witness serves on
