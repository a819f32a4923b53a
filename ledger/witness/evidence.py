"""The evidence a witness kept, as `hazard witness evidence` prints it.

Each refusal is printed whole: what the log was refused and why, in words; when (first
and last time, and how often it was sent); then the checkpoint the witness had cosigned
and the checkpoint it refused, both as the signed notes they are, so that anyone can
check both signatures with the log's public key and see for themselves that the two
cannot both be true.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ledger.witness.state import MAX_REFUSALS, Refusal


def when(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(refusals: list[Refusal], not_kept: int) -> str:
    """Every refusal kept, as text."""
    if not refusals:
        return "No evidence: this witness has refused no checkpoint signed by a log it follows.\n"
    parts = [f"{len(refusals)} refused checkpoint{'s' * (len(refusals) != 1)} kept as evidence"]
    if not_kept:
        parts.append(f", and {not_kept} more refused after the first {MAX_REFUSALS:,}, not kept")
    out = ["".join(parts) + ".\n"]
    for number, refusal in enumerate(refusals, start=1):
        out.append("\n" + _one(number, refusal))
    return "".join(out)


def _one(number: int, refusal: Refusal) -> str:
    times = "once" if refusal.times == 1 else f"{refusal.times} times, last {when(refusal.last_at)}"
    lines = [
        f"== {number}. {refusal.origin}: {refusal.reason}",
        f"refused {when(refusal.first_at)} ({times}), answered {refusal.status}",
        "-- the checkpoint this witness had cosigned:",
    ]
    text = "\n".join(lines) + "\n"
    text += refusal.cosigned_note if refusal.cosigned_note is not None else "(none yet)\n"
    hashes = len(refusal.proof)
    proof = f"a proof of {hashes} hash{'es' * (hashes != 1)}" if hashes else "no proof"
    text += f"-- the checkpoint it refused (sent with old {refusal.old} and {proof}):\n"
    text += refusal.refused_note
    if refusal.proof:
        text += "-- the proof it came with:\n" + "".join(line + "\n" for line in refusal.proof)
    return text


def as_json(refusals: list[Refusal], not_kept: int) -> dict[str, Any]:
    return {
        "refusals": [
            {
                "origin": r.origin,
                "breach": r.breach.value,
                "reason": r.reason,
                "status": r.status,
                "first_refused_at": when(r.first_at),
                "last_refused_at": when(r.last_at),
                "times": r.times,
                "cosigned_note": r.cosigned_note,
                "refused_note": r.refused_note,
                "old": r.old,
                "proof": list(r.proof),
            }
            for r in refusals
        ],
        "not_kept": not_kept,
    }
