"""A settlement is in the round whose event closed it, as the rounds read model holds it.

Revision ID: 0011
Revises: 0010

A next-total bet is not scoped to its round: it outlives a round that ends with no throw
(the caster forfeiting, passing by choice or leaving) and is decided, settled or voided
as never accepted, by the next round's first throw. The settlements read model
(ledger.books.tableviews) recorded such a settlement under the round the bet was made in,
while the rounds read model, as the engine's record of a round, puts the throw and what
it decides in the round the throw is in; `GET /settlements?table=&round=` and the round's
replay then disagreed. The write path and `hazard projections rebuild` now write the
round of the closing event; the rows stored before this revision are moved here to the
round whose span holds them, as a rebuild would write them, so that `hazard verify
--deep` finds nothing to tell apart. No event changes: only `settlements.round`.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

SPAN = (
    "SELECT r.round FROM rounds r WHERE r.stream = settlements.stream "
    "AND settlements.position BETWEEN r.first_position AND r.last_position"
)
MOVE = sa.text(
    f"UPDATE settlements SET round = ({SPAN}) WHERE EXISTS ({SPAN}) AND round <> ({SPAN})"
)
ROUND_AT = sa.text(
    "SELECT round FROM rounds WHERE stream = :stream "
    "AND :position BETWEEN first_position AND last_position"
)


def upgrade() -> None:
    op.get_bind().execute(MOVE)


def downgrade() -> None:
    # Back to the round the bet was made in: the round that holds the first of its
    # sources (where it was laid, offered or staked), where that is another round.
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT position, stream, round, sources FROM settlements"))
    for position, stream, number, sources in rows.all():
        made = bind.execute(
            ROUND_AT, {"stream": stream, "position": min(json.loads(sources))}
        ).scalar()
        if made is not None and made != number:
            bind.execute(
                sa.text("UPDATE settlements SET round = :round WHERE position = :position"),
                {"round": made, "position": position},
            )
