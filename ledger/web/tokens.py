"""API bearer tokens: created by `hazard token create`, stored only as a SHA-256 hash.

A token is `hz_` and 32 random bytes in URL-safe base64: enough entropy that an
unsalted hash is safe to keep (as GitHub and others do), and a lookup by that hash is
one index probe. A revoked token keeps its row (the audit trail can still name it) and
is no longer recognised: as the lookup happens on every request, its next one is a 401.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

import sqlalchemy as sa

from engine.state import SETTER
from ledger.books.accounts import NAME, PLAYER_RULE, account_stream, player_account, reserved
from ledger.commands import Caller, Role
from ledger.store import db
from ledger.store.eventstore import utc_now
from ledger.store.schema import events, tokens

PREFIX = "hz_"


@dataclass(frozen=True, slots=True)
class Holder(Caller):
    """Who a request comes from: the caller (role, name) and their token's id, which
    scopes their idempotency keys and counts their heavy reads."""

    id: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(engine: sa.Engine, role: Role, name: str) -> str:
    """A new token for `name` in `role`; the only time the secret is seen."""
    if not name or len(name) > 200:
        raise ValueError("a token's name is 1 to 200 characters")
    # A player's token names the player it acts for, so it must be a name a player can
    # have: above all not the bank's, or it would read the setter's own account.
    refused = f"a player's token is named for the player: {PLAYER_RULE}"
    if role is Role.PLAYER and (name == SETTER or not re.fullmatch(NAME, name)):
        raise ValueError(refused)
    # writes=True: on SQLite, take the write lock up front (see ledger.store.db).
    with engine.connect().execution_options(writes=True) as conn, conn.begin():
        # A player an older ledger let in under such a name still gets tokens.
        if role is Role.PLAYER and reserved(name) and not _opened(conn, name):
            raise ValueError(refused)
        return _insert(conn, role, name)


def _opened(conn: sa.Connection, player: str) -> bool:
    """Whether `player`'s account was opened (its stream's first event)."""
    stream = account_stream(player_account(player))
    first = sa.select(events.c.position).where(events.c.stream == stream, events.c.version == 1)
    return conn.execute(first).first() is not None


def _insert(conn: sa.Connection, role: Role, name: str) -> str:
    token = PREFIX + secrets.token_urlsafe(32)
    conn.execute(
        tokens.insert().values(
            id=secrets.token_hex(8),
            name=name,
            role=role.value,
            token_hash=_digest(token),
            created_at=utc_now(),
        )
    )
    return token


def holder(engine: sa.Engine, token: str) -> Holder | None:
    """The holder of a live token, or None."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    # On the driver's cursor: it asks on every request, and SQLAlchemy's handling of
    # the statement cost three times the lookup itself (bench.api).
    with engine.connect() as conn:
        found = db.fetch(conn, LOOKUP, (_digest(token),))
    return None if not found else Holder(Role(found[0][2]), found[0][1], found[0][0])


LOOKUP = "SELECT id, name, role FROM tokens WHERE token_hash = ? AND revoked_at IS NULL"


# -- administration: `hazard token list|revoke`, and the first token of `hazard serve` --

FIRST_SETTER = "bank"
"""The name of the setter token `hazard serve` makes on a database with no tokens."""


@dataclass(frozen=True, slots=True)
class TokenRow:
    """A token as listed: never its secret, which is not stored."""

    id: str
    name: str
    role: str
    created_at: str
    revoked_at: str | None


class UnknownToken(LookupError):
    pass


def listing(engine: sa.Engine) -> list[TokenRow]:
    columns = (tokens.c.id, tokens.c.name, tokens.c.role, tokens.c.created_at, tokens.c.revoked_at)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(*columns).order_by(tokens.c.created_at, tokens.c.id))
        return [TokenRow(*row) for row in rows]


def revoke(engine: sa.Engine, token_id: str) -> bool:
    """Revoke a token; False if it already was. UnknownToken if there is no such id."""
    # writes=True: on SQLite, take the write lock up front (see ledger.store.db).
    with engine.connect().execution_options(writes=True) as conn, conn.begin():
        done = conn.execute(
            tokens.update()
            .where(tokens.c.id == token_id, tokens.c.revoked_at.is_(None))
            .values(revoked_at=utc_now())
        ).rowcount
        if done:
            return True
        if conn.execute(sa.select(tokens.c.id).where(tokens.c.id == token_id)).first() is None:
            raise UnknownToken(token_id)
        return False


FIRST_SETTER_LOCK = 0x48415A544F4B  # "HAZTOK": the advisory lock first_setter takes


def first_setter(engine: sa.Engine) -> str | None:
    """A setter token if there are no tokens at all (a fresh database), else None.

    Checked on every start but only ever true once: afterwards the table has a row.
    The check and the insert are one transaction that runs alone (db.serialised), so
    servers started at once make one token between them, not one each.
    """
    with db.serialised(engine, FIRST_SETTER_LOCK) as conn:
        if conn.execute(sa.select(tokens.c.id).limit(1)).first() is not None:
            return None
        return _insert(conn, Role.SETTER, FIRST_SETTER)
