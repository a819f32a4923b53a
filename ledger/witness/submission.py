"""What a log sends a witness (c2sp.org/tlog-witness, add-checkpoint), read strictly.

    old <size>\\n                      the tree the log believes this witness last cosigned
    <base64 hash>\\n ...               the consistency proof from it, at most 63 lines
    \\n
    <the signed checkpoint note>      origin, size, root, extension lines; blank; signatures

Everything here is read before any signature is checked, so nothing here is trusted:
it only says whether the body has the protocol's shape (Malformed, a 400) and which log
it claims to come from. The checkpoint's own lines are read by `read_head` once the
log's signature on them verifies.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses

from ledger.store.log.checkpoint import DECIMAL, HASH_SIZE, MAX_SIZE

MAX_BODY = 64 * 1024
"""A body larger than this is refused (413): a checkpoint note, with a few signatures and
63 proof lines, is a few kilobytes."""

MAX_PROOF = 63
"""The most proof lines a client may send (tlog-witness): a tree of 2^63 leaves needs fewer."""


class Malformed(ValueError):
    """A body that is not an add-checkpoint request; the message says which rule it broke."""


@dataclasses.dataclass(frozen=True)
class Submission:
    old: int
    """The size the log says this witness last cosigned (0: never)."""
    proof: tuple[bytes, ...]
    """The consistency proof from the tree of size `old` to the checkpoint's tree."""
    note: str
    """The checkpoint as a signed note, not yet verified."""


@dataclasses.dataclass(frozen=True)
class Head:
    """The three lines of a checkpoint a witness vouches for (tlog-cosignature: it says
    nothing about the extension lines, though it signs them)."""

    origin: str
    size: int
    root: bytes


def hash_line(text: str) -> bytes | None:
    """The 32-byte hash in a line of standard, padded, canonical base64; else None."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != HASH_SIZE or base64.b64encode(raw).decode() != text:
        return None
    return raw


def size_of(text: str, what: str) -> int:
    """An ASCII decimal with no leading zeros, at most 2^63 - 1."""
    if not DECIMAL.fullmatch(text):
        raise Malformed(
            f"{what}: {text[:40]!r} is not a decimal of at most 19 digits, no leading zeros"
        )
    size = int(text)
    if size > MAX_SIZE:
        raise Malformed(f"{what}: {text} is beyond 2^63-1")
    return size


def read_submission(body: bytes) -> Submission:
    """The old size, the proof and the note of an add-checkpoint body."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed("the body is not UTF-8") from None
    first, newline, rest = text.partition("\n")
    if not newline or not first.startswith("old "):
        raise Malformed("the body must start with a line 'old <size>'")
    old = size_of(first.removeprefix("old "), "the old size line")
    proof: list[bytes] = []
    while True:
        line, newline, rest = rest.partition("\n")
        if not newline:
            raise Malformed("no empty line between the proof and the checkpoint")
        if not line:
            break
        if len(proof) == MAX_PROOF:
            raise Malformed(f"more than {MAX_PROOF} proof lines")
        hash_ = hash_line(line)
        if hash_ is None:
            raise Malformed(f"proof line {len(proof) + 1} is not a base64 SHA-256 hash")
        proof.append(hash_)
    if not rest:
        raise Malformed("no checkpoint after the empty line")
    return Submission(old, tuple(proof), rest)


def claimed_origin(note: str) -> str:
    """The origin a note's text names, its first line: which log's keys to check it with.
    Not trusted until one of them verifies."""
    return note.partition("\n")[0]


def read_head(text: str) -> Head:
    """The origin, size and root of a checkpoint's text (tlog-checkpoint): at least three
    non-empty lines; extension lines are the log's own business, only non-empty."""
    lines = text.removesuffix("\n").split("\n")
    if len(lines) < 3:
        raise Malformed("a checkpoint has at least three lines: origin, tree size, root hash")
    if any(not line for line in lines):
        raise Malformed("a checkpoint's lines must not be empty")
    origin, size_text, root_text = lines[:3]
    size = size_of(size_text, "the checkpoint's tree size")
    root = hash_line(root_text)
    if root is None:
        raise Malformed("the checkpoint's root hash is not a base64 SHA-256 hash")
    return Head(origin, size, root)
