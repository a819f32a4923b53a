"""Statements page through one account's postings by position: index them that way.

Revision ID: 0003
Revises: 0002

The new index leads with the account, as the old one did, so it serves every query
the old one served; the old one goes.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_postings_account_position", "postings", ["account", "position", "id"], unique=False
    )
    op.drop_index("ix_postings_account", table_name="postings")


def downgrade() -> None:
    op.create_index("ix_postings_account", "postings", ["account"], unique=False)
    op.drop_index("ix_postings_account_position", table_name="postings")
