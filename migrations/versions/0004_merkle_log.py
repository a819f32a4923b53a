"""The tamper-evident log: the Merkle tree's stored hashes and the signed checkpoints.

Revision ID: 0004
Revises: 0003

Both tables are append-only, as the events are: the database refuses UPDATE and DELETE
on them. The tree of the events already stored is built here, in position order; the
next write signs the first checkpoint, which covers them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLES = ("tree_hashes", "checkpoints")


def _sqlite_triggers(table: str) -> list[str]:
    refuse = (
        f"BEGIN SELECT RAISE(ABORT, '{table} are append-only: the log is never rewritten'); END"
    )
    return [
        f"CREATE TRIGGER {table}_refuse_update BEFORE UPDATE ON {table} {refuse}",
        f"CREATE TRIGGER {table}_refuse_delete BEFORE DELETE ON {table} {refuse}",
    ]


POSTGRES_FUNCTION = """CREATE FUNCTION log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     RAISE EXCEPTION '% is append-only: the log is never rewritten', TG_TABLE_NAME
       USING ERRCODE = 'integrity_constraint_violation';
   END $$"""


def _postgres_triggers(table: str) -> list[str]:
    return [
        f"""CREATE TRIGGER {table}_refuse_update_delete BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION log_refuse_change()""",
        f"""CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION log_refuse_change()""",
    ]


def upgrade() -> None:
    op.create_table(
        "tree_hashes",
        sa.Column("idx", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("hash", sa.LargeBinary(32), nullable=False),
        sa.PrimaryKeyConstraint("idx", name=op.f("pk_tree_hashes")),
        # A proof reads hashes by index: on SQLite a BIGINT key is not the rowid, so a
        # rowid table costs two B-tree lookups per hash; keyed on idx it costs one.
        sqlite_with_rowid=False,
    )
    op.create_table(
        "checkpoints",
        sa.Column("size", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("root", sa.String(64), nullable=False),
        sa.Column("issued_at", sa.String(32), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.CheckConstraint("size >= 1", name=op.f("ck_checkpoints_size_positive")),
        sa.PrimaryKeyConstraint("size", name=op.f("pk_checkpoints")),
    )
    if op.get_bind().dialect.name == "sqlite":
        statements = [s for table in TABLES for s in _sqlite_triggers(table)]
    else:
        statements = [
            POSTGRES_FUNCTION,
            *(s for table in TABLES for s in _postgres_triggers(table)),
        ]
    for statement in statements:
        op.execute(statement)

    from ledger.store.log import tree

    tree.build(op.get_bind())


def downgrade() -> None:
    raise NotImplementedError("the log's tree and checkpoints are never dropped by a migration")
