"""Disputes and the adjustments their resolutions make: two read models, and a count
of adjustments on each settlement.

Revision ID: 0006
Revises: 0005

Read models only, like settlements and rounds: the events (DisputeOpened,
DisputeResolved, BetAdjusted) are the record, and `hazard db rebuild` writes these
tables again from them. A database from before has no disputes, so both start empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "settlements",
        sa.Column("adjusted", sa.Integer(), nullable=False, server_default="0"),
    )
    op.create_table(
        "disputes",
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("dispute_id", sa.String(32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("claimant", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("claim", sa.Text(), nullable=False),
        sa.Column("throw", sa.Integer(), nullable=True),
        sa.Column("die1", sa.Integer(), nullable=True),
        sa.Column("die2", sa.Integer(), nullable=True),
        sa.Column("opened_version", sa.Integer(), nullable=False),
        sa.Column("opened_position", sa.BigInteger(), nullable=False),
        sa.Column("opened_by", sa.String(200), nullable=False),
        sa.Column("opened_at", sa.String(32), nullable=False),
        sa.Column("resolution", sa.String(16), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("resolved_throw", sa.Integer(), nullable=True),
        sa.Column("resolved_die1", sa.Integer(), nullable=True),
        sa.Column("resolved_die2", sa.Integer(), nullable=True),
        sa.Column("resolved_version", sa.Integer(), nullable=True),
        sa.Column("resolved_position", sa.BigInteger(), nullable=True),
        sa.Column("resolved_by", sa.String(200), nullable=True),
        sa.Column("resolved_at", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("stream", "dispute_id", name=op.f("pk_disputes")),
    )
    op.create_index("ix_disputes_stream_round", "disputes", ["stream", "round"])
    op.create_index("ix_disputes_opened_position", "disputes", ["opened_position"])
    op.create_table(
        "adjustments",
        sa.Column("position", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("bet_id", sa.String(32), nullable=False),
        sa.Column("dispute_id", sa.String(32), nullable=False),
        sa.Column("adjustment", sa.String(16), nullable=False),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.Column("transfers", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["position"], ["events.position"], name=op.f("fk_adjustments_position_events")
        ),
        sa.PrimaryKeyConstraint("position", name=op.f("pk_adjustments")),
    )
    op.create_index("ix_adjustments_stream_bet_id", "adjustments", ["stream", "bet_id"])
    op.create_index(
        "ix_adjustments_stream_round", "adjustments", ["stream", "round", "position"]
    )


def downgrade() -> None:
    op.drop_table("adjustments")
    op.drop_table("disputes")
    with op.batch_alter_table("settlements") as batch:
        batch.drop_column("adjusted")
