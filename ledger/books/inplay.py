"""Where a player may have something in play: the tables with a bet open, and the
tables where they may hold the dice, found without reading every table.

A bet's escrow holds money from the bet's placing until it is settled or voided, and
nothing after: the accounts holding money (the partial index ix_accounts_held) are the
players, the setter, the cash and exactly the open bets' escrows, each named for its
table. So the tables with a bet open are a walk of that index, as many as the club has
tables in play, however long the log. Where a player holds the dice is among the
tables of their newest rounds as caster (ix_rounds_caster): a round in play names its
caster, and a caster who keeps the dice after a round holds them where they cast last.
The tables' states then say which bets are the player's and who holds the dice.
"""

from __future__ import annotations

import sqlalchemy as sa

from ledger.books.accounts import TABLE_PREFIX
from ledger.store.schema import accounts, rounds

ESCROW = "escrow:"
LATEST_CAST = 50
"""The newest rounds a player cast that are read for the tables where they may hold
the dice: a caster holds the dice at one table or a few. A table where they hold them
but have cast none of their last fifty rounds (casting all of them at other tables
meanwhile) is not found; its own page still gives them the dice."""


def tables(conn: sa.Connection, name: str) -> list[str]:
    """The tables (by name, sorted) where the player `name` may have a bet open (every
    table with one) or hold the dice (those of their newest rounds as caster)."""
    a, r = accounts.c, rounds.c
    held = conn.execute(sa.select(a.account).where(a.balance != 0)).scalars()
    # "escrow:<table>:<bet>" (ledger.books.accounts.book_account)
    found = {e.removeprefix(ESCROW).rsplit(":", 1)[0] for e in held if e.startswith(ESCROW)}
    cast = conn.execute(
        sa.select(r.stream)
        .where(r.caster == name)
        .order_by(r.first_position.desc())
        .limit(LATEST_CAST)
    ).scalars()
    found |= {s.removeprefix(TABLE_PREFIX) for s in cast}
    return sorted(found)
