"""Proofs from the stored tree: what a holder of a receipt asks the log for.

Reads only. A checkpoint here is one the log signed and stored (ledger.store.log.tree),
found by its tree size; every proof is between such checkpoints, because a client
holds only checkpoints the log handed out and can check only against one it can
verify. Record n of the tree is the event at position n + 1 (tree), so the inclusion
proof of position P in the tree of size T is merkle.prove_record(T, P - 1).

Anything asked for that the log does not hold is refused with an error that says
which rule it broke: a size no checkpoint has (NoCheckpoint), a position past the
log's end (NoEvent), or one the tree asked for does not reach, or two sizes the wrong
way round (OutOfTree).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ledger.store.eventstore import Recorded
from ledger.store.log import merkle, tree
from ledger.store.log.chains import parsed
from ledger.store.schema import checkpoints, events, postings, settlement_parties

MAX_SIZE = 2**63 - 1
"""The largest size or position a BIGINT column holds."""


class ProofRefused(Exception):
    """A proof, or a checkpoint, that the log cannot give: the message says why."""


class NoCheckpoint(ProofRefused):
    """No checkpoint of that size was signed (or none at all yet)."""


class NoEvent(ProofRefused):
    """No event at that position: the log is not that long."""


class OutOfTree(ProofRefused):
    """The tree asked for does not reach the position or size asked about."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class StoredCheckpoint:
    size: int
    root: str
    """The tree's root, hex (the note holds it in base64, as C2SP has it)."""
    issued_at: str
    note: str
    """The signed note, exactly as the write that made it handed it out."""

    def view(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "root": self.root,
            "issued_at": self.issued_at,
            "checkpoint": self.note,
        }


@dataclass(frozen=True)
class Inclusion:
    checkpoint: StoredCheckpoint
    event: Recorded
    leaf_index: int
    leaf_hash: bytes
    proof: list[bytes]


@dataclass(frozen=True)
class Consistency:
    old: StoredCheckpoint
    new: StoredCheckpoint
    proof: list[bytes]


def _checkpoint(row: Any) -> StoredCheckpoint:
    return StoredCheckpoint(int(row.size), row.root, row.issued_at, row.note)


def latest(conn: sa.Connection) -> StoredCheckpoint:
    """The newest checkpoint: the tree of the whole log, as of the last write."""
    row = conn.execute(sa.select(checkpoints).order_by(checkpoints.c.size.desc()).limit(1)).first()
    if row is None:
        raise NoCheckpoint("the log has no checkpoint yet: nothing has been written to it")
    return _checkpoint(row)


def latest_note(engine: sa.Engine) -> str | None:
    """The newest signed checkpoint stored, if any."""
    with engine.connect() as conn:
        return conn.execute(
            sa.select(checkpoints.c.note).order_by(checkpoints.c.size.desc()).limit(1)
        ).scalar()


def checkpoint(conn: sa.Connection, size: int) -> StoredCheckpoint:
    """The checkpoint of the tree of `size` events, as signed when a write made it."""
    # Past a BIGINT there is no such size, and a database may refuse the number
    # rather than answer none.
    row = (
        None
        if size > MAX_SIZE
        else conn.execute(sa.select(checkpoints).where(checkpoints.c.size == size)).first()
    )
    if row is None:
        raise NoCheckpoint(
            f"no checkpoint of size {size}: the log signs one at the size each write "
            "leaves it, and no write left it at that size"
        )
    return _checkpoint(row)


def _at(conn: sa.Connection, size: int | None) -> StoredCheckpoint:
    return latest(conn) if size is None else checkpoint(conn, size)


def event(conn: sa.Connection, position: int) -> Recorded:
    """The event at `position`, as stored."""
    row = conn.execute(sa.select(events).where(events.c.position == position)).first()
    if row is None:
        raise NoEvent(f"there is no event at position {position}")
    return Recorded(**row._mapping)


def inclusion(conn: sa.Connection, position: int, size: int | None = None) -> Inclusion:
    """The proof that the event at `position` is in the tree of the checkpoint of
    `size` (the newest when None)."""
    found = event(conn, position)
    at = _at(conn, size)
    if position > at.size:
        raise OutOfTree(
            "position",
            f"position {position} is not in the tree of size {at.size}: a tree of size T "
            f"holds positions 1 to T; ask for a checkpoint of size {position} or more",
        )
    proof = merkle.prove_record(at.size, position - 1, tree.reader(conn))
    return Inclusion(at, found, position - 1, tree.leaf(found), proof)


def consistency(conn: sa.Connection, old: int, new: int | None = None) -> Consistency:
    """The proof that the tree of the checkpoint of size `old` is a prefix of the tree
    of the checkpoint of size `new` (the newest when None)."""
    to = _at(conn, new)
    if old > to.size:
        raise OutOfTree(
            "from",
            f"a tree of size {old} cannot be a prefix of one of size {to.size}: "
            "`from` must be at most `to`",
        )
    start = checkpoint(conn, old)
    return Consistency(start, to, merkle.prove_tree(to.size, old, tree.reader(conn)))


def concerns(conn: sa.Connection, position: int, stream: str, account: str, name: str) -> bool:
    """Whether the event at `position` is one of a player's own: on their account's
    `stream`, posting to their `account`, settling a bet they were party to, or naming
    them (`name`, as a table names players) as a party in its payload."""
    found = event(conn, position)
    if found.stream == stream:
        return True
    posted = conn.execute(
        sa.select(postings.c.position)
        .where(postings.c.position == position, postings.c.account == account)
        .limit(1)
    ).first()
    if posted is not None:
        return True
    party = conn.execute(
        sa.select(settlement_parties.c.position).where(
            settlement_parties.c.position == position, settlement_parties.c.party == account
        )
    ).first()
    if party is not None:
        return True
    payload = parsed(found.payload) or {}
    return any(payload.get(key) == name for key in PARTIES)


PARTIES = ("player", "caster", "bettor", "offerer", "acceptor", "winner", "to", "claimant")
"""The fields of a table's events that name a player taking part: seated or casting,
the caster, a bettor, a side bet's offerer, acceptor or addressee, a bet's winner, a
dispute's claimant."""
