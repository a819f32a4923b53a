"""The club's reports read along indexes of their own events, not the whole log.

Revision ID: 0018
Revises: 0017

The exceptions report (voids, corrections, adjustments) and the log of significant
events (which lists a player's limits and breaks beside the club's own stream) found
their events by type, and no index holds the events by type: each page read the events
from where the last stopped until it had a page, to the log's end when they are rare,
a read that grew with the log (a second at a million events). A partial index of each
report's events, by position, as 0016's of the tables' openings, reads a page of them
and no other event. The reports ask for the types in the words of the index's own
condition (ledger.store.schema's EXCEPTIONS and PLAYER_LIMITS): SQLite uses a partial
index only for a query whose condition it can see implies the index's, which a list of
bound parameters is not.

Indexes only: nothing stored changes, and a downgrade drops them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

EXCEPTIONS = "type IN ('ThrowVoided', 'BetVoided', 'DisputeResolved', 'BetAdjusted')"
PLAYER_LIMITS = "type IN ('LimitSet', 'BreakTaken')"


def upgrade() -> None:
    for name, where in (
        ("ix_events_exceptions", EXCEPTIONS),
        ("ix_events_player_limits", PLAYER_LIMITS),
    ):
        op.create_index(
            name,
            "events",
            ["position"],
            sqlite_where=sa.text(where),
            postgresql_where=sa.text(where),
        )


def downgrade() -> None:
    op.drop_index("ix_events_player_limits", table_name="events")
    op.drop_index("ix_events_exceptions", table_name="events")
