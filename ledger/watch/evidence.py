"""What a watcher's run found: its outcome (the exit status), and the evidence, in
words. On a fork: the two signed notes of one size that cannot both be true, the newest
the ledger proved consistent with the second, and where the history changed, to the
range the receipts prove. On a denial: each note held of a size the ledger says it has
no checkpoint of, with its answer, and the newest it serves today.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
from collections.abc import Iterable, Sequence

from ledger.store.log.checkpoint import Checkpoint
from ledger.watch.state import State


class Outcome(enum.IntEnum):
    """What a run found; its value is `hazard watch`'s exit status."""

    CONSISTENT = 0
    """The newest cosigned checkpoint extends everything held, and every report."""
    EVIDENCE = 1
    """Proof against the ledger in notes its own key signed: two checkpoints of one
    size (it signed two histories), or a checkpoint it signed that it says it does not
    have (its log was cut back since)."""
    UNCHECKED = 2
    """Nothing could be concluded: the ledger out of reach or its answer unreadable,
    no quorum of cosignatures, or a signature that does not verify."""
    UNPROVEN = 3
    """The ledger did not prove what an honest log always can: that its newest
    checkpoint extends one it signed (it has no checkpoint of that size any more, or
    its proof does not verify)."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What a run found, and what it says: every line it prints."""

    outcome: Outcome
    lines: tuple[str, ...]
    state: State | None = None
    """What to keep, when consistent."""


@dataclasses.dataclass(frozen=True)
class Held:
    """A signed checkpoint the watcher holds, or one someone reported."""

    what: str
    note: str
    checkpoint: Checkpoint
    receipt: int | None = None
    """Its place among the state's receipts."""

    @property
    def size(self) -> int:
        return self.checkpoint.size


@dataclasses.dataclass(frozen=True)
class Fork:
    """Two signed notes of one size with different roots, and what else is known."""

    first: Held
    second: Held
    newest: Held | None = None
    """When the ledger proved its newest consistent with `second`, that newest..."""
    proof: tuple[bytes, ...] = ()
    """... and the proof."""
    changed: tuple[int, int] | None = None
    """The positions the first change lies in, when the fork is with what this
    watcher held: (first, last), inclusive."""
    still: Held | None = None
    """The largest held checkpoint that bounds it from below."""
    loose: int = 0
    """Smaller held checkpoints that still agree but are not known to be its prefix."""


def _positions(first: int, last: int) -> str:
    return f"at position {last}" if first == last else f"in positions {first}..{last}"


def forked(fork: Fork, said: Iterable[str] = ()) -> Verdict:
    """The verdict on a fork: what it proves, in words, and the notes that prove it."""
    a, b = fork.first, fork.second
    lines = [*said, f"FORK: the bank signed two different histories of size {a.size}."]
    if fork.changed is not None:
        first, last = fork.changed
        if fork.newest is not None and a.size < fork.newest.size:
            where = f"before position {last + 1}" if first == 1 else _positions(first, last)
            lines.append(
                f"The checkpoint of size {fork.newest.size} does not extend the one of "
                f"size {a.size} that this watcher saw: the bank rewrote history {where}."
            )
        else:
            lines.append(f"The first event changed is {_positions(first, last)} of {a.what}.")
        if fork.still is not None:
            lines.append(
                f"({fork.still.what} still agrees with the log the ledger serves; it is "
                f"a prefix of {a.what}, so the change comes after it.)"
            )
        if fork.loose:
            lines.append(
                f"({fork.loose} smaller checkpoint(s) held still agree, but this watcher "
                "never proved them prefixes of this one, so they bound nothing: run hazard "
                "watch after adding receipts, and they will.)"
            )
    lines += [
        "These two signed notes cannot both be true: a log that only grows never signs "
        "two trees of one size.",
        "",
        f"{a.what}:",
        a.note.rstrip("\n"),
        "",
        f"{b.what}:",
        b.note.rstrip("\n"),
    ]
    if fork.newest is not None:
        old, new = sorted((b.size, fork.newest.size))
        lines += [
            "",
            f"{fork.newest.what}, which the ledger proves consistent with the second "
            f"(the consistency proof from size {old} to {new}, RFC 9162, below):",
            fork.newest.note.rstrip("\n"),
            "",
            "proof:",
            *(base64.b64encode(h).decode() for h in fork.proof),
        ]
    return Verdict(Outcome.EVIDENCE, tuple(lines))


@dataclasses.dataclass(frozen=True)
class Denial:
    """A size the ledger answers that it has no checkpoint of (a 404 where an honest log
    proves it), and the checkpoints of that size this watcher holds, signed by its log."""

    held: tuple[Held, ...]
    answer: str
    """The ledger's answer, in its words."""

    @property
    def size(self) -> int:
        return self.held[0].size


def denied(denials: Sequence[Denial], newest: Held, said: Iterable[str] = ()) -> Verdict:
    """The verdict on sizes the log signed and the ledger denies having: for each, what
    holds a note of it and the ledger's answer; a note of each size, which proves it
    existed; and the ledger's newest today."""
    lines = list(said)
    for d in denials:
        holders = " and ".join(h.what.removesuffix(f", of size {d.size}") for h in d.held)
        lines += [
            f"DENIED: the ledger says it has no checkpoint of size {d.size}, and its log "
            f"signed one: {holders} (below).",
            f"  asked for it: {d.answer}",
        ]
    lines.append(
        "A log keeps every checkpoint it signs, and only grows: a size it signed and no "
        "longer has means it was cut back, or restored from an older copy, since it signed "
        "it, and what was written after the copy was taken is gone from it. Each note below "
        "is signed by the log's own key: anyone with that key can check it, and ask the "
        "ledger for its checkpoint of that size (GET /log/checkpoints/SIZE)."
    )
    for d in denials:
        lines += ["", f"{d.held[0].what}:", d.held[0].note.rstrip("\n")]
    lines += ["", f"{newest.what}, which the ledger serves today:", newest.note.rstrip("\n")]
    return Verdict(Outcome.EVIDENCE, tuple(lines))
