"""The heads of the log: every stream's and account's, committed by each write's seal.

Revision ID: 0012
Revises: 0011

From here on every write ends with a seal (ledger.store.log.sealing): an event of the
log's own stream, `log`, whose payload is the root of the tree of every stream's head
and every account's chain of postings (ledger.store.log.heads), so that an export can
prove it holds all of its scope. `heads_log` keeps the heads each seal committed. On a
database with events already, their heads are built here from the events, once, at the
last event's position; the first write after this revision writes the first seal. No
event changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _sqlite_triggers(table: str) -> list[str]:
    refuse = f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: never rewritten'); END"
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
        "heads_log",
        sa.Column("idx", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("position", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(220), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("idx", "position", name=op.f("pk_heads_log")),
    )
    op.create_index("ix_heads_log_position", "heads_log", ["position"])
    bind = op.get_bind()
    triggers = _sqlite_triggers if bind.dialect.name == "sqlite" else _postgres_triggers
    for statement in triggers("heads_log"):
        op.execute(statement)

    from ledger.store.log import sealing

    sealing.rebuild(bind, _batches(bind))


def _batches(conn: sa.Connection, size: int = 5000) -> Iterator[Sequence[object]]:
    from ledger.store.eventstore import Recorded

    events = sa.table("events", *(sa.column(name) for name in Recorded._fields))
    after = 0
    while True:
        rows = conn.execute(
            sa.select(events)
            .where(events.c.position > after)
            .order_by(events.c.position)
            .limit(size)
        ).all()
        if not rows:
            return
        yield [Recorded(**row._mapping) for row in rows]
        after = rows[-1].position


def downgrade() -> None:
    op.drop_table("heads_log")  # its triggers go with it; the seals stay, as events do
