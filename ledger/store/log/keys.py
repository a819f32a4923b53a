"""The club's signing key, in the key strings of the C2SP signed-note format.

A verifier key is public: `<name>+<key id hex>+<base64(0x01 || public key)>`. A signer
key is the secret that signs checkpoints: `PRIVATE+KEY+<name>+<key id hex>+<base64(0x01
|| seed)>`, the 32-byte Ed25519 seed of RFC 8032. Both are the strings Go's
`golang.org/x/mod/sumdb/note` reads (`NewVerifier`, `NewSigner`), so a standard tool can
check what this ledger signs. The key id is

    SHA-256(name || 0x0A || 0x01 || 32-byte public key)[:4], big-endian   (signed-note)

The signer key lives in a file of its own, mode 0600; `load_signer` will not read one
that group or others may open, as ssh will not.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import os
import stat
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ED25519 = 0x01
"""The signature type byte of Ed25519 in signed-note (and the only one this ledger uses)."""

KEY_SIZE = 32
"""An Ed25519 public key and seed are both 32 bytes (RFC 8032)."""

_PRIVATE = "PRIVATE+KEY+"


class BadKey(ValueError):
    """A key string or key file that this code will not use; the message says why."""


def check_name(name: str) -> None:
    """A key name is non-empty and has no Unicode space and no plus (signed-note): a
    plus would split the key string, a space the signature line."""
    if not name:
        raise BadKey("a key name must not be empty")
    if any(c.isspace() or c == "+" or ord(c) < 0x20 for c in name):
        raise BadKey(f"key name {name!r} must have no spaces, control characters or '+'")


def key_id(name: str, public_key: bytes) -> int:
    """SHA-256(name || 0x0A || 0x01 || public key)[:4], read as a big-endian uint32."""
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def _decode(text: str, what: str) -> bytes:
    """Standard base64 (RFC 4648 section 4), padded, and in its one canonical spelling, so
    that a key string has exactly one text."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadKey(f"{what} is not base64: {text!r}") from None
    if base64.b64encode(raw).decode() != text:
        raise BadKey(f"{what} is not canonical base64: {text!r}")
    return raw


def key_material(text: str, what: str, kind: int = ED25519) -> bytes:
    """The 32-byte key in `base64(type || key)`, refused unless its type is `kind`."""
    raw = _decode(text, what)
    if len(raw) != 1 + KEY_SIZE:
        raise BadKey(f"{what} must be 33 bytes (type byte and key), got {len(raw)}")
    if raw[0] != kind:
        raise BadKey(f"{what} has signature type {raw[0]:#04x}, not {kind:#04x}")
    return raw[1:]


def check_id(text: str, expected: int, name: str) -> int:
    """The key id's 8 hex digits, refused unless they are `expected`, the id that the
    name and key give."""
    if len(text) != 8 or any(c not in "0123456789abcdef" for c in text):
        raise BadKey(f"key id {text!r} must be 8 lowercase hex digits")
    if int(text, 16) != expected:
        raise BadKey(f"key id {text} does not match the key named {name!r}")
    return expected


@dataclasses.dataclass(frozen=True)
class Verifier:
    """A public key that checks signatures made under `name`."""

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
        return key_id(self.name, self.public_key)

    def text(self) -> str:
        """`<name>+<key id hex>+<base64(0x01 || public key)>`"""
        material = base64.b64encode(bytes([ED25519]) + self.public_key).decode()
        return f"{self.name}+{self.key_id:08x}+{material}"

    @classmethod
    def parse(cls, vkey: str) -> Verifier:
        parts = vkey.strip().split("+", 2)  # base64 may hold "+"
        if len(parts) != 3:
            raise BadKey("a verifier key is '<name>+<key id hex>+<base64 key>'")
        name, hex_id, material = parts
        check_name(name)
        public_key = key_material(material, "the verifier key")
        check_id(hex_id, key_id(name, public_key), name)
        return cls(name, public_key)

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            self._key.verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclasses.dataclass(frozen=True)
class Signer:
    """A private key that signs under `name`. Its repr never shows the seed."""

    name: str
    seed: bytes = dataclasses.field(repr=False)
    _key: Ed25519PrivateKey = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_name(self.name)
        if len(self.seed) != KEY_SIZE:
            raise BadKey(f"an Ed25519 seed is {KEY_SIZE} bytes, not {len(self.seed)}")
        object.__setattr__(self, "_key", Ed25519PrivateKey.from_private_bytes(self.seed))

    @classmethod
    def generate(cls, name: str) -> Signer:
        seed = os.urandom(KEY_SIZE)
        return cls(name, seed)

    @property
    def verifier(self) -> Verifier:
        public = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return Verifier(self.name, public)

    @property
    def key_id(self) -> int:
        return self.verifier.key_id

    def text(self) -> str:
        """`PRIVATE+KEY+<name>+<key id hex>+<base64(0x01 || seed)>`: a secret."""
        material = base64.b64encode(bytes([ED25519]) + self.seed).decode()
        return f"{_PRIVATE}{self.name}+{self.key_id:08x}+{material}"

    @classmethod
    def parse(cls, skey: str) -> Signer:
        # Error messages never quote the string: it is a secret.
        if not skey.startswith(_PRIVATE):
            raise BadKey("a signer key starts with 'PRIVATE+KEY+'")
        parts = skey.removeprefix(_PRIVATE).split("+", 2)
        if len(parts) != 3:
            raise BadKey("a signer key is 'PRIVATE+KEY+<name>+<key id hex>+<base64 seed>'")
        name, hex_id, material = parts
        check_name(name)
        try:
            seed = key_material(material, "the signer key")
        except BadKey:
            raise BadKey("the signer key's key material is not 0x01 and a 32-byte seed") from None
        signer = cls(name, seed)
        # The id names the public key, which only the seed yields: check it after.
        check_id(hex_id, signer.key_id, name)
        return signer

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature (RFC 8032: deterministic, so the same message
        and key always give the same bytes)."""
        return self._key.sign(message)


def create_key(path: Path | str, name: str) -> str:
    """Make a new signer key at `path` and return its verifier key, to publish."""
    signer = Signer.generate(name)
    write_secret(path, signer.text())
    return signer.verifier.text()


def write_secret(path: Path | str, secret: str) -> None:
    """Write `secret` (a signer's or a witness's key) to a new file at `path`.

    The file is created with O_EXCL and mode 0600 in one call, so it is never open to
    others, not even between creating and chmod; an existing file is never replaced
    (replacing a key would orphan every checkpoint it signed)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise BadKey(f"{path} already exists; a key file is never overwritten") from None
    try:
        # The umask can only take bits away from 0600; this makes the mode exact.
        os.fchmod(fd, 0o600)
        os.write(fd, (secret + "\n").encode())
    finally:
        os.close(fd)


def read_secret(path: Path | str) -> str:
    """The key in the file at `path`, refused if group or others may open the file."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise BadKey(f"no key file at {path}") from None
    with os.fdopen(fd, encoding="utf-8") as file:
        # fstat of the open file, not stat of the path: the file read is the file checked.
        mode = stat.S_IMODE(os.fstat(file.fileno()).st_mode)
        if mode & 0o077:
            raise BadKey(
                f"{path} has mode {mode:04o}: a key file must be open to its owner only "
                f"(chmod 600 {path})"
            )
        text = file.read()
    return text.removesuffix("\n")


def load_signer(path: Path | str) -> Signer:
    """The signer key in `path`, refused if group or others may open the file."""
    text = read_secret(path)
    try:
        return Signer.parse(text)
    except BadKey as e:
        raise BadKey(f"{path}: {e}") from None
