"""An evening at the club, as a player's statement is filtered by it.

There is no evening in the log yet: until the setter opens and closes evenings (a later
issue), an evening is the club's calendar day in its time zone (HAZARD_TIMEZONE, as
ledger.house reads it). Either
way an evening is a span of the log's positions, which is all a filter needs of it: an
evening the setter opens and closes will be the span from its opening to its closing,
and `Evening` stays what the statement reads.

A day's span is exact: times never go back as positions rise (ledger.books.asof), so
the events recorded on a day are the positions between the last one recorded before
it and the last one recorded before the next day, each found by bisection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from ledger.books import asof

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


def current(conn: sa.Connection, zone: str, at: str) -> Evening | None:
    """The evening under way at `at` (a stored UTC time): the stand-in is the club's
    calendar day that `at` falls on (None is for when no evening is open, once the
    setter opens and closes them). A player's losses this evening count from here
    (ledger.books.limits)."""
    moment = datetime.strptime(at, STORED).replace(tzinfo=UTC)
    return of_day(conn, zone, moment.astimezone(ZoneInfo(zone)).date())


def start_of(zone: str, at: str) -> str:
    """The first moment (stored UTC) of the evening that `at` falls in: the stand-in's
    calendar day in the club's `zone`. What a replay of players' loss limits counts
    this evening's losses from (ledger.books.limitreplay)."""
    moment = datetime.strptime(at, STORED).replace(tzinfo=UTC)
    return day_bounds(zone, moment.astimezone(ZoneInfo(zone)).date())[0]
