"""The `tokens` table: API bearer tokens as stored, by the SHA-256 of their secret.

What a token is, who may hold one and how its secret is made is ledger.web.tokens;
this is its SQL. A revoked token keeps its row (the audit trail can still name it).
"""

from __future__ import annotations

import secrets
from typing import Any

import sqlalchemy as sa

from ledger.store import db
from ledger.store.eventstore import utc_now
from ledger.store.schema import tokens

LOOKUP = "SELECT id, name, role FROM tokens WHERE token_hash = ? AND revoked_at IS NULL"


def insert(conn: sa.Connection, role: str, name: str, token_hash: str) -> None:
    """A new row for a token of `role` named `name`, with a fresh id."""
    conn.execute(
        tokens.insert().values(
            id=secrets.token_hex(8),
            name=name,
            role=role,
            token_hash=token_hash,
            created_at=utc_now(),
        )
    )


def live(engine: sa.Engine, token_hash: str) -> tuple[str, str, str] | None:
    """The (id, name, role) of the token not revoked whose hash is `token_hash`."""
    # On the driver's cursor: it asks on every request, and SQLAlchemy's handling of
    # the statement cost three times the lookup itself (bench.api).
    with engine.connect() as conn:
        found = db.fetch(conn, LOOKUP, (token_hash,))
    return None if not found else (found[0][0], found[0][1], found[0][2])


def rows(engine: sa.Engine) -> list[Any]:
    """Every token's (id, name, role, created_at, revoked_at), oldest first."""
    columns = (tokens.c.id, tokens.c.name, tokens.c.role, tokens.c.created_at, tokens.c.revoked_at)
    with engine.connect() as conn:
        return list(conn.execute(sa.select(*columns).order_by(tokens.c.created_at, tokens.c.id)))


def revoke(conn: sa.Connection, token_id: str) -> bool:
    """Stamp the token `token_id` revoked, if it is live; whether it was."""
    return bool(
        conn.execute(
            tokens.update()
            .where(tokens.c.id == token_id, tokens.c.revoked_at.is_(None))
            .values(revoked_at=utc_now())
        ).rowcount
    )


def exists(conn: sa.Connection, token_id: str) -> bool:
    """Whether a token (live or revoked) has the id `token_id`."""
    return conn.execute(sa.select(tokens.c.id).where(tokens.c.id == token_id)).first() is not None


def any_token(conn: sa.Connection) -> bool:
    """Whether the table holds any token at all."""
    return conn.execute(sa.select(tokens.c.id).limit(1)).first() is not None
