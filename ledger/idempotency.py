"""Idempotent commands: a repeat with the same key and body gets the first answer.

The key and a hash of the request sit under a unique constraint in `commands`,
written in the same transaction as the command's events. A repeat with the same body
returns the stored response and writes nothing; the same key with a different body is
refused. Two racing first attempts cannot both commit: the loser fails on the key or
on the stream's version, its transaction (events included) rolls back, and it returns
the winner's answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa

from ledger import codec
from ledger.schema import commands
from ledger.store import ConcurrencyError, EventStore, StoreError


class IdempotencyConflict(StoreError):
    """The key was used before with a different request."""

    def __init__(self, key: str) -> None:
        super().__init__(f"idempotency key {key!r} was already used for a different request")
        self.key = key


def request_hash(request: Mapping[str, Any]) -> str:
    return hashlib.sha256(codec.canonical(request)).hexdigest()


def run_once(
    store: EventStore,
    key: str | None,
    request: Mapping[str, Any],
    handler: Callable[[sa.Connection], Mapping[str, Any]],
) -> dict[str, Any]:
    """Run `handler` in a write transaction unless `key` already answered `request`."""
    digest = request_hash(request)
    if key is not None:
        earlier = _stored(store, key, digest)
        if earlier is not None:
            return earlier
    try:
        with store.transaction() as conn:
            response = dict(handler(conn))
            if key is not None:
                conn.execute(
                    commands.insert().values(
                        idempotency_key=key,
                        request_hash=digest,
                        response=codec.canonical(response).decode(),
                        recorded_at=store.clock(),
                    )
                )
            return response
    except (sa.exc.IntegrityError, ConcurrencyError):
        # A racing repeat of the same command loses either at the key or at the
        # stream's version; either way the winner's answer is the answer.
        if key is None:
            raise
        earlier = _stored(store, key, digest)
        if earlier is None:
            raise
        return earlier


def _stored(store: EventStore, key: str, digest: str) -> dict[str, Any] | None:
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
