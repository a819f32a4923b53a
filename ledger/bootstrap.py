"""The one place that wires the store together from configuration.

The embedded default (SQLite, no server to install) upgrades its own schema, so that
`hazard serve` on a fresh machine just works. Any other database must be upgraded on
purpose with `hazard db upgrade`; until then, this refuses to start and says so.
"""

from __future__ import annotations

from ledger.books.book import Book
from ledger.store import db
from ledger.store.eventstore import EventStore


def open_book(url: str | None = None, must_exist: bool = False) -> Book:
    """The book on `url`. With `must_exist`, an SQLite file that is not there is
    refused (db.NoDatabase) rather than made: what every command but `hazard serve`
    and `hazard db upgrade` wants."""
    url = url or db.database_url()
    if must_exist:
        db.require_exists(url)
    engine = db.make_engine(url)
    if url.startswith("sqlite"):
        db.upgrade(engine)
    else:
        try:
            db.require_current(engine)
        except db.SchemaBehind:
            engine.dispose()  # no pooled connection outlives the refusal
            raise
    return Book(EventStore(engine))
