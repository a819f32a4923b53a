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
(engine TableState.exposure), by the player on the other side, read from the escrows
that hold money rather than by folding every table's state.

An evening is a span of positions, so its takings are a range scan of the setter's
postings (the (account, position) index), however long the log before it; the latest
evenings are found walking back from the setter's last posting at a table, an evening
at a time, by bisection (ledger.books.asof). The cost is the evenings shown, not the log;
and an evening that has closed is worked out once in a process and kept (below), so the
office, asked for all evening, reads the evening still open.
"""

from __future__ import annotations

import weakref
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from engine.money import ESCROW
from engine.state import SETTER
from ledger.books import evenings
from ledger.books.evenings import Evening
from ledger.books.queries import PLAYER, starts_with
from ledger.store.schema import accounts, events, postings
from ledger.store.vocabulary import TABLE_PREFIX

AT_ONCE = 500
"""Accounts asked for in one query (an IN list)."""

Nets = dict[tuple[str, str | None], int]
"""The setter's net (or exposure) by (table, player): None for no player yet."""


def latest(conn: sa.Connection, zone: str, count: int, through: int | None = None) -> list[Evening]:
    """The latest `count` evenings in which the setter's money moved at a table, up to
    position `through` (None: the newest), oldest first: the club's calendar days in its
    time `zone`."""
    found: list[Evening] = []
    before = through
    while len(found) < count:
        last = _last_at_table(conn, before)
        if last is None:
            break
        day = _day(zone, last)
        evening = _closed(conn, ("day", zone, day), None)
        if evening is None:
            evening = evenings.of_day(conn, zone, day)
            _keep(conn, ("day", zone, day), evening.through, evening)
        found.append(evening)
        before = evening.after
    return found[::-1]


# -- Closed evenings, kept ----------------------------------------------------------------
#
# An evening whose last moment has passed is closed for good: recorded times never go
# back (migration 0013), so once the log holds an event after it, no event joins its
# span, and the events and postings in a span of positions are never rewritten. So its
# bounds and its takings are worked out once in a process and kept, as Club keeps each
# table's state: the office, asked for all evening, reads the evening still open and
# probes each kept one's last event. Each is kept with the hash of the event at its
# span's end, checked on every use (a database emptied and restored under the same
# engine is a different log). Takings with a stake still waiting for its taker are not
# kept: the taker, when one comes, is the player they were made against.

KEPT = 1000
"""The most results kept for one database: a fortnight's evenings many times over."""

_kept: weakref.WeakKeyDictionary[sa.Engine, dict[Any, tuple[str | None, Any]]] = (
    weakref.WeakKeyDictionary()
)


def _hash_at(conn: sa.Connection, position: int) -> str | None:
    found = conn.execute(sa.select(events.c.hash).where(events.c.position == position))
    return found.scalar()


def _closed(conn: sa.Connection, key: Any, default: Any) -> Any:
    """What was kept under `key`, if the event its span ends at is the one it was."""
    held = _kept.get(conn.engine, {}).get(key)
    if held is None or _hash_at(conn, _end(held[1])) != held[0]:
        return default
    return held[1]


def _keep(conn: sa.Connection, key: Any, through: int, value: Any) -> None:
    """Keep `value` under `key` if the span ending at `through` is closed: the log has
    an event after it."""
    newest = conn.execute(sa.select(sa.func.max(events.c.position))).scalar()
    if (newest or 0) <= through:
        return
    kept = _kept.setdefault(conn.engine, {})
    if len(kept) >= KEPT:
        kept.clear()
    kept[key] = (_hash_at(conn, through), value)


def _end(value: Any) -> int:
    return int(value.through if isinstance(value, Evening) else value[0])


def _day(zone: str, recorded_at: str) -> date:
    """The calendar day in `zone` of a time as the ledger records it."""
    at = datetime.strptime(recorded_at, evenings.STORED).replace(tzinfo=UTC)
    return at.astimezone(ZoneInfo(zone)).date()


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
    against (the tables and players with none are left out). A closed evening's, once
    worked out, is kept (above)."""
    key = ("nets", evening.after, evening.through)
    kept = _closed(conn, key, None)
    if kept is not None:
        return dict(kept[1])
    found = _nets(conn, evening)
    if all(player is not None for _, player in found):
        _keep(conn, key, evening.through, (evening.through, dict(found)))
    return found


def _nets(conn: sa.Connection, evening: Evening) -> Nets:
    p, e = postings.c, events.c
    rows = conn.execute(
        sa.select(e.stream, _against(conn), sa.func.sum(p.amount))
        .select_from(postings.join(events, e.position == p.position))
        .where(
            p.account == SETTER,
            p.position > evening.after,
            p.position <= evening.through,
            e.stream.startswith(TABLE_PREFIX),
        )
        .group_by(e.stream, p.counterparty)
    ).all()
    found: Nets = {}
    for stream, player, net in rows:
        key = (stream.removeprefix(TABLE_PREFIX), _player(player))
        found[key] = found.get(key, 0) + int(net)
    return {key: net for key, net in found.items() if net}


def _against(conn: sa.Connection) -> sa.ColumnElement[str | None]:
    """Whom a posting of the setter's was made against: the player an adjustment paid,
    or, for a bet's escrow, the bet's other party, the first to put money into it other
    than the setter (None: an offer no one took). One probe of the escrow's (account,
    position) key for each escrow the query's groups name: an escrow's postings are a
    bet's few, and the probe stops at the first. (Asking for each escrow's postings in
    Python, a clause an escrow, cost seconds for a busy fortnight.)"""
    p = postings.c
    taker = postings.alias("taker")
    first_other = (
        sa.select(taker.c.counterparty)
        .where(taker.c.account == p.counterparty, taker.c.counterparty != SETTER)
        .order_by(taker.c.position, taker.c.id)
        .limit(1)
        .scalar_subquery()
    )
    escrow = sa.and_(*starts_with(conn, p.counterparty, ESCROW))
    return sa.case((escrow, first_other), else_=p.counterparty)


def _player(account: str | None) -> str | None:
    return None if account is None else account.removeprefix(PLAYER)


def exposure(conn: sa.Connection) -> tuple[Nets, dict[str, int]]:
    """What the setter has at stake in the open bets, by table and by the player on the
    other side (None: an offer no one has taken yet), as engine TableState.exposure
    counts it; and how many bets each table has open. A bet is open while its escrow
    holds money (the books' balance of it): so the open bets are read from the escrows'
    balances, not from every table's state."""
    a, p = accounts.c, postings.c
    escrows = starts_with(conn, a.account, ESCROW)
    held = conn.execute(sa.select(a.account).where(*escrows, a.balance != 0)).scalars().all()
    found: Nets = {}
    open_bets: dict[str, int] = {}
    for start in range(0, len(held), AT_ONCE):
        query = (
            sa.select(p.account, p.counterparty, sa.func.sum(p.amount))
            .where(p.account.in_(held[start : start + AT_ONCE]))
            .group_by(p.account, p.counterparty)
        )
        into: dict[str, dict[str, int]] = {}
        for escrow, counterparty, net in conn.execute(query):
            into.setdefault(escrow, {})[counterparty] = int(net)
        for escrow, parts in into.items():
            table = escrow.removeprefix(ESCROW).rsplit(":", 1)[0]
            open_bets[table] = open_bets.get(table, 0) + 1
            if parts.get(SETTER, 0) > 0:
                against = next((c for c in sorted(parts) if c != SETTER), None)
                key = (table, _player(against))
                found[key] = found.get(key, 0) + parts[SETTER]
    return found, open_bets
