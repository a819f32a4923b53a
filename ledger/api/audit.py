"""The audit trail: the event log as stored, the hash chains checked, and the head.

Each stream (a table, an account) is its own hash chain: an event's hash covers its
columns and the hash of the stream's event before it. /events gives every column the
hash covers, so an auditor can re-check the chains offline; /audit/verify re-checks
them here, as `hazard verify` does; /audit/head is the newest event, whose hash the
setter can publish. What they read is ledger.store.eventlog's.
"""

from __future__ import annotations

import itertools
from typing import Any

from ledger.api import club, require
from ledger.api import readschemas as rs
from ledger.api.bodies import Blueprint
from ledger.api.schemas import ProblemSchema
from ledger.api.tokens import Role
from ledger.books import queries
from ledger.store import eventlog

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


MAX_PROBLEMS = 100
"""How many problems /audit/verify lists: one per broken stream, and a log has any
number of streams, so the rest are counted (`more_problems`), not listed."""


@blp.route("/audit/verify", methods=["GET"])
@blp.response(200, rs.ChainCheckSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Neither setter nor auditor")
def verify() -> dict[str, Any]:
    """Recompute every stream's hash chain. A broken chain is an answer (ok false, and
    the first event that fails in each broken stream), not an error."""
    require(*AUDIT)
    store = club().store
    # Counted before the check, which reads on until the log ends: every event counted
    # is checked, and any appended meanwhile is checked too.
    before = eventlog.head(store.engine)
    found = store.verify()
    problems = list(itertools.islice(found, MAX_PROBLEMS))
    more = sum(1 for _ in found)
    return {
        "ok": not problems,
        "events": before["events"],
        "through": before["position"],
        "problems": problems,
        "more_problems": more,
    }


@blp.route("/audit/head", methods=["GET"])
@blp.response(200, rs.ChainHeadSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Neither setter nor auditor")
def chain_head() -> dict[str, Any]:
    """The head of the log: the newest event (stream, position, hash), how many events
    and streams there are, and one digest of every stream's head to print or publish."""
    require(*AUDIT)
    return eventlog.head(club().store.engine)
