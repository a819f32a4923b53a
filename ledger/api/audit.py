"""The audit trail: the event log as stored, the hash chains checked, and the head.

Each stream (a table, an account) is its own hash chain: an event's hash covers its
columns and the hash of the stream's event before it. /events gives every column the
hash covers, so an auditor can re-check the chains offline; /audit/verify re-checks
them here, as `hazard verify` does; /audit/head is the newest event, whose hash the
setter can publish.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from ledger.api import club, require
from ledger.api import readschemas as rs
from ledger.api.bodies import Blueprint
from ledger.api.reads import page, parsed
from ledger.api.schemas import ProblemSchema
from ledger.schema import events
from ledger.tokens import Role

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
    stream = query.get("stream")
    with club().store.engine.connect() as conn:
        return page(
            lambda after, limit: [_logged_view(row) for row in logged(conn, stream, after, limit)],
            query["after"],
            query["limit"],
            "position",
        )


def logged(conn: sa.Connection, stream: str | None, after: int, limit: int) -> list[Any]:
    """Events after position `after`, of `stream` or of every stream."""
    e = events
    query = sa.select(e).where(e.c.position > after).limit(limit)
    if stream is None:
        return list(conn.execute(query.order_by(e.c.position)))
    # A stream's versions rise with its positions (appends are serialised), so its
    # events in position order are its events in version order, which its only index
    # (stream, version) gives. When `after` is one of the stream's own events, as a
    # `next_after` is, the version there starts the range of that index; the position
    # test keeps any other `after` right.
    since = conn.execute(
        sa.select(e.c.version).where(e.c.position == after, e.c.stream == stream)
    ).scalar()
    return list(
        conn.execute(
            query.where(e.c.stream == stream, e.c.version > (since or 0)).order_by(e.c.version)
        )
    )


def _logged_view(row: Any) -> dict[str, Any]:
    view = {
        "position": row.position,
        "stream": row.stream,
        "version": row.version,
        "type": row.type,
        "schema_version": row.schema_version,
        "payload": parsed(row.payload),
        "actor": row.actor,
        "idempotency_key": row.idempotency_key,
        "recorded_at": row.recorded_at,
        "prev_hash": row.prev_hash,
        "hash": row.hash,
    }
    if view["payload"] is None:
        view["payload_text"] = row.payload  # the bytes hashed, for the auditor to see
    return view


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
    before = head(store.engine)
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
    return head(club().store.engine)


def head(engine: sa.Engine) -> dict[str, Any]:
    """The newest event, the count, and a digest of every stream's head, from one
    statement so that they agree.

    Each stream is its own hash chain, so the newest event's hash vouches for its own
    stream only. The digest vouches for the whole log: SHA-256 over one line per
    stream, `stream TAB version TAB hash LF`, sorted by stream; each head hash covers
    its stream's history, so any change to any stored event changes the digest. An
    auditor recomputes it from the events GET /events exports. Positions are gap-free,
    so the count is the head's position; it is counted all the same, because an
    auditor is the one who wants to see that hold.
    """
    e = events
    last = (
        sa.select(e.c.stream, sa.func.max(e.c.version).label("version"))
        .group_by(e.c.stream)
        .subquery()
    )
    count = sa.select(sa.func.count()).select_from(e).scalar_subquery()
    query = sa.select(
        e.c.stream, e.c.version, e.c.hash, e.c.position, e.c.recorded_at, count.label("events")
    ).join(last, sa.and_(e.c.stream == last.c.stream, e.c.version == last.c.version))
    with engine.connect() as conn:
        heads = sorted(conn.execute(query), key=lambda row: row.stream)
    if not heads:
        return {
            "position": 0,
            "stream": None,
            "version": None,
            "hash": None,
            "recorded_at": None,
            "events": _count(engine),
            "streams": 0,
            "digest": log_digest([]),
        }
    newest = max(heads, key=lambda row: row.position)
    return {
        "position": newest.position,
        "stream": newest.stream,
        "version": newest.version,
        "hash": newest.hash,
        "recorded_at": newest.recorded_at,
        "events": newest.events,
        "streams": len(heads),
        "digest": log_digest((row.stream, row.version, row.hash) for row in heads),
    }


def log_digest(heads: Iterable[tuple[str, int, str]]) -> str:
    """SHA-256 over `stream TAB version TAB hash LF` for each stream's head, by stream."""
    text = "".join(f"{stream}\t{version}\t{hash_}\n" for stream, version, hash_ in sorted(heads))
    return hashlib.sha256(text.encode()).hexdigest()


def _count(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())
