"""The event log as an auditor reads it: a page of it as stored, and its head.

Each stream (a table, an account) is its own hash chain: an event's hash covers its
columns and the hash of the stream's event before it. `events` gives every column the
hash covers, so an auditor can re-check the chains offline; `head` is the newest event
and one digest of every stream's head, to print or publish.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from ledger.store.log.heads import SEALS
from ledger.store.schema import events as events_table


def events(conn: sa.Connection, stream: str | None, after: int, limit: int) -> list[dict[str, Any]]:
    """Events after position `after`, of `stream` or of every stream, at most `limit`,
    in position order, each with every column as stored."""
    return [_logged_view(row) for row in _logged(conn, stream, after, limit)]


def _logged(conn: sa.Connection, stream: str | None, after: int, limit: int) -> list[Any]:
    e = events_table
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


def parsed(payload: str) -> dict[str, Any] | None:
    """A stored payload as JSON, or None if it is not a JSON object: a reader shows a
    damaged event rather than fail on it (`hazard verify` names it)."""
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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
    e = events_table
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


def newest(conn: sa.Connection) -> dict[str, Any]:
    """The log's head as a page can show it at any length: the newest event, the count
    (positions are gap-free from 1, so it is the newest position), and the newest seal's
    root of every stream's and account's head and how many heads that is (None before
    the first seal). Two seeks, of the position key and of the seals' stream: `head`'s
    digest reads every stream's head, and grows with the log."""
    e = events_table
    newest_position = sa.select(sa.func.max(e.c.position)).scalar_subquery()
    last = conn.execute(
        sa.select(e.c.stream, e.c.version, e.c.hash, e.c.position, e.c.recorded_at).where(
            e.c.position == newest_position
        )
    ).first()
    seal = conn.execute(
        sa.select(e.c.position, e.c.payload)
        .where(e.c.stream == SEALS)
        .order_by(e.c.version.desc())
        .limit(1)
    ).first()
    sealed = json.loads(seal.payload) if seal is not None else None
    return {
        "position": last.position if last is not None else 0,
        "events": last.position if last is not None else 0,
        "stream": last.stream if last is not None else None,
        "version": last.version if last is not None else None,
        "hash": last.hash if last is not None else None,
        "recorded_at": last.recorded_at if last is not None else None,
        "sealed_at": seal.position if seal is not None else None,
        "heads": sealed["heads"] if sealed is not None else None,
        "root": sealed["root"] if sealed is not None else None,
    }


def log_digest(heads: Iterable[tuple[str, int, str]]) -> str:
    """SHA-256 over `stream TAB version TAB hash LF` for each stream's head, by stream."""
    text = "".join(f"{stream}\t{version}\t{hash_}\n" for stream, version, hash_ in sorted(heads))
    return hashlib.sha256(text.encode()).hexdigest()


def _count(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(events_table)).scalar_one())
