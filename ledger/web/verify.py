"""The log's check a page at a time, as a request runs it: GET /audit/verify, and the
console's verify page, which runs it page after page to show its progress. The check
itself is ledger.store.log.check's (and ledger.books.deep's, deep)."""

from __future__ import annotations

from typing import Any

from flask_smorest import abort

from ledger.audit import limits
from ledger.books import deep as read_models
from ledger.books import significant
from ledger.store.log import chains, merkle, tree
from ledger.store.log.check import check_log, snapshot
from ledger.web import club
from ledger.web import readschemas as rs

MAX_PROBLEMS = 100
"""How many problems /audit/verify lists: one per broken stream, and a log has any
number of streams, so the rest are counted (`more_problems`), not listed."""


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
    differences = breaches = tokens = None
    if deep:
        differences = [d.view() for d in read_models.differences(store)]
        found = limits.check(store.engine, club().house.zone)
        breaches = [str(b) for b in found[:MAX_PROBLEMS]]
        with store.engine.connect() as conn, conn.begin():
            snapshot(conn)
            tokens = list(significant.token_differences(conn))
    answer = {
        "ok": report.ok and not differences and not breaches and not tokens,
        "read_models": differences,
        "tokens": tokens,
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
    if breaches is not None:
        answer["limits"] = breaches
    return answer


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
