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

from typing import Any

from flask import Response

from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.commands import Role
from ledger.web import heavy
from ledger.web.exports import FORMATS, ExportQuerySchema, export_response

blp = Blueprint("exports", __name__, description="Session histories, as files to take away")

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
