"""`hazard books`: the club's books of what was not play (ledger.books.significant), as
GET /reports/exceptions, /reports/authentication and /reports/significant answer them:
lines to read, JSON, or CSV."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click
import sqlalchemy as sa

from ledger.books import significant as book
from ledger.cli import _engine, database_option
from ledger.exports.scope import ScopeError, moment
from ledger.store.log import check

Read = Callable[[sa.Connection, book.Period, int], book.Page]


@click.group()
def books() -> None:
    """The club's reports: exceptions, authentication, the log of significant events."""


def _period(since: str | None, until: str | None) -> book.Period:
    try:
        start = moment(since, "since") if since is not None else None
        end = moment(until, "until") if until is not None else None
    except ScopeError as exc:
        raise click.BadParameter(exc.message, param_hint=f"--{exc.field}") from None
    if start is not None and end is not None and not start < end:
        raise click.BadParameter(f"{end} is not after --since {start}", param_hint="--until")
    return book.Period(start, end)


def _rows(read: Read, period: book.Period, database_url: str | None) -> Iterator[dict[str, Any]]:
    """Every row of the report, a page at a time (each page read in one snapshot)."""
    engine = _engine(database_url)
    try:
        after: int | None = 0
        while after is not None:
            with engine.connect() as conn, conn.begin():
                check.snapshot(conn)
                page = read(conn, period, after)
            yield from page.rows
            after = page.next_after
    finally:
        engine.dispose()


def _print(rows: Iterator[dict[str, Any]], columns: Sequence[str], how: str) -> None:
    if how == "csv":
        click.echo(book.as_csv([], columns), nl=False)  # the header
        for row in rows:
            click.echo(book.as_csv([row], columns).split("\r\n", 1)[1], nl=False)
        return
    printed = False
    for row in rows:
        printed = True
        if how == "json":
            click.echo(json.dumps(row))
        else:
            click.echo(_line(row))
    if not printed and how != "json":  # lines for a person: say that none is a finding
        click.echo("nothing recorded in this period", err=True)


def _line(row: dict[str, Any]) -> str:
    if "kind" in row:  # an exception
        moves = "; ".join(f"{m['source']}->{m['target']} {m['amount']}" for m in row["moves"])
        return (
            f"{row['recorded_at']}  {row['table']}  {row['kind']}: {row['subject']}: "
            f"{row['before']} -> {row['after']}; why: {row['why']}; by {row['actor']}"
            + (f"; moved {moves}" if moves else "")
        )
    counted = (
        f" x{row['count']} ({row['first_at']} to {row['last_at']})" if row["count"] > 1 else ""
    )
    before, after = row["before"] or "(none)", row["after"] or "(none)"
    change = f": {before} -> {after}" if row["before"] or row["after"] else ""
    subject = row["subject"] or ""
    return f"{row['recorded_at']}  {row['what']}{counted}  {subject}{change}; by {row['actor']}"


def _command(name: str, read: Read, columns: Sequence[str], help_text: str) -> click.Command:
    @click.option("--since", metavar="ISO", help="from this time on (ISO 8601; UTC unless it says)")
    @click.option("--until", metavar="ISO", help="up to (not including) this time")
    @click.option("--csv", "how", flag_value="csv", help=f"CSV, as GET /reports/{name}.csv")
    @click.option("--json", "how", flag_value="json", help="one JSON object a line")
    @database_option
    def run(
        since: str | None, until: str | None, how: str | None, database_url: str | None
    ) -> None:
        _print(_rows(read, _period(since, until), database_url), columns, how or "lines")

    run.__doc__ = help_text
    return books.command(name)(run)


exceptions = _command(
    "exceptions",
    book.exceptions,
    book.EXCEPTION_COLUMNS,
    "Every void, correction and adjustment at the tables: before and after, who, why.",
)
authentication = _command(
    "authentication",
    book.authentication,
    book.SIGNIFICANT_COLUMNS,
    "Tokens made and revoked, console sign-ins and sign-outs (a flood one line, counted).",
)
significant = _command(
    "significant",
    book.significant,
    book.SIGNIFICANT_COLUMNS,
    "The log of significant events: tokens, sign-ins, settings, refused writes, rule sets.",
)
