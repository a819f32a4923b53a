"""Idempotent commands: a repeat with the same key and body gets the first answer.

The key and a hash of the request sit under a unique constraint in `commands`,
written in the same transaction as the command's events (ledger.unit_of_work), which
is what makes a repeat answerable from the store and two racing first attempts unable
to both commit. The same key with a different body is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from ledger.store import codec
from ledger.store.eventstore import EventStore, Refused
from ledger.store.schema import commands


class IdempotencyConflict(Refused):
    """The key was used before with a different request."""

    def __init__(self, key: str) -> None:
        super().__init__(f"idempotency key {key!r} was already used for a different request")
        self.key = key


def request_hash(request: Mapping[str, Any]) -> str:
    return hashlib.sha256(codec.canonical(request)).hexdigest()


def remember(
    conn: sa.Connection, key: str, digest: str, response: Mapping[str, Any], recorded_at: str
) -> None:
    """Store `key` with the request's digest and its response, in the write's transaction."""
    conn.execute(
        commands.insert().values(
            idempotency_key=key,
            request_hash=digest,
            response=codec.canonical(response).decode(),
            recorded_at=recorded_at,
        )
    )


def stored(store: EventStore, key: str, digest: str) -> dict[str, Any] | None:
    """The response stored under `key`, if any; IdempotencyConflict if it answered
    another request."""
    with store.engine.connect() as conn:
        row = conn.execute(
            sa.select(commands.c.request_hash, commands.c.response).where(
                commands.c.idempotency_key == key
            )
        ).first()
    if row is None:
        return None
    if row.request_hash != digest:
        raise IdempotencyConflict(key)
    result: dict[str, Any] = json.loads(row.response)
    return result
