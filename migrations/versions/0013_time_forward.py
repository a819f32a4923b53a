"""Time only goes forward: the database refuses an event recorded before the one before it.

Revision ID: 0013
Revises: 0012

Each app server stamps the events it appends with its own clock, and the clocks of two
servers, or one clock stepped back, disagree. The append takes the later of its clock
and the last event's `recorded_at` (ledger.store.eventstore), so that the times rise
with the positions and a time can be looked up by bisection, and exported as a range,
exactly. Here the database holds that rule against anything that inserts events
otherwise: a trigger refuses an INSERT into `events` whose `recorded_at` is earlier than
the event's at the position before it, or not written as the store writes it,
`YYYY-MM-DDTHH:MM:SS.ffffffZ` (ledger.store.eventstore.utc_now): one width, so that text
order is time order.

`clock_holds` is where an append says it held its clock back: the first position it
wrote, what its clock read, and the time it used instead, in the append's transaction.
Append-only, as the log is.

Events stored before this revision are not checked here: a log that already went back
in time upgrades as it is, and `hazard verify` names the position where it did.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_DIGIT = "[0-9]"
SQLITE_SHAPE = (
    f"{_DIGIT * 4}-{_DIGIT * 2}-{_DIGIT * 2}T{_DIGIT * 2}:{_DIGIT * 2}:{_DIGIT * 2}.{_DIGIT * 6}Z"
)
"""recorded_at's one form, as a GLOB pattern."""

SQLITE_TIME_TRIGGER = (
    "CREATE TRIGGER events_refuse_earlier BEFORE INSERT ON events"
    f" WHEN NEW.recorded_at NOT GLOB '{SQLITE_SHAPE}'"
    " OR NEW.recorded_at < (SELECT recorded_at FROM events WHERE position < NEW.position"
    " ORDER BY position DESC LIMIT 1)"
    " BEGIN SELECT RAISE(ABORT, 'recorded_at must be written YYYY-MM-DDTHH:MM:SS.ffffffZ,"
    " and not earlier than the event before it: time only goes forward'); END"
)

POSTGRES_TIME_TRIGGER = [
    r"""CREATE FUNCTION events_refuse_earlier() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE before text;
       BEGIN
         IF NEW.recorded_at !~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$' THEN
           RAISE EXCEPTION 'recorded_at % is not written YYYY-MM-DDTHH:MM:SS.ffffffZ',
             NEW.recorded_at USING ERRCODE = 'integrity_constraint_violation';
         END IF;
         SELECT recorded_at INTO before FROM events WHERE position < NEW.position
           ORDER BY position DESC LIMIT 1;
         -- COLLATE "C": byte order, which is time order for the one form above.
         IF NEW.recorded_at COLLATE "C" < before COLLATE "C" THEN
           RAISE EXCEPTION 'recorded_at % is earlier than % of the event before it: time only '
             'goes forward', NEW.recorded_at, before
             USING ERRCODE = 'integrity_constraint_violation';
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER events_refuse_earlier BEFORE INSERT ON events
       FOR EACH ROW EXECUTE FUNCTION events_refuse_earlier()""",
]


def _sqlite_append_only(table: str) -> list[str]:
    refuse = f"BEGIN SELECT RAISE(ABORT, '{table} are append-only: never rewritten'); END"
    return [
        f"CREATE TRIGGER {table}_refuse_update BEFORE UPDATE ON {table} {refuse}",
        f"CREATE TRIGGER {table}_refuse_delete BEFORE DELETE ON {table} {refuse}",
    ]


def _postgres_append_only(table: str) -> list[str]:
    # log_refuse_change() is 0004's.
    return [
        f"""CREATE TRIGGER {table}_refuse_update_delete BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION log_refuse_change()""",
        f"""CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION log_refuse_change()""",
    ]


def upgrade() -> None:
    op.create_table(
        "clock_holds",
        sa.Column("position", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("clock", sa.String(32), nullable=False),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.ForeignKeyConstraint(
            ["position"], ["events.position"], name=op.f("fk_clock_holds_position_events")
        ),
        sa.PrimaryKeyConstraint("position", name=op.f("pk_clock_holds")),
    )
    if op.get_bind().dialect.name == "sqlite":
        statements = [SQLITE_TIME_TRIGGER, *_sqlite_append_only("clock_holds")]
    else:
        statements = [*POSTGRES_TIME_TRIGGER, *_postgres_append_only("clock_holds")]
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    # IF EXISTS: whoever holds the database may have dropped the trigger already (as
    # the tests' insider does, to write a clock that went back); going down still works.
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_refuse_earlier")
    else:
        op.execute("DROP TRIGGER IF EXISTS events_refuse_earlier ON events")
        op.execute("DROP FUNCTION IF EXISTS events_refuse_earlier()")
    op.drop_table("clock_holds")  # its triggers go with it
