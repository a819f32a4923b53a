"""The club's evenings: opened with the float counted at each table and at the cage,
closed with the cash counted at each (the cash-up). They live in the club's own stream
`club:evenings` (ledger.store.vocabulary.EVENINGS), inside the signed log like every
table's and account's events.

No money moves in them: a float or a count is what the setter found in a drawer, not a
transfer between accounts, so none of their fields is an `amount` (the store's list of
events that move money, vocabulary.MOVES_MONEY, goes by that name). Who counted is the
event's actor and when is its recorded time, as for every event (docs/auditor.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EveningOpened:
    """The setter opens evening number `evening` (1, 2, ... in the order opened)."""

    version: int
    evening: int


@dataclass(frozen=True, slots=True)
class FloatCounted:
    """The float counted into a place at the opening: a table's drawer (`table`, its id)
    or the cage (`table` None), where deposits come in and withdrawals go out."""

    version: int
    evening: int
    table: str | None
    counted: int


@dataclass(frozen=True, slots=True)
class CashCounted:
    """A line of the cash-up: what was counted at a place, what the books say should be
    there (`expected`: ledger.books.evenings.expected says how), and the difference,
    counted less expected, kept as it was found: short is negative, over positive."""

    version: int
    evening: int
    table: str | None
    counted: int
    expected: int
    difference: int


@dataclass(frozen=True, slots=True)
class EveningClosed:
    """The end of the cash-up: the evening's span of the log ends here."""

    version: int
    evening: int


EveningEvent = EveningOpened | FloatCounted | CashCounted | EveningClosed
"""Every event the evenings' stream may hold."""
