"""API bearer tokens: created by `hazard token create`, stored only as a SHA-256 hash.

A token is `hz_` and 32 random bytes in URL-safe base64: enough entropy that an
unsalted hash is safe to keep (as GitHub and others do), and a lookup by that hash is
one index probe. A revoked token keeps its row (the audit trail can still name it) and
is no longer recognised: its next request is a 401, also where the server remembers the
tokens it looked up (ledger.store.livetokens: a revocation makes every server forget them).

A name is one holder's within its role: a second live token of a role and name is
refused (NameTaken), and the database holds the rule too. A revoked token's name may be
given again; the new token's events name it by its own tag (`croupier:cecil#<tag>`,
ledger.store.actors), so that the two holders are never one actor. A player's token is
made only for a player who exists.

Given the store (not its bare engine), a token made or revoked is one write with its
event in the log of significant events (TokenCreated, TokenRevoked: its id, role and
name, never its secret; ledger.commands.significant), so that `hazard verify --deep`
finds every row of the tokens table accounted for. Every surface passes the store; the
bare engine is for callers with no signing key (old scripts, tests of the table alone),
whose tokens the deep check names as rows with no event.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

import sqlalchemy as sa

from engine.state import SETTER
from ledger.books.accounts import NAME, PLAYER_RULE, account_stream, player_account, reserved
from ledger.commands import Caller, Role, significant
from ledger.store import db, livetokens
from ledger.store import tokens as stored
from ledger.store.eventstore import EventStore, opened
from ledger.store.significant_events import TokenCreated, TokenRevoked
from ledger.unit_of_work import UnitOfWork

PREFIX = "hz_"


@dataclass(frozen=True, slots=True, kw_only=True)
class Holder(Caller):
    """Who a request comes from: the caller (role, name, and the tag their events name
    their token by) and their token's id, which scopes their idempotency keys and
    counts their heavy reads."""

    id: str


class NameTaken(ValueError):
    """A live token of that role already has that name."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


CLI = "setter:cli"
"""Who makes and revokes tokens at the command line, as its events say."""


def create(where: sa.Engine | EventStore, role: Role, name: str, by: str = CLI) -> str:
    """A new token for `name` in `role`; the only time the secret is seen. ValueError,
    saying which rule, for a name refused; NameTaken when a live token has it. Given
    the store, recorded as made `by` that actor in the log of significant events."""
    if not name or len(name) > 200:
        raise ValueError("a token's name is 1 to 200 characters")
    if "#" in name:
        raise ValueError("a token's name holds no '#': in an event's actor, it ends the name")
    # A player's token names the player it acts for, so it must be a name a player can
    # have: above all not the bank's, or it would read the setter's own account.
    refused = f"a player's token is named for the player: {PLAYER_RULE}"
    if role is Role.PLAYER and (name == SETTER or not re.fullmatch(NAME, name)):
        raise ValueError(refused)
    if isinstance(where, EventStore):
        uow = UnitOfWork(where)
        with uow:
            token, made = _create_in(uow.conn, role, name, refused)
            significant.append_in(uow, by, TokenCreated(0, made, role.value, name))
            uow.commit()
        return token
    # writes=True: on SQLite, take the write lock up front (see ledger.store.db).
    with where.connect().execution_options(writes=True) as conn, conn.begin():
        return _create_in(conn, role, name, refused)[0]


def _create_in(conn: sa.Connection, role: Role, name: str, refused: str) -> tuple[str, str]:
    """The new token's secret and id, its row inserted in `conn`'s transaction."""
    if role is Role.PLAYER and not opened(conn, account_stream(player_account(name))):
        # A player an older ledger let in under such a name still gets tokens.
        raise ValueError(
            refused
            if reserved(name)
            else f"there is no player {name!r}: a player's token is made for a player "
            "the setter has created (POST /players, or the console's office)"
        )
    try:
        return _insert(conn, role, name)
    except stored.NameTaken as taken:
        raise NameTaken(
            f"there is already a live {role.value} token named {name!r} (token "
            f"{taken.token_id}): a name is one holder's within its role; revoke that "
            "token first (hazard token revoke ID), or choose another name"
        ) from None


def _insert(conn: sa.Connection, role: Role, name: str) -> tuple[str, str]:
    token = PREFIX + secrets.token_urlsafe(32)
    return token, stored.insert(conn, role.value, name, _digest(token))


def holder(engine: sa.Engine, token: str) -> Holder | None:
    """The holder of a live token, or None."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    found = livetokens.live(engine, _digest(token))
    if found is None:
        return None
    token_id, name, role, tag = found
    return Holder(Role(role), name, tag, id=token_id)


def named(engine: sa.Engine, token: str) -> tuple[str, str, str] | None:
    """The (id, role, name) of the token, live or revoked, that `token` is the secret
    of, or None: what a refused sign-in records (the secret never is)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    return stored.named(engine, _digest(token))


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
    tag: str
    """What its events name it by, after `#` in their actor."""


class UnknownToken(LookupError):
    pass


def listing(engine: sa.Engine) -> list[TokenRow]:
    return [TokenRow(*row) for row in stored.rows(engine)]


def revoke(where: sa.Engine | EventStore, token_id: str, by: str = CLI) -> bool:
    """Revoke a token; False if it already was. UnknownToken if there is no such id.
    Given the store, recorded as revoked `by` that actor in the log of significant
    events."""
    if isinstance(where, EventStore):
        engine = where.engine
        uow = UnitOfWork(where)
        with uow:
            row = stored.one(uow.conn, token_id)
            if row is None:
                raise UnknownToken(token_id)
            done = stored.revoke(uow.conn, token_id)
            if done:
                significant.append_in(uow, by, TokenRevoked(0, row.id, row.role, row.name))
                uow.commit()
    else:
        engine = where
        # writes=True: on SQLite, take the write lock up front (see ledger.store.db).
        with engine.connect().execution_options(writes=True) as conn, conn.begin():
            done = stored.revoke(conn, token_id)
            if not done and not stored.exists(conn, token_id):
                raise UnknownToken(token_id)
    if done:  # committed: now every server forgets the tokens it remembered
        livetokens.revoked(engine)
    return done


SERVE = "setter:serve"
"""Who made the first setter token, as its event says: `hazard serve`, on a new database."""

FIRST_SETTER_LOCK = 0x48415A544F4B  # "HAZTOK": the advisory lock first_setter takes


def first_setter(where: sa.Engine | EventStore) -> str | None:
    """A setter token if there are no tokens at all (a fresh database), else None.

    Checked on every start but only ever true once: afterwards the table has a row.
    The check and the insert are one transaction that runs alone (db.serialised), so
    servers started at once make one token between them, not one each.
    """
    if isinstance(where, EventStore):  # a write of the store's: serialised already
        uow = UnitOfWork(where)
        with uow:
            if stored.any_token(uow.conn):
                return None
            token, made = _insert(uow.conn, Role.SETTER, FIRST_SETTER)
            created = TokenCreated(0, made, Role.SETTER.value, FIRST_SETTER)
            significant.append_in(uow, SERVE, created)
            uow.commit()
        return token
    with db.serialised(where, FIRST_SETTER_LOCK) as conn:
        if stored.any_token(conn):
            return None
        return _insert(conn, Role.SETTER, FIRST_SETTER)[0]
