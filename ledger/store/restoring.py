"""The tables a restore fills (ledger.exports.restore): whether they are empty, the
checkpoints it writes, and the accounts it made.

The events and the tree's hashes it writes by name (db.insert_tuples), as fast as the
driver takes them; the read models, through the books' own replay.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from ledger.store.schema import (
    accounts,
    checkpoints,
    dice_counts,
    events,
    main_counts,
    main_tables,
    postings,
    rounds,
    settlement_parties,
    settlements,
    snapshots,
    tree_hashes,
)

HELD = (
    tree_hashes,
    checkpoints,
    accounts,
    postings,
    settlements,
    settlement_parties,
    rounds,
    snapshots,
    dice_counts,
    main_counts,
    main_tables,
)
"""What a restore fills besides the events: each must be empty before it starts."""


def event_count(conn: sa.Connection) -> int:
    """How many events the log holds."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())


def first_filled(conn: sa.Connection) -> str | None:
    """The name of the first table of HELD that holds a row, if any."""
    for table in HELD:
        if conn.execute(sa.select(sa.literal(1)).select_from(table).limit(1)).first():
            return table.name
    return None


def write_checkpoints(conn: sa.Connection, ready: Sequence[tuple[int, str, str, str]]) -> None:
    """Store the checkpoints `ready`, each (size, root, issued_at, note), in one statement."""
    conn.execute(
        checkpoints.insert(),
        [{"size": s, "root": r, "issued_at": at, "note": note} for s, r, at, note in ready],
    )


def account_count(conn: sa.Connection) -> int:
    """How many accounts the books hold, the bets' escrows aside."""
    return int(
        conn.execute(
            sa.select(sa.func.count())
            .select_from(accounts)
            .where(~accounts.c.account.startswith("escrow:"))
        ).scalar_one()
    )
