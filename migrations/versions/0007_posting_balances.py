"""Each posting's running balance: the account's balance just after it.

Revision ID: 0007
Revises: 0006

A balance as of a position (ledger.books.asof) becomes one probe of the postings'
(account, position, id) index: the balance of the account's last posting at or before
it. The column is a read model like the rest, written by the write path and by
`hazard db rebuild`; the postings already stored get it here, each the sum of its
account's postings up to and including it in ledger order (position, then id: the
order the write path inserts them in).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

POSTGRES_BACKFILL = """
UPDATE postings SET balance = running.balance
FROM (
    SELECT id, SUM(amount) OVER (
        PARTITION BY account ORDER BY position, id
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS balance
    FROM postings
) AS running
WHERE running.id = postings.id
"""


def upgrade() -> None:
    op.add_column("postings", sa.Column("balance", sa.BigInteger(), nullable=True))
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(POSTGRES_BACKFILL)
        op.alter_column("postings", "balance", existing_type=sa.BigInteger(), nullable=False)
        return
    # SQLite: the running sums into a table keyed by id, then one lookup per posting.
    op.execute(
        "CREATE TEMPORARY TABLE posting_balances (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)"
    )
    op.execute(
        "INSERT INTO posting_balances (id, balance) SELECT id, SUM(amount) OVER ("
        "PARTITION BY account ORDER BY position, id "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM postings"
    )
    op.execute(
        "UPDATE postings SET balance = "
        "(SELECT b.balance FROM posting_balances AS b WHERE b.id = postings.id)"
    )
    op.execute("DROP TABLE posting_balances")
    with op.batch_alter_table("postings") as batch:
        batch.alter_column("balance", existing_type=sa.BigInteger(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("postings") as batch:
        batch.drop_column("balance")
