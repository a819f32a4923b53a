"""The club's commands: what a person asks of a table, one plain function each, below
every surface that asks.

A command takes the club (ledger.service.Club), the caller as plain values (a `Caller`:
a role, a name and their token's tag, whose actor the events record) and the command's
own values, and runs one engine command through `Club.command`: one unit of work that
loads the table, decides, records and answers. So the REST API (ledger.api), the
console's forms (ledger.console) and the command line (ledger.cli) each only read what
was sent, call the same function, and show its answer or its refusal in their own way;
none of them holds a rule of the game or of who may do what. As cosmicpython's
`service_layer/handlers.py` (`allocate`) is to its Flask app.

    tables.seat(club, "t1", Caller(Role.CROUPIER, "cecil"), "ann", key="k1")

Who may send a table's command is the command's to say: the role (`require_role`)
and, for a player, that they act for themselves (`require_self`), refused with
`NotPermitted` before anything is read; and what the table itself allows (only the
caster stakes), refused with `Forbidden` as the engine decides. The dispute commands
take the claimant as the engine judges a claim (ledger.commands.disputes); who may
open or resolve one is still said where it is sent (the API's roles, the CLI's --as).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import engine as hz
from ledger.service import Forbidden
from ledger.store.actors import Actor, actor


class Role(enum.Enum):
    SETTER = "setter"
    """The bank: everything."""
    CROUPIER = "croupier"
    """Runs tables, play and bets; no deposits, withdrawals or credit."""
    AUDITOR = "auditor"
    """Reads everything, writes nothing."""
    PLAYER = "player"
    """Reads their own account and public table state; places their own bets."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sends a command: their role and their name (a token's holder, the person
    signed in to the console, the command line's setter), and the tag of the token they
    hold, when they hold one (ledger.store.actors)."""

    role: Role
    name: str
    tag: str | None = None

    @property
    def actor(self) -> str:
        """What events record as their actor: `role:name#tag`, or `role:name` for a
        caller no token names."""
        return actor(self.role.value, self.name, self.tag)

    def recorded(self, text: str) -> bool:
        """Whether an event whose actor is `text` is this caller's: written with their
        token, or, naming no token, under their role and name."""
        return Actor.read(text).may_be(self.role.value, self.name, self.tag)


class Sent(TypedDict, total=False):
    """How a command was sent, for its unit of work (ledger.service.Club.command)."""

    key: str | None
    """The idempotency key, scoped to the caller: a repeat is answered, not run again."""
    if_match: int | None
    """The table's version as the caller last saw it: StaleVersion if it has moved on."""
    request: Mapping[str, Any] | None
    """What the key's answer is remembered against: the same key with another request
    is refused (IdempotencyConflict)."""


class NotPermitted(Forbidden):
    """The caller's role may not send this command, or a player sent it for another:
    refused before the table is read (a 403 over HTTP, as any Forbidden)."""


def require_role(caller: Caller, *roles: Role) -> None:
    """The caller must hold one of `roles`; the setter may do anything."""
    if caller.role is not Role.SETTER and caller.role not in roles:
        raise NotPermitted(f"a {caller.role.value} may not do this")


def require_self(caller: Caller, player: str) -> None:
    """A player acts only for themselves."""
    if caller.role is Role.PLAYER and caller.name != player:
        raise NotPermitted(f"a player acts for themselves only, not for {player!r}")


def caster_only(caller: Caller, st: hz.TableState) -> None:
    """A player acting as the caster must be the caster."""
    if caller.role is Role.PLAYER and st.caster != caller.name:
        raise Forbidden(f"only the caster ({st.caster}) does this, not {caller.name!r}")
