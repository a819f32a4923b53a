"""A player's statement for a period in the console: a page with a period picker (an
evening, a week, a month, a range of days), the statement as ledger.exports.periodpaper
draws it (the same HTML the PDF prints), and its CSV, its PDF and the exports that prove
it to download.

A player reads their own (their page links here); the setter and auditors any
player's (`?player=`, linked from the office's players). The period is read by the
API's own schema (ledger.web.periodschemas) and function, so the console refuses what
the API refuses, with the same words, beside the picker. Each is a heavy read of the
signed-in token's, held as the API's are (ledger.web.heavy).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from flask import Response, abort, current_app, render_template, request
from markupsafe import Markup
from marshmallow import ValidationError

from ledger import printing
from ledger.books import evenings, periods, queries
from ledger.books.accounts import reserved
from ledger.commands import Role
from ledger.console.views import _fields, _signed_in, blp
from ledger.exports import periodpaper
from ledger.house import House
from ledger.service import is_name
from ledger.web import club, heavy
from ledger.web.exports import ExportQuerySchema, export_response
from ledger.web.periodschemas import PeriodQuerySchema, statement_for
from ledger.web.tokens import Holder

READERS = (Role.PLAYER, Role.SETTER, Role.AUDITOR)
PICKED = ("evening", "week", "month", "from", "to")
"""The picker's fields, as the address carries them."""


def _house() -> House:
    found: House = current_app.extensions["hazard.house"]
    return found


def _whose(who: Holder) -> str | None:
    """The player whose statement it is: a player's own; the one a reader names (None:
    a reader who has not named one yet)."""
    asked = request.args.get("player") or None
    if who.role is Role.PLAYER:
        if asked is not None and asked != who.name:
            abort(403, description=f"a player reads their own statement only: {who.name}")
        return who.name
    if asked is None:
        return None
    if not is_name(asked) or reserved(asked) or not club().player_exists(asked):
        abort(404, description=f"there is no player {asked[:40]!r}")
    return asked


def _asked() -> dict[str, Any]:
    """The period the address asks for; this month, in the club's zone, if none."""
    given = {k: v for k, v in request.args.items() if k in PICKED and v}
    if not given:
        today = datetime.now(UTC).astimezone(ZoneInfo(_house().zone))
        given = {"month": today.strftime("%Y-%m")}
    try:
        loaded: dict[str, Any] = PeriodQuerySchema().load(given)
    except ValidationError as exc:
        abort(400, description=_fields(exc))
    return loaded


@blp.route("/console/statement", methods=["GET"])
@heavy.held
def period_statement() -> Any:
    """The statement for the period asked (this month by default), with its picker."""
    who = _signed_in(*READERS)
    name = _whose(who)
    if name is None:  # the setter or an auditor, who says whose first
        return render_template("period_statement.html", who=who, name=None, reader=True)
    asked = _asked()
    house = _house()
    statement, error = None, None
    try:
        statement = statement_for(name, asked, house)
    except periods.PeriodError as exc:
        error = f"{exc.field}: {exc.message}"
    links: dict[str, Any] = {}
    if statement is not None:
        query = {
            **statement.period.query(),
            **({} if who.role is Role.PLAYER else {"player": name}),
        }
        links = {
            "query": query,
            "proof": periodpaper.proof(statement),
            "history": periodpaper.history(statement),
        }
    page = render_template(
        "period_statement.html",
        who=who,
        name=name,
        statement=statement,
        body=Markup(periodpaper.body_of(statement, house)) if statement else None,
        css=Markup(periodpaper.CSS),
        error=error,
        asked={k: request.args.get(k, "") for k in PICKED},
        reader=who.role is not Role.PLAYER,
        longest=periods.LONGEST,
        evenings=_evenings(house),
        **links,
    )
    return page, (400 if error else 200)


PICKABLE = 60
"""The recorded evenings the picker offers, newest first (an older one is asked for by
its number in the address, the API or the CLI)."""


def _evenings(house: House) -> list[tuple[int, str]]:
    """The evenings the setter opened, newest first, as (number, when it opened in the
    club's zone): the picker offers these; at a club that records none it asks a date."""
    with queries.reading(club().store) as read:
        found = evenings.recorded(read.conn)[-PICKABLE:]
    zone = ZoneInfo(house.zone)
    return [(e.number, _local(e.opened_at, zone)) for e in reversed(found)]


def _local(stored: str, zone: ZoneInfo) -> str:
    at = datetime.strptime(stored, evenings.STORED).replace(tzinfo=UTC)
    return at.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def _paper() -> tuple[Any, House]:
    who = _signed_in(*READERS)
    name = _whose(who)
    if name is None:
        abort(400, description="player: say whose statement (?player=NAME)")
    house = _house()
    try:
        return statement_for(name, _asked(), house), house
    except periods.PeriodError as exc:
        abort(400, description=f"{exc.field}: {exc.message}")


def _file(body: str | bytes, media_type: str, statement: Any, suffix: str) -> Response:
    response = Response(body, mimetype=None)
    response.headers["Content-Type"] = media_type
    named = periodpaper.filename(statement, suffix)
    response.headers["Content-Disposition"] = f'attachment; filename="{named}"'
    response.headers["Cache-Control"] = "no-store"
    return response


@blp.route("/console/statement.csv", methods=["GET"])
@heavy.held
def period_statement_csv() -> Any:
    statement, house = _paper()
    return _file(periodpaper.csv_of(statement, house), periodpaper.MEDIA_TYPE, statement, "csv")


@blp.route("/console/statement.pdf", methods=["GET"])
@heavy.held
def period_statement_pdf() -> Any:
    statement, house = _paper()
    try:
        pdf = printing.pdf_of(periodpaper.html_of(statement, house))
    except printing.PrintingUnavailable as exc:
        abort(503, description=str(exc))
    return _file(pdf, "application/pdf", statement, "pdf")


@blp.route("/console/statement/export", methods=["GET"])
def period_export() -> Any:
    """The export that proves a statement (GET /export's, as the signed-in reader: a
    player their own)."""
    who = _signed_in(*READERS)
    try:
        query = ExportQuerySchema().load(request.args)
    except ValidationError as exc:
        abort(400, description=_fields(exc))
    return export_response(who, query)
