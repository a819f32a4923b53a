"""Witnesses: the cosignatures they returned, and the checkpoints others reported seeing.

Revision ID: 0009
Revises: 0008

`cosignatures` holds each witness's cosignature line of a stored checkpoint, as the
witness sent it (C2SP tlog-cosignature): the note in `checkpoints` with these lines
added is the cosigned checkpoint a reader checks against their policy. `gossip` holds
the checkpoints that witnesses and watchers reported having been shown, one row per
(size, root) signed by the log's key, so that two of one size with other roots, a fork,
is there for everyone to see. Both are append-only, as the log is.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TABLES = ("cosignatures", "gossip")


def _sqlite_triggers(table: str) -> list[str]:
    refuse = f"BEGIN SELECT RAISE(ABORT, '{table} are append-only: never rewritten'); END"
    return [
        f"CREATE TRIGGER {table}_refuse_update BEFORE UPDATE ON {table} {refuse}",
        f"CREATE TRIGGER {table}_refuse_delete BEFORE DELETE ON {table} {refuse}",
    ]


def _postgres_triggers(table: str) -> list[str]:
    # log_refuse_change() is 0004's.
    return [
        f"""CREATE TRIGGER {table}_refuse_update_delete BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION log_refuse_change()""",
        f"""CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION log_refuse_change()""",
    ]


def upgrade() -> None:
    op.create_table(
        "cosignatures",
        sa.Column("size", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("witness", sa.String(300), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.Column("cosigned_at", sa.BigInteger(), nullable=False),
        sa.Column("received_at", sa.String(32), nullable=False),
        sa.ForeignKeyConstraint(
            ["size"], ["checkpoints.size"], name=op.f("fk_cosignatures_size_checkpoints")
        ),
        sa.PrimaryKeyConstraint("size", "witness", name=op.f("pk_cosignatures")),
    )
    op.create_table(
        "gossip",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("root", sa.String(64), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("reported_by", sa.String(200), nullable=True),
        sa.Column("reported_at", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gossip")),
        sa.UniqueConstraint("size", "root", name=op.f("uq_gossip_size_root")),
    )
    if op.get_bind().dialect.name == "sqlite":
        statements = [s for table in TABLES for s in _sqlite_triggers(table)]
    else:
        statements = [s for table in TABLES for s in _postgres_triggers(table)]
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    # What witnesses said is not the log: dropping it loses no event, and a witness
    # cosigns the newest checkpoint again at the next push. (Their triggers go with them.)
    op.drop_table("gossip")
    op.drop_table("cosignatures")
