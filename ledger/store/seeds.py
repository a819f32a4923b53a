"""The secret server seeds of server-dice tables (engine.serverdice): one per caster's
turn, kept from the moment the turn commits to it until it is revealed, and after.

Only the ledger reads this table, in the write that throws or ends a turn. Nothing
serves it or exports it: before a turn ends, its seed is known to whoever can read the
database, and to no one else.
"""

from __future__ import annotations

from hashlib import sha256

import sqlalchemy as sa

from ledger.store.schema import server_seeds


def keep(conn: sa.Connection, stream: str, version: int, seed: bytes) -> None:
    """Keep `seed`, committed to by the `SeedCommitted` at `version` of `stream`."""
    conn.execute(server_seeds.insert().values(stream=stream, version=version, seed=seed))


def of_turn(conn: sa.Connection, stream: str, commitment: str) -> bytes | None:
    """The seed of the turn in play: the newest kept for `stream`, if it is the one
    `commitment` commits to (None when this database does not hold it: a table
    restored from an export, which never carries a seed)."""
    row = conn.execute(
        sa.select(server_seeds.c.seed)
        .where(server_seeds.c.stream == stream)
        .order_by(server_seeds.c.version.desc())
        .limit(1)
    ).first()
    if row is None or sha256(row.seed).hexdigest() != commitment:
        return None
    return bytes(row.seed)
