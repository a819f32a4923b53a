"""The database tables, in SQLAlchemy Core: an append-only event log and the read
models written beside it. Migrations in migrations/ create exactly these."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# Every event, table or account, in one log. `position` is global and gap-free;
# (stream, version) is unique, which is the optimistic concurrency check. The payload
# is canonical JSON text, so the hash is over exactly the bytes stored.
events = sa.Table(
    "events",
    metadata,
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
    sa.UniqueConstraint("stream", "version"),
    sa.CheckConstraint("version >= 1", name="version_positive"),
)

# A command's idempotency key and a hash of its request: a repeat with the same body
# gets the stored response back; the same key with another body is refused.
commands = sa.Table(
    "commands",
    metadata,
    sa.Column("idempotency_key", sa.String(200), primary_key=True),
    sa.Column("request_hash", sa.String(64), nullable=False),
    sa.Column("response", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
)

# Read models, written in the same transaction as the events that cause them and
# rebuildable from the events at any time.
accounts = sa.Table(
    "accounts",
    metadata,
    sa.Column("account", sa.String(220), primary_key=True),
    sa.Column("balance", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("credit_limit", sa.BigInteger, nullable=False, server_default="0"),
)

postings = sa.Table(
    "postings",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column("position", sa.BigInteger, sa.ForeignKey("events.position"), nullable=False),
    sa.Column("account", sa.String(220), nullable=False, index=True),
    sa.Column("amount", sa.BigInteger, nullable=False),
    sa.Column("counterparty", sa.String(220), nullable=False),
)

# A cache of folded table state, keyed by stream and version; safe to delete.
snapshots = sa.Table(
    "snapshots",
    metadata,
    sa.Column("stream", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("state", sa.LargeBinary, nullable=False),
)
