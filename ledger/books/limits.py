"""A player's limits and breaks as the ledger stands, and the checks that enforce them
inside the write that would pass them.

Both checks run in the write's own transaction (ledger.service.Club), where appends
are serialised, at the time the write's events will be recorded at (the store's time,
ledger.unit_of_work.UnitOfWork.now): two deposits sent at once are checked one after
the other, each seeing the other if it committed first, and a limit is judged at the
very moment the log says the deposit or bet was made.

What counts:
  - deposits: money paid in (postings from `cash`) recorded in the last 24 hours or 7
    days, this deposit included; withdrawals do not give any back;
  - losses: the player's net at the tables (every posting that is not a deposit or a
    withdrawal) this evening (ledger.books.evenings.current) or over the last 7 days.
    A stake leaves the player's account when it is laid, so a bet still open counts as
    lost until it is settled: a loss limit holds whatever the dice do next;
  - the largest stake: every amount the player puts into a bet's escrow (a stake, a
    lay, odds, a side bet, covering the caster).
A time-out or self-exclusion refuses every one of those and every deposit.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple

import sqlalchemy as sa

from ledger.books import evenings
from ledger.books.accounts import CASH, account_stream, transfers_of
from ledger.books.limitrules import Standing, parse, shifted, standing
from ledger.store.eventstore import Refused, decode_row
from ledger.store.limits_events import BreakTaken, LimitSet
from ledger.store.schema import events, postings

DAY = timedelta(hours=24)
WEEK = timedelta(days=7)
EVENT_TYPES = (LimitSet.__name__, BreakTaken.__name__)
PLAYER = "player:"
ESCROW = "escrow:"

WORDS = {
    "deposit_24h": "deposits over 24 hours",
    "deposit_7d": "deposits over 7 days",
    "loss_evening": "losses this evening",
    "loss_week": "losses over 7 days",
    "stake": "largest stake",
}
"""Each kind of limit as a refusal or a page names it."""


class LimitReached(Refused):
    """A deposit or a bet would pass a limit the player set; `kind` says which, `limit`
    what it is, `counted` what counts against it with this write (a deposit: what was
    paid in before it; a loss: what would be lost with it), `asked` the write's amount."""

    def __init__(self, account: str, kind: str, limit: int, counted: int, asked: int) -> None:
        self.account, self.kind = account, kind
        self.limit, self.counted, self.asked = limit, counted, asked
        super().__init__(self.words(str))

    def words(self, money: Callable[[int], str]) -> str:
        """The refusal, its amounts written by `money` (the console's: the club's)."""
        said = f"{self.account}'s limit on {WORDS[self.kind]}: {money(self.limit)}, "
        if self.kind == "stake":
            return said + f"and this stake is {money(self.asked)}"
        if self.kind.startswith("deposit"):
            room = max(0, self.limit - self.counted)
            return said + (
                f"of which {money(self.counted)} is paid in already, so {money(self.asked)} "
                f"more would pass it (at most {money(room)} more now)"
            )
        return said + (
            f"and with this stake {money(self.counted)} would be lost (open stakes count as "
            "lost until settled)"
        )


class OnBreak(Refused):
    """The player is on a time-out or a self-exclusion: no stake and no deposit."""

    def __init__(self, account: str, kind: str, until: str) -> None:
        self.account, self.kind, self.until = account, kind, until
        super().__init__(self.words(str))

    def words(self, when: Callable[[str], str]) -> str:
        """The refusal, its end written by `when` (the console's: the club's time)."""
        return (
            f"{self.account} is on a {self.kind} until {when(self.until)}: no stakes, lays, "
            "odds, side bets or deposits until then (withdrawals and statements still work)"
        )


_HISTORY = (
    "SELECT position, type, schema_version, version, payload, recorded_at FROM events"
    " WHERE stream = {0} AND type IN ('LimitSet', 'BreakTaken') ORDER BY position"
)
"""A player's limit and break events: one probe of the (stream, version) key, asked of
every deposit and of every player who stakes, so sent straight to the driver (through
SQLAlchemy it cost a write a fifth again of its CPU, bench.limits)."""


class _Row(NamedTuple):
    position: int
    type: str
    schema_version: int
    version: int
    payload: str
    recorded_at: str


def history(conn: sa.Connection, account: str) -> list[tuple[str, LimitSet | BreakTaken]]:
    """The player's limit and break events, each with its recording time, in order."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(_HISTORY.format(_mark(conn)), (account_stream(account),))
        rows = [_Row(*row) for row in cursor.fetchall()]
    finally:
        cursor.close()
    found: list[tuple[str, LimitSet | BreakTaken]] = []
    for row in rows:
        event = decode_row(row)
        assert isinstance(event, LimitSet | BreakTaken)
        found.append((row.recorded_at, event))
    return found


def _mark(conn: sa.Connection) -> str:
    """The driver's parameter mark."""
    return "?" if conn.dialect.name == "sqlite" else "%s"


def standing_of(conn: sa.Connection, account: str, moment: str) -> Standing:
    """The player's limits and break in force at `moment`."""
    return standing(history(conn, account), moment)


@dataclass(frozen=True)
class Sums:
    """What counts against a player's limits at a moment: money paid in over the last
    24 hours and 7 days, and their net at the tables this evening and over 7 days."""

    deposited_day: int
    deposited_week: int
    net_evening: int
    net_week: int


_SUMS = sa.text(
    "SELECT"
    " COALESCE(SUM(CASE WHEN p.counterparty = :cash AND p.amount > 0 AND e.recorded_at > :day"
    " THEN p.amount ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN p.counterparty = :cash AND p.amount > 0 AND e.recorded_at > :week"
    " THEN p.amount ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN p.counterparty <> :cash AND e.recorded_at >= :evening"
    " THEN p.amount ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN p.counterparty <> :cash AND e.recorded_at > :week"
    " THEN p.amount ELSE 0 END), 0)"
    " FROM postings p JOIN events e ON e.position = p.position"
    " WHERE p.account = :account AND p.position > :after"
)
"""Every sum at once, over the player's postings after the first position that may
count (a range of the (account, position) index), each filtered by its time."""


def position_before(conn: sa.Connection, moment: str) -> int:
    """The last position recorded before `moment` (0: none), by bisection over the
    positions (which have no gap, and whose times never go back: ledger.books.asof),
    each probe straight to the driver: asked of every write a loss or deposit limit
    binds, where the SQL layer's cost per probe was most of the check's."""
    cursor = conn.connection.cursor()
    mark = _mark(conn)
    try:
        cursor.execute("SELECT MAX(position) FROM events")
        lo, hi = 0, int(_one(cursor) or 0)
        probe = f"SELECT recorded_at FROM events WHERE position = {mark}"
        while lo < hi:  # invariant: lo is before `moment`, everything past hi is not
            mid = (lo + hi + 1) // 2
            cursor.execute(probe, (mid,))
            if _one(cursor) < moment:
                lo = mid
            else:
                hi = mid - 1
        return lo
    finally:
        cursor.close()


def _one(cursor: Any) -> Any:
    row = cursor.fetchone()
    assert row is not None
    return row[0]


def sums(conn: sa.Connection, account: str, now: str, evening: str) -> Sums:
    """What counts against `account`'s limits at `now`, this evening from `evening`.
    The first position that may count is found by one bisection of the log by time
    (ledger.books.asof), from the earlier of a week ago and the evening's start."""
    week = shifted(now, -WEEK)
    after = position_before(conn, min(week, evening))
    row = conn.execute(
        _SUMS,
        {"cash": CASH, "day": shifted(now, -DAY), "week": week, "evening": evening,
         "account": account, "after": after},
    ).one()  # fmt: skip
    return Sums(*(int(value) for value in row))


def evening_start(conn: sa.Connection, zone: str, now: str) -> str:
    """When the evening under way at `now` began (ledger.books.evenings.current); with
    none under way, `now`: no loss yet this evening."""
    evening = evenings.current(conn, zone, now)
    return evening.since if evening is not None else now


def check_deposit(conn: sa.Connection, account: str, amount: int, clock: Callable[[], str]) -> None:
    """Refuse a deposit of `amount` past a limit or during a break, at `clock()` (asked
    only of a player with a limit or a break)."""
    events = history(conn, account)
    if not events:
        return
    now = clock()
    held = standing(events, now)
    if held.break_kind is not None and held.break_until is not None:
        raise OnBreak(account, held.break_kind, held.break_until)
    if held.limit("deposit_24h") is None and held.limit("deposit_7d") is None:
        return
    counted = sums(conn, account, now, now)
    for kind, paid in (("deposit_24h", counted.deposited_day),
                       ("deposit_7d", counted.deposited_week)):  # fmt: skip
        limit = held.limit(kind)
        if limit is not None and paid + amount > limit:
            raise LimitReached(account, kind, limit, paid, amount)


def stakes_of(stream: str, decided: Iterable[object]) -> tuple[dict[str, list[int]], Counter[str]]:
    """What each player puts into escrow in `decided` (a table's events), and each
    player's net from them."""
    staked: dict[str, list[int]] = defaultdict(list)
    net: Counter[str] = Counter()
    for event in decided:
        for t in transfers_of(stream, event):  # type: ignore[arg-type]
            if t.source.startswith(PLAYER):
                net[t.source] -= t.amount
                if t.target.startswith(ESCROW):
                    staked[t.source].append(t.amount)
            if t.target.startswith(PLAYER):
                net[t.target] += t.amount
    return staked, net


def check_stakes(
    conn: sa.Connection,
    stream: str,
    decided: Iterable[object],
    clock: Callable[[], str],
    zone: str,
) -> None:
    """Refuse a table's write at `clock()` (asked only of a write in which a player with
    a limit or a break stakes) that has a player stake during a break or past a limit
    of theirs (`zone`: the club's, whose calendar day stands in for an evening where
    none is recorded)."""
    staked, net = stakes_of(stream, decided)
    for account, amounts in staked.items():
        events = history(conn, account)
        if not events:
            continue
        now = clock()
        held = standing(events, now)
        if held.break_kind is not None and held.break_until is not None:
            raise OnBreak(account, held.break_kind, held.break_until)
        largest = held.limit("stake")
        if largest is not None and max(amounts) > largest:
            raise LimitReached(account, "stake", largest, max(amounts), max(amounts))
        kinds = [k for k in ("loss_evening", "loss_week") if held.limit(k) is not None]
        if not kinds:
            continue
        evening = evening_start(conn, zone, now) if "loss_evening" in kinds else now
        counted = sums(conn, account, now, evening)
        for kind in kinds:
            limit = held.limit(kind)
            assert limit is not None
            before = counted.net_evening if kind == "loss_evening" else counted.net_week
            lost = -(before + net[account])
            if lost > limit:
                raise LimitReached(account, kind, limit, lost, -net[account])


def view(conn: sa.Connection, account: str, now: str, zone: str) -> dict[str, object]:
    """The player's limits as they stand at `now`: each kind's limit in force, what
    counts against it so far, and a raise waiting for its cooling-off; and their break."""
    held = standing_of(conn, account, now)
    counted = sums(conn, account, now, evening_start(conn, zone, now))
    used: dict[str, int | None] = {
        "deposit_24h": counted.deposited_day,
        "deposit_7d": counted.deposited_week,
        "loss_evening": max(0, -counted.net_evening),
        "loss_week": max(0, -counted.net_week),
        "stake": None,
    }
    return {
        "at": now,
        "limits": [
            {
                "kind": kind,
                "words": WORDS[kind],
                "limit": limit.limit,
                "used": used[kind],
                "waiting": None
                if limit.waiting is None
                else {"limit": limit.waiting[0], "from": limit.waiting[1]},
            }
            for kind, limit in held.limits.items()
        ],
        "break": None
        if held.break_kind is None
        else {"kind": held.break_kind, "until": held.break_until},
    }


def reality(conn: sa.Connection, account: str, now: str, zone: str) -> dict[str, object]:
    """A reality check: since when the player has been at the tables this evening (their
    first stake or payout of it; None: not yet) and their net at the tables since."""
    evening = evening_start(conn, zone, now)
    p, e = postings.c, events.c
    first = conn.execute(
        sa.select(e.recorded_at)
        .join(postings, p.position == e.position)
        .where(
            p.account == account,
            p.position > position_before(conn, evening),
            p.counterparty != CASH,
        )
        .order_by(p.position)
        .limit(1)
    ).scalar()
    minutes = 0
    if first is not None:
        minutes = int((parse(now) - parse(str(first))).total_seconds() // 60)
    net = sums(conn, account, now, evening).net_evening
    return {"at": now, "since": first, "minutes": minutes, "net": net}
