"""What a player's page reads without looking at every table: the bets still open, the
dice held, and the disputes opened, each by an index.

Revision ID: 0015
Revises: 0014

A player's open bets were found by reading every table's state, and their disputes by
reading every dispute: a page that grew with the club. Three indexes read them
directly, however long the log and however many tables it holds:

- the accounts still holding money (a partial index, `balance <> 0`): among them every
  bet's escrow while the bet is open, and none once it is settled or voided, so the open
  bets are a range of it, whose postings name their parties;
- the rounds by caster, in order: the tables where a player may hold the dice, those
  of their newest rounds as caster;
- the disputes by claimant, in the order opened.

Indexes only: nothing stored changes, and a downgrade drops them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

HELD = "balance <> 0"


def upgrade() -> None:
    op.create_index(
        "ix_accounts_held",
        "accounts",
        ["account"],
        sqlite_where=sa.text(HELD),
        postgresql_where=sa.text(HELD),
    )
    op.create_index("ix_rounds_caster", "rounds", ["caster", "first_position"])
    op.create_index("ix_disputes_claimant", "disputes", ["claimant", "opened_position"])


def downgrade() -> None:
    op.drop_index("ix_disputes_claimant", table_name="disputes")
    op.drop_index("ix_rounds_caster", table_name="rounds")
    op.drop_index("ix_accounts_held", table_name="accounts")
