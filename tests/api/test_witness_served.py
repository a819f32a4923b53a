"""The ledger's own pusher and `hazard witness serve` run for real, over HTTP, on SQLite
and PostgreSQL: the witness refuses the consistent rewrite and keeps both notes; one
that hangs holds no write, and one killed with pushes it never answered resumes where
it was once started again. Nothing is timed: each push is waited for, never raced.
The evening and its copies: tests/api/lyingkit.py; the witness's process:
tests/witness/servingkit.py."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.pusher import State
from ledger.store.log.checkpoint import parse_note
from ledger.store.log.policy import Policy
from ledger.witness.state import origin_hash
from tests.api.conftest import Api
from tests.api.lyingkit import Evening, evening_fixture, policy_text
from tests.api.witnesskit import INTERVAL, TIMEOUT, eventually
from tests.signing import ORIGIN
from tests.witness.servingkit import Witnessed, witness_serving


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def evening(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Evening]:
    yield from evening_fixture(request, tmp_path_factory)


def _held(served: Witnessed) -> str:
    """The newest checkpoint the served witness cosigned, as it serves it."""
    status, _, body = served.request("GET", f"/{origin_hash(ORIGIN)}/checkpoint")
    assert status == 200, body
    return body.decode()


def _size(note: str) -> int:
    return int(parse_note(note)[0].split("\n")[1])


def test_hazard_witness_serve_refuses_the_consistent_rewrite_and_keeps_both_notes(
    evening: Evening, tmp_path: Path
) -> None:
    scene = evening.scene(tmp_path, "the consistent rewrite")
    try:
        with witness_serving(scene.where / "witnesses" / "treasurer") as served:
            url = f"http://127.0.0.1:{served.port}"
            policy = Policy.parse(policy_text(evening.keys, {"treasurer": url}))
            outcome = scene.push(policy, "treasurer")["treasurer"]
            held = _held(served)
        assert outcome.state is State.REFUSED and "answered 422" in (outcome.error or ""), outcome
        assert parse_note(held)[0] == parse_note(evening.note)[0]  # the honest tree, still
        assert "kept as evidence" in "".join(served.served.err)  # and said so in its log
        shown = scene.evidence("treasurer")
        assert shown.exit_code == 0, shown.output
        assert f"was not shown to extend its tree of size {evening.size}" in shown.output
        assert evening.note.rstrip("\n") in shown.output
        assert scene.newest().rstrip("\n") in shown.output
    finally:
        scene.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _treasurer(club: Api) -> dict[str, Any]:
    ready = club.client(None).get("/readyz")
    assert ready.status_code == 200, ready.get_json()  # ready, whatever the witness does
    [found] = ready.get_json()["witnesses"]
    return dict(found)


def _deposit(club: Api) -> tuple[int, int]:
    """A write, answered: the first position it wrote, and the size of its receipt's
    checkpoint (its seal's position)."""
    receipt = club.client().ok("post", "/players/ann/deposits", {"amount": 5})["receipt"]
    return receipt["positions"][0], _size(receipt["checkpoint"])


def test_a_served_witness_that_hangs_holds_no_write_and_killed_mid_push_resumes_where_it_was(
    evening: Evening, tmp_path: Path
) -> None:
    """The witness stopped (SIGSTOP) holds each push it is sent: the writes are answered
    all the same. Killed so (SIGKILL, master and workers), pushes unanswered, and
    started again on its state: the ledger's pushes resume from the tree it last
    cosigned, and it cosigns the newest, refusing nothing."""
    scene = evening.scene(tmp_path)
    folder = scene.where / "witnesses" / "treasurer"
    port = _free_port()
    pushed = tmp_path / "pushed.policy"
    pushed.write_text(policy_text(evening.keys, {"treasurer": f"http://127.0.0.1:{port}"}))
    app = scene.app(HAZARD_POLICY=str(pushed), HAZARD_WITNESS_INTERVAL=INTERVAL,
                    WITNESS_TIMEOUT=TIMEOUT)  # fmt: skip
    club = Api(app)
    try:
        with witness_serving(folder, "--port", str(port)) as served:
            _, first = _deposit(club)
            eventually(lambda: _treasurer(club)["cosigned_size"] == first)
            assert _size(_held(served)) == first
            os.killpg(served.served.proc.pid, signal.SIGSTOP)  # it hangs, whole
            _, held = _deposit(club)
            down = eventually(lambda: (w := _treasurer(club))["state"] == "down" and w)
            assert "timed out" in down["last_error"], down  # a push sent, held, unanswered
            writes = [_deposit(club) for _ in range(5)]  # answered while it holds
            sizes = [size for _, size in writes]
            # One after another, nothing between: each from where the one before ended.
            assert [start - 1 for start, _ in writes] == [held, *sizes[:-1]]
            assert _treasurer(club)["cosigned_size"] == first
            served.kill()  # dies holding them
        newest = sizes[-1]
        on_disk = scene.held("treasurer")
        assert on_disk is not None and _size(on_disk) == first
        with witness_serving(folder, "--port", str(port)) as served:
            eventually(lambda: _treasurer(club)["cosigned_size"] == newest)
            assert _size(_held(served)) == newest
            back = eventually(lambda: (w := _treasurer(club))["state"] == "ok" and w)
            assert back["last_error"] is None
        shown = scene.evidence("treasurer")
        assert shown.output.startswith("No evidence"), shown.output
    finally:
        pusher = app.extensions["hazard.pusher"]
        pusher.stop()
        scene.close()
