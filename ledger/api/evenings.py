"""The club's evenings over HTTP: the setter opens one with its floats and closes it
with the cash-up (ledger.commands.evenings); the setter and the auditor read the night
report (ledger.books.nightreport) as JSON, and as the PDF with its charts that the
console and the CLI give too (ledger.web.nightpage).
A refusal names its rule: `urn:hazard:evening:<rule>` (422, or 409 for an evening open
already or none open), and writes nothing."""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, request
from flask_smorest import abort
from marshmallow import Schema, fields, validate

from ledger import printing
from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.books import nightreport
from ledger.commands import Role
from ledger.commands import evenings as evening_commands
from ledger.commands.evenings import MOST_COUNTED, MOST_PLACES
from ledger.web import club, heavy, nightpage, scoped_key
from ledger.web.schemas import NAME, EventSchema, ReceiptSchema, WriteHeadersSchema

blp = Blueprint(
    "evenings", __name__, description="The club's evenings: floats, cash-up, night report"
)

READERS = (Role.AUDITOR,)
"""Who reads the night report (besides the setter)."""

COUNT = validate.Range(min=0, max=MOST_COUNTED)


def _counts(what: str) -> fields.Dict:
    return fields.Dict(
        keys=fields.String(validate=NAME),
        values=fields.Integer(strict=True, validate=COUNT),
        required=True,
        validate=validate.Length(max=MOST_PLACES),
        metadata={
            "description": f"The {what} counted at each table, by its id, in minor units "
            "(`{}`: none)"
        },
    )


class OpenEveningSchema(Schema):
    floats = _counts("float")
    cage = fields.Integer(
        strict=True,
        validate=COUNT,
        load_default=0,
        metadata={"description": "The float counted at the cage, in minor units"},
    )


class CashUpSchema(Schema):
    counts = _counts("cash")
    cage = fields.Integer(
        strict=True,
        required=True,
        validate=COUNT,
        metadata={"description": "The cash counted at the cage, in minor units"},
    )


class PlaceSchema(Schema):
    place = fields.String(required=True, metadata={"description": "A table's id, or `cage`"})
    table = fields.String(
        required=True, allow_none=True, metadata={"description": "Null: the cage"}
    )
    float = fields.Integer(required=True)


class CashLineSchema(PlaceSchema):
    counted = fields.Integer(required=True)
    expected = fields.Integer(
        required=True,
        metadata={
            "description": "What the books say should be there: at a table its float plus the "
            "setter's net there during the evening; at the cage its float plus deposits "
            "less withdrawals"
        },
    )
    difference = fields.Integer(
        required=True, metadata={"description": "Counted less expected: short is negative"}
    )


class EveningWriteSchema(Schema):
    evening = fields.Integer(required=True)
    version = fields.Integer(required=True)
    floats = fields.Dict(keys=fields.String(), values=fields.Integer())
    cash_up = fields.List(fields.Nested(CashLineSchema))
    events = fields.List(fields.Nested(EventSchema), required=True)
    receipt = fields.Nested(ReceiptSchema, required=True)


class EveningSummarySchema(Schema):
    evening = fields.Integer(required=True)
    open = fields.Boolean(required=True)
    opened_at = fields.String(required=True)
    opened_by = fields.String(required=True)
    closed_at = fields.String(required=True, allow_none=True)
    closed_by = fields.String(required=True, allow_none=True)
    difference = fields.Integer(
        required=True, allow_none=True, metadata={"description": "The cash-up's, all places"}
    )


class EveningListSchema(Schema):
    items = fields.List(fields.Nested(EveningSummarySchema), required=True)


class NetSchema(Schema):
    table = fields.String()
    player = fields.String(allow_none=True, metadata={"description": "Null: no taker yet"})
    net = fields.Integer(required=True, metadata={"description": "The setter's net: it won"})


class TakingsSchema(Schema):
    total = fields.Integer(required=True)
    tables = fields.List(fields.Nested(NetSchema), required=True)
    players = fields.List(fields.Nested(NetSchema), required=True)


class CageSchema(Schema):
    deposits = fields.Integer(required=True)
    withdrawals = fields.Integer(required=True)


class ExposureSchema(Schema):
    largest = fields.Integer(required=True)
    position = fields.Integer(required=True, allow_none=True)
    recorded_at = fields.String(required=True, allow_none=True)


class PlayCountsSchema(Schema):
    table = fields.String()
    rounds = fields.Integer(required=True)
    throws = fields.Integer(required=True)
    throws_voided = fields.Integer(required=True)
    bets_voided = fields.Integer(required=True)
    disputes_opened = fields.Integer(required=True)
    disputes_resolved = fields.Integer(required=True)
    adjustments = fields.Integer(required=True)


class PlaySchema(Schema):
    tables = fields.List(fields.Nested(PlayCountsSchema), required=True)
    totals = fields.Nested(PlayCountsSchema, required=True)
    resolutions = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)


class CoveringSchema(Schema):
    size = fields.Integer(required=True)
    root = fields.String(required=True)
    issued_at = fields.String(required=True)
    note = fields.String(required=True, metadata={"description": "The signed checkpoint"})


class NightReportSchema(EveningSummarySchema):
    after = fields.Integer(required=True, metadata={"description": "Its span: after this position"})
    through = fields.Integer(required=True, metadata={"description": "... through this one"})
    floats = fields.List(fields.Nested(PlaceSchema), required=True)
    takings = fields.Nested(TakingsSchema, required=True)
    cage = fields.Nested(CageSchema, required=True)
    cash_up = fields.List(fields.Nested(CashLineSchema), required=True)
    exposure = fields.Nested(ExposureSchema, required=True)
    play = fields.Nested(PlaySchema, required=True)
    checkpoint = fields.Nested(
        CoveringSchema,
        required=True,
        allow_none=True,
        metadata={"description": "The signed checkpoint whose tree holds the evening"},
    )


@blp.route("/evenings", methods=["POST"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.arguments(OpenEveningSchema)
@blp.response(201, EveningWriteSchema)
@blp.alt_response(409, schema=ProblemSchema, description="An evening is open already")
@blp.alt_response(422, schema=ProblemSchema, description="A bad count, or no such table")
def open_evening(headers: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The setter opens the next evening with the float counted at each table and at
    the cage."""
    who = require()
    return evening_commands.open_evening(
        club(),
        who,
        body["floats"],
        body["cage"],
        key=scoped_key(who, headers),
        request={"path": request.path, "body": body},
    )


@blp.route("/evenings/cash-up", methods=["POST"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.arguments(CashUpSchema)
@blp.response(201, EveningWriteSchema)
@blp.alt_response(409, schema=ProblemSchema, description="No evening is open")
@blp.alt_response(
    422, schema=ProblemSchema, description="A bad count, a table not in it, a place uncounted"
)
def cash_up(headers: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The setter closes the evening open now with the cash counted at each of its
    tables (those floated, and any the setter's money moved at) and at the cage: each
    line records the count, what the books expect and the difference."""
    who = require()
    return evening_commands.close_evening(
        club(),
        who,
        body["counts"],
        body["cage"],
        key=scoped_key(who, headers),
        request={"path": request.path, "body": body},
    )


@blp.route("/evenings", methods=["GET"])
@blp.response(200, EveningListSchema)
def evenings() -> dict[str, Any]:
    """Every evening, in the order opened (setter, auditor)."""
    require(*READERS)
    return {"items": nightreport.listing(club().store)}


def _report(number: int) -> dict[str, Any]:
    require(*READERS)
    found = nightreport.of_evening(club().store, number)
    if found is None:
        abort(404, message=f"there is no evening {number}")
    assert found is not None
    return found


@blp.route("/evenings/<int:number>", methods=["GET"])
@blp.response(200, NightReportSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such evening")
def night_report(number: int) -> dict[str, Any]:
    """The night report of an evening (setter, auditor): takings per table and player,
    the cage, the cash-up, the largest exposure, the play and the checkpoint covering it."""
    return _report(number)


@blp.route("/evenings/<int:number>.pdf", methods=["GET"])
@heavy.read(blp)
@blp.doc(
    responses={
        "200": {
            "description": "The night report on A4, one or two pages, with its charts and "
            "the checkpoint that covers the evening (Content-Disposition names the file)",
            "content": {"application/pdf": {"schema": {"type": "string"}}},
        }
    }
)
@blp.alt_response(404, schema=ProblemSchema, description="No such evening")
@blp.alt_response(503, schema=ProblemSchema, description="This server cannot print PDFs")
def night_report_pdf(number: int) -> Response:
    """The night report of an evening as a PDF (setter, auditor)."""
    night = _report(number)
    try:
        pdf = nightpage.pdf(night, current_app.extensions["hazard.house"])
    except printing.PrintingUnavailable as exc:
        abort(503, message=str(exc))
    response = Response(pdf, mimetype="application/pdf")
    response.headers["Content-Disposition"] = f'attachment; filename="night-{number}.pdf"'
    response.headers["Cache-Control"] = "no-store"
    return response
