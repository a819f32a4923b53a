"""Witness cosignatures: c2sp.org/tlog-cosignature, `cosignature/v1` with Ed25519.

A witness that has checked a checkpoint consistent with everything it cosigned before
adds a signature line of its own to the checkpoint's signed note:

    — <witness name> base64(key id || timestamp || signature)

    key id     SHA-256(name || 0x0A || 0x04 || 32-byte public key)[:4]
    timestamp  the POSIX time it cosigned, a big-endian uint64
    signature  Ed25519 over  "cosignature/v1\\n" "time <timestamp>\\n" <the checkpoint's text>

so a cosignature says "as of that time, this is the largest tree of this log I have
seen, and every tree I saw before it is a prefix of it". The type byte 0x04 keeps a
witness key apart from a log's (0x01): the same bytes under the other type never verify.
The spec also defines ML-DSA-44 cosignatures; Ed25519 is what every tool reads today,
and what the `cryptography` package signs.

A witness key is written as a log key is (ledger.store.log.keys), with its type byte:
`<name>+<key id hex>+<base64(0x04 || public key)>`, and its secret
`PRIVATE+KEY+<name>+<key id hex>+<base64(0x04 || seed)>`.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
from collections.abc import Iterable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.store.log.checkpoint import BadSignature, NoteSignature, parse_note
from ledger.store.log.keys import KEY_SIZE, BadKey, check_id, check_name, key_material

COSIGNATURE_V1 = 0x04
"""The signature type byte of an Ed25519 cosignature/v1 key (tlog-cosignature)."""

HEADER = b"cosignature/v1\n"
MAX_TIMESTAMP = 2**63 - 1
_PRIVATE = "PRIVATE+KEY+"


def witness_key_id(name: str, public_key: bytes) -> int:
    """SHA-256(name || 0x0A || 0x04 || public key)[:4], a big-endian uint32."""
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([COSIGNATURE_V1]) + public_key)
    return int.from_bytes(digest.digest()[:4], "big")


def message(text: str, timestamp: int) -> bytes:
    """What a cosignature signs: the header, the time line, then the checkpoint's text
    (its note text, with its final newline and without any signature)."""
    return HEADER + b"time %d\n" % timestamp + text.encode("utf-8")


@dataclasses.dataclass(frozen=True)
class WitnessKey:
    """A witness's public key: checks the cosignatures made under `name`."""

    name: str
    public_key: bytes
    _key: Ed25519PublicKey = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_name(self.name)
        if len(self.public_key) != KEY_SIZE:
            raise BadKey(f"an Ed25519 public key is {KEY_SIZE} bytes, not {len(self.public_key)}")
        object.__setattr__(self, "_key", Ed25519PublicKey.from_public_bytes(self.public_key))

    @property
    def key_id(self) -> int:
        return witness_key_id(self.name, self.public_key)

    def text(self) -> str:
        """`<name>+<key id hex>+<base64(0x04 || public key)>`"""
        material = base64.b64encode(bytes([COSIGNATURE_V1]) + self.public_key).decode()
        return f"{self.name}+{self.key_id:08x}+{material}"

    @classmethod
    def parse(cls, vkey: str) -> WitnessKey:
        parts = vkey.strip().split("+", 2)
        if len(parts) != 3:
            raise BadKey("a witness key is '<name>+<key id hex>+<base64 key>'")
        name, hex_id, material = parts
        check_name(name)
        public_key = key_material(material, "the witness key", COSIGNATURE_V1)
        check_id(hex_id, witness_key_id(name, public_key), name)
        return cls(name, public_key)

    def matches(self, signature: NoteSignature) -> bool:
        """Whether the line claims to be this key's: its name and key id."""
        return signature.name == self.name and signature.key_id == self.key_id

    def timestamp(self, text: str, signature: NoteSignature) -> int | None:
        """The time of this key's cosignature `signature` on the checkpoint `text`, or
        None when it does not verify (or is not 8 + 64 bytes)."""
        blob = signature.signature
        if len(blob) != 8 + 64:
            return None
        timestamp = int.from_bytes(blob[:8], "big")
        # tlog-witness: the timestamp MUST NOT be zero (a cosignature of zero time makes
        # no statement that this was the largest tree the witness had seen).
        if not 0 < timestamp <= MAX_TIMESTAMP:
            return None
        try:
            self._key.verify(blob[8:], message(text, timestamp))
        except InvalidSignature:
            return None
        return timestamp


@dataclasses.dataclass(frozen=True)
class Cosigner:
    """A witness's private key. Its repr never shows the seed."""

    name: str
    seed: bytes = dataclasses.field(repr=False)
    _key: Ed25519PrivateKey = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_name(self.name)
        if len(self.seed) != KEY_SIZE:
            raise BadKey(f"an Ed25519 seed is {KEY_SIZE} bytes, not {len(self.seed)}")
        object.__setattr__(self, "_key", Ed25519PrivateKey.from_private_bytes(self.seed))

    @classmethod
    def generate(cls, name: str) -> Cosigner:
        return cls(name, os.urandom(KEY_SIZE))

    @property
    def key(self) -> WitnessKey:
        public = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return WitnessKey(self.name, public)

    def text(self) -> str:
        """`PRIVATE+KEY+<name>+<key id hex>+<base64(0x04 || seed)>`: a secret."""
        material = base64.b64encode(bytes([COSIGNATURE_V1]) + self.seed).decode()
        return f"{_PRIVATE}{self.name}+{self.key.key_id:08x}+{material}"

    @classmethod
    def parse(cls, skey: str) -> Cosigner:
        # Error messages never quote the string: it is a secret.
        if not skey.startswith(_PRIVATE):
            raise BadKey("a witness's secret key starts with 'PRIVATE+KEY+'")
        parts = skey.removeprefix(_PRIVATE).split("+", 2)
        if len(parts) != 3:
            raise BadKey("a witness's secret key is 'PRIVATE+KEY+<name>+<key id hex>+<base64>'")
        name, hex_id, material = parts
        check_name(name)
        try:
            seed = key_material(material, "the witness's secret key", COSIGNATURE_V1)
        except BadKey:
            raise BadKey("the witness's secret key is not 0x04 and a 32-byte seed") from None
        cosigner = cls(name, seed)
        check_id(hex_id, cosigner.key.key_id, name)
        return cosigner

    def cosign(self, text: str, timestamp: int) -> NoteSignature:
        """This witness's cosignature of the checkpoint `text` at `timestamp`, which
        the spec requires to be non-zero."""
        if not 0 < timestamp <= MAX_TIMESTAMP:
            raise ValueError(f"a cosignature's timestamp must be 1 to 2^63-1, not {timestamp}")
        signature = self._key.sign(message(text, timestamp))
        return NoteSignature(self.name, self.key.key_id, timestamp.to_bytes(8, "big") + signature)


def cosignatures(note: str | bytes, witnesses: Iterable[WitnessKey]) -> dict[WitnessKey, int]:
    """The witnesses among `witnesses` that cosigned `note`, each with its timestamp.

    As signed-note asks: lines by keys not listed are ignored, and a line that names a
    listed key but does not verify makes the whole note bad (BadSignature), for it
    can only be a forgery or a corruption."""
    text, signatures = parse_note(note)
    found: dict[WitnessKey, int] = {}
    for witness in witnesses:
        for signature in signatures:
            if not witness.matches(signature):
                continue
            timestamp = witness.timestamp(text, signature)
            if timestamp is None:
                raise BadSignature(
                    f"the cosignature by {witness.name}+{witness.key_id:08x} does not verify"
                )
            found[witness] = max(timestamp, found.get(witness, 0))
    return found


def with_signatures(note: str, lines: Iterable[NoteSignature]) -> str:
    """`note` with `lines` added after its own signatures, each line once."""
    text, signatures = parse_note(note)
    kept = list(signatures)
    for line in lines:
        if line not in kept:
            kept.append(line)
    return text + "\n" + "".join(s.line() for s in kept)
