"""Receipts handed to a watcher (`hazard watch add`), and a tlog-proof checked alone
(`hazard watch check`), with no ledger and no state: only the reader's policy.

A receipt is kept only once the policy's log key is found to have signed it (and, for
a tlog-proof, once its inclusion path holds), so that a watcher never holds a note it
would refuse later. A receipt of a size the watcher already holds with another root is
a fork on the spot, proven by the two notes, and nothing is kept.
"""

from __future__ import annotations

import dataclasses
import enum
import json

from ledger.store.log.checkpoint import NoteError, open_checkpoint
from ledger.store.log.policy import Policy
from ledger.store.log.tlogproof import TlogProof, TlogProofError, check
from ledger.watch.evidence import Fork, Held, Verdict, forked
from ledger.watch.state import Receipt, State

MAX_RECEIPT = 4 << 20
"""The largest receipt file read: a note is a few hundred bytes, an event's frame a few
kilobytes."""


class Refused(ValueError):
    """A receipt that is not kept: the message says why."""


@dataclasses.dataclass(frozen=True)
class Admitted:
    state: State
    said: str


def admit(state: State, receipt: Receipt, policy: Policy) -> Admitted | Verdict:
    """`state` with `receipt` added, once checked under `policy`; or the fork it makes
    with a checkpoint held (a Verdict, EVIDENCE); Refused when it does not check."""
    logs = [log.key for log in policy.logs]
    try:
        if receipt.is_proof:
            proved = check(TlogProof.parse(receipt.text), policy)
            checkpoint = proved.verdict.checkpoint
            what = f"a tlog-proof of the event at position {proved.position}, in the tree"
        else:
            checkpoint = open_checkpoint(receipt.note, logs)
            what = "a checkpoint"
    except (NoteError, TlogProofError) as e:
        raise Refused(f"{receipt.name} is not kept: {e}") from None
    held: list[tuple[str, str, str | None]] = [
        (f"receipt {r.name}", r.note, r.text) for r in state.receipts
    ]
    if state.newest is not None:
        held.append(("the checkpoint this watcher verified", state.newest, None))
    for name, note, text in held:
        other = open_checkpoint(note, logs)
        if other.size == checkpoint.size and other.root != checkpoint.root:
            mine = f"receipt {receipt.name}, of size {checkpoint.size}"
            return forked(
                Fork(
                    Held(f"{name}, of size {other.size}", note, other),
                    Held(mine, receipt.note, checkpoint),
                )
            )
        if text == receipt.text:
            return Admitted(state, f"{receipt.name}: already held (as {name}); nothing added")
    kept = dataclasses.replace(state, receipts=(*state.receipts, receipt))
    return Admitted(
        kept,
        f"{receipt.name}: added, {what} of size {checkpoint.size} signed by "
        f"{checkpoint.origin}; the next hazard watch checks the ledger still extends it",
    )


class Checked(enum.IntEnum):
    """What `hazard watch check` found; its value is the exit status."""

    PROVEN = 0
    """The event is in the log, at that position, under a checkpoint the quorum cosigned."""
    BROKEN = 1
    """The file does not prove it: not a tlog-proof, a signature, the path, the leaf or
    the index does not hold."""
    UNWITNESSED = 2
    """The proof holds, but the checkpoint lacks the quorum of cosignatures: it rests on
    fewer witnesses than the policy asks."""


def check_file(name: str, data: bytes, policy: Policy) -> tuple[Checked, list[str]]:
    """A tlog-proof file checked offline under `policy`, and the event it proves."""
    try:
        proof = TlogProof.parse(data)
        proved = check(proof, policy)
    except (NoteError, TlogProofError) as e:
        return Checked.BROKEN, [f"{name} does not prove its event: {e}"]
    event = _event(proved.frame)
    if event.get("position") != proved.position:
        return Checked.BROKEN, [
            f"{name} does not prove its event: the extra line's event says position "
            f"{event.get('position')!r}, but the proof is of position {proved.position}"
        ]
    verdict = proved.verdict
    names = ", ".join(sorted(verdict.cosigned))
    cosigned = f", cosigned by {names}" if names else ", cosigned by no witness of the policy"
    tree = verdict.checkpoint
    lines = [
        f"event: position {proved.position}, {event.get('type')} on {event.get('stream')} "
        f"(version {event.get('version')}), recorded {event.get('recorded_at')} by "
        f"{event.get('actor')}",
        "payload: " + json.dumps(event.get("payload"), sort_keys=True, separators=(",", ":")),
        f"in the tree of {tree.size} events, root {tree.root.hex()}, signed by "
        f"{tree.origin}{cosigned} (the policy asks {policy.describe()})",
    ]
    if not verdict.quorum:
        return Checked.UNWITNESSED, [
            *lines,
            f"not witnessed: the policy asks {policy.describe()}; the event is in the tree "
            "the bank signed, on its word alone",
        ]
    return Checked.PROVEN, [*lines, f"{name}: proven"]


def _event(frame: bytes) -> dict[str, object]:
    try:
        found = json.loads(frame)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
