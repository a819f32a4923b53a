"""The ledger as of any moment: a position of the log, or a time.

A position is the log's own order. A time is taken as the last position recorded at or
before it: the times never go back as the positions rise (an append takes the later of
its clock and the last event's time, and the database refuses an event recorded before
the one before it: ledger.store.eventstore), so a time's position is exact, whichever
app server's clock wrote the events. Both are found by bisection over a primary or
unique key, a few dozen index probes however long the log.

A player's balance as of position P is the running balance stored on their last
posting at or before P (`postings.balance`, the account's balance just after each
posting, written with it): one probe of the (account, position, id) index, however long
the account's history and wherever P falls in it. The two ways it replaced, the sum of
the postings up to P and the balance now less the postings after P, are kept as
bench.asof's baselines (and as the definition the stored column is checked against):
either reads every posting on its side of P. bench.asof has the figures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from ledger.store.schema import accounts, events, postings
from ledger.store.vocabulary import CreditLimitSet


def balance_by_sum_before(conn: sa.Connection, account: str, position: int) -> int:
    """The sum of the account's postings at or before `position`."""
    return int(
        conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(postings.c.amount), 0)).where(
                postings.c.account == account, postings.c.position <= position
            )
        ).scalar_one()
    )


def balance_by_minus_after(conn: sa.Connection, account: str, position: int) -> int:
    """The account's balance now, less its postings after `position`."""
    now = conn.execute(sa.select(accounts.c.balance).where(accounts.c.account == account)).scalar()
    after = conn.execute(
        sa.select(sa.func.coalesce(sa.func.sum(postings.c.amount), 0)).where(
            postings.c.account == account, postings.c.position > position
        )
    ).scalar_one()
    return int(now or 0) - int(after)


def balance_at(conn: sa.Connection, account: str, position: int) -> int:
    """The account's balance just after the event at `position` (0 before its first
    posting): the running balance of its last posting at or before `position`, one
    probe of the (account, position, id) index."""
    p = postings.c
    balance = conn.execute(
        sa.select(p.balance)
        .where(p.account == account, p.position <= position)
        .order_by(p.position.desc(), p.id.desc())
        .limit(1)
    ).scalar()
    return int(balance or 0)


def postings_between(conn: sa.Connection, account: str, lo: int, hi: int) -> Sequence[Any]:
    """The account's postings (position, amount) at positions `lo` to `hi`: what moved
    its balance between two of them."""
    p = postings.c
    return conn.execute(
        sa.select(p.position, p.amount).where(p.account == account, p.position.between(lo, hi))
    ).all()


def last_position(conn: sa.Connection) -> int:
    """The log's last position (0 when empty)."""
    head = conn.execute(
        sa.select(events.c.position).order_by(events.c.position.desc()).limit(1)
    ).scalar()
    return int(head or 0)


def position_at(conn: sa.Connection, moment: str) -> int:
    """The last position recorded at or before `moment` (an ISO time as stored); 0 if
    none was. Bisection over the positions, which have no gap."""
    e = events.c

    def recorded(position: int) -> str:
        return str(conn.execute(sa.select(e.recorded_at).where(e.position == position)).scalar())

    return _last_true(last_position(conn), lambda p: recorded(p) <= moment)


def stream_version_at(conn: sa.Connection, stream: str, position: int) -> int:
    """The stream's version as of `position`: its last event at or before it (0 if it
    had none). Bisection over its versions, whose positions rise with them."""
    e = events.c
    head = conn.execute(
        sa.select(e.version).where(e.stream == stream).order_by(e.version.desc()).limit(1)
    ).scalar()

    def at_or_before(version: int) -> bool:
        found = conn.execute(
            sa.select(e.position).where(e.stream == stream, e.version == version)
        ).scalar()
        return found is not None and found <= position

    return _last_true(int(head or 0), at_or_before)


def _last_true(top: int, test: Callable[[int], bool]) -> int:
    """The largest n in 1..top for which `test` holds, `test` holding for a prefix of
    them; 0 if it holds for none."""
    lo, hi = 0, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if test(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def credit_limit_at(conn: sa.Connection, account: str, stream: str, position: int) -> int:
    """The credit limit the account's stream `stream` had set as of `position` (0 if
    none): its last CreditLimitSet at or before it, read back along the stream's key."""
    e = events.c
    payload = conn.execute(
        sa.select(e.payload)
        .where(e.stream == stream, e.type == CreditLimitSet.__name__, e.position <= position)
        .order_by(e.version.desc())
        .limit(1)
    ).scalar()
    if payload is None:
        return 0
    limit: int = json.loads(payload)["limit"]
    return limit
