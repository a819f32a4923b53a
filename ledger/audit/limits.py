"""The deep check of players' limits: every deposit and bet in the database's log
replayed against the limits and breaks in force when it was made
(ledger.books.limitreplay), to find one accepted past them, whoever wrote it.

Only the events that move money or set a limit are read (and the seals that end each
write); one pass, in position order, in one read transaction.
"""

from __future__ import annotations

from functools import partial

import sqlalchemy as sa

from ledger.books import evenings
from ledger.books.limitreplay import Breach, breaches, log_rows


def check(engine: sa.Engine, zone: str) -> list[Breach]:
    """Every deposit or bet the limits in force did not allow, and every limit event no
    command writes (`zone`: the club's, whose calendar day stands in for an evening)."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            return list(breaches(log_rows(conn), partial(evenings.start_of, zone)))
