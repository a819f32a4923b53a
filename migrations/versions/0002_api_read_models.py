"""The API's tables: bearer tokens, and the settlements and rounds read models.

Revision ID: 0002
Revises: 0001

The read models start empty: `hazard projections rebuild` fills them from the events
already stored.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("revoked_at", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_tokens_token_hash")),
        sa.CheckConstraint(
            "role IN ('setter', 'croupier', 'auditor', 'player')", name=op.f("ck_tokens_role")
        ),
    )
    op.create_table(
        "settlements",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("round", sa.Integer, nullable=False),
        sa.Column("bet_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("winner", sa.String(200), nullable=True),
        sa.Column("reason", sa.String(200), nullable=True),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.Column("transfers", sa.Text, nullable=False),
        sa.Column("sources", sa.Text, nullable=False),
        sa.ForeignKeyConstraint(
            ["position"], ["events.position"], name=op.f("fk_settlements_position_events")
        ),
        sa.PrimaryKeyConstraint("position", name=op.f("pk_settlements")),
        sa.CheckConstraint(
            "outcome IN ('settled', 'voided')", name=op.f("ck_settlements_outcome")
        ),
    )
    op.create_index(
        "ix_settlements_stream_round", "settlements", ["stream", "round", "position"]
    )
    op.create_index("ix_settlements_stream_position", "settlements", ["stream", "position"])
    op.create_index("ix_settlements_bet_id", "settlements", ["bet_id", "stream"])
    op.create_index("ix_settlements_recorded_at", "settlements", ["recorded_at"])
    op.create_table(
        "settlement_parties",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("party", sa.String(220), nullable=False),
        sa.ForeignKeyConstraint(
            ["position"],
            ["settlements.position"],
            name=op.f("fk_settlement_parties_position_settlements"),
        ),
        sa.PrimaryKeyConstraint("party", "position", name=op.f("pk_settlement_parties")),
    )
    op.create_table(
        "rounds",
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("round", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("caster", sa.String(200), nullable=False),
        sa.Column("main", sa.Integer, nullable=True),
        sa.Column("chance", sa.Integer, nullable=True),
        sa.Column("result", sa.String(16), nullable=True),
        sa.Column("first_version", sa.Integer, nullable=False),
        sa.Column("last_version", sa.Integer, nullable=False),
        sa.Column("first_position", sa.BigInteger, nullable=False),
        sa.Column("last_position", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.String(32), nullable=False),
        sa.Column("ended_at", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("stream", "round", name=op.f("pk_rounds")),
    )


def downgrade() -> None:
    op.drop_table("rounds")
    op.drop_table("settlement_parties")
    op.drop_index("ix_settlements_recorded_at", table_name="settlements")
    op.drop_index("ix_settlements_bet_id", table_name="settlements")
    op.drop_index("ix_settlements_stream_position", table_name="settlements")
    op.drop_index("ix_settlements_stream_round", table_name="settlements")
    op.drop_table("settlements")
    op.drop_table("tokens")
