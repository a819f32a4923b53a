"""A witness written from the C2SP texts alone, to push the ledger's checkpoints to:
tlog-witness (the add-checkpoint call), tlog-cosignature (Ed25519 cosignature/v1),
signed-note and tlog-checkpoint, and RFC 9162's consistency proofs (2.1.4.2; RFC
6962's 2.1.2, as tlog-witness cites it). The standard library and the `cryptography`
package, nothing of the project: a witness that shared the ledger's code would share
its mistakes (tests/api/test_independent_witness.py holds this module to that).

    witness = IndependentWitness(log_vkey)     # the one log it follows, by its vkey
    witness.start()                            # http.server, a thread of the test
    ... the ledger pushes to witness.url ...
    witness.cosigned_at(note)                  # its own cosignature on `note`, checked
"""

from __future__ import annotations

import base64
import hashlib
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

DASH = "\u2014"  # signed-note: each signature line starts with an em dash and a space
ED25519 = 0x01  # signed-note's signature type of a log's Ed25519 key
COSIGNATURE_V1 = 0x04  # tlog-cosignature's, for timestamped Ed25519 cosignatures
EMPTY_ROOT = hashlib.sha256(b"").digest()  # RFC 6962 2.1: the empty tree's hash
MAX_BODY = 64 * 1024


class Refused(Exception):
    """A request the witness does not cosign, with the status tlog-witness gives it."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


# -- signed-note ----------------------------------------------------------------------


def key_id(name: str, kind: int, public: bytes) -> bytes:
    # key ID = SHA-256(key name || 0x0A || signature type || public key)[:4]
    return hashlib.sha256(name.encode() + b"\n" + bytes([kind]) + public).digest()[:4]


@dataclass(frozen=True)
class Key:
    name: str
    kind: int
    public: bytes

    @property
    def id(self) -> bytes:
        return key_id(self.name, self.kind, self.public)

    def text(self) -> str:
        # <key name>+hex(key ID)+base64(signature type || public key)
        material = base64.b64encode(bytes([self.kind]) + self.public).decode()
        return f"{self.name}+{self.id.hex()}+{material}"

    @classmethod
    def parse(cls, text: str, kind: int) -> Key:
        name, hex_id, material = text.strip().split("+", 2)
        raw = base64.b64decode(material, validate=True)
        if len(raw) != 33 or raw[0] != kind:
            raise ValueError(f"not an Ed25519 key of signature type {kind:#04x}: {text}")
        key = cls(name, kind, raw[1:])
        if bytes.fromhex(hex_id) != key.id:
            raise ValueError(f"the key ID is not the key's: {text}")
        return key

    def verifies(self, signature: bytes, message: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except InvalidSignature:
            return False
        return True


def split_note(note: str) -> tuple[str, list[tuple[str, bytes]]]:
    """The text (with its final newline) and the (key name, base64-decoded blob) of each
    signature line: the text is separated from them by the note's last blank line."""
    if any(ch < " " and ch != "\n" for ch in note) or not note.endswith("\n"):
        raise ValueError("not a signed note: control characters, or no final newline")
    text, blank, signatures = note.rpartition("\n\n")
    if not blank or not text:
        raise ValueError("not a signed note: no blank line before the signatures")
    lines = []
    for line in signatures.removesuffix("\n").split("\n"):
        dash, name, blob = line.split(" ")  # "— <key name> base64(key ID || signature)"
        if dash != DASH or not name:
            raise ValueError(f"not a signature line: {line!r}")
        lines.append((name, base64.b64decode(blob, validate=True)))
    return text + "\n", lines


def open_note(note: str, key: Key) -> str:
    """The note's text, once `key`'s signature over it verifies. Lines by other keys are
    ignored (same name or same ID is not enough: both must match); one by `key` that
    fails rejects the note."""
    text, lines = split_note(note)
    signed = False
    for name, blob in lines:
        if name != key.name or blob[:4] != key.id:
            continue
        if not key.verifies(blob[4:], text.encode()):
            raise Refused(403, "the log's signature does not verify")
        signed = True
    if not signed:
        raise Refused(403, "no signature by the log's trusted key")
    return text


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes


def parse_checkpoint(text: str) -> Checkpoint:
    """tlog-checkpoint: origin, decimal size with no leading zeroes, base64 root hash,
    then optional non-empty extension lines (the ledger's `time`), each line ending in a
    newline."""
    lines = text.removesuffix("\n").split("\n")
    if len(lines) < 3 or not all(lines):
        raise Refused(400, "a checkpoint is three or more non-empty lines")
    origin, size, root = lines[0], lines[1], base64.b64decode(lines[2], validate=True)
    if not (size.isascii() and size.isdigit() and size == str(int(size))) or len(root) != 32:
        raise Refused(400, "a checkpoint's size is decimal and its root 32 bytes")
    return Checkpoint(origin, int(size), root)


# -- RFC 9162, 2.1.4.2: verifying a consistency proof ------------------------------------


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()  # HASH(0x01 || left || right)


def consistent(first: int, second: int, first_hash: bytes, second_hash: bytes,
               path: list[bytes]) -> bool:  # fmt: skip
    """Whether `path` proves the tree of `second` leaves extends that of `first`
    (0 < first < second), the RFC's steps one by one."""
    if not path:  # 1
        return False
    if first & (first - 1) == 0:  # 2: first is an exact power of 2
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1  # 3
    while fn & 1:  # 4
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]  # 5
    for c in path[1:]:  # 6
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = _node(c, fr), _node(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = _node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == first_hash and sr == second_hash and sn == 0  # 7


# -- tlog-witness ----------------------------------------------------------------------


@dataclass(frozen=True)
class Push:
    """One add-checkpoint as the witness saw it; `proof` is how many hashes of a
    consistency proof it verified (0: none was needed, or it answered otherwise)."""

    old: int
    size: int
    status: int
    proof: int = 0


def parse_request(body: bytes) -> tuple[int, list[bytes], str]:
    """The old size, the proof's hashes and the note: `old N` line, proof lines, a blank
    line, the checkpoint; every line ending in a newline."""
    try:
        head, blank, note = body.decode().partition("\n\n")
        old_line, *proof_lines = head.split("\n")
        number = old_line.removeprefix("old ")
        if not blank or number == old_line or not number.isdigit() or number != str(int(number)):
            raise ValueError("the first line is `old <size>`")
        proof = [base64.b64decode(line, validate=True) for line in proof_lines]
    except ValueError as exc:  # UnicodeDecodeError and binascii.Error are ValueErrors
        raise Refused(400, f"malformed: {exc}") from None
    if len(proof) > 63 or any(len(h) != 32 for h in proof):
        raise Refused(400, "at most 63 proof lines, each a 32-byte hash")
    return int(number), proof, note


class IndependentWitness:
    """A witness of one log, named by its vkey (`log_key`), keeping the last size and
    root it cosigned (`size`, `root`), checked and updated under one lock."""

    def __init__(self, log_key: str, name: str = "independent.example/w") -> None:
        self.log = Key.parse(log_key, ED25519)
        self.name = name
        self.private = Ed25519PrivateKey.generate()
        public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.key = Key(name, COSIGNATURE_V1, public)
        self.size, self.root = 0, EMPTY_ROOT
        self.pushes: list[Push] = []
        self.said: list[str] = []  # each cosignature line it answered with
        self._state = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def hold(self, note: str) -> None:
        """Start from this checkpoint of the log, as if it had cosigned it (a witness
        restored from a backup, or whose answer was lost on the way)."""
        checkpoint = parse_checkpoint(open_note(note, self.log))
        with self._state:
            self.size, self.root = checkpoint.size, checkpoint.root

    def add_checkpoint(self, body: bytes) -> tuple[int, str, str]:
        """The status, content type and body add-checkpoint answers with."""
        old, size, verified = -1, -1, 0
        try:
            old, proof, note = parse_request(body)
            text, _ = split_note(note)
            if text.split("\n", 1)[0] != self.log.name:
                raise Refused(404, "a log this witness does not follow")
            checkpoint = parse_checkpoint(open_note(note, self.log))
            size = checkpoint.size
            if old > size:
                raise Refused(400, f"old {old} is past the checkpoint's size {size}")
            with self._state:
                if old != self.size:
                    self.pushes.append(Push(old, size, 409))
                    return 409, "text/x.tlog.size", f"{self.size}\n"
                verified = self._check(old, proof, checkpoint)
                line = self._cosign(text)
                self.size, self.root = size, checkpoint.root
        except Refused as refused:
            self.pushes.append(Push(old, size, refused.status))
            return refused.status, "text/plain", f"{refused}\n"
        except ValueError as malformed:
            self.pushes.append(Push(old, size, 400))
            return 400, "text/plain", f"malformed: {malformed}\n"
        self.pushes.append(Push(old, size, 200, verified))
        self.said.append(line)
        return 200, "text/plain", line

    def _check(self, old: int, proof: list[bytes], checkpoint: Checkpoint) -> int:
        """How many proof hashes verified; or Refused(422)."""
        if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
            raise Refused(422, "size 0 with a root other than the empty tree's")
        if old == 0:
            if proof:
                raise Refused(422, "a proof from the empty tree, which needs none")
            return 0
        if old == checkpoint.size:
            if proof or checkpoint.root != self.root:
                raise Refused(422, "the same size with another root")
            return 0
        if not consistent(old, checkpoint.size, self.root, checkpoint.root, proof):
            raise Refused(422, f"the proof from {old} to {checkpoint.size} does not verify")
        return len(proof)

    def _cosign(self, text: str) -> str:
        # timestamped_signature: u64 timestamp (big-endian) || Ed25519 signature over
        # "cosignature/v1\n" "time <timestamp>\n" and the checkpoint's text.
        now = int(time.time())
        signature = self.private.sign(b"cosignature/v1\ntime %d\n" % now + text.encode())
        blob = self.key.id + struct.pack(">Q", now) + signature
        return f"{DASH} {self.name} {base64.b64encode(blob).decode()}\n"

    def cosigned_at(self, note: str) -> int:
        """The time of this witness's cosignature on `note`, once the log's signature
        and the cosignature both verify; AssertionError otherwise."""
        text = open_note(note, self.log)
        times = []
        for name, blob in split_note(note)[1]:
            if name != self.name or blob[:4] != self.key.id:
                continue
            assert len(blob) == 4 + 8 + 64, "a cosignature/v1 is 76 bytes"
            timestamp = int.from_bytes(blob[4:12], "big")  # u64, big-endian
            message = b"cosignature/v1\ntime %d\n" % timestamp + text.encode()
            assert self.key.verifies(blob[12:], message), "the cosignature does not verify"
            times.append(timestamp)
        assert len(times) == 1, f"{len(times)} cosignatures by {self.name}"
        return times[0]

    # -- over HTTP --

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        witness = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as tlog-witness asks

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    self.close_connection = True
                    return self._answer(413, "text/plain", "too large\n")
                body = self.rfile.read(length)
                if self.path != "/add-checkpoint":
                    return self._answer(404, "text/plain", "not found\n")
                self._answer(*witness.add_checkpoint(body))

            def _answer(self, status: int, kind: str, text: str) -> None:
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
