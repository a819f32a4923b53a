"""A server-dice turn's seed, revealed as the table closes or its last caster leaves
alone, is the last event of the turn's last round.

Revision ID: 0008
Revises: 0007

The rounds read model (ledger.books.tableviews) used to put such a SeedRevealed in no
round: no round is in play after the command that ends the turn there, and a player
reading the rounds found no seed to draw that turn's throws again from. The write path
and `hazard db rebuild` now give it to the round that command abandoned; the rows
stored before this revision end at the TableClosed or the PlayerLeft, and are extended
here to the reveal (its version and position), as a rebuild would write them, so that
`hazard verify --deep` finds nothing to tell apart. No event changes: only `rounds`.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# A reveal with no round in play after it: after the table's closing, or after the dice
# passed to nobody (the last caster left). One full pass over the events' types; there
# are as many as tables closed mid-turn and lone casters gone.
REVEALS = sa.text(
    "SELECT s.stream, s.version, s.position, p.type, p.payload FROM events s "
    "JOIN events p ON p.stream = s.stream AND p.version = s.version - 1 "
    "WHERE s.type = 'SeedRevealed' AND p.type IN ('TableClosed', 'DicePassed')"
)
ABANDONED_BEFORE = sa.text(
    "SELECT round, last_version FROM rounds WHERE stream = :stream "
    "AND first_version < :version AND result = 'abandoned' ORDER BY round DESC LIMIT 1"
)
EXTEND = sa.text(
    "UPDATE rounds SET last_version = :version, last_position = :position "
    "WHERE stream = :stream AND round = :round"
)
POSITION = sa.text("SELECT position FROM events WHERE stream = :stream AND version = :version")


def _ending_no_round(bind: sa.Connection) -> list[tuple[str, int, int, str]]:
    """(stream, version, position, the event before it) of each reveal that follows a
    closing or the dice passed to nobody."""
    found = []
    for stream, version, position, before, payload in bind.execute(REVEALS):
        if before == "DicePassed" and json.loads(payload).get("caster") is not None:
            continue  # the dice passed to a caster: the reveal is in that round already
        found.append((stream, version, position, before))
    return found


def upgrade() -> None:
    bind = op.get_bind()
    for stream, version, position, _ in _ending_no_round(bind):
        row = bind.execute(ABANDONED_BEFORE, {"stream": stream, "version": version}).first()
        if row is not None and row.last_version < version:
            bind.execute(
                EXTEND,
                {"stream": stream, "round": row.round, "version": version, "position": position},
            )


def downgrade() -> None:
    # Back to where the rows ended before: the closing, or the caster's leaving (the
    # dice passed to nobody belonged to no round either).
    bind = op.get_bind()
    for stream, version, _, before in _ending_no_round(bind):
        row = bind.execute(ABANDONED_BEFORE, {"stream": stream, "version": version}).first()
        if row is None or row.last_version != version:
            continue
        ended = version - 1 if before == "TableClosed" else version - 2
        where: dict[str, Any] = {"stream": stream, "version": ended}
        position = bind.execute(POSITION, where).scalar_one()
        bind.execute(EXTEND, {**where, "round": row.round, "position": position})
