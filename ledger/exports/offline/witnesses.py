"""The closing's cosigned checkpoint: the newest checkpoint witnesses had cosigned when
the file was made, at or below the closing's checkpoint, with the consistency proof
from it to that checkpoint; and, under the reader's own policy, its quorum.

The proof ties the two: the log the file was proved against extends the tree the
witnesses saw, so the file's events at positions up to its size are the ones the
witnesses were shown, not a history shown to this reader alone. Without a policy the
cosignatures cannot be checked (only the reader knows whom they trust), and the file
rests on the bank's key alone: `verify` says so. The policy is never one the file
names: whoever holds the log's key could name witnesses of their own."""

from __future__ import annotations

from typing import Any

from ledger.exports.offline import fields
from ledger.exports.offline.fields import is_int
from ledger.exports.offline.tree import Tree
from ledger.exports.verdict import CheckpointLine, CosignedLine, Disagreement
from ledger.store.log import merkle
from ledger.store.log.checkpoint import NoteError, parse_note
from ledger.store.log.policy import Policy
from ledger.store.log.quorum import want_of_quorum

STRIPPED = (
    "(no witness had cosigned when it was exported, or its cosigned checkpoint was "
    "stripped: export it again once the witnesses have cosigned)"
)


def check(
    number: int,
    given: Any,
    tree: Tree,
    closing: CheckpointLine,
    policy: Policy | None,
) -> CosignedLine | None:
    """The closing record's `cosigned` (the record on line `number`), proved within
    `closing`, the closing's signed checkpoint, and held to `policy` when given."""
    if given is None:
        if policy is not None and not policy.witnessed(()):
            raise Disagreement(
                number,
                want_of_quorum(policy, "the closing record carries no checkpoint") + " " + STRIPPED,
            )
        return None
    what = "the closing record's cosigned checkpoint"
    if (
        not isinstance(given, dict)
        or not is_int(given.get("size"))
        or not isinstance(given.get("consistency"), list)
        or not isinstance(given.get("note"), str)
    ):
        raise Disagreement(number, f"{what} has no size, note and consistency proof")
    note: str = given["note"]
    checkpoint = tree.signed(number, note, what)
    size = given["size"]
    if checkpoint.size != size or size > closing.size:
        raise Disagreement(
            number,
            f"{what} is of size {checkpoint.size} (its line says {size}): not a checkpoint at "
            f"or below the closing's, of size {closing.size}",
        )
    proof = fields.hashes(number, given["consistency"], "consistency proof hash")
    _proved(number, what, proof, checkpoint.size, checkpoint.root, closing)
    lines = len(parse_note(note)[1]) - 1
    if policy is None:
        return CosignedLine(number, size, checkpoint.root, note, {}, lines)
    try:
        verdict = policy.verify(note)
    except NoteError as exc:
        raise Disagreement(
            number,
            f"{what} does not hold under your policy: {exc} over it: the witnesses cosigned "
            "another checkpoint of that size (the log rewritten and signed again after they "
            "saw it), or the line was forged",
        ) from None
    if not verdict.quorum:
        named = ", ".join(sorted(verdict.cosigned)) or "none of its witnesses"
        raise Disagreement(
            number,
            want_of_quorum(policy, f"{what}, of size {size}, is not")
            + f": of your policy's witnesses it carries {named}",
        )
    return CosignedLine(number, size, checkpoint.root, note, verdict.cosigned, lines)


def _proved(
    number: int, what: str, proof: list[bytes], size: int, root: bytes, closing: CheckpointLine
) -> None:
    """The tree of `size` with `root` is a prefix of the closing's checkpoint's."""
    forged = (
        f"{what}, of size {size}, is not a prefix of the closing's checkpoint of size "
        f"{closing.size}: the consistency proof between them fails (forged, or another history)"
    )
    if size in (0, closing.size):  # nothing to prove: the roots must be equal
        if proof:
            raise Disagreement(number, f"{what} is of the same size or empty, yet a proof is given")
        if root != (merkle.EMPTY_ROOT if size == 0 else closing.root):
            raise Disagreement(number, forged)
        return
    try:
        merkle.check_tree(proof, closing.size, closing.root, size, root)
    except merkle.MerkleError:
        raise Disagreement(number, forged) from None
