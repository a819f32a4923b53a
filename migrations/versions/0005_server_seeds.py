"""The secret server seeds of server-dice tables, one per caster's turn.

Revision ID: 0005
Revises: 0004

Append-only, as the log is: the database refuses UPDATE and DELETE, so a turn's seed
cannot be replaced once its commitment is in the log (PostgreSQL reuses 0004's
`log_refuse_change`). Nothing else changes: a table opened before this has croupier
dice, and its events are stored as they were.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_seeds",
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seed", sa.LargeBinary(32), nullable=False),
        sa.PrimaryKeyConstraint("stream", "version", name=op.f("pk_server_seeds")),
    )
    if op.get_bind().dialect.name == "sqlite":
        refuse = "BEGIN SELECT RAISE(ABORT, 'server_seeds are append-only: a seed is never replaced'); END"
        statements = [
            f"CREATE TRIGGER server_seeds_refuse_update BEFORE UPDATE ON server_seeds {refuse}",
            f"CREATE TRIGGER server_seeds_refuse_delete BEFORE DELETE ON server_seeds {refuse}",
        ]
    else:
        statements = [
            """CREATE TRIGGER server_seeds_refuse_update_delete BEFORE UPDATE OR DELETE
               ON server_seeds FOR EACH ROW EXECUTE FUNCTION log_refuse_change()""",
            """CREATE TRIGGER server_seeds_refuse_truncate BEFORE TRUNCATE ON server_seeds
               FOR EACH STATEMENT EXECUTE FUNCTION log_refuse_change()""",
        ]
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("server seeds are never dropped by a migration: revealed or not")
