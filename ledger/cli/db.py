"""`hazard db upgrade` and `hazard projections rebuild`: the database's schema, and
the read models derived from its events."""

from __future__ import annotations

import click

from ledger.books import projections as models
from ledger.cli import _book, _opening
from ledger.store import db as database


@click.group()
def db() -> None:
    """The database: DATABASE_URL, or hazard.sqlite3 here by default."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every migration the database has not had."""
    engine = database.make_engine()
    with _opening():
        database.upgrade(engine)
    current, _ = database.schema_status(engine)
    click.echo(f"database schema at {current}")


@click.group()
def projections() -> None:
    """The read models (postings, balances), derived from the events."""


@projections.command("rebuild")
def projections_rebuild() -> None:
    """Throw the read models away and rebuild them from every event."""
    count = models.rebuild(_book().store)
    click.echo(f"rebuilt the read models from {count} events")
