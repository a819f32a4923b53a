"""Disputed rounds over HTTP: opening one (with the service's answer at once), reading
them, and the setter's resolution. The commands are ledger.audit.disputes', each one
write through Club.command; what they refuse is a rule of engine.disputes (422)."""

from __future__ import annotations

from typing import Any

from flask import request
from flask_smorest import abort
from marshmallow import Schema, fields, validate

from engine.state import SETTER
from ledger.api import club, require, scoped_key
from ledger.api.bodies import Blueprint
from ledger.api.numbers import QueryInteger
from ledger.api.readschemas import BIG, SMALL
from ledger.api.schemas import DIE, ProblemSchema, TableWriteHeadersSchema, WriteResultSchema
from ledger.api.tokens import Holder, Role
from ledger.audit import disputes

blp = Blueprint("disputes", __name__, description="Disputed rounds: opened, answered, resolved")

TEXT = validate.Length(1, 500)


def _dice() -> fields.List[Any]:
    return fields.List(
        fields.Integer(strict=True, validate=DIE),
        validate=validate.Length(2, 2),
        load_default=None,
        metadata={"description": "The two dice, each 1 to 6"},
    )


class OpenDisputeSchema(Schema):
    claim = fields.String(
        required=True, validate=TEXT, metadata={"description": "What went wrong, in words"}
    )
    throw = fields.Integer(
        strict=True,
        load_default=None,
        validate=validate.Range(1, SMALL),
        metadata={
            "description": "The version of the throw disputed (default, with dice: the "
            "round's last throw)"
        },
    )
    dice = _dice()


class ResolveDisputeSchema(Schema):
    resolution = fields.String(
        required=True,
        metadata={"description": "upheld, voided, or corrected"},
        validate=validate.Length(1, 32),
    )
    reason = fields.String(
        required=True, validate=TEXT, metadata={"description": "The setter's reason"}
    )
    throw = fields.Integer(
        strict=True,
        load_default=None,
        validate=validate.Range(1, SMALL),
        metadata={"description": "A correction: the version of the throw mis-entered"},
    )
    dice = _dice()


class DisputeQuerySchema(Schema):
    status = fields.String(
        load_default=None,
        validate=validate.OneOf(["open", "resolved"]),
        metadata={"description": "open or resolved (default: both)"},
    )
    after = QueryInteger(
        load_default=0,
        validate=validate.Range(0, BIG),
        metadata={"description": "The `next_after` of the page before"},
    )
    limit = QueryInteger(load_default=50, validate=validate.Range(1, 500))


class DisputeSchema(Schema):
    table = fields.String(required=True)
    dispute_id = fields.String(required=True)
    round = fields.Integer(required=True)
    claimant = fields.String(required=True)
    role = fields.String(required=True, metadata={"description": "setter, croupier or player"})
    claim = fields.String(required=True)
    throw = fields.Integer(allow_none=True)
    dice = fields.List(fields.Integer(), allow_none=True)
    status = fields.String(
        required=True, metadata={"description": "open, upheld, voided or corrected"}
    )
    opened = fields.Dict(required=True, metadata={"description": "version, position, by, at"})
    resolved = fields.Dict(
        allow_none=True,
        metadata={"description": "resolution, reason, throw, dice, version, position, by, at"},
    )
    adjustments = fields.List(
        fields.Dict(),
        required=True,
        metadata={"description": "Per bet: the transfers the resolution made, in ledger accounts"},
    )
    answer = fields.Dict(
        allow_none=True,
        metadata={
            "description": "The service's answer: whether the recorded settlements match the "
            "round derived again from its events (`matches`, `mismatch`), what each bet did "
            "(`bets`: each bet's outcome and `net`, what each party is up or down on it; a bet "
            "`open` at the end shows what each has put into its escrow), and, when the claimant "
            "gave dice, `what_if`: the round and every bet with them, whether a correction "
            "could be made (`correctable`, `refused`) and the `adjustments` it would post"
        },
    )


class DisputePageSchema(Schema):
    items = fields.List(fields.Nested(DisputeSchema), required=True)
    next_after = fields.Integer(required=True, allow_none=True)


class DisputeOpenedSchema(WriteResultSchema):
    dispute_id = fields.String(required=True)
    answer = fields.Dict(required=True, metadata={"description": "As DisputeSchema's answer"})


def _claimant(who: Holder) -> tuple[str, str]:
    """(claimant, role) for the caller: the setter disputes as the bank."""
    if who.role is Role.SETTER:
        return SETTER, "setter"
    return who.name, who.role.value


def _dice_of(body: dict[str, Any]) -> tuple[int, int] | None:
    dice = body.get("dice")
    return None if dice is None else (dice[0], dice[1])


@blp.route("/tables/<table>/rounds/<int:round>/disputes", methods=["POST"])
@blp.arguments(TableWriteHeadersSchema, location="headers")
@blp.arguments(OpenDisputeSchema)
@blp.response(201, DisputeOpenedSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(409, schema=ProblemSchema, description="Stale If-Match")
@blp.alt_response(
    422, schema=ProblemSchema, description="A rule of disputes broken (its code), or a bad field"
)
def open_dispute(headers: dict[str, Any], body: dict[str, Any], table: str, round: int) -> Any:
    """Dispute a round that has ended: the setter, a croupier, or a player who had money
    in it. The answer comes at once: the round derived again from its events, whether
    the recorded settlements match, and with `dice`, what the round would have been.
    Writes only the DisputeOpened."""
    who = require(Role.CROUPIER, Role.PLAYER)
    claimant, role = _claimant(who)
    return disputes.open_dispute(
        club(),
        table,
        who.actor,
        role,
        claimant,
        round,
        body["claim"],
        body["throw"],
        _dice_of(body),
        key=scoped_key(who, headers),
        if_match=headers.get("if_match"),
        request={"path": request.path, "body": body},
    )


@blp.route("/tables/<table>/disputes/<dispute_id>/resolution", methods=["POST"])
@blp.arguments(TableWriteHeadersSchema, location="headers")
@blp.arguments(ResolveDisputeSchema)
@blp.response(201, WriteResultSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(409, schema=ProblemSchema, description="Stale If-Match")
@blp.alt_response(
    422,
    schema=ProblemSchema,
    description="A rule of disputes broken (resolved already, a correction that reaches "
    "beyond its round, ...), or a bad field",
)
def resolve_dispute(
    headers: dict[str, Any], body: dict[str, Any], table: str, dispute_id: str
) -> Any:
    """The setter resolves a dispute: `upheld` (nothing moves), `voided` (every bet of the
    round reversed, party to party), or `corrected` (with `throw` and `dice`: the
    difference each bet should have paid, posted). Each is an event with the reason."""
    who = require()  # the setter only
    return disputes.resolve_dispute(
        club(),
        table,
        who.actor,
        dispute_id,
        body["resolution"],
        body["reason"],
        body["throw"],
        _dice_of(body),
        key=scoped_key(who, headers),
        if_match=headers.get("if_match"),
        request={"path": request.path, "body": body},
    )


@blp.route("/tables/<table>/disputes", methods=["GET"])
@blp.arguments(DisputeQuerySchema, location="query", unknown=None)
@blp.response(200, DisputePageSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def table_disputes(query: dict[str, Any], table: str) -> dict[str, Any]:
    """A table's disputes in the order opened; a player sees only their own."""
    who = require(Role.CROUPIER, Role.AUDITOR, Role.PLAYER)
    mine = who.name if who.role is Role.PLAYER else None
    return disputes.listing(
        club(), table, query["status"], query["after"], query["limit"], claimant=mine
    )


@blp.route("/disputes", methods=["GET"])
@blp.arguments(DisputeQuerySchema, location="query", unknown=None)
@blp.response(200, DisputePageSchema)
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def club_disputes(query: dict[str, Any]) -> dict[str, Any]:
    """Every table's disputes in the order opened (`status=open`: the setter's queue); a
    player sees only their own."""
    who = require(Role.CROUPIER, Role.AUDITOR, Role.PLAYER)
    mine = who.name if who.role is Role.PLAYER else None
    return disputes.listing(
        club(), None, query["status"], query["after"], query["limit"], claimant=mine
    )


@blp.route("/tables/<table>/disputes/<dispute_id>", methods=["GET"])
@blp.response(200, DisputeSchema)
@blp.alt_response(403, schema=ProblemSchema, description="A player asked for another's")
@blp.alt_response(404, schema=ProblemSchema, description="No such table or dispute")
def one_dispute(table: str, dispute_id: str) -> dict[str, Any]:
    """A dispute: the claim, the resolution with its reason, the adjustments it made,
    and the service's answer, derived again from the round's events."""
    who = require(Role.CROUPIER, Role.AUDITOR, Role.PLAYER)
    view = disputes.dispute(club(), table, dispute_id)
    if who.role is Role.PLAYER and view["claimant"] != who.name:
        abort(403, message="a player reads only the disputes they opened")
    return view
