"""The audit trail: the event log as stored, the hash chains checked, and the head.

Each stream (a table, an account) is its own hash chain: an event's hash covers its
columns and the hash of the stream's event before it. /events gives every column the
hash covers, so an auditor can re-check the chains offline; /audit/verify re-checks
them here, as `hazard verify` does; /audit/head is the newest event, whose hash the
setter can publish. What they read is ledger.store.log.chains'.
"""

from __future__ import annotations

from typing import Any

from flask_smorest import abort

from ledger.api import club, heavy, require
from ledger.api import readschemas as rs
from ledger.api.bodies import Blueprint
from ledger.api.schemas import ProblemSchema
from ledger.api.tokens import Role
from ledger.books import deep as read_models
from ledger.books import queries
from ledger.store.log import chains, merkle, tree
from ledger.store.log.check import check_log, snapshot

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


def check(after: int, limit: int, deep: bool = False) -> dict[str, Any]:
    """One bounded check of the log, as GET /audit/verify answers it (the console's
    verify page runs it too, page after page, to show its progress)."""
    store = club().store
    # Counted before the check: what the log held when it began.
    before = chains.head(store.engine)
    verifier = store.signer.verifier if store.signer is not None else None
    if after > before["position"]:  # a caller's mistake, not a finding about the log
        abort(
            422,
            message=f"after: {after} is beyond the log, whose last position is "
            f"{before['position']}",
        )
    if deep and before["events"] > rs.DEEP_MAX:
        abort(
            422,
            message=f"a deep check replays the whole log, and {before['events']} events are "
            f"more than a request may replay ({rs.DEEP_MAX}): run `hazard verify --deep`",
        )
    with store.engine.connect() as conn, conn.begin():
        snapshot(conn)
        resume = None
        if after:
            # The tree before `after` from its stored hashes, which the pages before
            # checked against the events.
            try:
                resume = tree.load_frontier(conn, after)
            except merkle.MerkleError:
                return _unchecked(before, after, verifier)
        report = check_log(conn, verifier, resume=resume, limit=limit, limit_findings=MAX_PROBLEMS)
    differences = None
    if deep:
        differences = [d.view() for d in read_models.differences(store)]
    return {
        "ok": report.ok and not differences,
        "read_models": differences,
        "events": before["events"],
        "through": before["position"],
        "problems": [str(f) for f in report.findings],
        "more_problems": report.more,
        "after": after,
        "checked": report.events,
        "next_after": None if report.complete else report.size,
        "checkpoints": report.checkpoints,
        "root": report.root.hex(),
        "key": verifier.text() if verifier is not None else None,
    }


def _unchecked(before: dict[str, Any], after: int, verifier: Any) -> dict[str, Any]:
    """`after` beyond the stored tree: nothing to check on from."""
    return {
        "ok": False,
        "events": before["events"],
        "through": before["position"],
        "problems": [
            f"position {after}: the tree has no stored hashes of the first {after} events "
            f"to check on from (beyond the log?)"
        ],
        "more_problems": 0,
        "after": after,
        "checked": 0,
        "next_after": None,
        "checkpoints": 0,
        "root": merkle.EMPTY_ROOT.hex(),
        "key": verifier.text() if verifier is not None else None,
    }


@blp.route("/audit/head", methods=["GET"])
@heavy.read(blp)
@blp.response(200, rs.ChainHeadSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Neither setter nor auditor")
def chain_head() -> dict[str, Any]:
    """The head of the log: the newest event (stream, position, hash), how many events
    and streams there are, and one digest of every stream's head to print or publish."""
    require(*AUDIT)
    return chains.head(club().store.engine)
