"""Witnesses made in the test, as the ledger's pushes would leave them: three witness
keys, their cosignatures of stored checkpoints kept as the ledger keeps what a witness
returns (ledger.store.log.witnessed.record), and a reader's policy over them. Shared by
the tests of `hazard verify --policy`, the export's cosigned checkpoint, its offline
check and `hazard import --policy`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import sqlalchemy as sa

from ledger.store.log import witnessed
from ledger.store.log.checkpoint import parse_note
from ledger.store.log.cosignature import Cosigner
from ledger.store.log.keys import Verifier
from ledger.store.schema import checkpoints
from tests.signing import VERIFIER

TREASURER = Cosigner("treasurer.example/w", hashlib.sha256(b"treasurer").digest())
AUDITOR = Cosigner("auditor.example/w", hashlib.sha256(b"auditor").digest())
CHAIR = Cosigner("chair.example/w", hashlib.sha256(b"chair").digest())
WITNESSES = {"treasurer": TREASURER, "auditor": AUDITOR, "chair": CHAIR}
STRANGER = Cosigner("treasurer.example/w", hashlib.sha256(b"a stranger").digest())
"""A witness the policy does not name, under the treasurer's key name."""

AT = 1_795_000_000
"""When the witnesses cosign (POSIX seconds): 2026-11-18T..."""
RECEIVED = "2026-11-23T15:00:00Z"


def policy_text(quorum: str = "2", log: Verifier = VERIFIER) -> str:
    """The club's policy: the log, the three witnesses, and `quorum` of them (a number,
    `all` or `any`), or `none`, or one witness by name."""
    lines = [f"log {log.text()}"]
    lines += [f"witness {name} {w.key.text()}" for name, w in WITNESSES.items()]
    if quorum in ("none", *WITNESSES):
        lines.append(f"quorum {quorum}")
    else:
        lines += [f"group members {quorum} {' '.join(WITNESSES)}", "quorum members"]
    return "\n".join(lines) + "\n"


def policy_file(where: Path, quorum: str = "2", log: Verifier = VERIFIER) -> str:
    path = where / f"club-{quorum}.policy"
    path.write_text(policy_text(quorum, log), encoding="utf-8")
    return str(path)


def newest_size(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.max(checkpoints.c.size))).scalar() or 0)


def sizes(engine: sa.Engine) -> list[int]:
    """The sizes of the stored checkpoints, in order (one per write)."""
    with engine.connect() as conn:
        query = sa.select(checkpoints.c.size).order_by(checkpoints.c.size)
        return [int(size) for size in conn.execute(query).scalars()]


def cosign(engine: sa.Engine, size: int | None, *by: Cosigner, at: int = AT) -> int:
    """Each of `by` cosigns the stored checkpoint of `size` (default: the newest), and
    the ledger keeps it as it keeps a witness's answer; the size cosigned."""
    size = newest_size(engine) if size is None else size
    with engine.begin() as conn:
        note = conn.execute(sa.select(checkpoints.c.note).where(checkpoints.c.size == size))
        text, _ = parse_note(note.scalar_one())
        for witness in by:
            witnessed.record(conn, size, witness.key, witness.cosign(text, at), RECEIVED)
    return size


def unguard_cosignatures(conn: sa.Connection) -> None:
    """What an insider does to drop cosignatures: switch off their append-only triggers
    (inside tamperkit.unguarded's transaction)."""
    if conn.dialect.name == "sqlite":
        for what in ("update", "delete"):
            conn.exec_driver_sql(f"DROP TRIGGER cosignatures_refuse_{what}")
    else:
        conn.exec_driver_sql("ALTER TABLE cosignatures DISABLE TRIGGER ALL")
