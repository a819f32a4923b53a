"""Whether a witness may cosign a checkpoint: the rules of c2sp.org/tlog-witness, in the
order the spec gives them, over what the witness last cosigned. Pure: no clock, no file.

A refusal says what to answer (the error, whose class the HTTP layer maps to a status).
Apart from that, a checkpoint the log's key signed may be evidence against the log (a
`Breach`), whatever the answer: a tree of the size the witness cosigned but another
root is a fork even when it comes with a stale old size (409). Evidence is kept; a
refusal without a breach is only a client to correct.
"""

from __future__ import annotations

import dataclasses
import enum

from ledger.store.log.merkle import EMPTY_ROOT, ProofError, check_tree
from ledger.witness.submission import Head, Malformed, Submission


class Refused(Exception):
    """A checkpoint this witness will not cosign; the message says why."""


class UnknownLog(Refused):
    """The checkpoint's origin is no log this witness follows (404)."""


class NotSigned(Refused):
    """No trusted key of the log signed it, or a signature by one does not verify (403)."""


class NotAtOld(Refused):
    """The old size is not the size this witness last cosigned (409, which says it)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"this witness last cosigned the tree of size {size}")
        self.size = size


class Unprovable(Refused):
    """The checkpoint is not shown consistent with what this witness cosigned (422)."""


class Breach(enum.Enum):
    """What a refused checkpoint, signed by the log's own key, says about the log."""

    FORK = "fork"
    """Two different trees of one size, both signed by the log: it keeps two histories."""
    ROLLBACK = "rollback"
    """A tree smaller than one the witness cosigned: the log went back to an older
    state, or someone resent one of its old checkpoints."""
    UNPROVEN = "unproven"
    """A larger tree, with a proof that it extends the one cosigned that does not
    verify: a history that does not extend the cosigned one, or a broken client."""
    NOT_EMPTY = "not-empty"
    """A tree of size 0 whose root is not the empty tree's: a checkpoint no honest log signs."""


def status(refusal: Refused | Malformed) -> int:
    """The HTTP status tlog-witness answers `refusal` with."""
    for kind, code in _STATUS.items():
        if isinstance(refusal, kind):
            return code
    raise TypeError(f"no status for {type(refusal).__name__}")


_STATUS: dict[type[Exception], int] = {
    Malformed: 400,
    NotSigned: 403,
    UnknownLog: 404,
    NotAtOld: 409,
    Unprovable: 422,
}


@dataclasses.dataclass(frozen=True)
class Cosigned:
    """The newest tree this witness cosigned for a log (size 0 and the empty root: none)."""

    size: int = 0
    root: bytes = EMPTY_ROOT
    note: str | None = None
    """The log's note with this witness's cosignature, as served; None before the first."""
    at: int = 0
    """The POSIX time of that cosignature."""


@dataclasses.dataclass(frozen=True)
class Judgement:
    refusal: Refused | Malformed | None
    """What to answer; None: cosign."""
    breach: Breach | None = None
    reason: str = ""
    """The breach in words, for the evidence."""


def judge(submission: Submission, head: Head, last: Cosigned) -> Judgement:
    """The judgement on a checkpoint (`head`, the log's signature already checked), sent
    with `submission`'s old size and proof, when this witness last cosigned `last`."""
    breach, reason = _breach(head, last)
    refusal = _refusal(submission, head, last)
    if isinstance(refusal, Unprovable) and breach is None and 0 < submission.old < head.size:
        breach = Breach.UNPROVEN
        reason = (
            f"the log's tree of size {head.size} was not shown to extend its tree of size "
            f"{last.size} that this witness cosigned: the consistency proof does not verify"
        )
    return Judgement(refusal, breach, reason)


def _breach(head: Head, last: Cosigned) -> tuple[Breach | None, str]:
    if head.size == 0 and head.root != EMPTY_ROOT:
        return Breach.NOT_EMPTY, "the log signed a tree of size 0 that is not the empty tree"
    if head.size < last.size:
        return Breach.ROLLBACK, (
            f"the log asked for a cosignature on its tree of size {head.size} after this "
            f"witness had cosigned its tree of size {last.size}: a log only grows"
        )
    if head.size == last.size and head.root != last.root:
        return Breach.FORK, f"the log signed two different trees of size {head.size}"
    return None, ""


def _refusal(submission: Submission, head: Head, last: Cosigned) -> Refused | Malformed | None:
    old, proof = submission.old, submission.proof
    if old > head.size:
        return Malformed(f"the old size {old} is larger than the checkpoint's size {head.size}")
    if head.size == 0 and head.root != EMPTY_ROOT:
        return Unprovable("a tree of size 0 must have the empty tree's root, SHA-256 of nothing")
    if old != last.size:
        return NotAtOld(last.size)
    if old == 0:
        if proof:
            return Unprovable("the empty tree is a prefix of every tree: the proof must be empty")
        return None
    if old == head.size:
        if head.root != last.root:
            return Unprovable(f"this witness cosigned another tree of size {old}")
        if proof:
            return Unprovable("a tree is consistent with itself: the proof must be empty")
        return None
    try:
        check_tree(list(proof), head.size, head.root, old, last.root)
    except ProofError as exc:
        return Unprovable(str(exc))
    return None
