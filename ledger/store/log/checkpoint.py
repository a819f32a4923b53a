"""Signed checkpoints: the head of the event log's Merkle tree, in the C2SP formats.

A checkpoint (c2sp.org/tlog-checkpoint) is the text

    <origin>\\n                  who keeps the log
    <tree size>\\n               decimal, no leading zeros
    <root hash>\\n               base64 of the 32-byte RFC 9162 root at that size
    [<extension line>\\n ...]    optional, non-empty

and it travels as a signed note (c2sp.org/signed-note): the text, a blank line, then one
line per signature, `— <key name> <base64(key id || Ed25519 signature of the text)>`
(an em dash, U+2014). Go's `sumdb/note` and every C2SP tool read the same bytes.

The checkpoint's time is an extension line, `time 2026-11-23T08:00:00Z`: RFC 3339 in
UTC to the second, so that an auditor can read it off a printed receipt. The keyword is
the one tlog-cosignature uses for its own timestamp line.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from collections.abc import Iterable
from datetime import UTC, datetime

from ledger.store.log.keys import Signer, Verifier

HASH_SIZE = 32
"""A SHA-256 root hash (RFC 9162)."""

MAX_SIZE = 2**63 - 1
"""The largest tree size Go's `tlog` (an int64) can read back."""

MAX_SIGNATURES = 100
"""More signature lines than this make a note malformed, as in Go's `note.Open` (the
spec asks verifiers to accept at least 16), so a hostile note cannot make us verify
without end."""

EM_DASH = "\u2014"
_SIGNATURE_PREFIX = EM_DASH + " "
DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}", re.ASCII)
"""A size or an index as the C2SP texts write it: ASCII decimal, no leading zeros. At
most 19 digits (2^63 - 1 has 19), so that int() is never handed thousands of digits from
a file or a request: Python refuses those with a bare ValueError."""
_TIME = "time "
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_TIME_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", re.ASCII)


class NoteError(ValueError):
    """A signed note or checkpoint that is refused; the message says why."""


class MalformedNote(NoteError):
    """Not a signed note by the format's rules."""


class MalformedCheckpoint(NoteError):
    """Note text that is not a checkpoint; the message names the line."""


class UnverifiedNote(NoteError):
    """A well-formed note that no known key has signed."""


class BadSignature(NoteError):
    """A signature by a known key that does not verify: the text was changed, or it was
    signed by another key that claims the same name and id."""


def _control_character(text: str) -> int | None:
    """The index of the first ASCII control character other than newline, if any."""
    for i, c in enumerate(text):
        if c < " " and c != "\n":
            return i
    return None


def _canonical_base64(text: str) -> bytes | None:
    """Standard padded base64 in its one canonical spelling, else None: two spellings of
    one hash would be two checkpoints."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode() == text else None


def time_line(when: datetime) -> str:
    """The extension line that carries a checkpoint's time, to the second, in UTC."""
    if when.tzinfo is None:
        raise ValueError("a checkpoint's time must be timezone-aware")
    return _TIME + when.astimezone(UTC).strftime(_TIME_FORMAT)


def _parse_time(line: str) -> datetime:
    stamp = line.removeprefix(_TIME)
    if not _TIME_PATTERN.fullmatch(stamp):
        raise ValueError(f"'time' must be followed by YYYY-MM-DDTHH:MM:SSZ, got {stamp!r}")
    try:
        return datetime.strptime(stamp, _TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{stamp!r} is not a real time") from None


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """The tree's head at `size` leaves: its `root`, as named by `origin`.

    Construction refuses what `text()` could not write back as a checkpoint, so every
    Checkpoint has exactly one text and `Checkpoint.parse(c.text()) == c`."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.origin:
            raise MalformedCheckpoint("line 1 (origin): the origin must not be empty")
        if "\n" in self.origin or _control_character(self.origin) is not None:
            raise MalformedCheckpoint("line 1 (origin): control characters are not allowed")
        if not 0 <= self.size <= MAX_SIZE:
            raise MalformedCheckpoint(f"line 2 (tree size): {self.size} is out of range")
        if len(self.root) != HASH_SIZE:
            raise MalformedCheckpoint(
                f"line 3 (root hash): a root hash is {HASH_SIZE} bytes, not {len(self.root)}"
            )
        times = 0
        for number, line in enumerate(self.extensions, start=4):
            where = f"line {number} (extension)"
            if not line:
                raise MalformedCheckpoint(f"{where}: extension lines must not be empty")
            if "\n" in line or _control_character(line) is not None:
                raise MalformedCheckpoint(f"{where}: control characters are not allowed")
            if line.startswith(_TIME):
                times += 1
                if times > 1:
                    raise MalformedCheckpoint(f"{where}: a second 'time' line")
                try:
                    _parse_time(line)
                except ValueError as e:
                    raise MalformedCheckpoint(f"{where}: {e}") from None

    @classmethod
    def issued(cls, origin: str, size: int, root: bytes, when: datetime) -> Checkpoint:
        """The checkpoint a log issues at `when`: its time is its one extension line."""
        return cls(origin, size, root, (time_line(when),))

    @property
    def time(self) -> datetime | None:
        """When the log issued it, if a `time` line says."""
        for line in self.extensions:
            if line.startswith(_TIME):
                return _parse_time(line)
        return None

    def text(self) -> str:
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode()]
        return "".join(line + "\n" for line in [*lines, *self.extensions])

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """Read a checkpoint's text (the note text, without signatures), strictly."""
        if not text.endswith("\n"):
            raise MalformedCheckpoint("a checkpoint's text must end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise MalformedCheckpoint(
                f"a checkpoint has at least 3 lines (origin, tree size, root hash), "
                f"got {len(lines)}"
            )
        for number, line in enumerate(lines, start=1):
            if not line:
                raise MalformedCheckpoint(f"line {number} is empty")
            if (at := _control_character(line)) is not None:
                raise MalformedCheckpoint(
                    f"line {number}: control character {line[at]!r} at column {at + 1}"
                )
        origin, size_text, root_text, *extensions = lines
        if not DECIMAL.fullmatch(size_text):
            raise MalformedCheckpoint(
                f"line 2 (tree size): {size_text[:40]!r} is not a decimal number of at most 19 "
                "digits without leading zeros"
            )
        size = int(size_text)
        if size > MAX_SIZE:
            raise MalformedCheckpoint(f"line 2 (tree size): {size_text} is beyond 2^63-1")
        root = _canonical_base64(root_text)
        if root is None:
            raise MalformedCheckpoint(f"line 3 (root hash): {root_text!r} is not base64")
        if len(root) != HASH_SIZE:
            raise MalformedCheckpoint(
                f"line 3 (root hash): a root hash is {HASH_SIZE} bytes, not {len(root)}"
            )
        return cls(origin, size, root, tuple(extensions))


@dataclasses.dataclass(frozen=True)
class NoteSignature:
    """One signature line: who (`name` and `key_id`) and the Ed25519 signature bytes."""

    name: str
    key_id: int
    signature: bytes

    def line(self) -> str:
        blob = self.key_id.to_bytes(4, "big") + self.signature
        return f"{_SIGNATURE_PREFIX}{self.name} {base64.b64encode(blob).decode()}\n"


@dataclasses.dataclass(frozen=True)
class Note:
    """A note's text, the signatures that verified and those by keys not known here."""

    text: str
    signatures: tuple[NoteSignature, ...]
    unverified: tuple[NoteSignature, ...] = ()


def _check_text(text: str, what: str = "a note's text") -> None:
    if not text.endswith("\n"):
        raise MalformedNote(f"{what} must end with a newline")
    if (at := _control_character(text)) is not None:
        raise MalformedNote(f"control character {text[at]!r} at offset {at} of the note")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedNote("the note is not valid UTF-8") from None


def sign_note(text: str, *signers: Signer) -> str:
    """The signed note: `text`, a blank line, and one signature line per signer."""
    if not signers:
        raise ValueError("a note needs at least one signer")
    _check_text(text)
    message = text.encode("utf-8")
    lines = [NoteSignature(s.name, s.key_id, s.sign(message)).line() for s in signers]
    return text + "\n" + "".join(lines)


def parse_note(message: str | bytes) -> tuple[str, tuple[NoteSignature, ...]]:
    """The text and signature lines of a signed note, read strictly and not verified."""
    if isinstance(message, bytes):
        try:
            message = message.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedNote("the note is not valid UTF-8") from None
    _check_text(message, "a signed note")
    # The text may hold blank lines of its own; the last one ends it (signed-note).
    split = message.rfind("\n\n")
    if split < 0:
        raise MalformedNote("no blank line before the signatures")
    text, block = message[: split + 1], message[split + 2 :]
    if not block:
        raise MalformedNote("no signature lines after the blank line")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNote(f"{len(lines)} signature lines; at most {MAX_SIGNATURES} are read")
    signatures = []
    for number, line in enumerate(lines, start=1):
        where = f"signature line {number}"
        if not line.startswith(_SIGNATURE_PREFIX):
            raise MalformedNote(f"{where} does not start with an em dash (U+2014) and a space")
        name, _, blob_text = line.removeprefix(_SIGNATURE_PREFIX).partition(" ")
        if not name or any(c.isspace() or c == "+" for c in name):
            raise MalformedNote(f"{where}: key name {name!r} is empty or has a space or '+'")
        blob = _canonical_base64(blob_text)
        if blob is None:
            raise MalformedNote(f"{where}: the signature {blob_text!r} is not base64")
        if len(blob) < 5:
            raise MalformedNote(f"{where}: a key id and a signature are at least 5 bytes")
        signatures.append(NoteSignature(name, int.from_bytes(blob[:4], "big"), blob[4:]))
    return text, tuple(signatures)


def open_note(message: str | bytes, verifiers: Iterable[Verifier]) -> Note:
    """The note, once a known key's signature on it verifies (signed-note's rules).

    A signature whose name and key id match no verifier is ignored (it may be a witness
    or a key this reader does not trust) and listed as unverified. Every signature by a
    known key must verify, or the note is refused with BadSignature; if no known key
    signed it, UnverifiedNote."""
    known: dict[tuple[str, int], Verifier] = {}
    for v in verifiers:
        other = known.setdefault((v.name, v.key_id), v)
        if other.public_key != v.public_key:
            raise ValueError(f"two verifier keys are both {v.name}+{v.key_id:08x}")
    text, signatures = parse_note(message)
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    for signature in signatures:
        verifier = known.get((signature.name, signature.key_id))
        if verifier is None:
            if signature not in unverified:
                unverified.append(signature)
            continue
        if not verifier.verify(text.encode("utf-8"), signature.signature):
            raise BadSignature(
                f"the signature by {signature.name}+{signature.key_id:08x} does not verify"
            )
        if signature not in verified:
            verified.append(signature)
    if not verified:
        signed_by = ", ".join(f"{s.name}+{s.key_id:08x}" for s in unverified)
        raise UnverifiedNote(f"no known key signed this note (signed by: {signed_by})")
    return Note(text, tuple(verified), tuple(unverified))


def sign_checkpoint(checkpoint: Checkpoint, signer: Signer) -> str:
    """The checkpoint as a signed note. The key's name must be the origin, as
    tlog-checkpoint recommends, so that a reader knows which key speaks for the log."""
    if signer.name != checkpoint.origin:
        raise ValueError(
            f"key {signer.name!r} cannot sign for origin {checkpoint.origin!r}: "
            f"a log signs under its own origin"
        )
    return sign_note(checkpoint.text(), signer)


def open_checkpoint(message: str | bytes, verifiers: Iterable[Verifier]) -> Checkpoint:
    """The checkpoint in a signed note, once its signature verifies; then its text is
    read as a checkpoint (the text of an unverified note is never trusted)."""
    return Checkpoint.parse(open_note(message, verifiers).text)
