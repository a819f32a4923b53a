"""The ledger's read models: postings and balances, written beside the events, and
the statements read from them.

`apply` runs inside the append's transaction, so an event and the postings it causes
commit together; the overdraft check runs there too, which is what stops two
concurrent bets from overdrawing one account (appends are serialised), and so does the
check that a credit limit is not lowered below what is already drawn on it. `rebuild`
throws the read models away and replays every event, and must arrive at the same
figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from engine.events import BetAdjusted
from ledger.books import tableviews
from ledger.books.accounts import CASH, transfers_of
from ledger.store import db
from ledger.store.eventstore import EventStore, Recorded, Refused
from ledger.store.log.chains import parsed
from ledger.store.schema import accounts, events, postings
from ledger.store.vocabulary import MOVES_MONEY, CreditLimitSet


class Overdraft(Refused):
    """A posting would take an account below zero, past any credit it was granted."""

    def __init__(self, account: str, balance: int, credit_limit: int) -> None:
        super().__init__(
            f"{account} would stand at {balance}, below its credit limit of {credit_limit}"
            if credit_limit
            else f"{account} would stand at {balance}: it has no credit"
        )
        self.account, self.balance, self.credit_limit = account, balance, credit_limit


class CreditInUse(Refused):
    """A credit limit set below what the account has already drawn on it: lowering it
    would leave the balance past the limit, so it waits until the debt is repaid."""

    def __init__(self, account: str, drawn: int, credit_limit: int) -> None:
        super().__init__(
            f"{account} has drawn {drawn} on its credit: its limit cannot go below {drawn} "
            f"(asked for {credit_limit}) until that is repaid"
        )
        self.account, self.drawn, self.credit_limit = account, drawn, credit_limit


class OutOfRange(Refused):
    """A balance would leave the signed 64-bit range the ledger's columns hold."""


LARGEST = 2**63 - 1


def apply(conn: sa.Connection, rows: Iterable[Recorded], check: bool = True) -> None:
    """Post what `rows` move, each posting with its account's balance just after it,
    update balances, and refuse any overdraft, and any credit limit set below what the
    account has drawn."""
    limits: dict[str, int] = {}
    adjusted: set[str] = set()
    # Each posting as [position, account, amount, counterparty, balance], the balance
    # filled in below: lists, not dicts, for the thousands a replay's batch makes.
    entries: list[list[Any]] = []
    for row in rows:
        event = row.event()
        if isinstance(event, CreditLimitSet):
            limits[event.account] = event.limit
        if row.type not in MOVES_MONEY:
            continue  # a throw, a seal, a seat taken...: a third of a played log, no money
        transfers = transfers_of(row.stream, event)
        if isinstance(event, BetAdjusted):
            adjusted.update(t.source for t in transfers)
        position = row.position
        for t in transfers:
            entries.append([position, t.source, -t.amount, t.target, 0])
            entries.append([position, t.target, t.amount, t.source, 0])
    touched = {e[1] for e in entries} | set(limits)
    if not touched:
        return
    current = standings(conn, touched)
    # Each posting's running balance, per account in the order the postings are
    # inserted (position, then id), which is the order a rebuild inserts them in too.
    running = {account: current.get(account, (0, 0))[0] for account in touched}
    delta: Counter[str] = Counter()
    for entry in entries:
        account, amount = entry[1], entry[2]
        balance = running[account] + amount
        running[account] = balance
        delta[account] += amount
        if not -LARGEST <= balance <= LARGEST:
            # Refused here, with a reason, rather than by the database as a crash.
            raise OutOfRange(f"{account} would stand at {balance}, beyond what the ledger holds")
        entry[4] = balance
    opened: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for account in sorted(touched):
        balance, limit = running[account], limits.get(account, current.get(account, (0, 0))[1])
        # A dispute's adjustment is posted whatever it leaves: what the account cannot
        # cover is owed to the club, shown beside its balance, never dropped (docs/setter.md:
        # "Overdrafts after a dispute").
        if check and account != CASH and balance < -limit and account not in adjusted:
            if account in limits:
                raise CreditInUse(account, -balance, limit)
            if delta[account] < 0:
                raise Overdraft(account, balance, limit)
        values = {"account": account, "balance": balance, "credit_limit": limit}
        (changed if account in current else opened).append(values)
    if entries:
        db.insert_tuples(conn, postings.name, POSTING_COLUMNS, entries)
    # One statement each, however many accounts: a replay touches thousands a batch
    # (an escrow per bet), and a statement apiece cost most of a rebuild.
    if opened:
        db.insert_rows(conn, accounts, opened)
    if changed:
        _set_balances(conn, [(v["balance"], v["credit_limit"], v["account"]) for v in changed])


POSTING_COLUMNS = ("position", "account", "amount", "counterparty", "balance")

STANDINGS_AT_ONCE = 500
"""Accounts one query of `standings` asks for: a few hundred parameters, well inside
what either database takes in one statement."""


def standings(conn: sa.Connection, names: Iterable[str]) -> dict[str, tuple[int, int]]:
    """The (balance, credit limit) of each of the accounts `names` that the books hold,
    as they stand on `conn`: the one read of both, for a write's postings, a player's
    balance and the setter's list of players. An account absent has neither: (0, 0)."""
    wanted = sorted(set(names))
    found: dict[str, tuple[int, int]] = {}
    for start in range(0, len(wanted), STANDINGS_AT_ONCE):
        chunk = wanted[start : start + STANDINGS_AT_ONCE]
        rows = conn.execute(_STANDINGS, {"names": chunk})
        found.update({r.account: (r.balance, r.credit_limit) for r in rows})
    return found


_STANDINGS = sa.select(accounts.c.account, accounts.c.balance, accounts.c.credit_limit).where(
    accounts.c.account.in_(sa.bindparam("names", expanding=True))
)
"""The names as a parameter, not in the statement: SQLAlchemy's cache of compiled
statements keeps the statement it was first run as, and with the names in it, the
hundreds of names of a batch's accounts for as long as the engine lives."""


def _set_balances(conn: sa.Connection, values: list[tuple[int, int, str]]) -> None:
    """UPDATE each account's balance and limit, on the driver's cursor (as
    db.insert_rows inserts)."""
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    sql = f"UPDATE accounts SET balance = {mark}, credit_limit = {mark} WHERE account = {mark}"
    cursor = conn.connection.cursor()
    try:
        if len(values) == 1:
            cursor.execute(sql, values[0])
        else:
            cursor.executemany(sql, values)
    finally:
        cursor.close()


def balances(conn: sa.Connection) -> dict[str, int]:
    return {
        r.account: r.balance
        for r in conn.execute(sa.select(accounts.c.account, accounts.c.balance))
        if r.balance or not r.account.startswith("escrow:")
    }


def statement(
    conn: sa.Connection, account: str, after_position: int, limit: int
) -> list[dict[str, Any]]:
    """The account's postings after `after_position`, at least `limit` of them if there
    are that many, ending with every posting of the last event on the page, each with
    the event that caused it.

    The cursor is a position rather than a posting id: positions are the ledger's one
    order (the same `after` as every other listing), and posting ids are renumbered
    when the read models are rebuilt. So a page never splits an event's postings
    (an event posts to one account at most a few times), and may run a little over.
    """
    p, e = postings, events
    query = (
        sa.select(
            p.c.id,
            p.c.position,
            p.c.account,
            p.c.amount,
            p.c.counterparty,
            e.c.stream,
            e.c.version,
            e.c.type,
            e.c.payload,
            e.c.actor,
            e.c.recorded_at,
        )
        .join(e, e.c.position == p.c.position)
        .where(p.c.account == account)
        .order_by(p.c.position, p.c.id)
    )
    rows = list(conn.execute(query.where(p.c.position > after_position).limit(limit)))
    if len(rows) >= limit:
        last = rows[-1]
        rows += conn.execute(query.where(p.c.position == last.position, p.c.id > last.id))
    return [_line(row) for row in rows]


def _line(row: Any) -> dict[str, Any]:
    return {
        "posting": row.id,
        "position": row.position,
        "account": row.account,
        "amount": row.amount,
        "counterparty": row.counterparty,
        "event": {
            "position": row.position,
            "stream": row.stream,
            "version": row.version,
            "type": row.type,
            "payload": parsed(row.payload),
            "actor": row.actor,
            "recorded_at": row.recorded_at,
        },
    }


def rebuild(store: EventStore, batch: int = 5000) -> int:
    """Rebuild every read model from the events; returns how many events were read.

    The overdraft check is not re-run: the events were accepted under it, and a
    rebuild must reproduce history, not judge it again. Each table is folded from its
    first event through `tableviews.apply`, as its commands were when they were live.
    """
    with store.transaction() as conn:
        conn.execute(postings.delete())
        conn.execute(accounts.delete())
        tableviews.clear(conn)
        return replay(conn, batches(store, conn, batch))


def replay(
    conn: sa.Connection,
    batches: Iterable[Sequence[Recorded]],
    tables: tableviews.Replay | None = None,
) -> int:
    """Write into the empty read models on `conn` what `batches` of events make: every
    event from the first, in position order. `rebuild` runs it on the store's own
    database; ledger.books.deep on a scratch one, to compare with what is stored;
    ledger.exports.restore on a restored log (passing its own `tables`, whose states
    it snapshots after). Returns how many events were read."""
    tables = tables if tables is not None else tableviews.Replay(conn)
    count = 0
    for rows in batches:
        apply(conn, rows, check=False)
        tables.feed(rows)
        count += len(rows)
        # Let the batch go before the next is read: held while `batches` made the next
        # one, two batches of rows (a restore's, with their events and states) were alive.
        del rows
    tables.finish()
    return count


def batches(store: EventStore, conn: sa.Connection, batch: int) -> Iterator[list[Recorded]]:
    """Every event of the log in position order, `batch` at a time, read on `conn`."""
    after = 0
    while rows := store.read_all(after, limit=batch, conn=conn):
        yield rows
        after = rows[-1].position
