"""The tables, newest first, a page at a time, by an index of their openings.

Revision ID: 0016
Revises: 0015

The console's home page, the audit page and the dice report listed every table the
club had ever opened, found by reading every event of every table (the range of the
(stream, version) key under `table:`): a page that grew with the log. A partial index
of the events that open a table (`TableOpened`, each table's first), by position, reads
the newest tables first and a page of them at a time, however long the log.

An index only: nothing stored changes, and a downgrade drops it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

OPENED = "type = 'TableOpened'"


def upgrade() -> None:
    op.create_index(
        "ix_events_table_opened",
        "events",
        ["position"],
        sqlite_where=sa.text(OPENED),
        postgresql_where=sa.text(OPENED),
    )


def downgrade() -> None:
    op.drop_index("ix_events_table_opened", table_name="events")
