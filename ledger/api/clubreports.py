"""The club's books of what was not play, for the setter and the auditor: the
exceptions report (voids, corrections, adjustments), the authentication report (tokens,
sign-ins) and the log of significant events, each for a period, as JSON or CSV
(ledger.books.significant). A croupier or a player reads none of them: they name who
did what.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from flask import Response
from marshmallow import Schema, fields

from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.books import significant as book
from ledger.commands import Role
from ledger.store.log import check
from ledger.web import club, heavy
from ledger.web.bookschemas import PeriodQuerySchema

blp = Blueprint(
    "clubreports",
    __name__,
    description="The club's books: exceptions, authentication, significant events",
)

READERS = (Role.AUDITOR,)
"""Who reads them (besides the setter)."""


class MoveSchema(Schema):
    source = fields.String(required=True)
    target = fields.String(required=True)
    amount = fields.Integer(required=True, metadata={"description": "Minor units"})


class ExceptionSchema(Schema):
    position = fields.Integer(required=True)
    recorded_at = fields.String(required=True)
    table = fields.String(required=True)
    kind = fields.String(
        required=True,
        metadata={
            "description": "throw voided, bet voided, throw corrected, round voided, dispute "
            "upheld, bet adjusted"
        },
    )
    subject = fields.String(required=True, metadata={"description": "What it was done to"})
    before = fields.String(required=True)
    after = fields.String(required=True)
    why = fields.String(required=True, metadata={"description": "The reason recorded"})
    actor = fields.String(required=True, metadata={"description": "Who: role:name#tag"})
    moves = fields.List(fields.Nested(MoveSchema), required=True)


class SignificantSchema(Schema):
    position = fields.Integer(required=True)
    recorded_at = fields.String(required=True)
    what = fields.String(required=True)
    subject = fields.String(required=True, allow_none=True)
    before = fields.String(required=True, allow_none=True)
    after = fields.String(required=True, allow_none=True)
    count = fields.Integer(
        required=True, metadata={"description": "How many: a flood is one row with its count"}
    )
    first_at = fields.String(required=True)
    last_at = fields.String(required=True)
    actor = fields.String(required=True, metadata={"description": "Who: role:name#tag"})


def _page(row: type[Schema], name: str) -> type[Schema]:
    return Schema.from_dict(
        {
            "rows": fields.List(fields.Nested(row), required=True),
            "next_after": fields.Integer(
                required=True,
                allow_none=True,
                metadata={"description": "The `after` of the next page; null: the last"},
            ),
        },
        name=name,
    )


ExceptionsPageSchema = _page(ExceptionSchema, "ExceptionsPage")
SignificantPageSchema = _page(SignificantSchema, "SignificantPage")

CSV = {
    "description": "The page as CSV (a header row, CRLF; amounts in minor units, times UTC)",
    "content": {"text/csv": {"schema": {"type": "string"}}},
}

Read = Callable[[sa.Connection, book.Period, int], book.Page]


def _read(read: Read, query: dict[str, Any]) -> book.Page:
    require(*READERS)
    period = book.Period(query.get("since"), query.get("until"))
    with club().store.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        return read(conn, period, query["after"])


def _json(page: book.Page) -> dict[str, Any]:
    return {"rows": page.rows, "next_after": page.next_after}


def _csv(page: book.Page, columns: tuple[str, ...], name: str) -> Response:
    headers = {"Content-Disposition": f'attachment; filename="hazard-{name}.csv"'}
    if page.next_after is not None:
        headers["Link"] = f'<?after={page.next_after}>; rel="next"'
    return Response(book.as_csv(page.rows, columns), mimetype="text/csv", headers=headers)


def _refusals(route: Callable[..., Any]) -> Callable[..., Any]:
    """The refusals every report documents: another role (403), a bad period (422)."""
    forbidden = blp.alt_response(403, schema=ProblemSchema, description="Not setter or auditor")
    bad = blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
    decorated: Callable[..., Any] = bad(forbidden(route))
    return decorated


@blp.route("/reports/exceptions", methods=["GET"])
@heavy.read(blp)
@blp.arguments(PeriodQuerySchema, location="query", unknown=None)
@blp.response(200, ExceptionsPageSchema)
@_refusals
def exceptions(query: dict[str, Any]) -> dict[str, Any]:
    """The exceptions report: every void, correction and adjustment at the tables in
    the period, with what it was before and after, who did it and why."""
    return _json(_read(book.exceptions, query))


@blp.route("/reports/exceptions.csv", methods=["GET"])
@heavy.read(blp)
@blp.arguments(PeriodQuerySchema, location="query", unknown=None)
@blp.doc(responses={"200": CSV})
@_refusals
def exceptions_csv(query: dict[str, Any]) -> Response:
    """The exceptions report as CSV."""
    return _csv(_read(book.exceptions, query), book.EXCEPTION_COLUMNS, "exceptions")


@blp.route("/reports/authentication", methods=["GET"])
@blp.arguments(PeriodQuerySchema, location="query", unknown=None)
@blp.response(200, SignificantPageSchema)
@_refusals
def authentication(query: dict[str, Any]) -> dict[str, Any]:
    """The authentication report: tokens made and revoked, console sign-ins and
    sign-outs, refused ones with the token they named (never a secret), a flood as
    one row with its count."""
    return _json(_read(book.authentication, query))


@blp.route("/reports/authentication.csv", methods=["GET"])
@blp.arguments(PeriodQuerySchema, location="query", unknown=None)
@blp.doc(responses={"200": CSV})
@_refusals
def authentication_csv(query: dict[str, Any]) -> Response:
    """The authentication report as CSV."""
    return _csv(_read(book.authentication, query), book.SIGNIFICANT_COLUMNS, "authentication")


@blp.route("/reports/significant", methods=["GET"])
@heavy.read(blp)
@blp.arguments(PeriodQuerySchema, location="query", unknown=None)
@blp.response(200, SignificantPageSchema)
@_refusals
def significant(query: dict[str, Any]) -> dict[str, Any]:
    """The log of significant events: tokens, sign-ins, the club's settings as the
    service started, writes the lock refused, each table's rule set and limits as it
    opened, a player's limits changed."""
    return _json(_read(book.significant, query))


@blp.route("/reports/significant.csv", methods=["GET"])
@heavy.read(blp)
@blp.arguments(PeriodQuerySchema, location="query", unknown=None)
@blp.doc(responses={"200": CSV})
@_refusals
def significant_csv(query: dict[str, Any]) -> Response:
    """The log of significant events as CSV."""
    return _csv(_read(book.significant, query), book.SIGNIFICANT_COLUMNS, "significant")
