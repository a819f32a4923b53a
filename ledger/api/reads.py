"""The read side over HTTP: settlements, a table's rounds, a player's statement.

Every listing is a page `{"items": [...], "next_after": ...}` walked by keyset: pass
`next_after` back as `after` until it is null. The views check who may read what and
name what does not exist; the pages are ledger.books.queries' (whose SQL is the read
models', ledger.books.tableviews and ledger.books.projections).
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app
from flask_smorest import abort

from engine.state import SETTER
from ledger import printing
from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.api.shaped import Raw, shaped
from ledger.books import periods, queries
from ledger.books.accounts import player_account
from ledger.commands import Role, require_self
from ledger.exports import periodpaper
from ledger.house import House
from ledger.service import NotFound, is_name, table_stream
from ledger.web import club, heavy
from ledger.web import periodschemas as ps
from ledger.web import readschemas as rs
from ledger.web.tokens import Holder

blp = Blueprint("reads", __name__, description="Settlements, rounds and statements")

EVERYONE = (Role.CROUPIER, Role.AUDITOR, Role.PLAYER)


def _require_table(read: queries.Reader, table: str) -> str:
    stream = table_stream(table)
    if not is_name(table) or not read.has_stream(stream):
        raise NotFound(f"there is no table {table!r}")
    return stream


def _require_player(name: str) -> None:
    if not club().player_exists(name):  # which refuses impossible names unasked
        raise NotFound(f"there is no player {name!r}")


def _not_the_bank(who: Holder, name: str) -> None:
    """A player's token never reads the bank's books, whatever name it was issued to."""
    if who.role is Role.PLAYER and name == SETTER:
        abort(403, message="a player may not read the setter's account")


# -- settlements --------------------------------------------------------------------


@blp.route("/settlements", methods=["GET"])
@blp.arguments(rs.SettlementQuerySchema, location="query", unknown=None)
@blp.response(200, rs.SettlementPageSchema)
@shaped(rs.SettlementPageSchema)
@blp.alt_response(403, schema=ProblemSchema, description="A player asked for another's")
@blp.alt_response(404, schema=ProblemSchema, description="No such table or player")
@blp.alt_response(422, schema=ProblemSchema, description="A bad filter, named")
def list_settlements(query: dict[str, Any]) -> dict[str, Any]:
    """Settlements in position order: every bet settled or voided, with the money it
    moved and the events it came from. A player sees only those they were party to."""
    who = require(*EVERYONE)
    player = query.get("player")
    if who.role is Role.PLAYER:
        if player is not None and player != who.name:
            abort(403, message=f"a player sees their own settlements only, not {player!r}'s")
        player = who.name
        _not_the_bank(who, player)
    elif player is not None and not is_name(player):
        raise NotFound(f"there is no player {player!r}")
    table = query.get("table")
    if table is not None and not is_name(table):
        raise NotFound(f"there is no table {table!r}")
    with queries.reading(club().store) as read:
        found = read.settlements(
            stream=None if table is None else table_stream(table),
            round=query.get("round"),
            party=None if player is None else player_account(player),
            bet_id=query.get("bet"),
            since=query.get("since"),
            until=query.get("until"),
            after=query["after"],
            limit=query["limit"],
            json_text=Raw,  # sent as stored (ledger.api.shaped)
        )
        # A settlement of the table and the player shows that both exist: only an
        # empty page asks whether they do, and names the one that does not.
        if not found["items"]:
            if player is not None and who.role is not Role.PLAYER:
                _require_player(player)
            if table is not None:
                _require_table(read, table)
        return found


# -- rounds -------------------------------------------------------------------------


@blp.route("/tables/<table>/rounds", methods=["GET"])
@blp.arguments(rs.RoundPageQuerySchema, location="query", unknown=None)
@blp.response(200, rs.RoundPageSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def list_rounds(query: dict[str, Any], table: str) -> dict[str, Any]:
    """The table's rounds in order: caster, main, chance and result of each."""
    require(*EVERYONE)
    with queries.reading(club().store) as read:
        return read.rounds(_require_table(read, table), query["after"], query["limit"])


@blp.route("/tables/<table>/rounds/<int:round>", methods=["GET"])
@blp.arguments(rs.PageQuerySchema, location="query", unknown=None)
@blp.response(200, rs.RoundDetailSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table or round")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def round_detail(query: dict[str, Any], table: str, round: int) -> dict[str, Any]:
    """One round, and its events a page at a time (its settlements: /settlements with
    `table` and `round`)."""
    require(*EVERYONE)
    with queries.reading(club().store) as read:
        stream = _require_table(read, table)
        # Past a 32-bit column's range there is no such round, and a database may
        # refuse the number rather than answer none.
        detail = (
            read.round_detail(stream, round, query["after"], query["limit"])
            if round <= rs.SMALL
            else None
        )
    if detail is None:
        raise NotFound(f"table {table!r} has no round {round}")
    return detail


# -- statements ---------------------------------------------------------------------


@blp.route("/players/<name>/statement", methods=["GET"])
@blp.arguments(rs.PageQuerySchema, location="query", unknown=None)
@blp.response(200, rs.StatementPageSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Not this caller's account")
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def statement(query: dict[str, Any], name: str) -> dict[str, Any]:
    """Every posting to a player's account (`setter`: the bank's) in position order,
    each with the event that caused it (the player, setter, auditor)."""
    who = require(Role.AUDITOR, Role.PLAYER)
    require_self(who, name)
    _not_the_bank(who, name)
    _require_player(name)
    account = player_account(name)
    with queries.reading(club().store) as read:
        lines = read.statement(account, query["after"], query["limit"])
    return {"player": name, "account": account, **lines}


# -- a statement for a period -------------------------------------------------------


def _period_statement(query: dict[str, Any], name: str) -> Any:
    """`name`'s statement for the period asked, as the caller may read it: the setter
    and auditors anyone's, a player their own."""
    who = require(Role.AUDITOR, Role.PLAYER)
    require_self(who, name)
    _not_the_bank(who, name)
    _require_player(name)
    house: House = current_app.extensions["hazard.house"]
    try:
        return ps.statement_for(name, query, house), house
    except periods.PeriodError as exc:
        abort(422, messages={"query": {exc.field: [exc.message]}})


@blp.route("/players/<name>/period-statement", methods=["GET"])
@heavy.read(blp)
@blp.arguments(ps.PeriodQuerySchema, location="query", unknown=None)
@blp.response(200, ps.PeriodStatementSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Not this caller's account")
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
@blp.alt_response(422, schema=ProblemSchema, description="No period, or a bad one, named")
def period_statement(query: dict[str, Any], name: str) -> dict[str, Any]:
    """A player's statement for a period (an evening, a week, a month, or a range of
    days in the club's time zone): the balance at its start and end, deposits and
    withdrawals, bets won and lost, disputes, and the export that proves it (the
    player, setter, auditor). Exact: the figures add up to the balance at the end."""
    statement, _ = _period_statement(query, name)
    return ps.view(statement)


def _file(body: str | bytes, media_type: str, statement: Any, suffix: str) -> Response:
    response = Response(body, mimetype=None)
    response.headers["Content-Type"] = media_type
    named = periodpaper.filename(statement, suffix)
    response.headers["Content-Disposition"] = f'attachment; filename="{named}"'
    response.headers["Cache-Control"] = "no-store"
    return response


def _paper(media_type: str) -> dict[str, Any]:
    return {
        "description": "The statement as a file to save (Content-Disposition names it)",
        "content": {media_type: {"schema": {"type": "string"}}},
    }


@blp.route("/players/<name>/period-statement.csv", methods=["GET"])
@heavy.read(blp)
@blp.arguments(ps.PeriodQuerySchema, location="query", unknown=None)
@blp.doc(responses={"200": _paper("text/csv")})
@blp.alt_response(403, schema=ProblemSchema, description="Not this caller's account")
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
@blp.alt_response(422, schema=ProblemSchema, description="No period, or a bad one, named")
def period_statement_csv(query: dict[str, Any], name: str) -> Response:
    """The statement for a period as CSV (UTF-8 with a byte order mark, CRLF)."""
    statement, house = _period_statement(query, name)
    return _file(periodpaper.csv_of(statement, house), periodpaper.MEDIA_TYPE, statement, "csv")


@blp.route("/players/<name>/period-statement.pdf", methods=["GET"])
@heavy.read(blp)
@blp.arguments(ps.PeriodQuerySchema, location="query", unknown=None)
@blp.doc(responses={"200": _paper("application/pdf")})
@blp.alt_response(403, schema=ProblemSchema, description="Not this caller's account")
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
@blp.alt_response(422, schema=ProblemSchema, description="No period, or a bad one, named")
@blp.alt_response(503, schema=ProblemSchema, description="This server cannot print PDFs")
def period_statement_pdf(query: dict[str, Any], name: str) -> Response:
    """The statement for a period as a PDF, on A4."""
    statement, house = _period_statement(query, name)
    try:
        pdf = printing.pdf_of(periodpaper.html_of(statement, house))
    except printing.PrintingUnavailable as exc:
        abort(503, message=str(exc))
    return _file(pdf, "application/pdf", statement, "pdf")
