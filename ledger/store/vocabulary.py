"""Every event the store keeps: the engine's table events and the ledger's own.

The ledger's events are the money outside the tables: an account opened, a deposit,
a withdrawal, a credit limit. They sit here, below both the store (whose codec reads
and writes every type named here) and the books (which post them), so that neither
imports the other for them.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

from engine.events import TABLE_EVENTS, Event


@dataclass(frozen=True, slots=True)
class AccountOpened:
    """A player joins the club: their account exists from here on."""

    version: int
    account: str


@dataclass(frozen=True, slots=True)
class Deposited:
    version: int
    account: str
    amount: int


@dataclass(frozen=True, slots=True)
class Withdrawn:
    version: int
    account: str
    amount: int


@dataclass(frozen=True, slots=True)
class CreditLimitSet:
    """The setter lets `account` go as far as `limit` below zero."""

    version: int
    account: str
    limit: int


@dataclass(frozen=True, slots=True)
class LogSealed:
    """The end of a write: the root of the tree of every stream's and account's head
    after the write's events (ledger.store.log.heads), and how many heads it has. The
    one event of the log's own stream, `log`; its version numbers the checkpoint the
    write signs, whose size is this event's position."""

    version: int
    root: str
    heads: int


AccountEvent = AccountOpened | Deposited | Withdrawn | CreditLimitSet
"""Every event an account's stream may hold: the one list of them."""

ACCOUNT_EVENTS: tuple[type[AccountEvent], ...] = typing.get_args(AccountEvent)
"""The classes of `AccountEvent`, in the order written."""

StoredEvent = Event | AccountEvent | LogSealed

STORED_EVENTS: tuple[type[StoredEvent], ...] = TABLE_EVENTS + ACCOUNT_EVENTS + (LogSealed,)
"""Every event type the store reads and writes, table events first: the codec's list."""
