"""Replays and recalls over HTTP: a round or a whole session event by event, and a
regulator's recall of the last ten rounds of a table or a player (ledger.audit).

Who reads what: the setter and the auditor everything; a croupier a table's replay and
recall; a player a table's replay (as public as the table's state and rounds, with only
their own balance in it) and their own recall.
"""

from __future__ import annotations

from typing import Any

from flask_smorest import abort

from engine.state import SETTER
from ledger.api import replayschemas as ps
from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.audit import recall, replay
from ledger.books import asof, tableviews
from ledger.books.accounts import account_stream, owed, player_account
from ledger.commands import Role, require_self
from ledger.service import NotFound, is_name, table_stream
from ledger.store import snapshots
from ledger.web import club, heavy
from ledger.web.readschemas import SMALL
from ledger.web.tokens import Holder
from ledger.web.views import state_view, step_view

blp = Blueprint("replays", __name__, description="Replays of rounds and sessions, and recalls")

EVERYONE = (Role.CROUPIER, Role.AUDITOR, Role.PLAYER)


def _table(conn: Any, table: str) -> str:
    stream = table_stream(table)
    if not is_name(table) or not club().store.stream_version(conn, stream):
        raise NotFound(f"there is no table {table!r}")
    return stream


def _answer(
    who: Holder, table: str, round: dict[str, Any] | None, steps: list[replay.Step], more: Any
) -> dict[str, Any]:
    own = player_account(who.name) if who.role is Role.PLAYER else None
    return {
        "table": table,
        "round": round,
        "balances": replay.BASIS["ledger"],
        "steps": [step_view(table, step, own) for step in steps],
        "next_after": more,
    }


@blp.route("/tables/<table>/replay", methods=["GET"])
@heavy.read(blp)
@blp.arguments(ps.ReplayQuerySchema, location="query", unknown=None)
@blp.response(200, ps.ReplaySchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def session_replay(query: dict[str, Any], table: str) -> dict[str, Any]:
    """The table's whole session, event by event, a page at a time: each event with the
    table after it, the money it moved, its settlements and its parties' balances."""
    who = require(*EVERYONE)
    store = club().store
    with store.engine.connect() as conn:
        stream = _table(conn, table)
        steps, more = replay.page(conn, store, stream, 1, None, query["after"], query["limit"])
    return _answer(who, table, None, steps, more)


@blp.route("/tables/<table>/rounds/<int:round>/replay", methods=["GET"])
@heavy.read(blp)
@blp.arguments(ps.ReplayQuerySchema, location="query", unknown=None)
@blp.response(200, ps.ReplaySchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table or round")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def round_replay(query: dict[str, Any], table: str, round: int) -> dict[str, Any]:
    """One round, event by event, a page at a time (as the session's replay)."""
    who = require(*EVERYONE)
    store = club().store
    with store.engine.connect() as conn:
        stream = _table(conn, table)
        row = tableviews.round_row(conn, stream, round) if round <= SMALL else None
        if row is None:
            raise NotFound(f"table {table!r} has no round {round}")
        steps, more = replay.round_page(conn, store, row, query["after"], query["limit"])
    return _answer(who, table, tableviews.round_view(row), steps, more)


@blp.route("/tables/<table>/recall", methods=["GET"])
@heavy.read(blp)
@blp.response(200, ps.RecallSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
def table_recall(table: str) -> dict[str, Any]:
    """The table's last ten rounds, newest first: start and end, every party's balance
    before and after, the bets, the throws and what each party won or lost (the setter,
    a croupier, the auditor)."""
    require(Role.CROUPIER, Role.AUDITOR)
    with club().store.engine.connect() as conn:
        stream = _table(conn, table)
        return {"table": table, "rounds": recall.of_table(conn, stream)}


@blp.route("/players/<name>/recall", methods=["GET"])
@heavy.read(blp)
@blp.response(200, ps.RecallSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Not this caller's")
@blp.alt_response(404, schema=ProblemSchema, description="No such player")
def player_recall(name: str) -> dict[str, Any]:
    """The last ten rounds the player had a bet in, newest first: start and end, their
    balance before and after, their bets, the throws and what they won or lost (the
    player, the setter, the auditor)."""
    who = require(Role.AUDITOR, Role.PLAYER)
    require_self(who, name)
    if who.role is Role.PLAYER and name == SETTER:
        abort(403, message="a player may not read the setter's account")
    if not club().player_exists(name):
        raise NotFound(f"there is no player {name!r}")
    with club().store.engine.connect() as conn:
        return {"player": name, "rounds": recall.of_player(conn, player_account(name))}


# -- as of -------------------------------------------------------------------------------


def moment(conn: Any, asked: tuple[str, Any]) -> dict[str, Any]:
    """Where `as_of` stands: the last position it includes. A position past the log's
    end is refused: what it would show could still change."""
    kind, value = asked
    if kind == "time":
        return {"position": asof.position_at(conn, value), "asked": value}
    last = asof.last_position(conn)
    if value > last:
        abort(
            422,
            messages={"query": {"as_of": [f"Position {value} is past the log's last, {last}."]}},
        )
    return {"position": value, "asked": str(value)}


def table_as_of(table: str, asked: tuple[str, Any], after: int, limit: int) -> dict[str, Any]:
    """GET /tables/<table>?as_of=: the table's state as of a position or a time, from
    the snapshot at or before it and the events up to it."""
    store = club().store
    with store.engine.connect() as conn:
        stream = _table(conn, table)
        at = moment(conn, asked)
        version = asof.stream_version_at(conn, stream, at["position"])
    if not version:
        raise NotFound(f"there was no table {table!r} as of {at['asked']}")
    state = snapshots.load(store, stream, at_version=version)
    return {**state_view(table, state, after, limit), "as_of": at}


def balance_as_of(name: str, asked: tuple[str, Any]) -> dict[str, Any]:
    """GET /players/<name>/balance?as_of=: the balance and credit limit as of then."""
    account = player_account(name)
    with club().store.engine.connect() as conn:
        at = moment(conn, asked)
        balance = asof.balance_at(conn, account, at["position"])
        credit = asof.credit_limit_at(conn, account, account_stream(account), at["position"])
    return {
        "player": name,
        "balance": balance,
        "credit_limit": credit,
        "owed": owed(balance, credit),
        "as_of": at,
    }
