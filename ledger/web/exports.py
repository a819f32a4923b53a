"""An export as a download: the file GET /export streams, and the console's export
links download, read by one schema (`ExportQuerySchema`) and streamed by one function
(`export_response`) as the caller may have it. The files are ledger.exports'."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from flask import Response, current_app
from flask_smorest import abort
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from ledger.commands import Role
from ledger.exports import jsonl, scope
from ledger.house import House
from ledger.service import NotFound
from ledger.store.eventstore import NoSigningKey
from ledger.web import club, heavy
from ledger.web.numbers import QueryInteger
from ledger.web.readschemas import StoredTime
from ledger.web.schemas import NAME
from ledger.web.tokens import Holder

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
        metadata={"description": "CSV only: the decimal columns' places (default: the "
                  "club's minor units, HAZARD_MINOR_UNITS)"},
    )  # fmt: skip

    @validates_schema
    def _csv_only(self, data: dict[str, Any], **_: Any) -> None:
        if data.get("format", "jsonl") != "csv":
            for name in ("sheet", "decimals"):
                if name in data:
                    raise ValidationError("Only with `format=csv`.", name)


def _house() -> House:
    found: House = current_app.extensions["hazard.house"]
    return found


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
    held = heavy.reads().hold(who)  # until the file has been read (ledger.web.heavy)
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
            # The club's minor units and time zone, unless other decimals are asked for.
            prepared: Any = sheets.prepare(
                store.engine, asked, query.get("sheet"), query.get("decimals"), _house()
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
