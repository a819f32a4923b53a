"""What the cash-up expects at each place, from the books.

- at a table, its float plus the setter's net there during the evening, as the office's
  takings count it (ledger.books.takings): a stake the setter put into a bet counts as
  gone from the drawer when it goes in, and what the bet pays back when it is settled;
  so a stake still in an open bet at the close is not expected in the drawer;
- at the cage, its float plus the deposits taken less the withdrawals paid out during
  the evening (the `cash` account's postings).
The difference is counted less expected, kept as found (ledger.commands.evenings).
"""

from __future__ import annotations

import sqlalchemy as sa

from ledger.books import evenings, takings
from ledger.books.evenings import Evening, RecordedEvening
from ledger.store.eventstore import EventStore
from ledger.store.schema import postings
from ledger.store.vocabulary import CASH


def expected(
    conn: sa.Connection, evening: Evening, floats: dict[str | None, int]
) -> dict[str | None, int]:
    """What the books say each place should hold at the close (the module's docstring
    says how): every place floated, and every table the setter's money moved at during
    the evening, floated or not (a float of 0), so no table's takings go uncounted."""
    takings_at: dict[str | None, int] = {}
    for (table, _), net in takings.nets(conn, evening).items():
        takings_at[table] = takings_at.get(table, 0) + net
    places = set(floats) | set(takings_at) | {None}
    found = {place: floats.get(place, 0) + takings_at.get(place, 0) for place in places}
    found[None] = floats.get(None, 0) - cash_moved(conn, evening)
    return found


def cash_moved(conn: sa.Connection, evening: Evening) -> int:
    """The `cash` account's net in `evening`: the world outside's, so withdrawals less
    deposits (a deposit moves money from cash to a player)."""
    p = postings.c
    net = conn.execute(
        sa.select(sa.func.sum(p.amount)).where(
            p.account == CASH, p.position > evening.after, p.position <= evening.through
        )
    ).scalar()
    return int(net or 0)


def to_count(store: EventStore) -> tuple[RecordedEvening, list[str | None]] | None:
    """The evening open now and the places its cash-up must count (tables by id, then
    the cage, None), for a form to ask for; None while no evening is open."""
    with store.engine.connect() as conn:
        evening = evenings.open_now(conn)
        if evening is None:
            return None
        places = expected(conn, evening.span(conn), evening.floats)
    return evening, sorted(places, key=lambda p: (p is None, p or ""))
