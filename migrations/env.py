"""Alembic environment: the connection comes from ledger.store.db, never from a config file."""

from __future__ import annotations

from alembic import context

from ledger.store.schema import metadata

config = context.config


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        from ledger.store.db import make_engine

        connection = make_engine(config.get_main_option("sqlalchemy.url")).connect()
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported: run `hazard db upgrade`")
run_migrations_online()
