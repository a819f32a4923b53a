"""Witness cosignatures (ledger.store.log.cosignature), held to c2sp.org/tlog-cosignature
as its text reads, with hashlib and the `cryptography` package alone on the other side."""

from __future__ import annotations

import base64
import hashlib
import struct

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.store.log.checkpoint import BadSignature, Checkpoint, parse_note, sign_checkpoint
from ledger.store.log.cosignature import (
    Cosigner,
    WitnessKey,
    cosignatures,
    with_signatures,
)
from ledger.store.log.keys import BadKey, Signer

SEED = bytes(range(32))
LOG = Signer("example.com/behind-the-sofa", bytes(32))


def note(size: int = 20852163) -> str:
    checkpoint = Checkpoint(LOG.name, size, hashlib.sha256(b"root %d" % size).digest())
    return sign_checkpoint(checkpoint, LOG)


def spec_line(name: str, seed: bytes, text: str, timestamp: int) -> str:
    """A cosignature line made from the spec's words alone."""
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    key_id = hashlib.sha256(name.encode() + b"\n" + b"\x04" + public).digest()[:4]
    signed = b"cosignature/v1\n" + f"time {timestamp}\n".encode() + text.encode()
    blob = key_id + struct.pack(">Q", timestamp) + private.sign(signed)
    return f"\u2014 {name} {base64.b64encode(blob).decode()}\n"


def test_a_cosignature_is_the_specs_bytes() -> None:
    cosigner = Cosigner("witness.example.com/w1", SEED)
    text, _ = parse_note(note())
    assert cosigner.cosign(text, 1679315147).line() == spec_line(
        cosigner.name, SEED, text, 1679315147
    )


def test_a_cosignature_made_by_the_spec_verifies_and_gives_its_time() -> None:
    key = Cosigner("witness.example.com/w1", SEED).key
    signed = note()
    text, _ = parse_note(signed)
    cosigned = signed + spec_line(key.name, SEED, text, 1700000000)
    assert cosignatures(cosigned, [key]) == {key: 1700000000}


def test_the_witness_key_string_is_type_0x04_and_round_trips() -> None:
    key = Cosigner("witness.example.com/w1", SEED).key
    raw = base64.b64decode(key.text().split("+", 2)[2])
    assert raw[0] == 0x04 and raw[1:] == key.public_key
    assert WitnessKey.parse(key.text()) == key
    assert Cosigner.parse(Cosigner("w", SEED).text()) == Cosigner("w", SEED)
    # A log's key (0x01) is not a witness key, nor the other way round.
    with pytest.raises(BadKey):
        WitnessKey.parse(LOG.verifier.text())


def test_a_cosignature_over_other_bytes_or_by_a_forged_key_is_refused() -> None:
    cosigner = Cosigner("witness.example.com/w1", SEED)
    signed = note()
    text, _ = parse_note(signed)
    other_text, _ = parse_note(note(20852164))
    moved = signed + cosigner.cosign(other_text, 1700000000).line()
    with pytest.raises(BadSignature):
        cosignatures(moved, [cosigner.key])
    # The same seed under the log's type byte is another key id: a note signature
    # (0x01) of the checkpoint by the witness's seed is never taken for a cosignature.
    as_log = Signer(cosigner.name, SEED)
    line = (
        f"\u2014 {as_log.name} "
        + base64.b64encode(as_log.key_id.to_bytes(4, "big") + as_log.sign(text.encode())).decode()
    )
    assert cosignatures(signed + line + "\n", [cosigner.key]) == {}


def test_lines_by_unknown_keys_are_ignored_and_signatures_merge_once() -> None:
    one, two = Cosigner("w1.example", SEED), Cosigner("w2.example", bytes(31) + b"\x01")
    signed = note()
    text, _ = parse_note(signed)
    line_one, line_two = one.cosign(text, 5), two.cosign(text, 6)
    merged = with_signatures(with_signatures(signed, [line_one]), [line_two, line_one])
    assert merged.count("\u2014 w1.example ") == 1
    assert cosignatures(merged, [two.key]) == {two.key: 6}
    assert cosignatures(merged, [one.key, two.key]) == {one.key: 5, two.key: 6}


def test_a_timestamp_of_zero_is_never_signed() -> None:
    with pytest.raises(ValueError):
        Cosigner("w", SEED).cosign(parse_note(note())[0], 0)


def test_a_cosignature_of_time_zero_is_not_taken() -> None:
    """tlog-witness: a witness's timestamp MUST NOT be zero; a line that signs time 0
    verifies as Ed25519 but makes no statement, and counts for no quorum."""
    key = Cosigner("witness.example.com/w1", SEED).key
    signed = note()
    text, _ = parse_note(signed)
    with pytest.raises(BadSignature):
        cosignatures(signed + spec_line(key.name, SEED, text, 0), [key])
