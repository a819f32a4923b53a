"""The witness, driven by a client written here from the C2SP texts alone, with hashlib,
base64 and the `cryptography` package, and nothing of the project's code: a log that
signs its checkpoints (signed-note, tlog-checkpoint), builds its consistency proofs as
RFC 9162 (2.1.4.1) defines them, submits them to `hazard witness serve` over real HTTP
(tlog-witness, one kept-alive connection), and checks the cosignatures it gets back
with its own code (tlog-cosignature); then every refusal, by its status code. A client
that shared the witness's code would share its mistakes.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ROOT = Path(__file__).resolve().parents[2]
DASH = "\u2014"  # the em dash that starts a signature line (signed-note)


# -- signed-note: keys, and a log's signature ------------------------------------------


def raw_public(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(name: str, type_byte: int, public: bytes) -> bytes:
    # key ID = SHA-256(key name || 0x0A || signature type || public key)[:4]
    return hashlib.sha256(name.encode() + b"\n" + bytes([type_byte]) + public).digest()[:4]


def vkey(name: str, type_byte: int, public: bytes) -> str:
    # <key name>+hex(32-bit key ID)+base64(signature type || public key)
    material = base64.b64encode(bytes([type_byte]) + public).decode()
    return f"{name}+{key_id(name, type_byte, public).hex()}+{material}"


class Log:
    """A log: an Ed25519 key (signature type 0x01), its leaves, its checkpoints."""

    def __init__(self, origin: str, entries: int = 0, salt: bytes = b"") -> None:
        self.origin = origin
        self.private = Ed25519PrivateKey.generate()
        self.leaves: list[bytes] = []
        self.append(entries, salt)

    def append(self, n: int, salt: bytes = b"") -> None:
        for _ in range(n):
            data = salt + b"entry %d" % len(self.leaves)
            self.leaves.append(hashlib.sha256(b"\x00" + data).digest())  # SHA-256(0x00 || d)

    def vkey(self) -> str:
        return vkey(self.origin, 0x01, raw_public(self.private))

    def text(self, size: int, root: bytes | None = None) -> str:
        # tlog-checkpoint: origin, decimal size, base64 root hash, each ending in "\n"
        root = mth(self.leaves[:size]) if root is None else root
        return f"{self.origin}\n{size}\n{base64.b64encode(root).decode()}\n"

    def sign(self, text: str, private: Ed25519PrivateKey | None = None) -> str:
        # text, a blank line, then "— <name> base64(key ID || Ed25519 signature of text)"
        private = private or self.private
        blob = key_id(self.origin, 0x01, raw_public(private)) + private.sign(text.encode())
        return f"{text}\n{DASH} {self.origin} {base64.b64encode(blob).decode()}\n"

    def note(self, size: int) -> str:
        return self.sign(self.text(size))


# -- RFC 9162, 2.1 -------------------------------------------------------------------


def node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()  # SHA-256(0x01 || l || r)


def split(n: int) -> int:
    """k, the largest power of two smaller than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) over leaf hashes (2.1.1)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = split(len(leaves))
    return node(mth(leaves[:k]), mth(leaves[k:]))


def subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    """SUBPROOF(m, D[n], b) (2.1.4.1)."""
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = split(n)
    if m <= k:
        return [*subproof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*subproof(m - k, leaves[k:], False), mth(leaves[:k])]


def proof(leaves: list[bytes], old: int, size: int) -> list[bytes]:
    """PROOF(m, D[n]) = SUBPROOF(m, D[n], true); none from the empty tree or to itself."""
    if old in (0, size):
        return []
    return subproof(old, leaves[:size], True)


# -- tlog-witness: the request, and the cosignature it answers with --------------------


def body(old: int, hashes: list[bytes], note: str) -> bytes:
    lines = "".join(base64.b64encode(h).decode() + "\n" for h in hashes)
    return f"old {old}\n{lines}\n{note}".encode()


def push(log: Log, old: int, size: int) -> bytes:
    return body(old, proof(log.leaves, old, size), log.note(size))


def parse_witness_vkey(text: str) -> tuple[str, bytes, Ed25519PublicKey]:
    """A cosigner's vkey: signature type 0x04 and a 32-byte Ed25519 key."""
    name, hex_id, material = text.strip().split("+", 2)
    raw = base64.b64decode(material, validate=True)
    assert len(raw) == 33 and raw[0] == 0x04, "not an Ed25519 cosignature/v1 key"
    assert bytes.fromhex(hex_id) == key_id(name, 0x04, raw[1:]), "the key ID is not the key's"
    return name, bytes.fromhex(hex_id), Ed25519PublicKey.from_public_bytes(raw[1:])


def cosigned_at(line: str, text: str, witness: tuple[str, bytes, Ed25519PublicKey]) -> int:
    """The timestamp of the witness's cosignature `line` on the checkpoint `text`, once
    it verifies: base64(key ID || uint64 timestamp || Ed25519 signature) over
    "cosignature/v1\\n" "time <t>\\n" <text>."""
    name, kid, public = witness
    dash, signer, blob = line.rstrip("\n").split(" ")
    assert (dash, signer) == (DASH, name)
    raw = base64.b64decode(blob, validate=True)
    assert len(raw) == 4 + 8 + 64 and raw[:4] == kid
    timestamp = int.from_bytes(raw[4:12], "big")
    message = b"cosignature/v1\n" + b"time %d\n" % timestamp + text.encode()
    try:
        public.verify(raw[12:], message)
    except InvalidSignature:
        raise AssertionError("the cosignature does not verify") from None
    return timestamp


def signature_lines(note: str) -> tuple[str, list[str]]:
    text, _, signatures = note.rpartition("\n\n")
    return text + "\n", signatures.splitlines()


def log_signature_verifies(text: str, line: str, log: Log) -> bool:
    _, name, blob = line.split(" ")
    raw = base64.b64decode(blob, validate=True)
    public = raw_public(log.private)
    if name != log.origin or raw[:4] != key_id(log.origin, 0x01, public):
        return False
    try:
        log.private.public_key().verify(raw[4:], text.encode())
    except InvalidSignature:
        return False
    return True


# -- the witness, as a process of its own ----------------------------------------------


def hazard() -> list[str]:
    script = Path(sys.executable).with_name("hazard")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ledger"]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


class Witness:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)

    def call(self, method: str, path: str, data: bytes | None = None) -> tuple[int, str, str]:
        self.conn.request(method, path, body=data)
        answer = self.conn.getresponse()
        return answer.status, answer.getheader("Content-Type", ""), answer.read().decode()

    def add(self, data: bytes) -> tuple[int, str, str]:
        return self.call("POST", "/add-checkpoint", data)


@pytest.fixture
def log() -> Log:
    return Log("club.example/hazard", 600)


@pytest.fixture
def witness(tmp_path: Path, log: Log) -> Iterator[Witness]:
    where = tmp_path / "witness"
    made = subprocess.run(
        [*hazard(), "witness", "init", "--name", "auditor.example/w", "--log", log.vkey(),
         "--dir", str(where)],
        capture_output=True, text=True, env=environment(), timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    proc = subprocess.Popen(
        [*hazard(), "witness", "serve", "--port", "0", "--dir", str(where)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment(),
        start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    found = None
    while found is None and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        found = re.search(r"serving at http://127\.0\.0\.1:(\d+)", "".join(lines))
    assert found is not None, "the witness did not start"
    client = Witness(int(found[1]))
    try:
        yield client
    finally:
        client.conn.close()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        reader.join(timeout=5)
        assert proc.stdout is not None
        proc.stdout.close()


# -- the tests ----------------------------------------------------------------------------


def test_its_cosignatures_verify_as_the_specs_say(witness: Witness, log: Log) -> None:
    status, kind, key = witness.call("GET", "/key")
    assert (status, kind.split(";")[0]) == (200, "text/plain")
    cosigner = parse_witness_vkey(key)
    before = int(time.time())
    old = 0
    for size in (1, 2, 3, 7, 8, 100, 255, 256, 257, 600, 600):
        status, _, lines = witness.add(push(log, old, size))
        assert status == 200, lines
        (line,) = lines.splitlines()  # one line: a note signature, ending in a newline
        assert lines.endswith("\n")
        timestamp = cosigned_at(line, log.text(size), cosigner)
        assert before <= timestamp <= int(time.time()) + 1
        old = size
    # The newest cosigned checkpoint, by the SHA-256 of the origin, lowercase hex: the
    # log's own signature and the witness's cosignature on it, both verified here.
    hashed = hashlib.sha256(log.origin.encode()).hexdigest()
    status, _, note = witness.call("GET", f"/{hashed}/checkpoint")
    assert status == 200
    text, lines = signature_lines(note)
    assert text == log.text(600)
    assert any(log_signature_verifies(text, line, log) for line in lines)
    assert [cosigned_at(line, text, cosigner) for line in lines if cosigner[0] in line]


def test_a_client_that_knows_nothing_starts_from_old_0_and_is_told_the_size(
    witness: Witness, log: Log
) -> None:
    assert witness.add(push(log, 0, 40))[0] == 200
    status, kind, text = witness.add(push(log, 0, 90))
    assert (status, kind, text) == (409, "text/x.tlog.size", "40\n")
    assert witness.add(push(log, int(text), 90))[0] == 200


def test_each_refusal_has_the_spec_s_status(witness: Witness, log: Log) -> None:
    assert witness.add(push(log, 0, 0))[0] == 200  # the empty tree, its root SHA-256("")
    assert witness.add(push(log, 0, 64))[0] == 200
    stranger = Log("stranger.example/log", 10)
    assert witness.add(push(stranger, 0, 10))[0] == 404  # an origin it does not follow
    impostor = Ed25519PrivateKey.generate()  # the log's name, another key
    forged = log.sign(log.text(80), impostor)
    assert witness.add(body(64, proof(log.leaves, 64, 80), forged))[0] == 403
    text = log.text(80)
    tampered = log.note(80).replace(text, log.text(81))  # the trusted key's line, other text
    assert witness.add(body(64, proof(log.leaves, 64, 80), tampered))[0] == 403
    assert witness.add(body(90, proof(log.leaves, 64, 80), log.note(80)))[0] == 400  # old > size
    assert witness.add(b"old 64\n")[0] == 400
    assert witness.add(push(log, 10, 80))[0] == 409
    bad = proof(log.leaves, 64, 80)
    bad[0] = hashlib.sha256(b"not it").digest()
    assert witness.add(body(64, bad, log.note(80)))[0] == 422  # a proof that does not verify
    rewritten = Log(log.origin, 64, salt=b"rewritten ")
    rewritten.private = log.private  # the log's own key signs another tree of size 64
    assert witness.add(push(rewritten, 64, 64))[0] == 422  # same size, another root
    not_empty = log.sign(log.text(0, hashlib.sha256(b"x").digest()))
    assert witness.add(body(0, [], not_empty))[0] == 422  # size 0 needs the empty root
    assert witness.add(push(log, 64, 80))[0] == 200  # and the honest log goes on


def test_a_proof_from_the_empty_tree_must_be_empty(witness: Witness, log: Log) -> None:
    assert witness.add(body(0, [mth(log.leaves[:1])], log.note(5)))[0] == 422
