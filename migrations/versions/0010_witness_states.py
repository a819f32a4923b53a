"""Where the ledger's pushes to each witness stand, for every server of the database.

Revision ID: 0010
Revises: 0009

One process of all the servers of a database pushes the log's checkpoints to its
witnesses (ledger.pusher); every server's /readyz says how each witness answered.
`witness_states` is where that process leaves it: one row per witness key (its vkey),
its state (ok, down, refused), the last error in words, and since when. Unlike the log,
this is the service's own bookkeeping, rewritten as the state changes: what witnesses
signed is in `cosignatures`, append-only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "witness_states",
        sa.Column("witness", sa.String(300), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("since", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("witness", name=op.f("pk_witness_states")),
    )


def downgrade() -> None:
    op.drop_table("witness_states")
