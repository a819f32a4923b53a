"""The club's evenings: the ones the setter opens and closes (the cash-up), read from
the club's stream `club:evenings` (ledger.store.evenings_events), and what a player's
statement and the night report filter by, an `Evening`: a span of the log's positions.

A recorded evening is the span from its opening to the last event of its cash-up. One
still open runs to the log's last position. `current` is the evening in progress, which
the limits read ("losses this evening").

Where no evening was ever recorded (a club that has not started opening them), an
evening is the club's calendar day in its time zone (HAZARD_TIMEZONE, as ledger.house
reads it): a stand-in, and only there. A day's span is exact: times never go back as
positions rise (ledger.books.asof), so the events recorded on a day are the positions
between the last one recorded before it and the last one recorded before the next day,
each found by bisection.

What the cash-up expects at each place is ledger.books.cashup's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from ledger.books import asof
from ledger.store.evenings_events import CashCounted, EveningClosed, EveningOpened, FloatCounted
from ledger.store.eventstore import Recorded, decode_row
from ledger.store.schema import events
from ledger.store.vocabulary import EVENINGS

STORED = "%Y-%m-%dT%H:%M:%S.%fZ"
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class Evening:
    """The events of one evening: the positions after `after`, up to `through`."""

    key: str
    """How an address names it: the club's date, "2026-11-26"."""
    after: int
    through: int
    since: str
    """Its first moment, as stored (UTC)."""
    until: str
    """The moment after its last (UTC)."""


def day_of(text: str) -> date | None:
    """A date as a form's date field sends it (YYYY-MM-DD); None for anything else."""
    if not _DAY.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def of_day(conn: sa.Connection, zone: str, day: date) -> Evening:
    """The club's calendar day `day`, from midnight to midnight in its time `zone`."""
    since, until = day_bounds(zone, day)
    return Evening(
        key=day.isoformat(),
        after=asof.position_at(conn, _just_before(since)),
        through=asof.position_at(conn, _just_before(until)),
        since=since,
        until=until,
    )


def day_bounds(zone: str, day: date) -> tuple[str, str]:
    """The calendar day `day` in time `zone` as the ledger records times: from its first
    moment (inclusive) to the next day's (exclusive), in UTC as stored. A day the clocks
    change on is 23 or 25 hours long."""

    def start(of: date) -> str:
        local = datetime.combine(of, datetime.min.time(), tzinfo=ZoneInfo(zone))
        return local.astimezone(UTC).strftime(STORED)

    return start(day), start(day + timedelta(days=1))


def _just_before(moment: str) -> str:
    """The stored time one microsecond before `moment`: the last at which an event is
    still before it (asof.position_at takes "at or before")."""
    at = datetime.strptime(moment, STORED).replace(tzinfo=UTC) - timedelta(microseconds=1)
    return at.strftime(STORED)


# -- The evenings the setter opens and closes ------------------------------------------


@dataclass(frozen=True)
class RecordedEvening:
    """An evening as its events in `club:evenings` tell it."""

    number: int
    opened_at: str
    opened_by: str
    opened_position: int
    floats: dict[str | None, int]
    """The float counted at each place: a table's id, or None for the cage."""
    closed_at: str | None = None
    closed_by: str | None = None
    closed_position: int | None = None
    cash_up: tuple[CashCounted, ...] = ()

    @property
    def is_open(self) -> bool:
        return self.closed_position is None

    def span(self, conn: sa.Connection) -> Evening:
        """Its positions: from its opening to its closing, or to the log's last position
        while it is open."""
        through = self.closed_position
        if through is None:
            through = asof.last_position(conn)
        last = _recorded_at(conn, through)
        return Evening(
            key=str(self.number),
            after=self.opened_position - 1,
            through=through,
            since=self.opened_at,
            until=_just_after(last),
        )


def stream_rows(conn: sa.Connection) -> list[Recorded]:
    """The evenings' stream as stored, in order (a few events an evening)."""
    e = events.c
    query = sa.select(events).where(e.stream == EVENINGS).order_by(e.version)
    return [Recorded(**row._mapping) for row in conn.execute(query)]


def fold(rows: list[Recorded]) -> list[RecordedEvening]:
    """The evenings the stream's rows tell, in the order opened."""
    found: list[RecordedEvening] = []
    for row in rows:
        event = decode_row(row)
        if isinstance(event, EveningOpened):
            found.append(
                RecordedEvening(event.evening, row.recorded_at, row.actor, row.position, {})
            )
        elif isinstance(event, FloatCounted):
            found[-1].floats[event.table] = event.counted
        elif isinstance(event, CashCounted):
            found[-1] = replace(found[-1], cash_up=(*found[-1].cash_up, event))
        elif isinstance(event, EveningClosed):
            found[-1] = replace(
                found[-1],
                closed_at=row.recorded_at,
                closed_by=row.actor,
                closed_position=row.position,
            )
    return found


def recorded(conn: sa.Connection) -> list[RecordedEvening]:
    """Every evening the setter has opened, in order."""
    return fold(stream_rows(conn))


def numbered(conn: sa.Connection, number: int) -> RecordedEvening | None:
    found = recorded(conn)
    return found[number - 1] if 1 <= number <= len(found) else None


def open_now(conn: sa.Connection) -> RecordedEvening | None:
    """The evening open now, if one is."""
    found = recorded(conn)
    return found[-1] if found and found[-1].is_open else None


def named(conn: sa.Connection, zone: str, key: str) -> Evening | None:
    """The evening an address names by its `key`: a recorded evening by its number
    ("3"), or the club's calendar day ("2026-11-26", the stand-in); None for anything
    else, or a number no evening has."""
    if key.isascii() and key.isdigit() and len(key) <= 9:
        evening = numbered(conn, int(key))
        return None if evening is None else evening.span(conn)
    day = day_of(key)
    return None if day is None else of_day(conn, zone, day)


def current(conn: sa.Connection, zone: str, at: str | None = None) -> Evening | None:
    """The evening in progress: the one the setter has open, up to the log's last
    position; None while none is open. Where no evening was ever recorded, the stand-in:
    the club's calendar day (time `zone`) holding `at` (a stored UTC time; None: now).

    Asked on every stake by the limits, so it reads one row, the stream's last opening
    or closing (from its head back, by the (stream, version) key), not every evening."""
    e = events.c
    last = conn.execute(
        sa.select(e.type, e.position, e.recorded_at, e.payload)
        .where(e.stream == EVENINGS, e.type.in_(("EveningOpened", "EveningClosed")))
        .order_by(e.version.desc())
        .limit(1)
    ).first()
    if last is not None:
        if last.type == "EveningClosed":
            return None
        through = asof.last_position(conn)
        return Evening(
            key=str(json.loads(last.payload)["evening"]),
            after=int(last.position) - 1,
            through=through,
            since=str(last.recorded_at),
            until=_just_after(_recorded_at(conn, through)),
        )
    moment = datetime.now(UTC) if at is None else datetime.strptime(at, STORED).replace(tzinfo=UTC)
    return of_day(conn, zone, moment.astimezone(ZoneInfo(zone)).date())


def _recorded_at(conn: sa.Connection, position: int) -> str:
    return str(
        conn.execute(sa.select(events.c.recorded_at).where(events.c.position == position)).scalar()
    )


def _just_after(moment: str) -> str:
    at = datetime.strptime(moment, STORED).replace(tzinfo=UTC) + timedelta(microseconds=1)
    return at.strftime(STORED)


def start_of(zone: str, at: str) -> str:
    """The first moment (stored UTC) of the stand-in's evening that `at` falls in: its
    calendar day in the club's `zone`. What a replay of players' loss limits counts
    this evening's losses from (ledger.books.limitreplay) until it meets a recorded
    evening, whose opening it counts from after."""
    moment = datetime.strptime(at, STORED).replace(tzinfo=UTC)
    return day_bounds(zone, moment.astimezone(ZoneInfo(zone)).date())[0]
