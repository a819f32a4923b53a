"""The audit trail: the event log as stored, the hash chains checked, and the head.

Each stream (a table, an account) is its own hash chain: an event's hash covers its
columns and the hash of the stream's event before it. /events gives every column the
hash covers, so an auditor can re-check the chains offline; /audit/verify re-checks
them here, as `hazard verify` does; /audit/head is the newest event, whose hash the
setter can publish. What they read is ledger.store.log.chains's; the check is
ledger.web.verify's, which the console's verify page runs too.
"""

from __future__ import annotations

from typing import Any

from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.books import queries
from ledger.commands import Role
from ledger.store.log import chains
from ledger.web import club, heavy
from ledger.web import readschemas as rs
from ledger.web.verify import check

blp = Blueprint("audit", __name__, description="The event log and its hash chains")

AUDIT = (Role.AUDITOR,)
"""Who reads the log (besides the setter)."""


@blp.route("/events", methods=["GET"])
@blp.arguments(rs.EventQuerySchema, location="query", unknown=None)
@blp.response(200, rs.EventPageSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Neither setter nor auditor")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def list_events(query: dict[str, Any]) -> dict[str, Any]:
    """The event log, of one stream or of all, in position order."""
    require(*AUDIT)
    with queries.reading(club().store) as read:
        return read.events(query.get("stream"), query["after"], query["limit"])


@blp.route("/audit/verify", methods=["GET"])
@heavy.read(blp)
@blp.arguments(rs.VerifyQuerySchema, location="query", unknown=None)
@blp.response(200, rs.ChainCheckSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Neither setter nor auditor")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def verify(query: dict[str, Any]) -> dict[str, Any]:
    """Check at most `limit` events after `after` as `hazard verify` does: positions,
    hash chains, the Merkle tree's stored hashes and the stored checkpoints in that
    range, signed by this server's key. Bounded, so that it never outlives a request:
    follow `next_after` until it is null to check the whole log. A problem is an
    answer (ok false), not an error."""
    require(*AUDIT)
    return check(query["after"], query["limit"], query["deep"])


@blp.route("/audit/head", methods=["GET"])
@heavy.read(blp)
@blp.response(200, rs.ChainHeadSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Neither setter nor auditor")
def chain_head() -> dict[str, Any]:
    """The head of the log: the newest event (stream, position, hash), how many events
    and streams there are, and one digest of every stream's head to print or publish."""
    require(*AUDIT)
    return chains.head(club().store.engine)
