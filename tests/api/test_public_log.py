"""The log's public side, on SQLite and PostgreSQL: what witnesses cosigned
(`/log/cosigned`), a receipt as a C2SP tlog-proof file (checked here by a reader
written from the C2SP and RFC 9162 texts with hashlib, base64 and `cryptography`
alone), the gossip (`/log/gossip`), and the reads anyone may make without a token,
capped so that strangers cannot crowd out the club.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.api import create_app, may_send_body
from ledger.store.log import witnessed
from ledger.store.log.checkpoint import Checkpoint, open_checkpoint, sign_checkpoint
from ledger.store.log.keys import Signer
from ledger.store.schema import gossip
from tests.api.conftest import Api, Client
from tests.api.readkit import play, problem
from tests.api.witnesskit import AUDITOR, TREASURER
from tests.signing import ORIGIN, SIGNER, VERIFIER

AT = "2026-11-26T15:00:00Z"


def _cosign(api: Api, size: int, *cosigners: Any) -> None:
    """Witnesses' cosignatures of the stored checkpoint of `size`, kept as a push keeps them."""
    note = api.client(None).ok("get", f"/log/checkpoints/{size}")["checkpoint"]
    text = note[: note.rindex("\n\n") + 1]
    with api.book.store.engine.begin() as conn:
        for number, cosigner in enumerate(cosigners):
            line = cosigner.cosign(text, 1_800_000_000 + number)
            assert witnessed.record(conn, size, cosigner.key, line, AT)


def _sizes(bank: Client) -> list[int]:
    """A few writes; the checkpoint size each left."""
    sizes = [bank.ok("post", "/players", {"name": "ann"})["receipt"]]
    sizes += [bank.ok("post", "/players/ann/deposits", {"amount": 5})["receipt"] for _ in range(3)]
    return [open_checkpoint(r["checkpoint"], [VERIFIER]).size for r in sizes]


# -- /log/cosigned -------------------------------------------------------------------------


def test_the_newest_cosigned_checkpoint_with_every_cosignature(api: Api) -> None:
    anyone = api.client(None)
    assert "no witness has cosigned" in problem(anyone.get("/log/cosigned"), 404)["detail"]
    sizes = _sizes(api.client())
    _cosign(api, sizes[1], TREASURER, AUDITOR)
    _cosign(api, sizes[2], TREASURER)
    newest = anyone.ok("get", "/log/cosigned")
    assert newest["size"] == sizes[2]
    assert newest["witnesses"] == [{"key": TREASURER.key.text(), "cosigned_at": 1_800_000_000}]
    checkpoint = open_checkpoint(newest["note"], [VERIFIER])
    assert newest["root"] == checkpoint.root.hex()
    both = anyone.ok("get", "/log/cosigned", query_string={"size": sizes[1]})
    assert {w["key"] for w in both["witnesses"]} == {TREASURER.key.text(), AUDITOR.key.text()}
    assert both["note"].count("\n\u2014 ") == 3  # the log's line and two witnesses'
    none = anyone.ok("get", "/log/cosigned", query_string={"size": sizes[3]})
    assert (
        none["witnesses"] == []
        and none["note"] == anyone.ok("get", f"/log/checkpoints/{sizes[3]}")["checkpoint"]
    )
    missing = problem(anyone.get("/log/cosigned", query_string={"size": sizes[3] + 9}), 404)
    assert missing["detail"].startswith(f"no checkpoint of size {sizes[3] + 9}")


# -- the tlog-proof, read as C2SP says ---------------------------------------------------------


class Rejected(Exception):
    """What the reader below does not accept."""


def _vkey(text: str, kind: int) -> tuple[str, bytes, Ed25519PublicKey]:
    """signed-note's key: `<name>+<key id>+<base64(type || key)>`; its id is
    SHA-256(name || 0x0A || type || key)[:4] (0x01: a log's Ed25519, 0x04: cosignature/v1)."""
    name, hex_id, material = text.split("+", 2)
    raw = base64.b64decode(material, validate=True)
    if raw[0] != kind or hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4].hex() != hex_id:
        raise Rejected("not that kind of key, or a wrong key id")
    return name, bytes.fromhex(hex_id), Ed25519PublicKey.from_public_bytes(raw[1:])


def _signed(note: str, key: tuple[str, bytes, Ed25519PublicKey], message: Any) -> Any:
    """What `message(blob)` gives for the line by `key` whose signature verifies over
    the bytes `message(blob)` names, or None when `key` signed no line."""
    text, _, lines = note.rpartition("\n\n")
    name, key_id, public = key
    for line in lines.splitlines():
        dash, who, blob_text = line.split(" ")
        blob = base64.b64decode(blob_text, validate=True)
        if dash != "\u2014" or who != name or blob[:4] != key_id:
            continue
        signed, signature, found = message(text + "\n", blob[4:])
        try:
            public.verify(signature, signed)
        except InvalidSignature:
            raise Rejected(f"{name}'s signature does not verify") from None
        return found
    return None


def read_tlog_proof(
    text: str, log_key: str, witness_keys: list[str]
) -> tuple[bytes, int, int, list[int]]:
    """A tlog-proof checked as c2sp.org/tlog-proof says: the extra data, the index, the
    checkpoint's size and the cosignatures' times of `witness_keys` that cosigned it."""
    lines = text.split("\n")
    if lines[0] != "c2sp.org/tlog-proof@v1":
        raise Rejected("not a tlog-proof")
    at = 1
    extra = b""
    if lines[at].startswith("extra "):
        extra = base64.b64decode(lines[at].removeprefix("extra "), validate=True)
        at += 1
    index_text = lines[at].removeprefix("index ")
    if not lines[at].startswith("index ") or index_text != str(int(index_text)):
        raise Rejected("no index line")
    index = int(index_text)
    path = []
    for line in lines[at + 1 :]:
        at += 1
        if not line:
            break
        path.append(base64.b64decode(line, validate=True))
    note = "\n".join(lines[at + 1 :])
    # The checkpoint: origin, size, base64 root; signed by the log (tlog-checkpoint).
    origin, size_text, root_text = note.split("\n")[:3]
    size, root = int(size_text), base64.b64decode(root_text, validate=True)
    key = _vkey(log_key, 0x01)
    if key[0] != origin or not _signed(note, key, lambda t, sig: (t.encode(), sig, True)):
        raise Rejected("the checkpoint is not signed by the log")
    # Each witness's cosignature: Ed25519 over "cosignature/v1\ntime <t>\n" + the text.
    times = []
    for witness in witness_keys:
        cosigned = _signed(note, _vkey(witness, 0x04), lambda t, blob: (
            b"cosignature/v1\ntime %d\n" % int.from_bytes(blob[:8], "big") + t.encode(),
            blob[8:],
            int.from_bytes(blob[:8], "big"),
        ))  # fmt: skip
        if cosigned is not None:
            times.append(cosigned)
    # RFC 9162 2.1.3.2: the leaf SHA-256(0x00 || extra) up the path to the root.
    node = lambda left, right: hashlib.sha256(b"\x01" + left + right).digest()  # noqa: E731
    fn, sn, r = index, size - 1, hashlib.sha256(b"\x00" + extra).digest()
    if index >= size:
        raise Rejected("the index is not in the tree")
    for p in path:
        if sn == 0:
            raise Rejected("the path is too long")
        if fn & 1 or fn == sn:
            r = node(p, r)
            while fn & 1 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or r != root:
        raise Rejected("the inclusion path does not lead to the checkpoint's root")
    return extra, index, size, times


def _tlog_proof(client: Client, position: int) -> Any:
    return client.get("/log/proofs/tlog-proof", query_string={"position": position})


def test_a_tlog_proof_checks_offline_with_the_cosignatures(api: Api) -> None:
    bank = play(api)
    deposits = [bank.ok("post", "/players/ann/deposits", {"amount": 5}) for _ in range(3)]
    sizes = [open_checkpoint(d["receipt"]["checkpoint"], [VERIFIER]).size for d in deposits]
    cosigned, newest = sizes[0], sizes[-1]  # each the position of its write's seal
    _cosign(api, cosigned, TREASURER)
    witnesses = [TREASURER.key.text(), AUDITOR.key.text()]
    listed = bank.ok("get", "/events", query_string={"limit": 500})["items"]
    events = {e["position"]: e for e in listed}
    for position in (1, cosigned // 2, cosigned, cosigned + 1, newest):
        answer = _tlog_proof(bank, position)
        assert answer.status_code == 200 and answer.mimetype == "text/plain", answer.data
        assert answer.content_type == "text/plain; charset=utf-8"
        extra, index, size, times = read_tlog_proof(answer.get_data(as_text=True),
                                                    VERIFIER.text(), witnesses)  # fmt: skip
        assert index == position - 1
        # The newest cosigned checkpoint that holds it; past it, the newest, uncosigned.
        assert (size, times) == ((cosigned, [1_800_000_000]) if position <= cosigned
                                 else (newest, []))  # fmt: skip
        event = {k: v for k, v in events[position].items() if k not in ("prev_hash", "hash")}
        assert json.loads(extra) == event
        # A changed event (its amount, its dice) no longer leads to the signed root.
        forged = answer.get_data(as_text=True).replace(
            "extra " + base64.b64encode(extra).decode(),
            "extra " + base64.b64encode(extra.replace(b'"version":', b'"version": ')).decode(),
        )
        with pytest.raises(Rejected, match="does not lead"):
            read_tlog_proof(forged, VERIFIER.text(), witnesses)


def test_a_tlog_proof_goes_to_those_who_may_see_the_event(api: Api) -> None:
    bank = play(api)
    events = bank.ok("get", "/events", query_string={"limit": 500})["items"]
    bobs = next(e["position"] for e in events if e["stream"] == "account:player:bob")
    assert _tlog_proof(api.client("player", "bob"), bobs).status_code == 200
    assert _tlog_proof(api.client("auditor", "a"), bobs).status_code == 200
    refused = problem(_tlog_proof(api.client("player", "ann"), bobs), 403)
    assert f"position {bobs}" in refused["detail"]
    assert problem(_tlog_proof(api.client(None), bobs), 401)["type"] == (
        "urn:hazard:unauthenticated"
    )
    assert (
        problem(_tlog_proof(bank, 10_000), 404)["detail"] == "there is no event at position 10000"
    )
    for query in ({}, {"position": 0}, {"position": "x"}, {"position": 1, "size": 1}):
        answer = bank.get("/log/proofs/tlog-proof", query_string=query)
        assert problem(answer, 422)["type"] == "urn:hazard:validation", query


# -- gossip ---------------------------------------------------------------------------------


def _rows(api: Api) -> int:
    with api.book.store.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(gossip)).scalar_one())


def test_gossip_keeps_one_report_per_tree_the_log_signed(api: Api) -> None:
    anyone = api.client(None)
    sizes = _sizes(api.client())
    note = anyone.ok("get", f"/log/checkpoints/{sizes[0]}")["checkpoint"]
    first = anyone.post("/log/gossip", json={"note": note, "reported_by": "treasurer"})
    assert first.status_code == 201, first.get_json()
    report = first.get_json()["report"]
    assert first.get_json()["new"] and report["note"] == note and report["size"] == sizes[0]
    assert report["reported_by"] == "treasurer"
    # Again, and with a witness's line added: the same tree, the same report.
    text = note[: note.rindex("\n\n") + 1]
    cosigned = note + TREASURER.cosign(text, 1_800_000_000).line()
    for again in (note, cosigned):
        answer = api.client("player", "ann").post("/log/gossip", json={"note": again})
        assert answer.status_code == 200 and answer.get_json() == {"report": report, "new": False}
    # A fork: another tree of the same size, signed by the log's key, is kept beside it.
    other = Checkpoint.issued(ORIGIN, sizes[0], hashlib.sha256(b"fork").digest(),
                              open_checkpoint(note, [VERIFIER]).time)  # fmt: skip
    fork = anyone.post("/log/gossip", json={"note": sign_checkpoint(other, SIGNER)})
    assert fork.status_code == 201
    listed = anyone.ok("get", "/log/gossip")
    assert [(r["size"], r["root"]) for r in listed["items"]] == [
        (sizes[0], report["root"]), (sizes[0], other.root.hex())
    ]  # fmt: skip
    assert listed["next_after"] is None
    page = anyone.ok("get", "/log/gossip", query_string={"limit": 1})
    assert page["items"] == listed["items"][:1] and page["next_after"] == report["id"]
    rest = anyone.ok("get", "/log/gossip", query_string={"after": page["next_after"]})
    assert rest["items"] == listed["items"][1:]
    assert _rows(api) == 2


def test_gossip_refuses_what_the_log_did_not_sign_and_keeps_nothing(api: Api) -> None:
    anyone = api.client(None)
    sizes = _sizes(api.client())
    note = anyone.ok("get", f"/log/checkpoints/{sizes[0]}")["checkpoint"]
    stranger = Signer.generate(ORIGIN)  # the log's name, another key
    checkpoint = open_checkpoint(note, [VERIFIER])
    text = note[: note.rindex("\n\n") + 1]
    refused = {
        "another key": sign_checkpoint(checkpoint, stranger),
        "a witness alone": text + "\n" + TREASURER.cosign(text, 1_800_000_000).line(),
        "changed": note.replace(f"\n{sizes[0]}\n", f"\n{sizes[0] + 1}\n"),
        "not a note": "hello",
        "empty": "",
        "a nul": note.replace("\n\n", "\n\x00\n"),
    }
    for what, body in refused.items():
        answer = anyone.post("/log/gossip", json={"note": body})
        found = problem(answer, 422)
        assert found["type"] == "urn:hazard:validation" and "note" in found["errors"], what
    for by in ("a\x00b", "x" * 201, "", "line\nbreak", 5):
        answer = anyone.post("/log/gossip", json={"note": note, "reported_by": by})
        assert "reported_by" in problem(answer, 422)["errors"], by
    assert problem(anyone.post("/log/gossip", json={"note": "x" * 20_000}), 422)
    assert _rows(api) == 0


# -- anyone, without a token; and the strangers' cap -----------------------------------------


def test_the_public_reads_take_no_token_and_the_rest_still_do(api: Api) -> None:
    anyone = api.client(None)
    sizes = _sizes(api.client())
    first, size = sizes[0], sizes[-1]
    for path in ("/log/key", "/log/checkpoint", f"/log/checkpoints/{size}", "/log/gossip",
                 f"/log/proofs/consistency?from={first}&to={size}",
                 "/log/proofs/inclusion?position=1",
                 f"/log/cosigned?size={size}"):  # fmt: skip
        assert anyone.get(path).status_code == 200, path
    for path in (
        "/events",
        "/players/ann/balance",
        "/tables/t1",
        "/log/proofs/tlog-proof?position=1",
    ):
        assert problem(anyone.get(path), 401)["type"] == "urn:hazard:unauthenticated", path
    # A worker reads the body of a request that may come without a token.
    app = api.app
    assert may_send_body(app, "POST", "/log/gossip", None)
    assert not may_send_body(app, "POST", "/players", None)


def test_strangers_share_a_few_places_and_the_club_keeps_the_rest(api: Api) -> None:
    _sizes(api.client())
    app = create_app(book=api.book, TESTING=True, ANONYMOUS_AT_ONCE=1)
    anyone = Client(app.test_client(), None)
    held = app.extensions["hazard.strangers"].hold()  # a stranger's request, running
    try:
        for path in ("/log/key", "/log/checkpoint", "/log/gossip"):
            crowded = anyone.get(path)
            assert problem(crowded, 503)["type"] == "urn:hazard:overloaded", path
            assert crowded.headers["Retry-After"].isdigit()
        posted = anyone.post("/log/gossip", json={"note": "x"})
        assert problem(posted, 503)["type"] == "urn:hazard:overloaded"
        bank = Client(app.test_client(), api.client().token)
        assert bank.get("/log/key").status_code == 200  # a token's requests are not in it
    finally:
        held()
    assert anyone.get("/log/key").status_code == 200
