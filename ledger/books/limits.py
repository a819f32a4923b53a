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
from datetime import timedelta

import sqlalchemy as sa

from ledger.books import asof, evenings
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
    """A deposit or a bet would pass a limit the player set; `kind` says which."""

    def __init__(self, account: str, kind: str, message: str) -> None:
        super().__init__(f"{account}'s limit on {WORDS[kind]}: {message}")
        self.account, self.kind = account, kind


class OnBreak(Refused):
    """The player is on a time-out or a self-exclusion: no stake and no deposit."""

    def __init__(self, account: str, kind: str, until: str) -> None:
        super().__init__(
            f"{account} is on a {kind} until {until}: no stakes, lays, odds, side bets or "
            "deposits until then (withdrawals and statements still work)"
        )
        self.account, self.kind, self.until = account, kind, until


def history(conn: sa.Connection, account: str) -> list[tuple[str, LimitSet | BreakTaken]]:
    """The player's limit and break events, each with its recording time, in order."""
    e = events.c
    rows = conn.execute(
        sa.select(e.position, e.type, e.schema_version, e.version, e.payload, e.recorded_at)
        .where(e.stream == account_stream(account), e.type.in_(EVENT_TYPES))
        .order_by(e.position)
    )
    found: list[tuple[str, LimitSet | BreakTaken]] = []
    for row in rows:
        event = decode_row(row)
        assert isinstance(event, LimitSet | BreakTaken)
        found.append((row.recorded_at, event))
    return found


def standing_of(conn: sa.Connection, account: str, moment: str) -> Standing:
    """The player's limits and break in force at `moment`."""
    return standing(history(conn, account), moment)


def deposited_since(conn: sa.Connection, account: str, moment: str) -> int:
    """What the player paid in after `moment`."""
    p = postings.c
    after = asof.position_at(conn, moment)
    total = conn.execute(
        sa.select(sa.func.coalesce(sa.func.sum(p.amount), 0)).where(
            p.account == account, p.position > after, p.counterparty == CASH, p.amount > 0
        )
    ).scalar()
    return int(total or 0)


def net_since(conn: sa.Connection, account: str, after: int) -> int:
    """The player's net at the tables after position `after`: won less lost, open
    stakes counted as lost."""
    p = postings.c
    total = conn.execute(
        sa.select(sa.func.coalesce(sa.func.sum(p.amount), 0)).where(
            p.account == account, p.position > after, p.counterparty != CASH
        )
    ).scalar()
    return int(total or 0)


def check_deposit(conn: sa.Connection, account: str, amount: int, now: str) -> None:
    """Refuse a deposit of `amount` at `now` past a limit or during a break."""
    held = standing_of(conn, account, now)
    if held.break_kind is not None and held.break_until is not None:
        raise OnBreak(account, held.break_kind, held.break_until)
    for kind, span in (("deposit_24h", DAY), ("deposit_7d", WEEK)):
        limit = held.limit(kind)
        if limit is None:
            continue
        paid = deposited_since(conn, account, shifted(now, -span))
        if paid + amount > limit:
            raise LimitReached(
                account,
                kind,
                f"{limit}, of which {paid} is paid in already, so {amount} more would pass "
                f"it (at most {max(0, limit - paid)} more now)",
            )


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
    """Refuse a table's write at `clock()` (asked only of a write that stakes) that has
    a player stake during a break or past a limit of theirs (`zone`: the club's, whose
    calendar day stands in for an evening where none is recorded)."""
    staked, net = stakes_of(stream, decided)
    now = clock() if staked else ""
    for account, amounts in staked.items():
        held = standing_of(conn, account, now)
        if held.break_kind is not None and held.break_until is not None:
            raise OnBreak(account, held.break_kind, held.break_until)
        largest = held.limit("stake")
        if largest is not None and max(amounts) > largest:
            raise LimitReached(account, "stake", f"{largest}, and this stake is {max(amounts)}")
        for kind in ("loss_evening", "loss_week"):
            limit = held.limit(kind)
            if limit is None:
                continue
            after = _since(conn, kind, now, zone)
            lost = -(net_since(conn, account, after) + net[account])
            if lost > limit:
                raise LimitReached(
                    account,
                    kind,
                    f"{limit}, and with this stake {lost} would be lost (open stakes count "
                    "as lost until settled)",
                )


def _since(conn: sa.Connection, kind: str, now: str, zone: str) -> int:
    """The position after which a loss limit's losses count."""
    if kind == "loss_week":
        return asof.position_at(conn, shifted(now, -WEEK))
    evening = evenings.current(conn, zone, now)
    return evening.after if evening is not None else asof.position_at(conn, now)


def view(conn: sa.Connection, account: str, now: str, zone: str) -> dict[str, object]:
    """The player's limits as they stand at `now`: each kind's limit in force, what
    counts against it so far, and a raise waiting for its cooling-off; and their break."""
    held = standing_of(conn, account, now)
    used: dict[str, int | None] = {
        "deposit_24h": deposited_since(conn, account, shifted(now, -DAY)),
        "deposit_7d": deposited_since(conn, account, shifted(now, -WEEK)),
        "loss_evening": max(0, -net_since(conn, account, _since(conn, "loss_evening", now, zone))),
        "loss_week": max(0, -net_since(conn, account, _since(conn, "loss_week", now, zone))),
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
    p, e = postings.c, events.c
    after = _since(conn, "loss_evening", now, zone)
    first = conn.execute(
        sa.select(e.recorded_at)
        .join(postings, p.position == e.position)
        .where(p.account == account, p.position > after, p.counterparty != CASH)
        .order_by(p.position)
        .limit(1)
    ).scalar()
    minutes = 0
    if first is not None:
        minutes = int((parse(now) - parse(str(first))).total_seconds() // 60)
    return {"at": now, "since": first, "minutes": minutes, "net": net_since(conn, account, after)}
