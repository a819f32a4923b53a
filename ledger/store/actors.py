"""Who an event says wrote it: its actor, `role:name#tag`.

The role and name are the caller's (`croupier:cecil`); the tag is the start of the id
of the token that made the request, as `hazard token list` shows it (`#3f9c0a1b`), so
that two tokens given one name, one after the other was revoked, are never one actor.
A write no token makes has no tag: the command line's (`setter:cli`, and `hazard
dispute --as croupier:cecil`). Neither have the events written before tokens were
named in actors; they read as before, and are matched by role and name.

A tag is hex, and a token's name holds no `#` (ledger.web.tokens refuses one), so the
last `#` followed by a tag ends the name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

TAG = re.compile(r"[0-9a-f]{8,32}")
"""A token's tag: its id's first eight hex characters (its whole id, for a token a
database made before tags shared those with another)."""


def actor(role: str, name: str, tag: str | None = None) -> str:
    """The actor events record for `role` and `name`, written by the token `tag`."""
    return f"{role}:{name}" if tag is None else f"{role}:{name}#{tag}"


@dataclass(frozen=True, slots=True)
class Actor:
    """An actor read back: its role, name, and tag (None when no token is named)."""

    role: str
    name: str
    tag: str | None = None

    @classmethod
    def read(cls, text: str) -> Actor:
        role, _, rest = text.partition(":")
        name, hashed, tag = rest.rpartition("#")
        if hashed and TAG.fullmatch(tag):
            return cls(role, name, tag)
        return cls(role, rest)

    def may_be(self, role: str, name: str, tag: str | None) -> bool:
        """Whether an event recorded as this actor may be the one of `role` and `name`
        holding the token `tag`: the same token; or, with no token named in the event,
        the same role and name."""
        if (self.role, self.name) != (role, name):
            return False
        return self.tag is None or self.tag == tag


def recorded_by(column: Any, given: str) -> sa.ColumnElement[bool]:
    """`column` (an event's actor) names `given`: with a tag, that token's events; with
    none, every token's of that role and name, and the events no token is named in."""
    if Actor.read(given).tag is not None:
        return column == given  # type: ignore[no-any-return]
    pattern = given.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "#%"
    return sa.or_(column == given, column.like(pattern, escape="\\"))
