"""Who may call the API: listing and revoking bearer tokens, and the first setter token.

ledger.tokens makes tokens and recognises them; this is the administration around it,
for `hazard token list|revoke` and `hazard serve`. A revoked token keeps its row (the
audit trail can still name it) and tokens.holder no longer recognises it: the next
request with it is a 401, as the lookup happens on every request.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ledger.schema import tokens
from ledger.store import utc_now
from ledger.tokens import Role, create

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
    # writes=True: on SQLite, take the write lock up front (see ledger.db).
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


def first_setter(engine: sa.Engine) -> str | None:
    """A setter token if there are no tokens at all (a fresh database), else None.

    Checked on every start but only ever true once: afterwards the table has a row.
    """
    with engine.connect() as conn:
        if conn.execute(sa.select(tokens.c.id).limit(1)).first() is not None:
            return None
    return create(engine, Role.SETTER, FIRST_SETTER)
