"""Exports over HTTP: `GET /export`, a scope's history streamed as the response body, a
file to save (Content-Disposition names it).

The same scopes as `hazard export`: a table (`table`), a player's statement (`player`),
a time range of the club (`since`/`until` alone) or the whole log (`all=true`), as JSON
Lines that `hazard verify FILE` checks offline (docs/export-format.md) or as CSV for a
spreadsheet. The scope is resolved, and refused if it cannot be (404, 422), before the
first byte is sent, and that fixes the file's head (the log as it stood then). The body
is then read a page at a time, each page in a short read transaction of its own, so the
first bytes leave before the log has been read to its end, memory stays bounded, and a
client that reads slowly holds nothing in the database between pages (ledger.exports.jsonl
says why the file is still the log at its head, byte for byte).

The setter and auditors may export anything; a player only their own statement
(`player=<their name>`); a croupier nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from flask import Response
from flask_smorest import abort
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from ledger.api import club, heavy, require
from ledger.api.bodies import Blueprint
from ledger.api.numbers import QueryInteger
from ledger.api.readschemas import StoredTime
from ledger.api.schemas import NAME, ProblemSchema
from ledger.api.tokens import Holder, Role
from ledger.exports import jsonl, scope
from ledger.service import NotFound
from ledger.store.eventstore import NoSigningKey

blp = Blueprint("exports", __name__, description="Session histories, as files to take away")

SHEETS = ("rounds", "settlements", "statement", "adjustments")
"""ledger.exports.sheets's, named here: a build may leave the CSV module out."""
FORMATS = {"jsonl": jsonl.MEDIA_TYPE, "csv": "text/csv"}


class ExportQuerySchema(Schema):
    table = fields.String(validate=NAME, metadata={"description": "A table's session"})
    player = fields.String(
        validate=NAME,
        metadata={"description": "A player's statement: their account and every table they "
                  "had money on (a player may export only their own)"},
    )  # fmt: skip
    since = StoredTime(
        metadata={"description": "From this time (ISO 8601, inclusive); alone: the club's "
                  "range"},
    )  # fmt: skip
    until = StoredTime(metadata={"description": "To this time (ISO 8601, exclusive)"})
    everything = fields.Boolean(
        data_key="all", load_default=False, metadata={"description": "The whole log"}
    )
    format = fields.String(
        load_default="jsonl",
        validate=validate.OneOf(list(FORMATS)),
        metadata={"description": "`jsonl`: the verifiable file (`hazard verify FILE`); "
                  "`csv`: a spreadsheet"},
    )  # fmt: skip
    sheet = fields.String(
        validate=validate.OneOf(SHEETS),
        metadata={"description": "CSV only: which sheet (default: `statement` for a player, "
                  "else `settlements`)"},
    )  # fmt: skip
    decimals = QueryInteger(
        validate=validate.Range(0, 18),
        metadata={"description": "CSV only: minor units' decimal places (default 2)"},
    )

    @validates_schema
    def _csv_only(self, data: dict[str, Any], **_: Any) -> None:
        if data.get("format", "jsonl") != "csv":
            for name in ("sheet", "decimals"):
                if name in data:
                    raise ValidationError("Only with `format=csv`.", name)


_FILE = {"type": "string"}
"""Text, not `format: binary`: both formats are UTF-8 text, and a client generated from
the contract reads a text body as text (openapi-python-client cannot put the text of a
text/csv answer in the File it makes for a binary one: it fails on every export)."""
RESPONSE = {
    "description": "The file, streamed: JSON Lines (docs/export-format.md) or CSV (UTF-8 "
    "with a byte order mark, CRLF, a header row)",
    "headers": {
        "Content-Disposition": {
            "description": '`attachment; filename="hazard-table-t1.jsonl"`: the file to save',
            "schema": {"type": "string"},
        }
    },
    "content": {media: {"schema": _FILE} for media in FORMATS.values()},
}


@blp.route("/export", methods=["GET"])
@heavy.documented(blp)  # held in export_response, which the console's downloads call too
@blp.arguments(ExportQuerySchema, location="query", unknown=None)
@blp.doc(responses={"200": RESPONSE})
@blp.alt_response(403, schema=ProblemSchema, description="Not a scope this caller may export")
@blp.alt_response(404, schema=ProblemSchema, description="No such table or player")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
@blp.alt_response(503, schema=ProblemSchema, description="The service has no signing key")
def export(query: dict[str, Any]) -> Response:
    """Export a table's session, a player's statement, a time range of the club or the
    whole log: a file, streamed, that an auditor takes home (`hazard verify FILE`)."""
    return export_response(require(Role.AUDITOR, Role.PLAYER), query)


def export_response(who: Holder, query: dict[str, Any]) -> Response:
    """The export `query` (ExportQuerySchema's, loaded) asks for, as `who` may have it:
    a response that streams the file (the console's download links use it too)."""
    try:
        asked = scope.scope_of(
            query.get("table"), query.get("player"), query.get("since"), query.get("until"),
            query["everything"],
        )  # fmt: skip
    except scope.ScopeError as exc:
        abort(422, messages={"query": {exc.field: [exc.message]}})
    if who.role is Role.PLAYER and (asked.kind != "player" or asked.player != who.name):
        abort(403, message=f"a player may export their own statement only: player={who.name}")
    held = heavy.reads().hold(who)  # until the file has been read (ledger.api.heavy)
    try:
        return heavy.until_sent(_streamed(asked, query), held)
    except BaseException:
        held.release()
        raise


def _streamed(asked: scope.Scope, query: dict[str, Any]) -> Response:
    store = club().store
    try:
        if query["format"] == "csv":
            try:
                sheets = importlib.import_module("ledger.exports.sheets")
            except ImportError:
                abort(422, messages={"query": {"format": ["csv is not in this build"]}})
            prepared: Any = sheets.prepare(
                store.engine, asked, query.get("sheet"), query.get("decimals", 2)
            )
        else:
            if store.signer is None:
                raise NoSigningKey("the service has no signing key: no public key for the file")
            prepared = jsonl.prepare(store.engine, asked, key=store.signer.verifier)
    except scope.NotFound as exc:
        raise NotFound(str(exc)) from None
    except scope.ScopeError as exc:
        abort(422, messages={"query": {exc.field: [exc.message]}})
    except (jsonl.NoKey, ValueError) as exc:  # the key here did not sign this log
        raise NoSigningKey(str(exc)) from None

    def body() -> Iterator[bytes]:
        try:
            yield from prepared.chunks()
        finally:
            prepared.close()

    # Not stream_with_context: the body reads nothing of the request (it opens its own
    # reads), and a generator wrapped in it that is closed unread, outside the
    # request's context (a client gone before the first chunk), fails as it closes.
    response = Response(body(), mimetype=None)
    response.headers["Content-Type"] = prepared.media_type
    response.headers["Content-Disposition"] = f'attachment; filename="{prepared.filename}"'
    response.headers["Cache-Control"] = "no-store"
    response.call_on_close(prepared.close)  # a body never read (HEAD, a client gone)
    return response
