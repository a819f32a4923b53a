"""The night report: one evening of the club, from its opening to its cash-up, read
from the log (the evening's span of positions, ledger.books.evenings).

- takings, the setter's net per table and per player (ledger.books.takings, as the
  office counts them: positive, the bank won);
- the cage: deposits taken and withdrawals paid out;
- the cash-up as recorded: float, counted, expected and difference per place;
- the largest exposure during the evening: the most the setter had at stake in open
  bets at once, followed posting by posting through the bets' escrows;
- the play per table: rounds (mains called), throws, throws voided, bets voided,
  disputes opened and resolved (by resolution), and adjustments (a correction's
  postings);
- the signed checkpoint that covers the evening: the first whose tree holds its last
  event (while it is open, the newest), so a printed report names the tree it is in.

An evening's cost is its own events and postings, not the log's.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from engine.money import ESCROW
from engine.state import SETTER
from ledger.books import evenings, takings
from ledger.books.evenings import Evening, RecordedEvening
from ledger.books.queries import starts_with
from ledger.store.eventstore import EventStore
from ledger.store.schema import checkpoints, events, postings
from ledger.store.vocabulary import CASH, TABLE_PREFIX

PLAY = {
    "MainCalled": "rounds",
    "DiceThrown": "throws",
    "ThrowVoided": "throws_voided",
    "BetVoided": "bets_voided",
    "DisputeOpened": "disputes_opened",
    "DisputeResolved": "disputes_resolved",
    "BetAdjusted": "adjustments",
}
"""The events the play counts, by what each counts."""
RESOLUTIONS = ("upheld", "voided", "corrected")
CAGE = "cage"


def report(conn: sa.Connection, evening: RecordedEvening) -> dict[str, Any]:
    """The night report of `evening`, as plain data (the API's, the CLI's, the console's
    and the PDF's)."""
    span = evening.span(conn)
    nets = takings.nets(conn, span)
    by_table: dict[str, int] = {}
    by_player: dict[str | None, int] = {}
    for (table, player), net in nets.items():
        by_table[table] = by_table.get(table, 0) + net
        by_player[player] = by_player.get(player, 0) + net
    deposits, withdrawals = _cage(conn, span)
    cash_up = [_line(line, evening.floats.get(line.table, 0)) for line in evening.cash_up]
    return {
        "evening": evening.number,
        "open": evening.is_open,
        "opened_at": evening.opened_at,
        "opened_by": evening.opened_by,
        "closed_at": evening.closed_at,
        "closed_by": evening.closed_by,
        "after": span.after,
        "through": span.through,
        "floats": [
            {"place": _place(t), "table": t, "float": n}
            for t, n in sorted(evening.floats.items(), key=_place_order)
        ],
        "takings": {
            "total": sum(by_table.values()),
            "tables": [{"table": t, "net": n} for t, n in sorted(by_table.items())],
            "players": [
                {"player": p, "net": n}
                for p, n in sorted(by_player.items(), key=lambda i: (i[0] is None, i[0] or ""))
            ],
        },
        "cage": {"deposits": deposits, "withdrawals": withdrawals},
        "cash_up": cash_up,
        "difference": sum(line["difference"] for line in cash_up) if cash_up else None,
        "exposure": largest_exposure(conn, span),
        "play": play(conn, span),
        "checkpoint": covering(conn, span.through, evening.is_open),
    }


def _line(line: Any, floated: int) -> dict[str, Any]:
    return {
        "place": _place(line.table),
        "table": line.table,
        "float": floated,
        "counted": line.counted,
        "expected": line.expected,
        "difference": line.difference,
    }


def _place(table: str | None) -> str:
    return CAGE if table is None else table


def _place_order(item: tuple[str | None, int]) -> tuple[int, str]:
    return (1, "") if item[0] is None else (0, item[0])


def _cage(conn: sa.Connection, span: Evening) -> tuple[int, int]:
    """(deposits, withdrawals) in the evening: the `cash` account's postings, a deposit
    moving money out of it and a withdrawal into it."""
    p = postings.c
    amount = p.amount
    row = conn.execute(
        sa.select(
            sa.func.sum(sa.case((amount < 0, -amount), else_=0)),
            sa.func.sum(sa.case((amount > 0, amount), else_=0)),
        ).where(p.account == CASH, p.position > span.after, p.position <= span.through)
    ).one()
    return int(row[0] or 0), int(row[1] or 0)


def largest_exposure(conn: sa.Connection, span: Evening) -> dict[str, Any]:
    """The most the setter had at stake in open bets at once during the evening, and
    when: each escrow's balance and the setter's part of it followed posting by
    posting, from where they stood at the evening's start. A bet open at the start that
    nothing moved during the evening is not seen (nor is what the setter had in it)."""
    p = postings.c
    moves = conn.execute(
        sa.select(p.position, p.account, p.amount, p.counterparty)
        .where(*starts_with(conn, p.account, ESCROW))
        .where(p.position > span.after, p.position <= span.through)
        .order_by(p.position, p.id)
    ).all()
    held: dict[str, int] = {}
    setters: dict[str, int] = {}
    escrows = sorted({row.account for row in moves})
    for start in range(0, len(escrows), takings.AT_ONCE):
        before = conn.execute(
            sa.select(
                p.account,
                sa.func.sum(p.amount),
                sa.func.sum(sa.case((p.counterparty == SETTER, p.amount), else_=0)),
            )
            .where(p.account.in_(escrows[start : start + takings.AT_ONCE]))
            .where(p.position <= span.after)
            .group_by(p.account)
        ).all()
        for account, balance, setter in before:
            held[account], setters[account] = int(balance or 0), int(setter or 0)
    exposure = sum(setters.get(a, 0) for a, b in held.items() if b > 0)
    largest, at = exposure, None
    for position, account, amount, counterparty in moves:
        was = setters.get(account, 0) if held.get(account, 0) > 0 else 0
        held[account] = held.get(account, 0) + int(amount)
        if counterparty == SETTER and amount > 0:
            setters[account] = setters.get(account, 0) + int(amount)
        now = setters.get(account, 0) if held[account] > 0 else 0
        exposure += now - was
        if exposure > largest:
            largest, at = exposure, int(position)
    return {"largest": largest, "position": at, "recorded_at": _when(conn, at)}


def _when(conn: sa.Connection, position: int | None) -> str | None:
    if position is None:
        return None
    return str(
        conn.execute(sa.select(events.c.recorded_at).where(events.c.position == position)).scalar()
    )


def play(conn: sa.Connection, span: Evening) -> dict[str, Any]:
    """What was played, per table and for the evening."""
    e = events.c
    rows = conn.execute(
        sa.select(e.stream, e.type, sa.func.count())
        .where(e.position > span.after, e.position <= span.through)
        .where(*starts_with(conn, e.stream, TABLE_PREFIX))
        .where(e.type.in_(sorted(PLAY)))
        .group_by(e.stream, e.type)
    ).all()
    tables: dict[str, dict[str, int]] = {}
    for stream, kind, count in rows:
        counts = tables.setdefault(
            stream.removeprefix(TABLE_PREFIX), dict.fromkeys(PLAY.values(), 0)
        )
        counts[PLAY[kind]] = int(count)
    totals = {what: sum(t[what] for t in tables.values()) for what in PLAY.values()}
    return {
        "tables": [{"table": t, **counts} for t, counts in sorted(tables.items())],
        "totals": totals,
        "resolutions": _resolutions(conn, span),
    }


def _resolutions(conn: sa.Connection, span: Evening) -> dict[str, int]:
    """The disputes resolved in the evening, by resolution (a few payloads)."""
    e = events.c
    found = dict.fromkeys(RESOLUTIONS, 0)
    for payload in conn.execute(
        sa.select(e.payload).where(
            e.type == "DisputeResolved", e.position > span.after, e.position <= span.through
        )
    ).scalars():
        resolution = json.loads(payload).get("resolution")
        if resolution in found:
            found[resolution] += 1
    return found


def covering(conn: sa.Connection, through: int, still_open: bool) -> dict[str, Any] | None:
    """The signed checkpoint whose tree holds position `through`: the first such (the
    one the closing write signed); while the evening is open, the newest."""
    c = checkpoints.c
    query = sa.select(c.size, c.root, c.issued_at, c.note)
    if still_open:
        query = query.order_by(c.size.desc())
    else:
        query = query.where(c.size >= through).order_by(c.size)
    row = conn.execute(query.limit(1)).first()
    if row is None:
        return None
    return {"size": int(row.size), "root": row.root, "issued_at": row.issued_at, "note": row.note}


def of_evening(store: EventStore, number: int) -> dict[str, Any] | None:
    """The night report of evening `number`, read in one transaction; None if there is
    no such evening."""
    with store.engine.connect() as conn:
        evening = evenings.numbered(conn, number)
        return None if evening is None else report(conn, evening)


def listing(store: EventStore) -> list[dict[str, Any]]:
    """Every evening in the order opened: when, by whom, and the cash-up's difference
    (None while open)."""
    with store.engine.connect() as conn:
        found = evenings.recorded(conn)
    return [
        {
            "evening": e.number,
            "open": e.is_open,
            "opened_at": e.opened_at,
            "opened_by": e.opened_by,
            "closed_at": e.closed_at,
            "closed_by": e.closed_by,
            "difference": sum(line.difference for line in e.cash_up) if e.cash_up else None,
        }
        for e in found
    ]
