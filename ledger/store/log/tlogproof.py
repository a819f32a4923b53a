"""A receipt that checks alone: c2sp.org/tlog-proof, an entry's inclusion path and the
signed checkpoint it leads to, in one text file (`*.tlog-proof`).

    c2sp.org/tlog-proof@v1
    extra <base64 of the event's frame>
    index <the entry's record number: its position - 1>
    <base64 hash>               the inclusion path (RFC 9162, 2.1.3), one hash a line,
    ...                         the leaf's sibling first, up to the root's child
    <blank line>
    <the checkpoint note>       with the log's signature and the witnesses' cosignatures

In this ledger the extra line carries the event's canonical frame (ledger.store.codec
`frame`), the bytes its leaf covers, so that the file needs nothing else: the leaf is
SHA-256(0x00 || frame), the path leads from it to the checkpoint's root, the log's key
signed the checkpoint, and the reader's own policy says whose cosignatures make it
witnessed. The extra line is read as the spec says, untrusted, until the path from its
leaf reaches the signed root; then it is the event at position index + 1.

The checkpoint is the newest one witnesses cosigned, when its tree holds the event
(`of`); an event written since the last cosignature is proved in the newest checkpoint
instead, which the log alone has signed yet (the reader's policy then finds no quorum,
and says so); a file taken again later holds a cosigned one.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from typing import TYPE_CHECKING

from ledger.store.log import merkle
from ledger.store.log.checkpoint import DECIMAL, MAX_SIZE, NoteError, parse_note
from ledger.store.log.policy import Policy, Verdict

if TYPE_CHECKING:
    import sqlalchemy as sa

HEADER = "c2sp.org/tlog-proof@v1"
MAX_INDEX = MAX_SIZE - 1
"""The largest record number a checkpoint's tree can hold."""
MAX_PATH = 63
"""The longest inclusion path: a tree of at most 2^63 - 1 leaves is at most 63 deep."""


class TlogProofError(ValueError):
    """A file that is not a tlog-proof, or one whose proof does not hold; the message
    says which line, or which check."""


def _base64(text: str, where: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise TlogProofError(f"{where}: {text[:60]!r} is not base64") from None
    if base64.b64encode(raw).decode() != text:
        raise TlogProofError(f"{where}: not canonical base64")
    return raw


@dataclasses.dataclass(frozen=True)
class TlogProof:
    index: int
    path: tuple[bytes, ...]
    note: str
    """The checkpoint as a signed note, verbatim."""
    extra: bytes | None = None

    @property
    def position(self) -> int:
        """The event's position in the log: the record number plus one."""
        return self.index + 1

    def text(self) -> str:
        lines = [HEADER]
        if self.extra is not None:
            lines.append("extra " + base64.b64encode(self.extra).decode())
        lines.append(f"index {self.index}")
        lines += [base64.b64encode(h).decode() for h in self.path]
        return "".join(line + "\n" for line in lines) + "\n" + self.note

    @classmethod
    def parse(cls, data: str | bytes) -> TlogProof:
        """Read a tlog-proof strictly; its note is checked for form only (parse_note):
        whose signatures count is the policy's to say (`check`)."""
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8")
            except UnicodeDecodeError:
                raise TlogProofError("the file is not UTF-8 text") from None
        head, blank, note = data.partition("\n\n")
        if not blank:
            raise TlogProofError("no blank line between the proof and the checkpoint")
        lines = head.split("\n")
        if lines[0] != HEADER:
            raise TlogProofError(f"line 1 must be {HEADER!r}: this is not a tlog-proof")
        number = 2
        extra = None
        if lines[1:] and lines[1].startswith("extra "):
            extra = _base64(lines[1].removeprefix("extra "), "line 2 (extra)")
            number = 3
        if len(lines) < number or not lines[number - 1].startswith("index "):
            raise TlogProofError(f"line {number} must be `index <record number>`")
        index_text = lines[number - 1].removeprefix("index ")
        if not DECIMAL.fullmatch(index_text) or int(index_text) > MAX_INDEX:
            raise TlogProofError(
                f"line {number} (index): {index_text[:40]!r} is not a decimal number without "
                "leading zeros, below 2^63"
            )
        hashes = lines[number:]
        if len(hashes) > MAX_PATH:
            raise TlogProofError(f"{len(hashes)} path hashes: a path has at most {MAX_PATH}")
        path = []
        for at, line in enumerate(hashes, start=number + 1):
            digest = _base64(line, f"line {at} (path)")
            if len(digest) != merkle.HASH_SIZE:
                raise TlogProofError(f"line {at} (path): a hash is 32 bytes, not {len(digest)}")
            path.append(digest)
        try:
            parse_note(note)
        except NoteError as e:
            raise TlogProofError(f"the checkpoint after the blank line: {e}") from None
        return cls(int(index_text), tuple(path), note, extra)


def text(frame: bytes, index: int, path: list[bytes], note: str) -> str:
    """The tlog-proof of record `index`, whose leaf covers `frame`, in the tree of the
    signed `note`, by the inclusion `path`."""
    return TlogProof(index, tuple(path), note, frame).text()


def of(conn: sa.Connection, position: int) -> str:
    """The tlog-proof of the event at `position` (NoEvent past the log's end), in the
    newest cosigned checkpoint that holds it, or else the newest checkpoint."""
    # The database's modules here, not at the top: a reader checking a file (`hazard
    # watch check`) starts without them, or SQLAlchemy under them.
    from ledger.store.log import proofs, tree, witnessed

    found = proofs.event(conn, position)
    cosigned = witnessed.newest(conn)
    if cosigned is not None and cosigned.size >= position:
        size, note = cosigned.size, cosigned.note
    else:
        newest = proofs.latest(conn)
        size, note = newest.size, newest.note
    path = merkle.prove_record(size, position - 1, tree.reader(conn))
    return text(found.hashed(), position - 1, path, note)


@dataclasses.dataclass(frozen=True)
class Proved:
    """What a tlog-proof proves under a policy: the checkpoint and who cosigned it
    (`verdict`, whose `quorum` says whether they are enough), and the event's frame at
    `position` in that checkpoint's tree."""

    verdict: Verdict
    position: int
    frame: bytes


def check(proof: TlogProof, policy: Policy) -> Proved:
    """The tlog-proof checked under the reader's `policy`: the checkpoint signed by one
    of its logs, every cosignature by one of its witnesses good (NoteError otherwise),
    and the path from SHA-256(0x00 || extra) to the signed root (TlogProofError
    otherwise). The quorum is the caller's to weigh (`Proved.verdict.quorum`)."""
    verdict = policy.verify(proof.note)
    if proof.extra is None:
        raise TlogProofError(
            "no extra line: this ledger's proofs carry the event's frame there, and "
            "without it there is no leaf to check"
        )
    size = verdict.checkpoint.size
    if proof.index >= size:
        raise TlogProofError(
            f"index {proof.index} is not in the tree of the checkpoint, of size {size}"
        )
    try:
        # leaf = SHA-256(0x00 || frame), RFC 9162 section 2.1.1
        leaf = merkle.leaf_hash(proof.extra)
        merkle.check_record(list(proof.path), size, verdict.checkpoint.root, proof.index, leaf)
    except merkle.ProofError as e:
        raise TlogProofError(
            f"the inclusion path does not lead from the extra line's event at index "
            f"{proof.index} to the checkpoint's root: {e}"
        ) from None
    return Proved(verdict, proof.position, proof.extra)
