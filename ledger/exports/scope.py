"""What an export covers: a table's session, a player's statement, a time range of the
whole club, or the whole log, each checked before anything is read.

Times are taken in any ISO 8601 form (a date, or a date and time with `Z`, an offset,
or none, which means UTC) and kept in the one form `recorded_at` is written in
(ledger.store.eventstore.utc_now: `2026-11-23T14:02:11.123456Z`). That form sorts as
text in time order, so "since" and "until" compare with the column directly: `since`
inclusive, `until` exclusive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from ledger.books.accounts import NAME, NAME_RULE

KINDS = ("table", "player", "range", "all")


class ScopeError(ValueError):
    """A scope that cannot be exported as asked: a bad combination, a bad name or time.
    `field` names what was wrong (the API's query parameter, the CLI's option)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class NotFound(LookupError):
    """No such table or player (or nothing at all in the log yet)."""


@dataclass(frozen=True)
class Scope:
    kind: str
    table: str | None = None
    player: str | None = None
    since: str | None = None
    until: str | None = None

    def view(self) -> dict[str, Any]:
        """The header's `scope` object."""
        return {
            "kind": self.kind,
            "player": self.player,
            "since": self.since,
            "table": self.table,
            "until": self.until,
        }

    def filename(self, suffix: str) -> str:
        """A file name that says what is in it, e.g. `hazard-table-t1.jsonl`. Names
        are safe in a file name and a header (accounts.NAME); times go in compact form
        (`20261123T140211Z`), without the colons some systems refuse."""
        parts = ["hazard", self.kind]
        if self.table is not None:
            parts.append(self.table)
        if self.player is not None:
            parts.append(self.player)
        if self.since is not None:
            parts.append("from-" + _compact(self.since))
        if self.until is not None:
            parts.append("to-" + _compact(self.until))
        return "-".join(parts) + "." + suffix.lstrip(".")


def _compact(when: str) -> str:
    # "2026-11-23T14:02:11.123456Z" -> "20261123T140211Z" (plus ".123456" if not zero).
    day, _, clock = when.rstrip("Z").partition("T")
    seconds, _, micros = clock.partition(".")
    text = day.replace("-", "") + "T" + seconds.replace(":", "")
    if micros.strip("0"):
        text += "." + micros
    return text + "Z"


def moment(text: str, field: str) -> str:
    """`text`, an ISO 8601 date or date-time, as recorded_at is written (UTC,
    microseconds, `Z`); ScopeError naming `field` if it is not one."""
    value = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            when = datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
        else:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*", value):
                raise ValueError
            when = datetime.fromisoformat(value.replace("z", "Z"))
            when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ScopeError(
            field,
            f"{field} {text!r} is not an ISO 8601 date or time "
            "(such as 2026-11-23 or 2026-11-23T14:02:11Z)",
        ) from None
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _name(value: str, field: str) -> str:
    if not re.fullmatch(NAME, value):
        raise ScopeError(field, f"{field} {value!r} is not a name: {NAME_RULE}")
    return value


def scope_of(
    table: str | None = None,
    player: str | None = None,
    since: str | None = None,
    until: str | None = None,
    everything: bool = False,
) -> Scope:
    """The scope asked for, checked: exactly one of a table, a player or the whole log
    (`everything`), or a time range alone (since and/or until: the whole club's).
    A table's or a player's may also have a time range; the whole log has none."""
    chosen = [n for n, v in (("table", table), ("player", player)) if v is not None]
    if everything:
        chosen.append("all")
    if len(chosen) > 1:
        raise ScopeError(
            chosen[1], f"export one of a table, a player or everything, not {' and '.join(chosen)}"
        )
    if everything and (since is not None or until is not None):
        raise ScopeError(
            "since" if since is not None else "until",
            "the whole log has no time range: give since/until alone for the club's",
        )
    start = moment(since, "since") if since is not None else None
    end = moment(until, "until") if until is not None else None
    if start is not None and end is not None and not start < end:
        raise ScopeError("until", f"until ({end}) must be after since ({start})")
    if table is not None:
        return Scope("table", table=_name(table, "table"), since=start, until=end)
    if player is not None:
        return Scope("player", player=_name(player, "player"), since=start, until=end)
    if everything:
        return Scope("all")
    if start is None and end is None:
        raise ScopeError(
            "scope", "say what to export: a table, a player, a time range (since/until) or all"
        )
    return Scope("range", since=start, until=end)
