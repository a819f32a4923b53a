"""The Merkle tree an export builds: from the header's tree_start, then event by event
and skip by skip, in position order from the file's first to its last, held at each
checkpoint line to the root that checkpoint signs, and at the close to the closing's
signed checkpoint by its consistency proof. Every signature is by the header's key.
Of the tree only its frontier is kept (merkle.Frontier, at most 64 hashes)."""

from __future__ import annotations

from typing import Any

from ledger.exports.offline import fields
from ledger.exports.offline.fields import is_int
from ledger.exports.verdict import CheckpointLine, Disagreement, Header, SkipLine
from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, NoteError, open_checkpoint


class Gap(Disagreement):
    """A position missing: deleted, unless the next line holds it (lines swapped)."""

    def __init__(self, line: int, reason: str, missing: int, found: int) -> None:
        super().__init__(line, reason)
        self.missing, self.found = missing, found


class Tree:
    def __init__(self) -> None:
        self.frontier = merkle.Frontier()
        """The tree of the events so far: its size is the last position covered by an
        event or skip line."""
        self.header: Header | None = None
        """Whose key signs every checkpoint, and whose origin they name."""
        self.last = 0
        """The header's last position."""
        self.skipped = 0
        self.checkpoints = 0
        self.checkpoint_seen_at = -1

    @property
    def size(self) -> int:
        return self.frontier.size

    def start(self, header: Header) -> None:
        """The tree before the file's first position, as the header gives it."""
        self.frontier = merkle.Frontier(header.first - 1, header.tree_start)
        self.header = header
        self.last = header.last

    def add(self, number: int, position: int, document: bytes, leaf_hex: str) -> bytes:
        """The event on line `number`, at `position`, which must be the next: its leaf,
        the hash of its document, must be the `leaf` the line gives; it joins the tree."""
        frontier = self.frontier
        if position != frontier.size + 1:
            raise self._out_of_place(number, position)
        if position > self.last:
            raise Disagreement(
                number,
                f"position {position} is past the header's last ({self.last}): a line was added",
            )
        leaf = merkle.leaf_hash(document)
        if leaf.hex() != leaf_hex:
            raise Disagreement(
                number,
                "the event does not hash to its leaf (its content, or the leaf, was changed "
                "after export)",
            )
        frontier.append(leaf)
        return leaf

    def skip(self, number: int, s: dict[str, Any]) -> SkipLine:
        """A skip line: positions outside the scope, as the complete subtrees that
        cover them (merkle.cover), each as large as the size so far allows."""
        start, end, hashes = s.get("from"), s.get("to"), s.get("hashes")
        if not (is_int(start) and is_int(end) and isinstance(hashes, list)):
            raise Disagreement(
                number, "the skip line's from, to and hashes are not what they must be"
            )
        if start != self.frontier.size + 1:
            raise self._out_of_place(number, start)
        if end < start or end > self.last:
            raise Disagreement(
                number, f"the skip line covers {start}..{end}, not a range within the file's"
            )
        subtrees = merkle.cover(start - 1, end)
        if len(hashes) != len(subtrees):
            raise Disagreement(
                number,
                f"positions {start}..{end} are {len(subtrees)} complete subtrees, the skip line "
                f"gives {len(hashes)} hashes",
            )
        digests = fields.hashes(number, hashes, "skipped hash")
        for digest, (level, _) in zip(digests, subtrees, strict=True):
            self.frontier.append_subtree(level, digest)
        self.skipped += end - start + 1
        return SkipLine(number, start, end, tuple(digests))

    def checkpoint(self, number: int, c: dict[str, Any]) -> CheckpointLine:
        """A checkpoint line, after the event at its size: signed over the root the
        lines so far build."""
        size, issued_at = c.get("size"), c.get("issued_at")
        if not is_int(size) or not isinstance(issued_at, str):
            raise Disagreement(
                number, "the checkpoint line's size and issued_at are not what they must be"
            )
        at = self.frontier.size
        if size != at:
            gap = (
                f"position {size} is missing (a line was deleted?)"
                if size == at + 1
                else f"positions {at + 1}..{size} are missing (lines deleted?)"
                if size > at
                else "it must follow the event at its size"
            )
            raise Disagreement(
                number, f"a checkpoint of size {size} where the file is at position {at}: {gap}"
            )
        if size == self.checkpoint_seen_at:
            raise Disagreement(number, f"a second checkpoint of size {size}")
        checkpoint = self.signed(number, c.get("note"), f"the checkpoint of size {size}")
        if checkpoint.size != size:
            raise Disagreement(
                number, f"the checkpoint line says size {size}, its signed note {checkpoint.size}"
            )
        root = self.frontier.root()
        if checkpoint.root != root:
            raise Disagreement(
                number,
                f"the signed checkpoint of size {size} has root {checkpoint.root.hex()}, but the "
                f"events up to here give {root.hex()}: an event before it was changed or forged",
            )
        _issued_as_signed(number, checkpoint, issued_at, f"the checkpoint of size {size}")
        self.checkpoints += 1
        self.checkpoint_seen_at = size
        return CheckpointLine(number, size, root, issued_at, c["note"])

    def close(self, number: int, where: str, c: dict[str, Any]) -> tuple[bytes, CheckpointLine]:
        """The closing record's root, the one the lines build, and its checkpoint,
        signed, which the consistency proof ties that root to."""
        root_hex, cp = c.get("root"), c.get("checkpoint")
        root = self.frontier.root()
        if root_hex != root.hex():
            raise Disagreement(
                number,
                f"the {where} gives root {root_hex}, but the lines build the tree with root "
                f"{root.hex()}: an event or a hash was changed",
            )
        if (
            not isinstance(cp, dict)
            or not is_int(cp.get("size"))
            or not isinstance(cp.get("issued_at"), str)
        ):
            raise Disagreement(number, f"the {where} has no checkpoint of size and time")
        signed = self.signed(number, cp.get("note"), f"the {where}'s checkpoint")
        _issued_as_signed(number, signed, cp["issued_at"], f"the {where}'s checkpoint")
        last = self.last
        if signed.size != cp["size"] or signed.size < last:
            raise Disagreement(
                number,
                f"the {where}'s checkpoint is of size {signed.size} (its line says "
                f"{cp['size']}), which does not cover the file's {last} events",
            )
        proof_text = c.get("consistency")
        if not isinstance(proof_text, list):
            raise Disagreement(number, f"the {where} has no consistency proof")
        proof = fields.hashes(number, proof_text, "consistency proof hash")
        forged = (
            f"{where}: the tree of these events has root {root.hex()}, which the signed "
            f"checkpoint at size {signed.size} does not prove: an event or hash was forged"
        )
        if last == 0:
            if proof:
                raise Disagreement(number, f"{where}: an empty file needs no proof, it gives one")
        elif last == signed.size:
            if proof:
                raise Disagreement(
                    number, f"{where}: the checkpoint is of the same size, yet a proof is given"
                )
            if signed.root != root:
                raise Disagreement(number, forged)
        else:
            try:
                merkle.check_tree(proof, signed.size, signed.root, last, root)
            except merkle.MerkleError:
                raise Disagreement(number, forged) from None
        return root, CheckpointLine(number, signed.size, signed.root, cp["issued_at"], cp["note"])

    def signed(self, number: int, note: Any, what: str) -> Checkpoint:
        """The checkpoint in `note` (line `number`, `what` it is), signed by the header's
        key and of the header's log; Disagreement when not."""
        header = self.header
        assert header is not None
        if not isinstance(note, str):
            raise Disagreement(number, f"{what} has no note")
        try:
            checkpoint = open_checkpoint(note, [header.key])
        except NoteError as exc:
            raise Disagreement(
                number, f"{what} is not signed by the header's key {header.key.text()}: {exc}"
            ) from None
        if checkpoint.origin != header.origin:
            raise Disagreement(
                number,
                f"{what} is of the log {checkpoint.origin!r}, not the header's {header.origin!r}",
            )
        return checkpoint

    def _out_of_place(self, number: int, position: Any) -> Disagreement:
        size = self.frontier.size
        if position == size:
            return Disagreement(number, f"position {position} again: a line was repeated (added)")
        if position > size + 1:
            gap = (
                f"position {size + 1} is missing"
                if position == size + 2
                else f"positions {size + 1}..{position - 1} are missing"
            )
            return Gap(
                number,
                f"position {position} follows {size}: {gap} (a line was deleted?)",
                size + 1,
                position,
            )
        return Disagreement(
            number,
            f"position {position} follows {size}: lines out of order (moved, or added)",
        )


def _issued_as_signed(number: int, checkpoint: Checkpoint, issued_at: str, what: str) -> None:
    """`issued_at` is not signed, but the note's `time` line is: the two must agree to
    the second, or a restore would keep a time the service never signed."""
    for line in checkpoint.extensions:
        if line.startswith("time ") and not (
            issued_at[:19] == line[5:24] and issued_at.endswith("Z")
        ):
            raise Disagreement(
                number, f"{what} says it was issued at {issued_at}, its signed note at {line[5:]}"
            )
