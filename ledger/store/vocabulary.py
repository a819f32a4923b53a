"""Every event the store keeps: the engine's table events and the ledger's own.

The ledger's events are the money outside the tables: an account opened, a deposit,
a withdrawal, a credit limit. They sit here, below both the store (whose codec reads
and writes every type named here) and the books (which post them), so that neither
imports the other for them.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from engine.events import TABLE_EVENTS, Event, Transfer
from engine.money import ESCROW, holds
from engine.state import SETTER
from ledger.store.evenings_events import EveningEvent
from ledger.store.limits_events import BreakTaken, LimitSet
from ledger.store.significant_events import SIGNIFICANT_EVENTS, SignificantEvent


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


AccountEvent = AccountOpened | Deposited | Withdrawn | CreditLimitSet | LimitSet | BreakTaken
"""Every event an account's stream may hold: the one list of them."""

ACCOUNT_EVENTS: tuple[type[AccountEvent], ...] = typing.get_args(AccountEvent)
"""The classes of `AccountEvent`, in the order written."""

CLUB_EVENTS: tuple[type[EveningEvent | SignificantEvent], ...] = (
    typing.get_args(EveningEvent) + SIGNIFICANT_EVENTS
)
"""The club's own books' events (streams `club:BOOK`): its evenings and its log of
significant events."""

StoredEvent = Event | AccountEvent | LogSealed | EveningEvent | SignificantEvent

STORED_EVENTS: tuple[type[StoredEvent], ...] = (
    TABLE_EVENTS + ACCOUNT_EVENTS + (LogSealed,) + CLUB_EVENTS
)
"""Every event type the store reads and writes, table events first: the codec's list."""


# -- Whose money an event moves ----------------------------------------------------------
# The ledger is one book for the whole club: each player has one account across tables,
# the setter has one, every bet's escrow is its own account, and deposits and
# withdrawals move money to and from `cash`, the world outside. The store says which
# accounts an event posts to because its seals commit every account's chain of
# postings (ledger.store.log.heads); the books post them (ledger.books.projections).

CASH = "cash"
TABLE_PREFIX = "table:"
ACCOUNT_PREFIX = "account:"
CLUB_PREFIX = "club:"
"""The club's own books: streams that are neither a table's nor an account's, its
evenings (`club:evenings`, ledger.store.evenings_events) and its log of significant
events (`club:significant`, ledger.store.significant_events)."""
EVENINGS = CLUB_PREFIX + "evenings"


def player_account(name: str) -> str:
    return SETTER if name == SETTER else f"player:{name}"


def book_account(table_stream: str, local: str) -> str:
    """The ledger account behind a table's local account name."""
    if local.startswith(ESCROW):
        return f"escrow:{table_stream.removeprefix(TABLE_PREFIX)}:{local.removeprefix(ESCROW)}"
    return player_account(local)


def transfers_of(stream: str, event: StoredEvent) -> tuple[Transfer, ...]:
    """The money an event moves, in ledger accounts."""
    if isinstance(event, Deposited):
        return (Transfer(CASH, event.account, event.amount),)
    if isinstance(event, Withdrawn):
        return (Transfer(event.account, CASH, event.amount),)
    if isinstance(
        event,
        CreditLimitSet
        | AccountOpened
        | LogSealed
        | EveningEvent
        | LimitSet
        | BreakTaken
        | SignificantEvent,
    ):
        return ()
    return tuple(
        Transfer(book_account(stream, t.source), book_account(stream, t.target), t.amount)
        for t in holds(event)
    )


MOVES_MONEY = frozenset(
    cls.__name__
    for cls in STORED_EVENTS
    if {"amount", "stake", "payout", "transfers"} & {f.name for f in dataclasses.fields(cls)}
)
"""The event types that can move money: those with an amount, a stake, a payout or
transfers (`transfers_of` is empty for the others: a test holds it so). The others need
not be decoded to know they post to no account, a third of a table's events (the
throws)."""
