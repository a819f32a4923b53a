"""The setter's takings and exposure, per table, per evening and per player: what the back
office shows (ledger.console.office).

Takings are the setter's net from its postings at the tables: a stake it puts into a
bet's escrow counts when it goes in, what comes back when the bet is settled, and a
dispute's adjustment when it is posted. Each posting is the evening's its event was
recorded in (ledger.books.evenings: until the setter opens and closes evenings, the
club's calendar day in its time zone), and the player's it was made against: the other
party of the bet whose escrow it went to or came from, or the player an adjustment paid.
A stake of the setter's still waiting for a taker has no player yet (None).

Exposure is what the setter stands to lose now: its stake in each open bet
(engine TableState.exposure), by the player on the other side.

An evening is a span of positions, so its takings are a range scan of the setter's
postings (the (account, position) index), however long the log before it; the latest
evenings are found walking back from the setter's last posting at a table, an evening
at a time, by bisection (ledger.books.asof). The cost is the evenings shown, not the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

import sqlalchemy as sa

import engine as hz
from engine.money import ESCROW
from engine.state import SETTER
from ledger.books import evenings
from ledger.books.evenings import Evening
from ledger.books.queries import PLAYER
from ledger.house import House
from ledger.store.schema import events, postings
from ledger.store.vocabulary import TABLE_PREFIX

Nets = dict[tuple[str, str | None], int]
"""The setter's net (or exposure) by (table, player): None for no player yet."""


def latest(conn: sa.Connection, house: House, count: int) -> list[Evening]:
    """The latest `count` evenings in which the setter's money moved at a table, oldest
    first."""
    found: list[Evening] = []
    before = None
    while len(found) < count:
        last = _last_at_table(conn, before)
        if last is None:
            break
        evening = evenings.of_day(conn, house, date.fromisoformat(house.day(last)))
        found.append(evening)
        before = evening.after
    return found[::-1]


def _last_at_table(conn: sa.Connection, through: int | None) -> str | None:
    """When the setter's last posting at a table, at or before position `through` (any,
    if None), was recorded."""
    p, e = postings.c, events.c
    query = (
        sa.select(e.recorded_at)
        .select_from(postings.join(events, e.position == p.position))
        .where(p.account == SETTER, e.stream.startswith(TABLE_PREFIX))
        .order_by(p.position.desc())
        .limit(1)
    )
    if through is not None:
        query = query.where(p.position <= through)
    found = conn.execute(query).scalar()
    return None if found is None else str(found)


def nets(conn: sa.Connection, evening: Evening) -> Nets:
    """The setter's net in `evening`, by table and by the player each posting was made
    against (the tables and players with none are left out)."""
    p, e = postings.c, events.c
    other = postings.alias("other")
    # A bet's escrow holds the stakes of its two parties: the one that is not the
    # setter's is the player's.
    party = (
        sa.select(sa.func.min(other.c.counterparty))
        .where(other.c.account == p.counterparty, other.c.counterparty != SETTER)
        .scalar_subquery()
    )
    moved = (
        sa.select(
            e.stream.label("stream"),
            sa.case((p.counterparty.startswith(ESCROW), party), else_=p.counterparty).label(
                "against"
            ),
            p.amount.label("amount"),
        )
        .select_from(postings.join(events, e.position == p.position))
        .where(
            p.account == SETTER,
            p.position > evening.after,
            p.position <= evening.through,
            e.stream.startswith(TABLE_PREFIX),
        )
        .subquery()
    )
    rows = conn.execute(
        sa.select(moved.c.stream, moved.c.against, sa.func.sum(moved.c.amount)).group_by(
            moved.c.stream, moved.c.against
        )
    ).all()
    found: Nets = {}
    for stream, against, net in rows:
        if net:
            key = (stream.removeprefix(TABLE_PREFIX), _player(against))
            found[key] = found.get(key, 0) + int(net)
    return found


def _player(account: str | None) -> str | None:
    return None if account is None else account.removeprefix(PLAYER)


def exposure(states: Mapping[str, hz.TableState]) -> Nets:
    """What the setter has at stake in each table's open bets, by the player on the
    other side (None: an offer no one has taken yet)."""
    found: Nets = {}
    for table, state in states.items():
        for bet in state.open_bets:
            held = bet.held_by(SETTER)
            if held:
                against = next((p for p in bet.parties if p != SETTER), None)
                found[(table, against)] = found.get((table, against), 0) + held
    return found


def total(nets: Nets, *, table: str | None = None, player: str | None = None) -> int:
    """The sum of `nets`, of one table or one player's if named."""
    return sum(
        n
        for (t, p), n in nets.items()
        if (table is None or t == table) and (player is None or p == player)
    )
