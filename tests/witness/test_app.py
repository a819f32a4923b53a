"""The witness over HTTP (ledger.witness.app), as tlog-witness words it: each status
code of add-checkpoint with its body and type, the newest cosigned checkpoint by the
origin's hash, its key, and nothing else; no body, however made, gets a 500."""

from __future__ import annotations

import base64
import hashlib
import io
import sqlite3
import tempfile
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ledger.store.log.checkpoint import Checkpoint, parse_note, sign_checkpoint
from ledger.store.log.cosignature import Cosigner, cosignatures
from ledger.store.log.keys import Signer
from ledger.witness.app import create_app
from ledger.witness.cosigning import Witness
from ledger.witness.state import State
from ledger.witness.submission import MAX_BODY
from tests.witness.witnesskit import ORIGIN, Log, a_witness

HASHED = hashlib.sha256(ORIGIN.encode()).hexdigest()
TEXT = "text/plain; charset=utf-8"


@pytest.fixture
def log() -> Log:
    return Log.new()


@pytest.fixture
def witness(tmp_path: Path, log: Log) -> Witness:
    return a_witness(tmp_path, log)


@pytest.fixture
def client(witness: Witness) -> FlaskClient:
    return create_app(witness).test_client()


def post(client: FlaskClient, body: bytes) -> tuple[int, str, str]:
    answer = client.post("/add-checkpoint", data=body)
    return answer.status_code, answer.content_type, answer.get_data(as_text=True)


def test_200_is_the_cosignature_line(client: FlaskClient, witness: Witness, log: Log) -> None:
    status, kind, body = post(client, log.push(0, 9))
    assert (status, kind) == (200, TEXT)
    assert body.startswith("\u2014 treasurer.example/witness ") and body.endswith("\n")
    assert body.count("\n") == 1
    # As the spec tells a client: the lines added to the checkpoint, checked as a note.
    assert list(cosignatures(log.note(9) + body, [witness.cosigner.key])) == [witness.cosigner.key]


def test_409_is_the_size_last_cosigned_as_text_x_tlog_size(client: FlaskClient, log: Log) -> None:
    assert post(client, log.push(0, 9))[0] == 200
    assert post(client, log.push(3, 20)) == (409, "text/x.tlog.size", "9\n")


@pytest.mark.parametrize(
    ("make", "status"),
    [
        (lambda log: b"old 0\n", 400),
        (lambda log: log.push(0, 4).replace(b"old 0\n", b"old 5\n"), 400),
        (lambda log: Log.new("other.example/log").push(0, 3), 404),
        (lambda log: log.push(0, 3, note=log.note(3, signer=Signer.generate(ORIGIN))), 403),
        (lambda log: log.push(0, 3, proof=[bytes(32)]), 422),
        (
            lambda log: log.push(
                0, 0, note=sign_checkpoint(Checkpoint(ORIGIN, 0, bytes(32)), log.signer)
            ),
            422,
        ),
    ],
    ids=["malformed", "old-over-size", "unknown-origin", "other-key", "proof-from-0", "size-0"],
)
def test_each_refusal_has_its_status_and_says_why_in_plain_text(
    client: FlaskClient, log: Log, make: object, status: int
) -> None:
    code, kind, body = post(client, make(log))  # type: ignore[operator]
    assert (code, kind) == (status, TEXT)
    assert body.endswith("\n") and len(body) > 10


def test_a_fork_and_a_bad_proof_are_422(client: FlaskClient, log: Log) -> None:
    assert post(client, log.push(0, 30))[0] == 200
    other = Log(log.signer)
    other.grow(40, salt=b"rewritten ")
    assert post(client, other.push(30, 30))[0] == 422
    assert post(client, other.push(30, 40))[0] == 422
    assert post(client, log.push(30, 40))[0] == 200


def test_a_body_over_the_limit_is_413_with_or_without_its_length(client: FlaskClient) -> None:
    big = b"old 0\n\n" + b"a" * MAX_BODY
    assert client.post("/add-checkpoint", data=big).status_code == 413
    chunked = client.post(
        "/add-checkpoint",
        input_stream=io.BytesIO(big),
        headers={"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert chunked.status_code == 413


def test_a_chunked_body_under_the_limit_is_read_whole(client: FlaskClient, log: Log) -> None:
    answer = client.post(
        "/add-checkpoint",
        input_stream=io.BytesIO(log.push(0, 3)),
        headers={"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert answer.status_code == 200


def test_the_newest_cosigned_checkpoint_is_served_by_the_origin_s_hash(
    client: FlaskClient, witness: Witness, log: Log
) -> None:
    assert client.get(f"/{HASHED}/checkpoint").status_code == 404  # none cosigned yet
    post(client, log.push(0, 9))
    post(client, log.push(9, 14))
    answer = client.get(f"/{HASHED}/checkpoint")
    assert (answer.status_code, answer.content_type) == (200, TEXT)
    note = answer.get_data(as_text=True)
    text, signatures = parse_note(note)
    assert text == Checkpoint(ORIGIN, 14, log.root(14)).text()
    assert [s.name for s in signatures] == [ORIGIN, "treasurer.example/witness"]
    assert cosignatures(note, [witness.cosigner.key])
    assert client.get(f"/{HASHED.upper()}/checkpoint").status_code == 404
    assert client.get(f"/{'0' * 64}/checkpoint").status_code == 404


def test_the_key_is_the_witness_s_vkey(client: FlaskClient, witness: Witness) -> None:
    answer = client.get("/key")
    assert (answer.status_code, answer.content_type) == (200, TEXT)
    assert answer.get_data(as_text=True) == witness.cosigner.key.text() + "\n"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/", 404),
        ("GET", "/healthz", 404),
        ("GET", "/metrics", 404),
        ("GET", "/docs", 404),
        ("GET", "/openapi.json", 404),
        ("GET", "/logs", 404),
        ("GET", "/evidence", 404),
        ("GET", "/key/", 404),
        ("GET", f"/{HASHED}/checkpoint/", 404),
        ("GET", f"/{HASHED}", 404),
        ("GET", "/sign-subtree", 404),
        ("POST", "/sign-subtree", 404),
        ("GET", "/add-checkpoint", 405),
        ("PUT", "/add-checkpoint", 405),
        ("OPTIONS", "/add-checkpoint", 405),
        ("OPTIONS", "/key", 405),
        ("POST", "/key", 405),
        ("DELETE", f"/{HASHED}/checkpoint", 405),
    ],
)
def test_nothing_else_is_served(client: FlaskClient, method: str, path: str, status: int) -> None:
    answer = client.open(path, method=method)
    assert (answer.status_code, answer.content_type) == (status, TEXT)


def test_a_state_held_too_long_is_503_with_retry_after(
    tmp_path: Path, witness: Witness, log: Log
) -> None:
    witness.state = State(witness.state.path, busy_timeout=0.05)
    holder = sqlite3.connect(witness.state.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        answer = create_app(witness).test_client().post("/add-checkpoint", data=log.push(0, 3))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (answer.status_code, answer.headers["Retry-After"]) == (503, "1")


# -- no 500, whatever the body ----------------------------------------------------------

_LOG = Log.new()
_FORK = Log(_LOG.signer)
_FORK.grow(21, salt=b"rewritten ")
_NOT_EMPTY = sign_checkpoint(Checkpoint(ORIGIN, 0, bytes(32)), _LOG.signer)
_VALID = [
    _LOG.push(0, 5),
    _LOG.push(5, 21),
    _LOG.push(21, 21),
    _LOG.push(0, 0),
    _FORK.push(21, 21),  # a fork of what the witness may have cosigned: 422
    _FORK.push(5, 21),  # a proof from another history: 422
    _LOG.push(0, 0, note=_NOT_EMPTY),
]


def _mutated(body: bytes, at: int, cut: int, put: bytes) -> bytes:
    at %= len(body) + 1
    return body[:at] + put + body[at + cut :]


BODIES = st.one_of(
    st.binary(max_size=400),
    st.builds(
        _mutated,
        st.sampled_from(_VALID),
        st.integers(0, 2000),
        st.integers(0, 8),
        st.sampled_from(
            [b"", b"\n", b"\n\n", b"0", b"9", b" ", b"=", b"\xff", "\u2014".encode(), b"old 5\n"]
        )
        | st.binary(max_size=6),
    ),
    st.builds(
        lambda old, proof, note: (
            b"old " + old + b"\n" + b"".join(p + b"\n" for p in proof) + b"\n" + note
        ),
        st.sampled_from([b"0", b"5", b"21", b"22", b"-1", b"00", b"9" * 25, b""]),
        st.lists(
            st.sampled_from(
                [base64.b64encode(bytes(32)), b"AAAA", b"", base64.b64encode(bytes(33))]
            )
            | st.builds(base64.b64encode, st.binary(min_size=32, max_size=32)),
            max_size=66,
        ),
        st.sampled_from(
            [
                _LOG.note(5),
                _LOG.note(21),
                _LOG.note(0),
                _FORK.note(21),
                _NOT_EMPTY,
                "x\n\n\u2014 a b\n",
            ]
        ).map(str.encode)
        | st.binary(max_size=200),
    ),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=BODIES)
def test_no_body_is_ever_answered_500(body: bytes) -> None:
    client = _client_for_bodies()
    answer = client.post("/add-checkpoint", data=body)
    event(f"answered {answer.status_code}")
    assert answer.status_code in (200, 400, 403, 404, 409, 413, 422), (body, answer.data)
    assert answer.content_type in (TEXT, "text/x.tlog.size")


_CLIENTS: list[FlaskClient] = []


def _client_for_bodies() -> FlaskClient:
    """One witness following _LOG for every example: some bodies move it on, so later
    ones meet a witness that has cosigned, and the 409 and 422 paths are reached too."""
    if not _CLIENTS:
        where = Path(tempfile.mkdtemp(prefix="witness-bodies-"))
        state = State.create(where / "witness.sqlite3")
        state.follow(_LOG.signer.name, _LOG.signer.verifier.text(), 1)
        _CLIENTS.append(create_app(Witness(state, Cosigner.generate("w.example/w"))).test_client())
    return _CLIENTS[0]
