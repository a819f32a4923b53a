"""The `tokens` table: API bearer tokens as stored, by the SHA-256 of their secret.

What a token is, who may hold one and how its secret is made is ledger.web.tokens;
this is its SQL. A revoked token keeps its row (the audit trail can still name it).
The database holds the two rules on names: one live token to a role and name, and a
tag no other token has (ledger.store.schema).
"""

from __future__ import annotations

import secrets
from typing import Any

import sqlalchemy as sa

from ledger.store import db
from ledger.store.eventstore import utc_now
from ledger.store.schema import tokens

LOOKUP = "SELECT id, name, role, tag FROM tokens WHERE token_hash = ? AND revoked_at IS NULL"

TAG = 8
"""How many of the id's hex characters a token's tag is: 32 bits, so that a club never
comes near two tokens that would want one tag (the id is drawn again if it would)."""


class NameTaken(Exception):
    """A live token of that role already has that name: its id."""

    def __init__(self, token_id: str) -> None:
        super().__init__(token_id)
        self.token_id = token_id


def insert(conn: sa.Connection, role: str, name: str, token_hash: str) -> str:
    """A new row for a token of `role` named `name`, with a fresh id whose first TAG
    characters no token has had for its tag: its id. NameTaken if a live token of
    `role` has `name` (the database's unique index says so)."""
    token_id = secrets.token_hex(8)
    while _tagged(conn, token_id[:TAG]):
        token_id = secrets.token_hex(8)
    row = {"id": token_id, "tag": token_id[:TAG], "name": name, "role": role,
           "token_hash": token_hash, "created_at": utc_now()}  # fmt: skip
    try:
        with conn.begin_nested():  # a savepoint: the refusal leaves the transaction usable
            conn.execute(tokens.insert().values(**row))
    except sa.exc.IntegrityError:
        holding = _live_named(conn, role, name)
        if holding is None:
            raise
        raise NameTaken(holding) from None
    return token_id


def _tagged(conn: sa.Connection, tag: str) -> bool:
    return conn.execute(sa.select(tokens.c.id).where(tokens.c.tag == tag)).first() is not None


def _live_named(conn: sa.Connection, role: str, name: str) -> str | None:
    """The id of the live token of `role` named `name`, if there is one."""
    return conn.execute(
        sa.select(tokens.c.id).where(
            tokens.c.role == role, tokens.c.name == name, tokens.c.revoked_at.is_(None)
        )
    ).scalar()


def live(engine: sa.Engine, token_hash: str) -> tuple[str, str, str, str] | None:
    """The (id, name, role, tag) of the token not revoked whose hash is `token_hash`."""
    # On the driver's cursor: it asks on every request, and SQLAlchemy's handling of
    # the statement cost three times the lookup itself (bench.api).
    with engine.connect() as conn:
        found = db.fetch(conn, LOOKUP, (token_hash,))
    return None if not found else (found[0][0], found[0][1], found[0][2], found[0][3])


def named(engine: sa.Engine, token_hash: str) -> tuple[str, str, str] | None:
    """The (id, role, name) of the token, live or revoked, whose hash is `token_hash`:
    what a refused sign-in records of a revoked token's secret (never the secret)."""
    t = tokens.c
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(t.id, t.role, t.name).where(t.token_hash == token_hash)
        ).first()
    return None if found is None else (found[0], found[1], found[2])


def every(conn: sa.Connection) -> list[Any]:
    """Every token's (id, name, role, created_at, revoked_at, tag), in `conn`'s
    transaction, oldest first."""
    t = tokens.c
    columns = (t.id, t.name, t.role, t.created_at, t.revoked_at, t.tag)
    return list(conn.execute(sa.select(*columns).order_by(t.created_at, t.id)))


def rows(engine: sa.Engine) -> list[Any]:
    """Every token's (id, name, role, created_at, revoked_at, tag), oldest first."""
    t = tokens.c
    columns = (t.id, t.name, t.role, t.created_at, t.revoked_at, t.tag)
    with engine.connect() as conn:
        return list(conn.execute(sa.select(*columns).order_by(t.created_at, t.id)))


def one(conn: sa.Connection, token_id: str) -> Any:
    """The token `token_id`'s (id, name, role, revoked_at), or None."""
    t = tokens.c
    found = conn.execute(sa.select(t.id, t.name, t.role, t.revoked_at).where(t.id == token_id))
    return found.first()


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
