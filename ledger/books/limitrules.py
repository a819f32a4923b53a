"""What a player's limit and break events put in force at a moment: one fold over
them, read alike by the write that enforces them (ledger.books.limits) and by the
checks that replay the log (ledger.books.limitreplay), so the two cannot disagree on
which limit held.

A limit of each kind is the one in force and, perhaps, one waiting for the end of its
cooling-off. An event whose `effective_at` is its own recording time binds at once (a
lower limit); a later one waits, and any later LimitSet of the kind replaces what was
waiting, so a player who raises and then thinks better of it keeps the lower limit.
A break binds from its recording to its `until`; a second break never shortens the
first: the later end holds.

Times are compared as the ledger stores them (ISO text in UTC, to the microsecond), in
which text order is time order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ledger.store.limits_events import LIMIT_KINDS, BreakTaken, LimitSet

STORED = "%Y-%m-%dT%H:%M:%S.%fZ"


def parse(moment: str) -> datetime:
    return datetime.strptime(moment, STORED).replace(tzinfo=UTC)


def stored(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(STORED)


def shifted(moment: str, by: timedelta) -> str:
    """A stored time moved by `by`, written as stored."""
    return stored(parse(moment) + by)


@dataclass
class Limit:
    """One kind of limit: the amount in force (None: none) and what waits to replace it."""

    kind: str
    limit: int | None = None
    waiting: tuple[int | None, str] | None = None
    """(the amount, from when) of a raise in its cooling-off."""

    def at(self, moment: str) -> Limit:
        """This limit as it stands at `moment`: a raise whose cooling-off has ended is
        in force."""
        if self.waiting is not None and self.waiting[1] <= moment:
            return Limit(self.kind, self.waiting[0], None)
        return Limit(self.kind, self.limit, self.waiting)

    def then(self, event: LimitSet, recorded_at: str) -> Limit:
        """This limit after `event`, recorded at `recorded_at`."""
        if event.effective_at <= recorded_at:
            return Limit(self.kind, event.limit, None)
        return Limit(self.kind, self.at(recorded_at).limit, (event.limit, event.effective_at))


@dataclass
class Standing:
    """A player's limits and break, as their events leave them."""

    limits: dict[str, Limit] = field(default_factory=lambda: {k: Limit(k) for k in LIMIT_KINDS})
    break_kind: str | None = None
    break_until: str | None = None

    def apply(self, event: LimitSet | BreakTaken, recorded_at: str) -> None:
        if isinstance(event, LimitSet):
            self.limits[event.kind] = self.limits[event.kind].then(event, recorded_at)
        elif self.break_until is None or event.until > self.break_until:
            self.break_kind, self.break_until = event.kind, event.until

    def at(self, moment: str) -> Standing:
        """The standing at `moment`: raises past their cooling-off in force, a break
        that has ended gone."""
        on_break = self.break_until is not None and moment < self.break_until
        return Standing(
            {k: v.at(moment) for k, v in self.limits.items()},
            self.break_kind if on_break else None,
            self.break_until if on_break else None,
        )

    def limit(self, kind: str) -> int | None:
        return self.limits[kind].limit


def standing(events: Iterable[tuple[str, LimitSet | BreakTaken]], moment: str) -> Standing:
    """The standing at `moment` of a player whose limit and break events are `events`,
    each with its recording time, in the log's order."""
    folded = Standing()
    for recorded_at, event in events:
        folded.apply(event, recorded_at)
    return folded.at(moment)
