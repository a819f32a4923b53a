"""A player's limits and breaks: setting a limit, and taking a time-out or a
self-exclusion. The player sets their own; the setter may set them at the player's
request (the events' actor says which). Each is one event on the player's account
stream (ledger.store.limits_events), written in a unit of work like a deposit, at the
time the log records it, so the limit binds from exactly that moment.

Lowering a limit binds at once; raising or removing one binds after the club's
cooling-off (HAZARD_LIMIT_COOLING_OFF, 24 hours by default), and until then the lower
limit holds. A break cannot be lifted or shortened: there is no command for it, and a
second break must end later than the one in force.
"""

from __future__ import annotations

import calendar
from datetime import timedelta
from typing import Any

import engine as hz
from ledger.books import limits
from ledger.books.accounts import account_stream, player_account
from ledger.books.limitrules import parse, shifted, stored
from ledger.commands import Caller, Role, require_role, require_self
from ledger.service import Club, InvalidAmount, NotFound, event_view, is_name
from ledger.store.eventstore import Refused
from ledger.store.limits_events import BREAK_KINDS, LIMIT_KINDS, BreakTaken, LimitSet
from ledger.unit_of_work import UnitOfWork

MOST = 10**15
"""The largest limit, as every amount the API takes: far past any the ledger holds."""
TIME_OUT_HOURS = (24, 6 * 7 * 24)
"""A time-out is 24 hours to 6 weeks."""
EXCLUSION_MONTHS = (6, 120)
"""A self-exclusion is 6 months or more; the ledger takes up to 10 years at a time
(a longer one is a new exclusion taken before this one ends)."""


class InvalidLimit(Refused):
    """A limit or a break the rules do not allow, saying which rule."""


def set_limit(
    club: Club, caller: Caller, player: str, kind: str, limit: int | None, key: str | None = None
) -> dict[str, Any]:
    """Set `player`'s limit of `kind` to `limit` minor units (None: no limit)."""
    require_role(caller, Role.PLAYER)
    require_self(caller, player)
    if kind not in LIMIT_KINDS:
        raise InvalidLimit(f"kind: {kind!r} is not a limit; one of {', '.join(LIMIT_KINDS)}")
    if limit is not None and (type(limit) is not int or not 0 <= limit <= MOST):
        raise InvalidAmount(f"limit must be a whole number of minor units from 0 to {MOST}")
    account = _account(player)
    request = {"limit-set": player, "kind": kind, "limit": limit, "actor": caller.actor}
    uow = UnitOfWork(club.store, key, request)
    if (earlier := uow.earlier()) is not None:
        return earlier
    with uow:
        version = _version(club, uow, player, account)
        now = uow.now()
        held = limits.standing_of(uow.conn, account, now).limits[kind]
        lower = limit is not None and (held.limit is None or limit <= held.limit)
        effective = now if lower else shifted(now, club.house.cooling_off)
        event = LimitSet(version + 1, account, kind, limit, effective)
        rows = uow.record(account_stream(account), version, [event], caller.actor)
        uow.commit(
            {
                "player": player,
                "version": version + 1,
                "kind": kind,
                "limit": limit,
                "effective_at": effective,
                "events": [event_view(r) for r in rows],
            }
        )
    return uow.answer


def take_break(
    club: Club,
    caller: Caller,
    player: str,
    kind: str,
    length: int,
    key: str | None = None,
) -> dict[str, Any]:
    """Start a break for `player`: a time-out of `length` hours, or a self-exclusion of
    `length` months."""
    require_role(caller, Role.PLAYER)
    require_self(caller, player)
    if kind not in BREAK_KINDS:
        raise InvalidLimit(f"kind: {kind!r} is not a break; one of {', '.join(BREAK_KINDS)}")
    least, most = TIME_OUT_HOURS if kind == "time-out" else EXCLUSION_MONTHS
    unit = "hours" if kind == "time-out" else "months"
    if type(length) is not int or not 0 < length <= MOST:
        raise InvalidLimit(f"length: a {kind} is {least} to {most} {unit}")
    account = _account(player)
    request = {"break": player, "kind": kind, "length": length, "actor": caller.actor}
    uow = UnitOfWork(club.store, key, request)
    if (earlier := uow.earlier()) is not None:  # a key used before: its answer, or reused
        return earlier
    if not least <= length <= most:
        raise InvalidLimit(f"length: a {kind} is {least} to {most} {unit}")
    with uow:
        version = _version(club, uow, player, account)
        now = uow.now()
        until = shifted(now, timedelta(hours=length)) if unit == "hours" else months_on(now, length)
        held = limits.standing_of(uow.conn, account, now)
        if held.break_until is not None and until <= held.break_until:
            raise InvalidLimit(
                f"{player} is on a {held.break_kind} until {held.break_until}: a new break "
                "must end later (a break is never shortened)"
            )
        event = BreakTaken(version + 1, account, kind, until)
        rows = uow.record(account_stream(account), version, [event], caller.actor)
        uow.commit(
            {
                "player": player,
                "version": version + 1,
                "kind": kind,
                "since": now,
                "until": until,
                "events": [event_view(r) for r in rows],
            }
        )
    return uow.answer


def months_on(moment: str, months: int) -> str:
    """`moment` (stored UTC) `months` calendar months on, on the last day of a shorter
    month (31 August + 6 months is 28 or 29 February)."""
    at = parse(moment)
    month = at.month - 1 + months
    year, month = at.year + month // 12, month % 12 + 1
    day = min(at.day, calendar.monthrange(year, month)[1])
    return stored(at.replace(year=year, month=month, day=day))


def _account(player: str) -> str:
    if not is_name(player) or player == hz.SETTER:
        raise NotFound(f"there is no player {player!r}")
    return player_account(player)


def _version(club: Club, uow: UnitOfWork, player: str, account: str) -> int:
    version: int = club.store.stream_version(uow.conn, account_stream(account))
    if not version:
        raise NotFound(f"there is no player {player!r}")
    return version


def standing(club: Club, caller: Caller, player: str) -> dict[str, Any]:
    """`player`'s limits, break and reality check as they stand now (the player, the
    setter or the auditor; a player only their own)."""
    require_role(caller, Role.PLAYER, Role.AUDITOR)
    require_self(caller, player)
    account = _account(player)
    if not club.player_exists(player):
        raise NotFound(f"there is no player {player!r}")
    now = club.store.clock()
    zone = club.house.zone
    with club.store.engine.connect() as conn:
        shown = limits.view(conn, account, now, zone)
        checked = limits.reality(conn, account, now, zone)
    return {
        "player": player,
        **shown,
        "reality": checked,
        "cooling_off_hours": int(club.house.cooling_off.total_seconds() // 3600),
        "reality_check_minutes": int(club.house.reality_check.total_seconds() // 60),
    }
