"""Players and their accounts: create, deposit, withdraw, credit, balance."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import abort

from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.api.replayschemas import AsOfQuerySchema, BalanceAtSchema
from ledger.books.accounts import owed
from ledger.commands import Role, require_self
from ledger.store.vocabulary import CreditLimitSet, Deposited, Withdrawn
from ledger.web import club, scoped_key
from ledger.web.schemas import (
    AmountSchema,
    CreditLimitSchema,
    PlayerSchema,
    WriteHeadersSchema,
    WriteResultSchema,
)

blp = Blueprint("players", __name__, url_prefix="/players", description="Players and accounts")


@blp.route("")
class Players(MethodView):
    @blp.arguments(WriteHeadersSchema, location="headers")
    @blp.arguments(PlayerSchema)
    @blp.response(201, WriteResultSchema)
    @blp.alt_response(409, schema=ProblemSchema, description="The player exists")
    def post(self, headers: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """Create a player (setter, croupier)."""
        who = require(Role.CROUPIER)
        return club().create_player(body["name"], who.actor, scoped_key(who, headers))


def _account_write(kind: type, name: str, amount: int, headers: dict[str, Any]) -> dict[str, Any]:
    who = require()  # the setter alone moves money in and out, and grants credit
    return club().account_command(name, kind, amount, who.actor, scoped_key(who, headers))


@blp.route("/<name>/deposits", methods=["POST"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.arguments(AmountSchema)
@blp.response(201, WriteResultSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
def deposit(headers: dict[str, Any], body: dict[str, Any], name: str) -> dict[str, Any]:
    """Deposit money into a player's account (setter)."""
    return _account_write(Deposited, name, body["amount"], headers)


@blp.route("/<name>/withdrawals", methods=["POST"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.arguments(AmountSchema)
@blp.response(201, WriteResultSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
@blp.alt_response(422, schema=ProblemSchema, description="Not enough funds, or a bad amount")
def withdraw(headers: dict[str, Any], body: dict[str, Any], name: str) -> dict[str, Any]:
    """Withdraw money from a player's account (setter)."""
    return _account_write(Withdrawn, name, body["amount"], headers)


@blp.route("/<name>/credit-limit", methods=["PUT"])
@blp.arguments(WriteHeadersSchema, location="headers")
@blp.arguments(CreditLimitSchema)
@blp.response(200, WriteResultSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
def credit_limit(headers: dict[str, Any], body: dict[str, Any], name: str) -> dict[str, Any]:
    """Set how far below zero a player may go (setter)."""
    return _account_write(CreditLimitSet, name, body["limit"], headers)


@blp.route("/<name>/balance", methods=["GET"])
@blp.arguments(AsOfQuerySchema, location="query", unknown=None)
@blp.response(200, BalanceAtSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
@blp.alt_response(422, schema=ProblemSchema, description="A bad `as_of`")
def balance(query: dict[str, Any], name: str) -> dict[str, Any]:
    """A player's balance and credit limit (the player, setter, auditor); with `as_of`,
    as they stood then."""
    who = require(Role.AUDITOR, Role.PLAYER)
    require_self(who, name)
    if not club().player_exists(name):
        abort(404, message=f"there is no player {name!r}")
    if query.get("as_of") is not None:
        from ledger.api.replays import balance_as_of

        return balance_as_of(name, query["as_of"])
    with club().store.engine.connect() as conn:
        balance, credit_limit = club().standing(conn, name)
    return {
        "player": name,
        "balance": balance,
        "credit_limit": credit_limit,
        "owed": owed(balance, credit_limit),
    }
