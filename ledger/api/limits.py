"""A player's limits and breaks: read them, set a limit, take a time-out or a
self-exclusion. Each calls ledger.commands.limits, as the console and the CLI do."""

from __future__ import annotations

from typing import Any

from flask import request
from flask_smorest import abort

from ledger.api import bodies
from ledger.api.bodies import Blueprint
from ledger.api.callers import caller
from ledger.api.problems import ProblemSchema
from ledger.commands import limits
from ledger.store.limits_events import LIMIT_KINDS
from ledger.web import club, scoped_key
from ledger.web.limitschemas import (
    BreakBodySchema,
    LimitBodySchema,
    LimitWriteSchema,
    PlayerLimitsSchema,
)
from ledger.web.schemas import WriteHeadersSchema

blp = Blueprint(
    "limits", __name__, url_prefix="/players", description="A player's limits and breaks"
)


@blp.route("/<name>/limits", methods=["GET"])
@blp.response(200, PlayerLimitsSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
def standing(name: str) -> dict[str, Any]:
    """A player's limits in force, what counts against each, a raise waiting for its
    cooling-off, their time-out or self-exclusion, and their reality check (the player,
    setter, auditor)."""
    return limits.standing(club(), caller(), name)


@blp.route("/<name>/limits/<kind>", methods=["PUT"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.arguments(LimitBodySchema)
@blp.response(200, LimitWriteSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player or kind of limit")
def set_limit(
    headers: dict[str, Any], body: dict[str, Any], name: str, kind: str
) -> dict[str, Any]:
    """Set one of a player's limits (the player, or the setter at their request):
    deposit_24h, deposit_7d, loss_evening, loss_week or stake."""
    _require_kind(kind)
    who = caller()
    return limits.set_limit(club(), who, name, kind, body["limit"], scoped_key(who, headers))


@blp.route("/<name>/limits/<kind>", methods=["DELETE"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.response(200, LimitWriteSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player or kind of limit")
def remove_limit(headers: dict[str, Any], name: str, kind: str) -> dict[str, Any]:
    """Remove one of a player's limits (the player, or the setter at their request): as
    a raise, it binds after the club's cooling-off, the limit holding till then."""
    bodies.no_body(request)  # one sent anyway is refused, not ignored
    _require_kind(kind)
    who = caller()
    return limits.set_limit(club(), who, name, kind, None, scoped_key(who, headers))


def _require_kind(kind: str) -> None:
    if kind not in LIMIT_KINDS:
        abort(404, message=f"there is no limit {kind[:40]!r}: one of {', '.join(LIMIT_KINDS)}")


@blp.route("/<name>/breaks", methods=["POST"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.arguments(BreakBodySchema)
@blp.response(201, LimitWriteSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
def take_break(headers: dict[str, Any], body: dict[str, Any], name: str) -> dict[str, Any]:
    """Take a time-out (24 hours to 6 weeks) or a self-exclusion (6 months or more) (the
    player, or the setter at their request): no stakes, lays, odds, side bets or
    deposits until it ends; withdrawals and statements still work. It cannot be lifted
    or shortened."""
    who = caller()
    return limits.take_break(
        club(), who, name, body["kind"], body["length"], scoped_key(who, headers)
    )
