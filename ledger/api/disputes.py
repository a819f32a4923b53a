"""Disputed rounds over HTTP: opening one (with the service's answer at once), reading
them, and the setter's resolution. The commands are ledger.commands.disputes', each one
write through Club.command; what they refuse is a rule of engine.disputes (422). What
is read is ledger.audit.disputes'."""

from __future__ import annotations

from typing import Any

from flask import request
from flask_smorest import abort

from engine.state import SETTER
from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.audit import disputes
from ledger.commands import Role
from ledger.commands import disputes as dispute_commands
from ledger.web import club, scoped_key
from ledger.web.disputeschemas import (
    DisputePageSchema,
    DisputeQuerySchema,
    DisputeSchema,
    DisputeWriteResultSchema,
    OpenDisputeSchema,
    ResolveDisputeSchema,
)
from ledger.web.schemas import TableWriteHeadersSchema, WriteResultSchema
from ledger.web.tokens import Holder

blp = Blueprint("disputes", __name__, description="Disputed rounds: opened, answered, resolved")


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
@blp.response(201, DisputeWriteResultSchema)
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
    return dispute_commands.open_dispute(
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
    return dispute_commands.resolve_dispute(
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
