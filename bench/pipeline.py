"""The standard-library pipeline: the baseline issue 27 measures the audit's passes by.

Written outside the project's code (json and hashlib only, nothing from ledger/ or
engine/), it does what the offline verify does but the referee's replay and the
checks: each event is decoded, its postings summed (every transfer moves money from
one account to another, so the sum over the whole log is zero), its leaf hashed as
the log hashes it and folded into the Merkle tree, whose root must be the one the
log gives. What the audit does beyond this is what it costs beyond this.

    from_export(lines)     the lines of a whole-log JSON Lines export (hazard export
                           --all): the root is held to the closing line's
    from_rows(rows)        the events table's rows, in position order: the caller holds
                           the root to the stored tree's

The leaf is RFC 9162's, SHA-256(0x00 || D), of the event's document D in canonical
form (keys sorted, no spaces, UTF-8 as itself): the columns but the two hashes, the
payload parsed (docs/export-format.md, "event"; ledger.store.codec.frame writes the
same bytes around the stored payload text).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
_sha256 = hashlib.sha256

COLUMNS = (
    "position",
    "stream",
    "version",
    "type",
    "schema_version",
    "payload",
    "actor",
    "idempotency_key",
    "recorded_at",
)
"""The hashed columns of the events table, in the order from_rows takes them."""


class Mismatch(ValueError):
    """The pipeline's root is not the log's: it hashed something else."""


@dataclass(frozen=True)
class Pipelined:
    events: int
    root: str
    """Hex, the tree of the `events` leaves (RFC 9162's MTH)."""
    moved: int
    """The money every posting moved, all told (each transfer's amount)."""


class Tree:
    """The tree's right edge: the roots of its complete subtrees, largest first."""

    __slots__ = ("edge", "size")

    def __init__(self) -> None:
        self.size = 0
        self.edge: list[bytes] = []

    def append(self, leaf: bytes) -> None:
        # Each 1 bit at the bottom of the size before it is a subtree the leaf completes:
        # SHA-256(0x01 || left || right), RFC 9162 section 2.1.1.
        size, edge = self.size, self.edge
        while size & 1:
            leaf = _sha256(b"\x01" + edge.pop() + leaf).digest()
            size >>= 1
        edge.append(leaf)
        self.size += 1

    def root(self) -> bytes:
        # MTH(D[n]) = node(MTH(D[0:k]), MTH(D[k:n])), k the largest power of 2 below n:
        # the edge folded from the right. The empty tree's is SHA-256 of nothing.
        if not self.edge:
            return _sha256(b"").digest()
        root = self.edge[-1]
        for left in reversed(self.edge[:-1]):
            root = _sha256(b"\x01" + left + root).digest()
        return root


class Postings:
    """Every account's net, from each event's transfers (a deposit or a withdrawal
    moves money from or to `cash`): the sum over all accounts stays zero."""

    __slots__ = ("moved", "net")

    def __init__(self) -> None:
        self.net: Counter[str] = Counter()
        self.moved = 0

    def post(self, type_: str, payload: dict[str, Any]) -> None:
        transfers = payload.get("transfers")
        if transfers:
            for t in transfers:
                amount = t["amount"]
                self.net[t["source"]] -= amount
                self.net[t["target"]] += amount
                self.moved += amount
        elif type_ == "Deposited" or type_ == "Withdrawn":
            amount = payload["amount"] if type_ == "Deposited" else -payload["amount"]
            self.net["cash"] -= amount
            self.net[payload["account"]] += amount
            self.moved += abs(amount)

    def balanced(self) -> bool:
        return sum(self.net.values()) == 0


def from_export(lines: Iterable[bytes]) -> Pipelined:
    """The lines of a whole-log export, every event's leaf in the tree: Mismatch unless
    its root is the closing line's (and the postings sum to zero)."""
    tree, postings = Tree(), Postings()
    closing: str | None = None
    for line in lines:
        document = json.loads(line)
        record = document.pop("record")
        if record == "event":
            del document["leaf"], document["hash"], document["prev_hash"]
            postings.post(document["type"], document["payload"])
            hashed = _CANONICAL.encode(document).encode()
            tree.append(_sha256(b"\x00" + hashed).digest())
        elif record == "skip" or (record == "header" and document["tree_start"]["size"]):
            raise ValueError("the pipeline reads exports of the whole log only")
        elif record == "closing":
            closing = document["root"]
    root = tree.root().hex()
    if root != closing:
        raise Mismatch(f"the pipeline's root {root} is not the closing's {closing}")
    if not postings.balanced():
        raise Mismatch("the postings do not sum to zero")
    return Pipelined(tree.size, root, postings.moved)


def from_rows(rows: Iterable[tuple[Any, ...]]) -> Pipelined:
    """The events table's rows (COLUMNS, the payload as its stored text), in position
    order from the first: their tree's root (the caller holds it to the log's)."""
    tree, postings = Tree(), Postings()
    for row in rows:
        document = dict(zip(COLUMNS, row, strict=True))
        payload = document["payload"] = json.loads(document["payload"])
        postings.post(document["type"], payload)
        hashed = _CANONICAL.encode(document).encode()
        tree.append(_sha256(b"\x00" + hashed).digest())
    if not postings.balanced():
        raise Mismatch("the postings do not sum to zero")
    return Pipelined(tree.size, tree.root().hex(), postings.moved)
