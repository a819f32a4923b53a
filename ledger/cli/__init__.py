"""The `hazard` command line: the group, and what its commands share.

A module per group of commands, beside the code it drives: play (odds, simulate), db
(db upgrade, projections rebuild), keys, tokens, verify, exports (export, import),
disputes, audit (replay, recall, fairness), serve (serve, openapi), witness (the
witness a treasurer or an auditor runs) and watch (the client that remembers). Here:
`main`, the one `--database-url` option, and the book and the club a command opens.

`main` imports a command's module when the command is run (every module for `hazard
--help`, and for a name it does not know, to list them): `hazard odds` never imports
Flask, and no command pays for another's imports (the API's, gunicorn's). The helpers
below import the database's code (SQLAlchemy, the books, the service) when a command
opens a database, not before: `hazard watch --url` and `hazard watch check`, which
never open one, start without them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    import sqlalchemy as sa

    from ledger.books.book import Book
    from ledger.service import Club

COMMANDS = {
    "odds": "ledger.cli.play.odds",
    "simulate": "ledger.cli.play.simulate",
    "db": "ledger.cli.db.db",
    "projections": "ledger.cli.db.projections",
    "key": "ledger.cli.keys.key",
    "token": "ledger.cli.tokens.token",
    "verify": "ledger.cli.verify.verify",
    "export": "ledger.cli.exports.export",
    "import": "ledger.cli.exports.import_",
    "dispute": "ledger.cli.disputes.dispute",
    "evening": "ledger.cli.evenings.evening",
    "limits": "ledger.cli.limits.limits",
    "replay": "ledger.cli.audit.replay",
    "recall": "ledger.cli.audit.recall",
    "fairness": "ledger.cli.audit.fairness",
    "statement": "ledger.cli.statements.statement",
    "books": "ledger.cli.books.books",
    "serve": "ledger.cli.serve.serve",
    "openapi": "ledger.cli.serve.openapi",
    "witness": "ledger.cli.witness.witness",
    "watch": "ledger.cli.watch.watch",
}
"""Every command of `hazard`, and where it is defined (module.attribute)."""


class _Hazard(click.Group):
    """The command group. A command is added from its module the first time it is
    asked for (COMMANDS); and a lock wait the database gave up on (another writer
    held it past HAZARD_LOCK_TIMEOUT) is a plain error instead of a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is not None and cmd_name not in self.commands:
            module, _, name = where.rpartition(".")
            self.add_command(getattr(importlib.import_module(module), name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args[0] not in COMMANDS:  # every name there is, for click's "Did you mean"
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if _database_busy(exc):
                raise click.ClickException(
                    "the database is busy: another writer held it past the lock timeout "
                    "(HAZARD_LOCK_TIMEOUT); nothing was written, try again"
                ) from None
            raise


def _database_busy(exc: Exception) -> bool:
    """Whether `exc` is the database giving up on a lock. Only a command that opened
    the store can meet one: one that never did (`hazard watch --url`, any `--help`,
    whose click.exceptions.Exit comes this way) is not made to import it to ask."""
    if "ledger.store.eventstore" not in sys.modules:
        return False
    from ledger.store.eventstore import is_busy

    return is_busy(exc)


@click.group(cls=_Hazard)
def main() -> None:
    """Hazard: an event-sourced betting ledger for the old English dice game."""


DATABASE_URL_HELP = "default: DATABASE_URL, or sqlite:///hazard.sqlite3 here"

Decorated = TypeVar("Decorated", bound=Callable[..., Any])

database_option: Callable[[Decorated], Decorated] = click.option(
    "--database-url", help=DATABASE_URL_HELP
)
"""`--database-url URL`, the same on every command that takes it: the command gets
`database_url`, None when not given (then DATABASE_URL, or hazard.sqlite3 here)."""


@contextmanager
def _opening() -> Iterator[None]:
    """Opening the database: one it cannot read (unreachable, or an SQLite file cut
    short or not a database at all) is a clear error naming why, not a traceback."""
    from sqlalchemy.exc import DatabaseError

    from ledger.store.eventstore import is_busy

    try:
        yield
    except DatabaseError as exc:
        if is_busy(exc):
            raise  # the group says so (_Hazard)
        raise click.ClickException(f"cannot open the database: {exc.orig}") from None


def _book(database_url: str | None = None) -> Book:
    """The book for `database_url` (default: DATABASE_URL), which must exist: SQLite is
    upgraded, others checked. A database that is not there, or behind, or unreachable,
    is a clear error, not a crash, and an SQLite file is never made here."""
    from ledger.bootstrap import open_book
    from ledger.store.db import NoDatabase, SchemaBehind
    from ledger.store.log.keys import BadKey

    try:
        with _opening():
            return open_book(database_url, must_exist=True)
    except (SchemaBehind, BadKey) as exc:
        raise click.ClickException(str(exc)) from None
    except NoDatabase as exc:
        raise click.ClickException(f"cannot open the database: {exc}") from None


def _engine(database_url: str | None) -> sa.Engine:
    """The engine of `_book(database_url)`."""
    return _book(database_url).store.engine


@contextmanager
def _club(database_url: str | None, writing: bool = True) -> Iterator[Club]:
    """The club on the database, for one command. A refusal of the engine's rules is
    printed with its code, and exits 1; so does the service's (no such table, ...).
    Either way nothing was written, and no connection outlives the command."""
    from engine.errors import RuleBroken
    from ledger import house
    from ledger.service import Club
    from ledger.store.eventstore import Refused

    book = _book(database_url)
    written = "; nothing was written" if writing else ""
    try:
        yield Club(book, house.from_settings())
    except RuleBroken as exc:
        click.echo(f"refused ({exc.code}): {exc.detail}{written}", err=True)
        raise SystemExit(1) from None
    except Refused as exc:
        raise click.ClickException(f"{exc}{written}") from None
    finally:
        book.store.close()
        book.store.engine.dispose()


class _Null:
    """Where a progress bar goes when it is not wanted."""

    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False
