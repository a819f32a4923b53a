"""Tables, play and bets: each write is a command of ledger.commands.tables, run as the
caller, one engine command through Club.command; what each takes is its schema's, and
who may send it the command's to say (ledger.web.tablewrites)."""

from __future__ import annotations

from typing import Any

from flask import request

from ledger.api import bodies
from ledger.api.bodies import Blueprint
from ledger.api.callers import caller, require
from ledger.api.problems import ProblemSchema
from ledger.api.replayschemas import TableStateAtSchema, TableStateQuerySchema
from ledger.api.shaped import shaped
from ledger.commands import Role
from ledger.web import club, sent_by, tablewrites
from ledger.web import schemas as s
from ledger.web.tablewrites import WRITES, TableWrite
from ledger.web.views import state_view

blp = Blueprint("tables", __name__, url_prefix="/tables", description="Tables, play and bets")


@blp.route("", methods=["POST"])
@blp.arguments(s.WriteHeadersSchema, location="headers")
@blp.arguments(s.OpenTableSchema)
@blp.response(201, s.WriteResultSchema)
@blp.alt_response(409, schema=ProblemSchema, description="The table exists")
@blp.alt_response(422, schema=ProblemSchema, description="A bad rule set or limits")
def open_table(headers: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """Open a table with a rule set (built-in by name, or custom) and its limits."""
    who = caller()
    return tablewrites.open_table(who, body, sent_by(who, headers))


@blp.route("/<table>", methods=["GET"])
@blp.arguments(TableStateQuerySchema, location="query", unknown=None)
@blp.response(
    200,
    TableStateAtSchema,
    headers={
        "ETag": {
            "description": "The table's version, quoted: send it back as If-Match",
            "schema": {"type": "string"},
        }
    },
)
@shaped(TableStateAtSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def table_state(query: dict[str, Any], table: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    """The table's derived state: phase, caster, main, chance, version, and its open
    bets a page at a time; with `as_of`, as it stood then (no ETag: it is not now)."""
    require(Role.CROUPIER, Role.AUDITOR, Role.PLAYER)
    if query.get("as_of") is not None:
        from ledger.api.replays import table_as_of  # which builds on state_view too

        return table_as_of(table, query["as_of"], query["after"], query["limit"]), 200, {}
    state = club().state(table)
    view = state_view(table, state, query["after"], query["limit"])
    return view, 200, {"ETag": f'"{state.version}"'}


def _route(rule: str, write: TableWrite) -> None:
    """POST /tables/<table>/<rule>: the body its schema reads, run as the caller."""

    def view(headers: dict[str, Any], *args: Any, table: str) -> tuple[dict[str, Any], int]:
        if write.schema is None:
            bodies.no_body(request)  # one sent anyway is refused, not ignored
        body = args[0] if args else {}
        who = caller()
        return tablewrites.run(rule, table, who, body, sent_by(who, headers)), 201

    view.__name__ = rule.replace("-", "_").replace("/", "_")
    view.__doc__ = write.doc
    wrapped: Any = view
    if write.schema is not None:
        wrapped = blp.arguments(write.schema)(wrapped)
    wrapped = blp.arguments(s.TableWriteHeadersSchema, location="headers")(wrapped)
    # The answer is built in WriteResultSchema's shape (ledger.commands.tables): sent
    # as it is, not dumped field by field (a twentieth of a throw's CPU, bench.apicpu).
    wrapped = shaped(s.WriteResultSchema)(wrapped)
    wrapped = blp.response(201, s.WriteResultSchema)(wrapped)
    wrapped = blp.alt_response(404, schema=ProblemSchema, description="No such table")(wrapped)
    wrapped = blp.alt_response(409, schema=ProblemSchema, description="Stale If-Match")(wrapped)
    wrapped = blp.alt_response(
        422, schema=ProblemSchema, description="A rule of the table broken, or a bad field"
    )(wrapped)
    blp.route(f"/<table>/{rule}", methods=["POST"])(wrapped)


for _rule, _write in WRITES.items():
    _route(_rule, _write)
