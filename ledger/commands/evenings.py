"""The setter's evenings: opening one with the float counted at each table and at the
cage, and closing it with the cash counted at each (the cash-up). Each is one write of
the club's stream `club:evenings` (ledger.store.evenings_events), in one unit of work, so
the check that no other evening is open and the figures the cash-up expects are read in
the same transaction that records them.

Refused, writing nothing: anyone but the setter (`NotPermitted`); opening while one is
open, closing when none is (`EveningRefused`, 409); a float or a count for a table that
does not exist or is not in the evening, a place left uncounted, a count that is not a
whole number from 0 to MOST_COUNTED (`EveningRefused`, 422). Each refusal names its rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from ledger.books import cashup, evenings
from ledger.commands import Caller, Sent, require_role
from ledger.service import Club, event_view, is_name, table_stream
from ledger.store.evenings_events import CashCounted, EveningClosed, EveningOpened, FloatCounted
from ledger.store.eventstore import Refused
from ledger.store.vocabulary import EVENINGS
from ledger.unit_of_work import UnitOfWork

MOST_COUNTED = 10**12
"""The most a count may be, in minor units (ten thousand million pounds): anything more
is a slip of the keyboard, not a drawer."""
MOST_PLACES = 500
"""The most tables one opening or cash-up counts."""
CAGE = "cage"
"""How a count names the cage in the answers (the events say None)."""


RULES = {
    "evening-open": "409: an evening is open already: close it first",
    "no-evening-open": "409: no evening is open to close",
    "no-such-table": "422: a float or a count names a table that does not exist",
    "table-not-in-evening": "422: a count for a table with no float and no takings in the evening",
    "place-not-counted": "422: the cash-up leaves a table of the evening uncounted",
    "bad-count": "422: a count that is not a whole number of minor units from 0 to 10^12",
    "too-many-tables": f"422: more than {MOST_PLACES} tables in one count",
}
"""Each rule of the evenings a refusal names (`EveningRefused.rule`), with its status."""


class EveningRefused(Refused):
    """A rule of the evenings broken: `rule` names it, `status` is its HTTP status."""

    def __init__(self, rule: str, detail: str, status: int = 422) -> None:
        assert rule in RULES
        super().__init__(detail)
        self.rule, self.detail, self.status = rule, detail, status


def open_evening(
    club: Club,
    caller: Caller,
    floats: Mapping[str, Any],
    cage: Any = 0,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """Open the next evening with `floats` counted at the tables (table id to minor
    units) and `cage` at the cage."""
    require_role(caller)
    counted = _counts(floats, cage, "float")
    uow = UnitOfWork(club.store, sent.get("key"), {"open-evening": _plain(counted), **_asked(sent)})
    if (earlier := uow.earlier()) is not None:
        return earlier
    with uow:
        found = evenings.recorded(uow.conn)
        if found and found[-1].is_open:
            raise EveningRefused(
                "evening-open", f"evening {found[-1].number} is still open: close it first", 409
            )
        for table in counted:
            if table is not None and not club.store.stream_version(uow.conn, table_stream(table)):
                raise EveningRefused("no-such-table", f"there is no table {table!r} to float")
        number, version = len(found) + 1, club.store.stream_version(uow.conn, EVENINGS)
        drafted: list[Any] = [EveningOpened(version + 1, number)]
        for table in sorted(counted, key=_place_order):
            drafted.append(FloatCounted(version + len(drafted) + 1, number, table, counted[table]))
        rows = uow.record(EVENINGS, version, drafted, caller.actor)
        uow.commit(
            {
                "evening": number,
                "version": version + len(drafted),
                "floats": _plain(counted),
                "events": [event_view(r) for r in rows],
            }
        )
    return uow.answer


def close_evening(
    club: Club,
    caller: Caller,
    counts: Mapping[str, Any],
    cage: Any,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """Close the evening open now: the cash counted at each table and at the cage. Each
    place's line records the count, what the books expect there (ledger.books.cashup)
    and the difference, counted less expected."""
    require_role(caller)
    counted = _counts(counts, cage, "count")
    uow = UnitOfWork(
        club.store, sent.get("key"), {"close-evening": _plain(counted), **_asked(sent)}
    )
    if (earlier := uow.earlier()) is not None:
        return earlier
    with uow:
        found = evenings.recorded(uow.conn)
        if not found or not found[-1].is_open:
            raise EveningRefused("no-evening-open", "no evening is open to close", 409)
        evening = found[-1]
        expected = cashup.expected(uow.conn, evening.span(uow.conn), evening.floats)
        _same_places(counted, expected, evening.number)
        version = club.store.stream_version(uow.conn, EVENINGS)
        drafted: list[Any] = []
        lines = []
        for place in sorted(expected, key=_place_order):
            line = CashCounted(
                version + len(drafted) + 1,
                evening.number,
                place,
                counted[place],
                expected[place],
                counted[place] - expected[place],
            )
            drafted.append(line)
            lines.append(line_view(line, evening.floats.get(place, 0)))
        drafted.append(EveningClosed(version + len(drafted) + 1, evening.number))
        rows = uow.record(EVENINGS, version, drafted, caller.actor)
        uow.commit(
            {
                "evening": evening.number,
                "version": version + len(drafted),
                "cash_up": lines,
                "events": [event_view(r) for r in rows],
            }
        )
    return uow.answer


def line_view(line: CashCounted, floated: int) -> dict[str, Any]:
    """A line of the cash-up as the answers and the night report show it."""
    return {
        "place": CAGE if line.table is None else line.table,
        "table": line.table,
        "float": floated,
        "counted": line.counted,
        "expected": line.expected,
        "difference": line.difference,
    }


def _counts(tables: Mapping[str, Any], cage: Any, what: str) -> dict[str | None, int]:
    """The counts as the events take them (None: the cage), each checked."""
    if not isinstance(tables, Mapping):
        raise EveningRefused("bad-count", f"the {what}s are given per table, by its id")
    if len(tables) > MOST_PLACES:
        raise EveningRefused("too-many-tables", f"at most {MOST_PLACES} tables an evening")
    found: dict[str | None, int] = {}
    for table, amount in tables.items():
        if not isinstance(table, str) or not is_name(table):
            raise EveningRefused("no-such-table", f"there is no table {table!r}")
        found[table] = _amount(amount, f"the {what} at table {table}")
    found[None] = _amount(cage, f"the {what} at the cage")
    return found


def _amount(value: Any, what: str) -> int:
    if type(value) is not int or not 0 <= value <= MOST_COUNTED:
        raise EveningRefused(
            "bad-count",
            f"{what} must be a whole number of minor units from 0 to {MOST_COUNTED}",
        )
    return value


def _same_places(
    counted: Mapping[str | None, int], expected: Mapping[str | None, int], n: int
) -> None:
    """The cash-up counts every place of the evening, and only those: a table floated
    or whose takings moved during it, and the cage."""
    strangers = sorted(str(t) for t in counted if t not in expected)
    if strangers:
        raise EveningRefused(
            "table-not-in-evening",
            f"table {strangers[0]} is not in evening {n}: it had no float and no takings",
        )
    missing = sorted(str(t) for t in expected if t not in counted)
    if missing:
        raise EveningRefused(
            "place-not-counted",
            f"the cash-up counts every table of evening {n}: {', '.join(missing)} not counted",
        )


def _place_order(place: str | None) -> tuple[int, str]:
    """Tables by id, then the cage."""
    return (1, "") if place is None else (0, place)


def _plain(counted: Mapping[str | None, int]) -> dict[str, int]:
    return {CAGE if place is None else f"table:{place}": n for place, n in counted.items()}


def _asked(sent: Sent) -> dict[str, Any]:
    request = sent.get("request")
    return {"request": dict(request)} if request else {}
