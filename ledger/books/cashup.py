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

from typing import Any, NamedTuple

import sqlalchemy as sa

from engine.state import SETTER
from ledger.books import evenings, takings
from ledger.books.evenings import Evening, RecordedEvening
from ledger.store.evenings_events import CashCounted, EveningClosed, EveningOpened, FloatCounted
from ledger.store.eventstore import EventStore
from ledger.store.schema import postings
from ledger.store.vocabulary import CASH, EVENINGS, MOVES_MONEY, TABLE_PREFIX, transfers_of


def expected(
    conn: sa.Connection, evening: Evening, floats: dict[str | None, int]
) -> dict[str | None, int]:
    """What the books say each place should hold at the close (the module's docstring
    says how): every place floated, and every table where the setter won or lost
    during the evening, floated or not (a float of 0), so no table's takings go
    uncounted."""
    takings_at: dict[str | None, int] = {}
    for (table, _), net in takings.nets(conn, evening).items():
        takings_at[table] = takings_at.get(table, 0) + net
    places = set(floats) | {t for t, net in takings_at.items() if net} | {None}
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


# -- The cash-up checked from the events alone -------------------------------------------


class Replayed:
    """Every recorded cash-up held to the events between its evening's opening and its
    closing, fed the log's events in order (position, stream, event): the setter's net
    at each table from the events' transfers, and the cage's deposits and withdrawals.
    What `hazard verify --deep` runs over the database's events and the offline check
    over an export's lines, neither trusting a read model. `problems` says, per cash-up
    line, what does not hold."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.checked = 0
        """Cash-up lines held to the events so far, each evening's at its closing."""
        self._open: int | None = None
        self._floats: dict[str | None, int] = {}
        self._nets: dict[str | None, int] = {}
        self._cash = 0
        self._lines: list[CashCounted] = []

    @property
    def watching(self) -> bool:
        """Whether an evening is open: its money events count."""
        return self._open is not None

    def event(self, stream: str, event: Any) -> None:
        if stream == EVENINGS:
            self._evening(event)
        elif self._open is not None and type(event).__name__ in MOVES_MONEY:
            for t in transfers_of(stream, event):
                self._move(stream, t.source, t.target, t.amount)

    def _move(self, stream: str, source: str, target: str, amount: int) -> None:
        if stream.startswith(TABLE_PREFIX):
            table = stream.removeprefix(TABLE_PREFIX)
            if SETTER in (source, target):
                sign = 1 if target == SETTER else -1
                self._nets[table] = self._nets.get(table, 0) + sign * amount
        elif source == CASH:  # a deposit: cash into the cage
            self._cash += amount
        elif target == CASH:  # a withdrawal: paid out of it
            self._cash -= amount

    def _evening(self, event: Any) -> None:
        if isinstance(event, EveningOpened):
            self._open, self._floats, self._nets, self._cash = event.evening, {}, {}, 0
            self._lines = []
        elif isinstance(event, FloatCounted):
            self._floats[event.table] = event.counted
        elif isinstance(event, CashCounted):
            self._lines.append(event)
        elif isinstance(event, EveningClosed):
            if self._open == event.evening:  # not an evening whose opening went unseen
                self._closed(event.evening)
            self._open = None

    def _closed(self, number: int) -> None:
        nets, floats = self._nets, self._floats
        tables = {t for t in floats if t is not None} | {t for t, n in nets.items() if n}
        expected = {t: floats.get(t, 0) + nets.get(t, 0) for t in tables}
        expected[None] = floats.get(None, 0) + self._cash
        counted = {line.table: line for line in self._lines}
        self.checked += len(self._lines)
        for place in sorted(set(expected) | set(counted), key=lambda p: (p is None, p or "")):
            where = f"evening {number}, {'the cage' if place is None else 'table ' + place}"
            line = counted.get(place)
            if line is None:  # a place of the evening left out of its cash-up
                self.problems.append(Problem(where, None, None, expected[place]))
            elif place not in expected:  # a line for a place not in the evening
                self.problems.append(Problem(where, None, line.counted, None))
            elif line.expected != expected[place]:
                self.problems.append(Problem(where, "expected", line.expected, expected[place]))
            elif line.difference != line.counted - line.expected:
                given = line.counted - line.expected
                self.problems.append(Problem(where, "difference", line.difference, given))


class Problem(NamedTuple):
    """A cash-up line the events do not bear out: where (the evening and the place),
    which figure (None: the line is missing, or has no place in the evening), what the
    line records, and what the events give."""

    where: str
    figure: str | None
    recorded: int | None
    given: int | None

    def __str__(self) -> str:
        if self.recorded is None:
            return f"{self.where}: the cash-up does not count it (the events expect {self.given})"
        if self.given is None:
            return f"{self.where}: counted, but it had no float and no takings in the evening"
        return (
            f"{self.where}: the cash-up records {self.figure} {self.recorded}, "
            f"the events give {self.given}"
        )
