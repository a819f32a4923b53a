"""The log of significant events: who signed in, who made or revoked a token, which
club setting changed, which writes the lock refused. They live in one stream,
`club:significant`, inside the signed log like every bet.

Each says who did it by the event's actor (as every event does) and what changed,
with the value before and after where there is one. A flood is one event with a count:
sign-ins and refused writes are counted in memory and written at most once a window
(ledger.commands.significant), so `first_at` and `last_at` say when the window's first
and last happened (UTC, as the store records times). No event holds a token's secret:
a token is named by its id, which `hazard token list` shows.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

STREAM = "club:significant"


@dataclass(frozen=True, slots=True)
class TokenCreated:
    """A bearer token was made for `name` in `role`; `token` is its id, never its secret."""

    version: int
    token: str
    role: str
    name: str


@dataclass(frozen=True, slots=True)
class TokenRevoked:
    """The token `token` was revoked: its next request is refused."""

    version: int
    token: str
    role: str
    name: str


@dataclass(frozen=True, slots=True)
class TokensFound:
    """The tokens the tokens table held when this log began (made before tokens were
    recorded as events): their ids, and those of them already revoked, space-separated.
    Written once, as the first event of the stream."""

    version: int
    tokens: str
    revoked: str


@dataclass(frozen=True, slots=True)
class SignIns:
    """`count` console sign-ins or sign-outs with one outcome and one token between
    `first_at` and `last_at`. `outcome`: "signed in", "refused" or "signed out". A
    refused one names the token only when the secret typed was a token's (a revoked
    one), by its id; else `token`, `role` and `name` are None."""

    version: int
    outcome: str
    token: str | None
    role: str | None
    name: str | None
    count: int
    first_at: str
    last_at: str


@dataclass(frozen=True, slots=True)
class SettingChanged:
    """A club setting (`setting`: HAZARD_CURRENCY, the witnesses' policy, ...) differs
    from the last one recorded, as the service started: `before` None is its first
    record."""

    version: int
    setting: str
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class WritesRefused:
    """`count` writes refused because the lock was not had within the lock timeout
    (answered 503 with Retry-After), between `first_at` and `last_at`."""

    version: int
    count: int
    first_at: str
    last_at: str


SignificantEvent = (
    TokenCreated | TokenRevoked | TokensFound | SignIns | SettingChanged | WritesRefused
)
"""Every event `club:significant` may hold."""

SIGNIFICANT_EVENTS: tuple[type[SignificantEvent], ...] = typing.get_args(SignificantEvent)
