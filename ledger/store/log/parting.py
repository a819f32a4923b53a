"""Where the log parts from the checkpoints kept elsewhere (receipts): `hazard verify
--checkpoint FILE`, given once or more.

Only what was kept away from the bank can bound where history changed: whoever holds
the signing key can rewrite the events, rebuild the tree and sign every stored
checkpoint again, so a stored checkpoint that agrees with the events proves nothing
about what was there before (it is how a dropped event came to read as a cut log). So
the range named for the change is what these prove, and nothing else:

- from below: the largest kept checkpoint, smaller than the first the log does not
  agree with, that it does agree with (its first events are that checkpoint's; the two
  are taken as one history, as a log that only grows signs them; one that agrees with a
  larger checkpoint and not a smaller is said to be a fork); or the stored tree, where
  its hashes still prove a consistency proof up to the checkpoint's root (the events
  agree with the stored tree up to where the pass found them apart, and the proof
  ties that much of it to the checkpoint);
- from above: that checkpoint's size; the log's end, if it is shorter; the first
  position missing; the first event that breaks its stream's chain (a log written by
  the ledger has none, so the log parts from the checkpoint's history there at the
  latest); and the stored leaf where the events part from the stored tree, where an
  inclusion proof ties it to the checkpoint's root.

Where nothing bounds it from below, it says so, and the range starts at position 1.
A stored checkpoint signed by the trusted key of a kept checkpoint's size but another
root is said too: the key signed two histories of one size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from ledger.store import db
from ledger.store.log import merkle, tree
from ledger.store.log.checkpoint import Checkpoint, NoteError, open_checkpoint
from ledger.store.log.keys import Verifier


@dataclass(frozen=True)
class Kept:
    """A checkpoint kept elsewhere, opened with the trusted key, and what to call it (the
    file it came from)."""

    name: str
    checkpoint: Checkpoint

    @property
    def size(self) -> int:
        return self.checkpoint.size


@dataclass(frozen=True)
class Held:
    """A kept checkpoint held to the log: whether the log's first `size` events have its
    root, and if not, why not."""

    kept: Kept
    agrees: bool
    why: str = ""


@dataclass(frozen=True)
class Bound:
    """One thing that bounds where the log parts: the position, and what proves it."""

    position: int
    why: str


@dataclass(frozen=True)
class Parting:
    """Each kept checkpoint held to the log and, when any does not agree, where the log
    parts from the smallest of those (`first`..`last`, inclusive) and why."""

    held: tuple[Held, ...]
    first: int = 0
    last: int = 0
    why: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What else the checkpoints show: two histories of one size the key signed."""

    @property
    def agrees(self) -> bool:
        return all(h.agrees for h in self.held)

    @property
    def target(self) -> Held | None:
        """The smallest kept checkpoint the log does not agree with."""
        return min((h for h in self.held if not h.agrees), key=lambda h: h.kept.size, default=None)

    def where(self) -> str:
        if self.first == self.last:
            return f"at position {self.first}"
        return f"somewhere in positions {self.first}..{self.last}"

    def lines(self) -> list[str]:
        """What `hazard verify` says of each kept checkpoint, in the order given."""
        target = self.target
        out = []
        for h in self.held:
            head = f"checkpoint {h.kept.name} (size {h.kept.size}): "
            if h.agrees:
                out.append(head + f"the log agrees with the checkpoint of size {h.kept.size}")
            elif h is target:
                out.append(head + f"the log parts from the checkpoint {self.where()}: {self.why}")
            else:
                assert target is not None
                out.append(
                    head + f"the log does not agree with it either ({h.why}); where they part "
                    f"is said of {target.kept.name}, the smallest it does not agree with"
                )
        return out + list(self.notes)


def held_to(kept: Sequence[Kept], size: int, roots: dict[int, bytes]) -> list[Held]:
    """Each kept checkpoint against a log of `size` events whose root at each kept
    checkpoint's size (within it) is in `roots`."""
    out = []
    for k in kept:
        if k.size == 0:
            out.append(Held(k, True))
        elif k.size > size:
            out.append(Held(k, False, f"the log has {size} events, the checkpoint {k.size}"))
        elif roots.get(k.size) == k.checkpoint.root:
            out.append(Held(k, True))
        else:
            out.append(Held(k, False, f"the log's first {k.size} events have another root"))
    return out


@dataclass(frozen=True)
class Evidence:
    """What the database's own pass found, as bounds: the first position missing, the
    first event that breaks its stream's chain (with what the finding said), and what
    the stored tree proves about the target checkpoint."""

    missing: int | None = None
    broken: tuple[int, str] | None = None
    tree_from: int | None = None
    """The stored tree proves the log's events before this position are the target
    checkpoint's."""
    tree_at: int | None = None
    """The stored tree proves the event at this position is not the target's."""
    signed: bytes | None = None
    """The root a stored checkpoint signed by the trusted key gives the target's size."""


def part(held: Sequence[Held], size: int, evidence: Evidence) -> Parting:
    """Where the log of `size` events parts from the smallest kept checkpoint it does
    not agree with: the narrowest range the kept checkpoints and the evidence prove."""
    found = Parting(tuple(held))
    target = found.target
    if target is None:
        return found
    b = target.kept
    below = [h.kept for h in held if h.agrees and h.kept.size < b.size]
    above = [h.kept for h in held if h.agrees and h.kept.size > b.size]
    lows: list[Bound] = [
        Bound(k.size + 1, f"it agrees with {k.name} (size {k.size})")
        for k in sorted(below, key=lambda k: k.size)[-1:]
    ]
    if evidence.tree_from is not None:
        lows.append(
            Bound(
                evidence.tree_from,
                f"the stored tree proves its first {evidence.tree_from - 1} events are the "
                "checkpoint's (a consistency proof from its stored hashes to the checkpoint's "
                "root)",
            )
        )
    highs = [Bound(b.size, target.why)]
    if size < b.size:
        highs.append(Bound(size + 1, f"the log ends at {size} events"))
    if evidence.missing is not None:
        highs.append(Bound(evidence.missing, f"position {evidence.missing} is missing"))
    if evidence.broken is not None:
        at, what = evidence.broken
        highs.append(
            Bound(at, f"the event at {at} breaks its stream's hash chain, which none the "
                  f"ledger writes does ({what})")
        )  # fmt: skip
    if evidence.tree_at is not None:
        highs.append(
            Bound(
                evidence.tree_at,
                f"the event at {evidence.tree_at} is not the checkpoint's (an inclusion proof "
                "of the stored leaf hash there leads to the checkpoint's root)",
            )
        )
    low = max(lows, key=lambda x: x.position, default=None)
    high = min(highs, key=lambda x: x.position)
    first = low.position if low is not None else 1
    last = max(high.position, first)
    reasons = [low.why] if low is not None else []
    reasons.append(high.why)
    if low is None:
        reasons.append(
            "nothing bounds it from below: no smaller checkpoint given agrees with the log, "
            "and the stored tree proves no part of the log to be the checkpoint's (it was "
            "rebuilt, or does not reach its size)"
        )
    notes = []
    if evidence.signed is not None and evidence.signed != b.checkpoint.root:
        notes.append(
            f"the trusted key signed two trees of size {b.size}: {b.name} and the stored "
            "checkpoint of that size, which has another root: two histories of one size (the "
            "log was written again and signed with the key)"
        )
    for k in sorted(above, key=lambda k: k.size):
        notes.append(
            f"the log agrees with {k.name} (size {k.size}) but not with {b.name} (size "
            f"{b.size}): the key signed both, and the smaller is not a prefix of the "
            "larger: two histories (a fork)"
        )
    return Parting(tuple(held), first, last, "; ".join(reasons), tuple(notes))


def tree_bounds(
    conn: sa.Connection, checkpoint: Checkpoint, size: int, departs: int | None, leaf: int | None
) -> tuple[int | None, int | None]:
    """What the stored tree proves about where a log of `size` events parts from
    `checkpoint`: (the first position not proven the checkpoint's, the position proven
    not to be), each None when it proves nothing.

    The pass found the events' tree equal to the stored one before `departs` (the
    first record where any stored hash differs; None: none does), and `leaf` is the
    first record whose event's leaf is not its stored leaf. The stored hashes prove the
    events before it the checkpoint's when a consistency proof read from them leads
    from the stored tree there to the checkpoint's root; and the event at `departs` not
    the checkpoint's when its stored leaf, which it differs from, is proven the
    checkpoint's by an inclusion proof."""
    n = checkpoint.size
    before = departs - 1 if departs is not None else size
    if before >= n:
        return None, None
    read = tree.reader(conn)
    try:
        root = merkle.tree_hash(before, read)
    except merkle.MerkleError:
        return None, None
    if before > 0 and not prefix_proven(conn, before, root, checkpoint):
        return None, None
    if departs is None or leaf != departs:
        return before + 1, None
    try:
        stored_leaf = read([merkle.stored_hash_index(0, before)])
        proof = merkle.prove_record(n, before, read)
        if len(stored_leaf) != 1:
            return before + 1, None
        merkle.check_record(proof, n, checkpoint.root, before, stored_leaf[0])
    except merkle.MerkleError:
        return before + 1, None
    return before + 1, departs


def prefix_proven(conn: sa.Connection, size: int, root: bytes, checkpoint: Checkpoint) -> bool:
    """Whether the stored tree proves the tree of `size` records with `root` a prefix of
    `checkpoint`'s: a consistency proof read from the stored hashes, checked against
    both roots."""
    if size == checkpoint.size:
        return root == checkpoint.root
    try:
        proof = merkle.prove_tree(checkpoint.size, size, tree.reader(conn))
        merkle.check_tree(proof, checkpoint.size, checkpoint.root, size, root)
    except merkle.MerkleError:
        return False
    return True


def signed_root(conn: sa.Connection, verifier: Verifier, size: int) -> bytes | None:
    """The root the stored checkpoint of `size` signs, if the trusted key signed it."""
    rows = db.fetch(conn, "SELECT note FROM checkpoints WHERE size = ?", (size,))
    if not rows:
        return None
    try:
        return open_checkpoint(rows[0][0], [verifier]).root
    except (NoteError, ValueError):
        return None
