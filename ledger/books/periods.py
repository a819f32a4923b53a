"""The periods a player's statement covers: an evening, a week, a month, or a range of
days, each in the club's time zone (HAZARD_TIMEZONE, as ledger.house reads it).

Every period is, in the end, a span of the log's positions (the events after `after`,
up to `through`) and the times it runs between, as the ledger records times: which is
all the statement (ledger.books.periodstatement) and the export that proves it need of
it. An evening is ledger.books.evenings' `Evening`: one the setter opened and closed,
named by its number ("3", through `evenings.named`), or, the stand-in where none was
recorded, the club's calendar day ("2026-11-26", through `evenings.of_day`). A week
(ISO, Monday to Sunday), a month and a range are whole days, from the first day's
midnight to the midnight after the last, found the way a day is: times never go back
as positions rise (ledger.books.asof), so each end is the last position recorded
before it, found by bisection.

    period = periods.asked(conn, house.zone, month="2026-11")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from ledger.books import asof, evenings

KINDS = ("evening", "week", "month", "range")
"""What a statement may be asked for, one at a time (a range is `from` and `to`)."""
LONGEST = 366
"""The most days a range may cover: a year, leap or not (twelve months is what a
player may ask of a club; the export covers any longer history)."""
FIRST_YEAR, LAST_YEAR = 1970, 9998
"""The years a period may fall in: no event was recorded before 1970, and the day after
a period must still be a date (9999-12-31 has none)."""

_WEEK = re.compile(r"([0-9]{4})-W([0-9]{2})")
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")


class PeriodError(ValueError):
    """A period that cannot be read as asked; `field` names what was wrong (the API's
    query parameter, the CLI's option), `message` says which rule it broke."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


@dataclass(frozen=True)
class Period:
    """The events of a period: the positions after `after`, up to `through`."""

    kind: str
    """evening, week, month or range."""
    key: str
    """How it is named: 2026-11-26, 2026-W48, 2026-11, or 2026-11-01..2026-11-14."""
    first: date
    """Its first day, in the club's zone."""
    last: date
    """Its last day (inclusive)."""
    since: str
    """Its first moment, as stored (UTC, inclusive)."""
    until: str
    """The moment after its end (UTC, exclusive)."""
    after: int
    through: int

    def query(self) -> dict[str, str]:
        """How an address asks for it again (the API's and the console's parameters)."""
        if self.kind == "range":
            return {"from": self.first.isoformat(), "to": self.last.isoformat()}
        return {self.kind: self.key}


def asked(
    conn: sa.Connection,
    zone: str,
    *,
    evening: str | None = None,
    week: str | None = None,
    month: str | None = None,
    start: str | None = None,
    end: str | None = None,
) -> Period:
    """The one period asked for (a range: `start` and `end`, the days it runs from and
    to, both included); PeriodError naming the field if none, more than one, or a bad
    one is asked for."""
    given = [
        name
        for name, value in (("evening", evening), ("week", week), ("month", month))
        if value is not None
    ]
    if start is not None or end is not None:
        given.append("from")
    if len(given) != 1:
        raise PeriodError(
            given[1] if given else "period",
            "ask for one period: an evening (its number, or YYYY-MM-DD), a week (YYYY-Www), "
            "a month (YYYY-MM), or a range (from and to, YYYY-MM-DD)"
            + (f", not {' and '.join(given)}" if given else ""),
        )
    if evening is not None:
        if evening.isascii() and evening.isdigit():
            return of_recorded_evening(conn, zone, evening)
        return of_evening(conn, zone, _day(evening, "evening"))
    if week is not None:
        first = _week(week)
        return of_days(conn, zone, "week", week, first, first + timedelta(days=6))
    if month is not None:
        first = _month(month)
        following = (first.replace(day=28) + timedelta(days=4)).replace(day=1)
        return of_days(conn, zone, "month", month, first, following - timedelta(days=1))
    if start is None or end is None:
        raise PeriodError("to" if end is None else "from", "a range needs both from and to")
    first, last = _day(start, "from"), _day(end, "to")
    if last < first:
        raise PeriodError("to", f"to ({last}) is before from ({first})")
    if (last - first).days + 1 > LONGEST:
        raise PeriodError(
            "to", f"a range covers at most {LONGEST} days; asked for {(last - first).days + 1}"
        )
    return of_days(conn, zone, "range", f"{first}..{last}", first, last)


def of_evening(conn: sa.Connection, zone: str, day: date) -> Period:
    """The club's evening of `day`, as ledger.books.evenings has it."""
    evening = evenings.of_day(conn, zone, day)
    return Period(
        "evening", evening.key, day, day, evening.since, evening.until,
        evening.after, evening.through,
    )  # fmt: skip


def of_recorded_evening(conn: sa.Connection, zone: str, number: str) -> Period:
    """The evening the setter opened as number `number`, from its opening to its
    closing (to the log's last event while it is open)."""
    evening = evenings.named(conn, zone, number) if len(number) <= 9 else None
    if evening is None:
        raise PeriodError("evening", f"no evening numbered {number[:40]} was opened")
    first = _local_day(evening.since, zone)
    last = _local_day(_just_before(evening.until), zone)
    return Period(
        "evening", evening.key, first, last, evening.since, evening.until,
        evening.after, evening.through,
    )  # fmt: skip


def _local_day(moment: str, zone: str) -> date:
    at = datetime.strptime(moment, evenings.STORED).replace(tzinfo=UTC)
    return at.astimezone(ZoneInfo(zone)).date()


def of_days(conn: sa.Connection, zone: str, kind: str, key: str, first: date, last: date) -> Period:
    """The days `first` to `last` (inclusive) in the club's `zone`."""
    since = evenings.day_bounds(zone, first)[0]
    until = evenings.day_bounds(zone, last)[1]
    return Period(
        kind, key, first, last, since, until,
        asof.position_at(conn, _just_before(since)), asof.position_at(conn, _just_before(until)),
    )  # fmt: skip


def _just_before(moment: str) -> str:
    """The stored time one microsecond before `moment`: asof.position_at takes "at or
    before", and a period's `until` is exclusive."""
    at = datetime.strptime(moment, evenings.STORED).replace(tzinfo=UTC) - timedelta(microseconds=1)
    return at.strftime(evenings.STORED)


def _in_range(day: date, field: str) -> date:
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise PeriodError(field, f"{field} {day} is outside the years {FIRST_YEAR} to {LAST_YEAR}")
    return day


def _day(text: str, field: str) -> date:
    day = evenings.day_of(text)
    if day is None:
        raise PeriodError(field, f"{field} {text[:40]!r} is not a date as YYYY-MM-DD")
    return _in_range(day, field)


def _week(text: str) -> date:
    """The Monday of ISO week `text` (2026-W48)."""
    found = _WEEK.fullmatch(text)
    try:
        if found is None:
            raise ValueError
        monday = date.fromisocalendar(int(found[1]), int(found[2]), 1)
    except ValueError:
        raise PeriodError("week", f"week {text[:40]!r} is not an ISO week as YYYY-Www") from None
    return _in_range(monday, "week")


def _month(text: str) -> date:
    """The first day of month `text` (2026-11)."""
    found = _MONTH.fullmatch(text)
    try:
        if found is None:
            raise ValueError
        first = date(int(found[1]), int(found[2]), 1)
    except ValueError:
        raise PeriodError("month", f"month {text[:40]!r} is not a month as YYYY-MM") from None
    return _in_range(first, "month")
