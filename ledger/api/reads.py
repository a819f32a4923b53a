"""The read side: settlements, a table's rounds, a player's statement.

Every listing is a page `{"items": [...], "next_after": ...}` walked by keyset: pass
`next_after` back as `after` until it is null (`page`, which every listing shares).
The queries are ledger.tableviews' (for settlements and rounds) and one join of
postings to events (for statements).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from flask_smorest import abort

from engine.state import SETTER
from ledger import tableviews
from ledger.accounts import player_account
from ledger.api import club, require, require_self
from ledger.api import readschemas as rs
from ledger.api.bodies import Blueprint
from ledger.api.schemas import ProblemSchema
from ledger.schema import events, postings
from ledger.service import NotFound, is_name, table_stream
from ledger.tokens import Holder, Role

blp = Blueprint("reads", __name__, description="Settlements, rounds and statements")

EVERYONE = (Role.CROUPIER, Role.AUDITOR, Role.PLAYER)


Read = Callable[[int, int], list[dict[str, Any]]]
"""A listing's query: `read(after, n)` is at least `n` items after key `after`, if
there are that many, in the order of their key."""


def page(read: Read, after: int, limit: int, key: str) -> dict[str, Any]:
    """A page of a keyset listing: the first `limit` items after `after`, and any more
    read that share the last one's key (a statement keeps an event's postings whole).
    `next_after` is null exactly when nothing comes after the page, so a walk never
    ends on an empty page, nor takes a full last page for one with more after it.

    One item more than the page is read to know that; only a page that ran over to the
    end of what was read (a statement whose last event has more postings than that)
    needs to ask once more."""
    items = read(after, limit + 1)
    if len(items) <= limit:
        return {"items": items, "next_after": None}
    last = items[limit - 1][key]
    shown = [item for item in items if item[key] <= last]
    more = len(shown) < len(items) or bool(read(last, 1))
    return {"items": shown, "next_after": last if more else None}


def _require_table(conn: sa.Connection, table: str) -> str:
    stream = table_stream(table)
    if not is_name(table) or not club().store.stream_version(conn, stream):
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
    elif player is not None:
        _require_player(player)
    with club().store.engine.connect() as conn:
        stream = _require_table(conn, query["table"]) if "table" in query else None
        party = None if player is None else player_account(player)
        return page(
            lambda after, limit: tableviews.settlements(
                conn,
                stream=stream,
                round=query.get("round"),
                party=party,
                bet_id=query.get("bet"),
                since=query.get("since"),
                until=query.get("until"),
                after_position=after,
                limit=limit,
            ),
            query["after"],
            query["limit"],
            "position",
        )


# -- rounds -------------------------------------------------------------------------


@blp.route("/tables/<table>/rounds", methods=["GET"])
@blp.arguments(rs.RoundPageQuerySchema, location="query", unknown=None)
@blp.response(200, rs.RoundPageSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def list_rounds(query: dict[str, Any], table: str) -> dict[str, Any]:
    """The table's rounds in order: caster, main, chance and result of each."""
    require(*EVERYONE)
    with club().store.engine.connect() as conn:
        stream = _require_table(conn, table)
        return page(
            lambda after, limit: tableviews.rounds(conn, stream, after, limit),
            query["after"],
            query["limit"],
            "round",
        )


@blp.route("/tables/<table>/rounds/<int:round>", methods=["GET"])
@blp.arguments(rs.PageQuerySchema, location="query", unknown=None)
@blp.response(200, rs.RoundDetailSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table or round")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def round_detail(query: dict[str, Any], table: str, round: int) -> dict[str, Any]:
    """One round, and its events a page at a time (its settlements: /settlements with
    `table` and `round`)."""
    require(*EVERYONE)
    with club().store.engine.connect() as conn:
        stream = _require_table(conn, table)
        # Past a 32-bit column's range there is no such round, and a database may
        # refuse the number rather than answer none.
        row = tableviews.round_row(conn, stream, round) if round <= rs.SMALL else None
        if row is None:
            raise NotFound(f"table {table!r} has no round {round}")
        events = page(
            lambda after, limit: tableviews.round_events(conn, stream, row, after, limit),
            query["after"],
            query["limit"],
            "position",
        )
    return {
        **tableviews.round_view(row),
        "events": events["items"],
        "next_after": events["next_after"],
    }


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
    with club().store.engine.connect() as conn:
        lines = page(
            lambda after, limit: statement_lines(conn, account, after, limit),
            query["after"],
            query["limit"],
            "position",
        )
    return {"player": name, "account": account, **lines}


def statement_lines(
    conn: sa.Connection, account: str, after_position: int, limit: int
) -> list[dict[str, Any]]:
    """The account's postings after `after_position`, at least `limit` of them if there
    are that many, ending with every posting of the last event on the page.

    The cursor is a position rather than a posting id: positions are the ledger's one
    order (the same `after` as every other listing), and posting ids are renumbered
    when the read models are rebuilt. So a page never splits an event's postings
    (an event posts to one account at most a few times), and may run a little over.
    """
    p, e = postings, events
    query = (
        sa.select(
            p.c.id,
            p.c.position,
            p.c.account,
            p.c.amount,
            p.c.counterparty,
            e.c.stream,
            e.c.version,
            e.c.type,
            e.c.payload,
            e.c.actor,
            e.c.recorded_at,
        )
        .join(e, e.c.position == p.c.position)
        .where(p.c.account == account)
        .order_by(p.c.position, p.c.id)
    )
    rows = list(conn.execute(query.where(p.c.position > after_position).limit(limit)))
    if len(rows) >= limit:
        last = rows[-1]
        rows += conn.execute(query.where(p.c.position == last.position, p.c.id > last.id))
    return [_line(row) for row in rows]


def _line(row: Any) -> dict[str, Any]:
    return {
        "posting": row.id,
        "position": row.position,
        "account": row.account,
        "amount": row.amount,
        "counterparty": row.counterparty,
        "event": {
            "position": row.position,
            "stream": row.stream,
            "version": row.version,
            "type": row.type,
            "payload": parsed(row.payload),
            "actor": row.actor,
            "recorded_at": row.recorded_at,
        },
    }


def parsed(payload: str) -> dict[str, Any] | None:
    """A stored payload as JSON, or None if it is not a JSON object: a reader shows a
    damaged event rather than fail on it (`hazard verify` names it)."""
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
