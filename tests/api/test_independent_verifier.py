"""The log's checkpoints and proofs, checked by a verifier written here from the specs
alone, as a client of the HTTP API would write it: RFC 9162 (section 2.1: the tree,
2.1.3.2: checking an inclusion proof, 2.1.4.2: a consistency proof) and C2SP's
signed-note and tlog-checkpoint formats, with hashlib, base64, json and the
`cryptography` package. Nothing of the project checks anything here: the app only
answers (the `api` fixture: SQLite and PostgreSQL), and a verifier that shared the
server's code would share its mistakes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from tests.api.conftest import Api, Client
from tests.api.readkit import play


class Rejected(Exception):
    """What the verifier does not accept."""


# -- C2SP signed-note and tlog-checkpoint -------------------------------------------------


@dataclass(frozen=True)
class Vkey:
    name: str
    key_id: bytes
    public: Ed25519PublicKey


def _key_id(name: str, public: bytes) -> bytes:
    # signed-note: key ID = SHA-256(key name || 0x0A || signature type || public key)[:4],
    # and Ed25519's signature type is 0x01.
    return hashlib.sha256(name.encode() + b"\n" + b"\x01" + public).digest()[:4]


def parse_vkey(text: str) -> Vkey:
    """`<name>+<key id, 8 hex>+<base64(0x01 || 32-byte Ed25519 public key)>`"""
    name, hex_id, material = text.split("+", 2)
    raw = base64.b64decode(material, validate=True)
    if len(raw) != 33 or raw[0] != 0x01:
        raise Rejected("not an Ed25519 verifier key")
    if bytes.fromhex(hex_id) != _key_id(name, raw[1:]):
        raise Rejected("the key id does not match the key")
    return Vkey(name, bytes.fromhex(hex_id), Ed25519PublicKey.from_public_bytes(raw[1:]))


def open_note(note: str, key: Vkey) -> str:
    """The text of a signed note, once a signature by `key` over it checks."""
    # The text ends in a newline; a blank line; then signature lines, each
    # "— <name> <base64(key id (4 bytes) || signature)>".
    text, sep, signatures = note.rpartition("\n\n")
    if not sep or not note.endswith("\n"):
        raise Rejected("not a signed note")
    text += "\n"
    for line in signatures.splitlines():
        dash, name, blob = line.split(" ")
        if dash != "\u2014":
            raise Rejected("a signature line starts with an em dash")
        raw = base64.b64decode(blob, validate=True)
        if name != key.name or raw[:4] != key.key_id:
            continue  # someone else's signature
        try:
            key.public.verify(raw[4:], text.encode())
        except InvalidSignature:
            raise Rejected("the signature does not verify") from None
        return text
    raise Rejected("no signature by the key")


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes


def open_checkpoint(note: str, key: Vkey) -> Checkpoint:
    """tlog-checkpoint: origin, decimal size, base64 root hash, then extension lines."""
    lines = open_note(note, key).split("\n")
    origin, size, root = lines[0], lines[1], base64.b64decode(lines[2], validate=True)
    if origin != key.name or not size.isdigit() or len(root) != 32:
        raise Rejected("not a checkpoint of this log")
    return Checkpoint(origin, int(size), root)


# -- RFC 9162 -------------------------------------------------------------------------


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def leaf_of(event: dict[str, Any]) -> bytes:
    """SHA-256(0x00 || the event's canonical record): every column GET /events gives
    but the two chain hashes, as JSON with sorted keys, no spaces, UTF-8."""
    record = {k: v for k, v in event.items() if k not in ("prev_hash", "hash")}
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(b"\x00" + text.encode()).digest()


def mth(leaves: list[bytes]) -> bytes:
    """MTH (2.1.1), by its definition."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return _node(mth(leaves[:k]), mth(leaves[k:]))


def check_inclusion(leaf_index: int, tree_size: int, leaf: bytes, path: list[bytes],
                    root: bytes) -> None:  # fmt: skip
    """RFC 9162, 2.1.3.2, step by step."""
    if leaf_index >= tree_size:
        raise Rejected("the leaf is outside the tree")
    fn, sn, r = leaf_index, tree_size - 1, leaf
    for p in path:
        if sn == 0:
            raise Rejected("the path is too long")
        if fn & 1 or fn == sn:
            r = _node(p, r)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = _node(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or r != root:
        raise Rejected("the inclusion proof does not lead to the root")


def check_consistency(first: int, second: int, first_hash: bytes, second_hash: bytes,
                      path: list[bytes]) -> None:  # fmt: skip
    """RFC 9162, 2.1.4.2, step by step (equal sizes: an empty proof, equal roots)."""
    if first == second:
        if path or first_hash != second_hash:
            raise Rejected("equal sizes prove only equal roots, with no proof")
        return
    if not 0 < first < second or not path:
        raise Rejected("no consistency proof between those sizes")
    if first & (first - 1) == 0:  # an exact power of 2
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Rejected("the proof is too long")
        if fn & 1 or fn == sn:
            fr, sr = _node(c, fr), _node(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = _node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or fr != first_hash or sr != second_hash:
        raise Rejected("the consistency proof does not join the two roots")


# -- the log, as a client sees it ----------------------------------------------------------


def _hashes(hexes: list[str]) -> list[bytes]:
    return [bytes.fromhex(h) for h in hexes]


def _checkpoints(client: Client, size: int) -> list[int]:
    """The sizes of every checkpoint the log has signed, up to `size`."""
    return [n for n in range(1, size + 1) if client.get(f"/log/checkpoints/{n}").status_code == 200]


@pytest.fixture
def log(api: Api) -> tuple[Client, Vkey, list[dict[str, Any]], list[int]]:
    """A played log: the auditor's client, the key, every event, every checkpoint size."""
    play(api)
    auditor = api.client("auditor", "a")
    key = parse_vkey(auditor.ok("get", "/log/key")["key"])
    events = auditor.ok("get", "/events", query_string={"limit": 500})["items"]
    sizes = _checkpoints(auditor, len(events))
    assert sizes[-1] == len(events) and len(sizes) > 20
    return auditor, key, events, sizes


def test_every_checkpoint_is_signed_and_its_root_is_the_tree_of_the_events(log: Any) -> None:
    auditor, key, events, sizes = log
    leaves = [leaf_of(e) for e in events]
    for size in sizes:
        served = auditor.ok("get", f"/log/checkpoints/{size}")
        checkpoint = open_checkpoint(served["checkpoint"], key)
        assert checkpoint.size == served["size"] == size
        assert checkpoint.root == mth(leaves[:size]) == bytes.fromhex(served["root"])
    latest = open_checkpoint(auditor.ok("get", "/log/checkpoint")["checkpoint"], key)
    assert latest.size == len(events)


def test_inclusion_proofs_of_every_event_check(log: Any) -> None:
    auditor, key, events, sizes = log
    for size in (sizes[0], sizes[len(sizes) // 3], sizes[len(sizes) // 2], sizes[-1]):
        for position in range(1, size + 1):
            body = auditor.ok("get", "/log/proofs/inclusion",
                              query_string={"position": position, "size": size})  # fmt: skip
            checkpoint = open_checkpoint(body["checkpoint"]["checkpoint"], key)
            assert checkpoint.size == size
            leaf = leaf_of(events[position - 1])  # from /events, not from the proof
            assert bytes.fromhex(body["leaf_hash"]) == leaf
            check_inclusion(position - 1, size, leaf, _hashes(body["proof"]), checkpoint.root)


def test_consistency_proofs_between_many_checkpoints_check(log: Any) -> None:
    auditor, key, _, sizes = log
    some = [*sizes[:: max(1, len(sizes) // 12)], sizes[-1]]
    pairs = {(a, b) for a in some for b in some if a <= b}
    pairs |= {(a, sizes[-1]) for a in sizes}  # every receipt against today's log
    for first, second in sorted(pairs):
        body = auditor.ok("get", "/log/proofs/consistency",
                          query_string={"from": first, "to": second})  # fmt: skip
        old = open_checkpoint(body["old"]["checkpoint"], key)
        new = open_checkpoint(body["new"]["checkpoint"], key)
        assert (old.size, new.size) == (first, second)
        check_consistency(first, second, old.root, new.root, _hashes(body["proof"]))


def test_a_changed_leaf_proof_root_or_signature_fails(log: Any) -> None:
    """The verifier is not one that accepts anything: each change is caught."""
    auditor, key, events, sizes = log
    size = sizes[-1]
    position = size // 2
    body = auditor.ok("get", "/log/proofs/inclusion",
                      query_string={"position": position, "size": size})  # fmt: skip
    note = body["checkpoint"]["checkpoint"]
    checkpoint = open_checkpoint(note, key)
    path, leaf = _hashes(body["proof"]), leaf_of(events[position - 1])
    check_inclusion(position - 1, size, leaf, path, checkpoint.root)

    changed = dict(events[position - 1], actor="setter:someone-else")
    flipped = bytes([path[0][0] ^ 1]) + path[0][1:]
    older = open_checkpoint(auditor.ok("get", f"/log/checkpoints/{sizes[-2]}")["checkpoint"], key)
    root = checkpoint.root
    for args in (
        (position - 1, size, leaf_of(changed), path, root),  # a changed event
        (position, size, leaf, path, root),  # another position
        (position - 1, size, leaf, [flipped, *path[1:]], root),  # a changed proof
        (position - 1, size, leaf, path[:-1], root),  # a hash left out
        (position - 1, size, leaf, [*path, path[-1]], root),  # a hash too many
        (position - 1, size, leaf, path, older.root),  # another tree's root
        (size, size, leaf, path, root),  # a leaf past the tree
    ):
        with pytest.raises(Rejected):
            check_inclusion(*args)

    first = sizes[len(sizes) // 3]
    consistency = auditor.ok("get", "/log/proofs/consistency",
                             query_string={"from": first, "to": size})  # fmt: skip
    old = open_checkpoint(consistency["old"]["checkpoint"], key)
    proof = _hashes(consistency["proof"])
    check_consistency(first, size, old.root, checkpoint.root, proof)
    other_root = bytes([old.root[0] ^ 1]) + old.root[1:]
    for first_hash, second_hash, bad in (
        (other_root, checkpoint.root, proof),  # a rewritten past
        (old.root, other_root, proof),  # a rewritten present
        (old.root, checkpoint.root, [bytes(32), *proof[1:]]),  # a changed proof
        (old.root, checkpoint.root, proof[:-1]),  # a hash left out
    ):
        with pytest.raises(Rejected):
            check_consistency(first, size, first_hash, second_hash, bad)

    # A note changed anywhere, or signed by another key, does not open.
    lines = note.split("\n")
    resized = "\n".join([lines[0], str(size + 1), *lines[2:]])
    rerooted = "\n".join([*lines[:2], base64.b64encode(other_root).decode(), *lines[3:]])
    for bad_note in (resized, rerooted):
        with pytest.raises(Rejected, match="does not verify"):
            open_checkpoint(bad_note, key)
    stranger = Ed25519PrivateKey.generate()
    public = stranger.public_key().public_bytes_raw()
    forged_key = Vkey(key.name, key.key_id, stranger.public_key())
    with pytest.raises(Rejected, match="does not verify"):
        open_checkpoint(note, forged_key)
    text = note.rpartition("\n\n")[0] + "\n"
    signature = base64.b64encode(_key_id(key.name, public) + stranger.sign(text.encode()))
    forged = f"{text}\n\u2014 {key.name} {signature.decode()}\n"
    with pytest.raises(Rejected, match="no signature by the key"):
        open_checkpoint(forged, key)
    vkey = f"{key.name}+{_key_id(key.name, public).hex()}+"
    vkey += base64.b64encode(b"\x01" + public).decode()
    assert open_checkpoint(forged, parse_vkey(vkey)).size == size  # its own key opens it
    with pytest.raises(Rejected, match="key id"):
        parse_vkey(f"{key.name}+{key.key_id.hex()}+" + base64.b64encode(b"\x01" + public).decode())
