"""What witnesses said of the log, as the ledger keeps it: their cosignatures of its
checkpoints, and the checkpoints others reported being shown (gossip).

A cosignature is stored only once it verifies against the witness's key and the
stored checkpoint's text, so the cosigned note read back (the stored note with every
cosignature line added) is one a reader can check against their own policy. Nothing
here decides whom to trust: that is the reader's policy (ledger.store.log.policy).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

from ledger.store.log.checkpoint import Checkpoint, NoteSignature, open_note, parse_note
from ledger.store.log.cosignature import WitnessKey, with_signatures
from ledger.store.log.keys import Verifier
from ledger.store.schema import checkpoints, cosignatures, gossip

MAX_REPORTER = 200
"""The longest `reported_by` kept: a name or URL a reporter gives, never trusted."""


class NotCosigned(LookupError):
    """The cosignature does not verify against the witness's key and the checkpoint."""


@dataclasses.dataclass(frozen=True)
class Cosigned:
    """A stored checkpoint with the cosignatures witnesses returned for it."""

    size: int
    note: str
    witnesses: dict[str, int]
    """Each witness key (its vkey) that cosigned, with the time it cosigned at."""


def record(
    conn: sa.Connection, size: int, witness: WitnessKey, line: NoteSignature, received_at: str
) -> bool:
    """Keep `witness`'s cosignature `line` of the stored checkpoint of `size`. False
    when it is kept already; NotCosigned when it does not verify, or there is no
    stored checkpoint of that size."""
    note = conn.execute(sa.select(checkpoints.c.note).where(checkpoints.c.size == size)).scalar()
    if note is None:
        raise NotCosigned(f"no stored checkpoint of size {size}")
    text, _ = parse_note(note)
    timestamp = witness.timestamp(text, line) if witness.matches(line) else None
    if timestamp is None:
        raise NotCosigned(f"{witness.name}'s line is not a cosignature of checkpoint {size}")
    vkey = witness.text()
    exists = conn.execute(
        sa.select(sa.literal(1)).where(cosignatures.c.size == size, cosignatures.c.witness == vkey)
    ).first()
    if exists:
        return False
    conn.execute(
        cosignatures.insert().values(
            size=size,
            witness=vkey,
            line=line.line().rstrip("\n"),
            cosigned_at=timestamp,
            received_at=received_at,
        )
    )
    return True


def _cosigned(conn: sa.Connection, size: int) -> Cosigned | None:
    note = conn.execute(sa.select(checkpoints.c.note).where(checkpoints.c.size == size)).scalar()
    if note is None:
        return None
    rows = conn.execute(
        sa.select(cosignatures.c.witness, cosignatures.c.line, cosignatures.c.cosigned_at)
        .where(cosignatures.c.size == size)
        .order_by(cosignatures.c.witness)
    ).all()
    lines = [parse_note(f"x\n\n{row.line}\n")[1][0] for row in rows]
    return Cosigned(size, with_signatures(note, lines), {r.witness: r.cosigned_at for r in rows})


def at(conn: sa.Connection, size: int) -> Cosigned | None:
    """The stored checkpoint of `size` with its cosignatures (none, maybe), or None
    when no checkpoint of that size is stored."""
    return _cosigned(conn, size)


def newest(conn: sa.Connection, witnesses: set[str] | None = None) -> Cosigned | None:
    """The largest stored checkpoint that any witness cosigned (of `witnesses`, their
    vkeys, when given), with every cosignature it has; None when there is none."""
    query = sa.select(sa.func.max(cosignatures.c.size))
    if witnesses is not None:
        query = query.where(cosignatures.c.witness.in_(sorted(witnesses)))
    size = conn.execute(query).scalar()
    return None if size is None else _cosigned(conn, size)


def last_cosigned(conn: sa.Connection, witness: WitnessKey) -> int:
    """The largest size `witness` cosigned here (0: none), where its next push starts."""
    query = sa.select(sa.func.max(cosignatures.c.size)).where(
        cosignatures.c.witness == witness.text()
    )
    return conn.execute(query).scalar() or 0


# -- gossip -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Report:
    id: int
    size: int
    root: str
    note: str
    reported_by: str | None
    reported_at: str

    def view(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def report(
    conn: sa.Connection, note: str, log: Verifier, reported_by: str | None, reported_at: str
) -> tuple[Report, bool]:
    """Keep a checkpoint someone reports being shown, once it is signed by `log` (a
    NoteError says why not): the report kept for its (size, root), and whether it is
    new. Only the log's signature is kept with it, so that a report cannot grow by
    other lines, and nobody but the log's key can add a row: at most one per tree
    the log ever signed, however many reports."""
    opened = open_note(note, [log])
    checkpoint = Checkpoint.parse(opened.text)
    own = [s for s in opened.signatures if s.name == log.name and s.key_id == log.key_id]
    kept = opened.text + "\n" + "".join(s.line() for s in own)
    root = checkpoint.root.hex()
    found = reported(conn, checkpoint.size, root)
    if found is not None:
        return found, False
    by = None if reported_by is None else reported_by[:MAX_REPORTER]
    conn.execute(
        gossip.insert().values(
            size=checkpoint.size, root=root, note=kept, reported_by=by, reported_at=reported_at
        )
    )
    found = reported(conn, checkpoint.size, root)
    assert found is not None
    return found, True


def reported(conn: sa.Connection, size: int, root: str) -> Report | None:
    """The report kept for the tree of `size` and `root` (hex), if any: what a reader
    asks before it takes a write lock to keep a report that may be known already."""
    where = (gossip.c.size == size, gossip.c.root == root)
    row = conn.execute(sa.select(gossip).where(*where)).first()
    return None if row is None else Report(*row)


def reports(conn: sa.Connection, after: int = 0, limit: int = 100) -> list[Report]:
    """The reports kept, in the order they came, a page at a time (`after` an id)."""
    rows = conn.execute(
        sa.select(gossip).where(gossip.c.id > after).order_by(gossip.c.id).limit(limit)
    ).all()
    return [Report(*row) for row in rows]
