"""The event store: events, idempotency keys, accounts, postings, snapshots.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SQLITE_TRIGGERS = [
    """CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
       BEGIN SELECT RAISE(ABORT, 'events are immutable: append a correcting event'); END""",
    """CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
       BEGIN SELECT RAISE(ABORT, 'events are immutable: append a correcting event'); END""",
]

POSTGRES_TRIGGERS = [
    """CREATE FUNCTION events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION 'events are immutable: append a correcting event'
           USING ERRCODE = 'integrity_constraint_violation';
       END $$""",
    """CREATE TRIGGER events_refuse_update_delete BEFORE UPDATE OR DELETE ON events
       FOR EACH ROW EXECUTE FUNCTION events_refuse_change()""",
    """CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON events
       FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change()""",
]


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.SmallInteger, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("position", name=op.f("pk_events")),
        sa.UniqueConstraint("stream", "version", name=op.f("uq_events_stream_version")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_events_version_positive")),
    )
    op.create_table(
        "commands",
        sa.Column("idempotency_key", sa.String(200), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("response", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("idempotency_key", name=op.f("pk_commands")),
    )
    op.create_table(
        "accounts",
        sa.Column("account", sa.String(220), nullable=False),
        sa.Column("balance", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("credit_limit", sa.BigInteger, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("account", name=op.f("pk_accounts")),
    )
    op.create_table(
        "postings",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("account", sa.String(220), nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("counterparty", sa.String(220), nullable=False),
        sa.ForeignKeyConstraint(
            ["position"], ["events.position"], name=op.f("fk_postings_position_events")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_postings")),
    )
    op.create_index(op.f("ix_postings_account"), "postings", ["account"])
    op.create_table(
        "snapshots",
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("state", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("stream", "version", name=op.f("pk_snapshots")),
    )
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_TRIGGERS if dialect == "sqlite" else POSTGRES_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the event store is never dropped by a migration")
