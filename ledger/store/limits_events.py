"""A player's own limits on their play, and their breaks from it: events of the
player's account stream (`account:player:NAME`), so they sit in the signed log beside
the deposits they limit. Neither moves money.

Who set one is the event's actor (the player, or the setter at the player's request);
when it binds is in the event, as a stored UTC time, so that a replay of the log alone
knows which limit was in force at every bet and deposit (ledger.books.limitreplay).
"""

from __future__ import annotations

from dataclasses import dataclass

LIMIT_KINDS = ("deposit_24h", "deposit_7d", "loss_evening", "loss_week", "stake")
"""What a player may limit: deposits over the last 24 hours and the last 7 days,
losses this evening and over the last 7 days, and the largest single stake."""

BREAK_KINDS = ("time-out", "self-exclusion")
"""A time-out (24 hours to 6 weeks) or a self-exclusion (6 months or more)."""


@dataclass(frozen=True, slots=True)
class LimitSet:
    """The player's limit of `kind` is `limit` minor units (None: no limit) from
    `effective_at` on: the moment it was recorded when it lowers the limit, the end of
    the club's cooling-off when it raises or removes it. A later LimitSet of the same
    kind replaces one still waiting."""

    version: int
    account: str
    kind: str
    limit: int | None
    effective_at: str


@dataclass(frozen=True, slots=True)
class BreakTaken:
    """A time-out or a self-exclusion (`kind`): from the moment it is recorded until
    `until` (UTC, as stored) the player stakes nothing and deposits nothing. Nothing
    ends one early: there is no event that could."""

    version: int
    account: str
    kind: str
    until: str
