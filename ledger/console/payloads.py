"""An event's payload as readable fields, for the auditor's pages (the event log, a
round's replay): a definition list of its fields, each named in words, money in the
club's currency, accounts by whose they are, nested values as nested lists. What the
log holds is unchanged, and exported as it is; this is only how a person reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from engine.errors import Between
from ledger.console.amounts import said
from ledger.house import House

MONEY = frozenset(
    {"amount", "stake", "asks", "payout", "limit", "min_stake", "max_stake", "max_exposure"}
)
"""The payload fields that hold money, in minor units (engine.events, ledger.store.vocabulary)."""
ACCOUNTS = frozenset(
    {
        "account",
        "source",
        "target",
        "winner",
        "caster",
        "bettor",
        "offerer",
        "acceptor",
        "player",
        "to",
        "claimant",
    }
)
"""The fields that name an account or a player."""
LABELS = {"bet_id": "bet", "die1": "first die", "die2": "second die", "dispute_id": "dispute"}


@dataclass(frozen=True)
class Field:
    label: str
    text: str = ""
    fields: list[Field] = field(default_factory=list)
    """A nested value's own fields (a dict's, or a list's items, each a Field)."""


def fields(payload: dict[str, Any], house: House) -> list[Field]:
    """The payload's fields, in its own order."""
    return [_field(name, value, house) for name, value in payload.items()]


def _field(name: str, value: Any, house: House) -> Field:
    label = LABELS.get(name, name.replace("_", " "))
    if isinstance(value, dict):
        return Field(label, fields=fields(value, house))
    if isinstance(value, list):
        if all(isinstance(v, dict) for v in value) and value:
            return Field(label, fields=[_item(i, v, house) for i, v in enumerate(value, 1)])
        return Field(label, ", ".join(_scalar(name, v, house) for v in value) or "none")
    return Field(label, _scalar(name, value, house))


def _item(number: int, value: dict[str, Any], house: House) -> Field:
    """An item of a list: a transfer in one line, anything else its fields."""
    if {"source", "target", "amount"} <= value.keys():
        line = (
            f"{party(value['source'])} → {party(value['target'])}: {house.money(value['amount'])}"
        )
        return Field(f"{number}", line)
    return Field(f"{number}", fields=fields(value, house))


def _scalar(name: str, value: Any, house: House) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name in MONEY and isinstance(value, int):
        return house.money(value)
    if name in ACCOUNTS and isinstance(value, str):
        return party(value)
    if name == "breakage" and isinstance(value, str):
        kept = Fraction(value)
        # Part of a minor unit, said as part of the club's smallest coin ("1/2 of a penny").
        return "none" if not kept else f"{said(house, Between(kept))}, kept by the table"
    return str(value)


def party(account: str | None) -> str:
    """A ledger account (or a table's own name for one) as a person reads it: "player:ann"
    and "ann" are ann, "setter" the setter, "escrow:t1:b9" (or "escrow:b9") bet b9's
    stakes, "cash" money in or out of the club."""
    if not account:
        return "—"
    if account == "setter":
        return "the setter"
    if account.startswith("escrow:"):
        return f"bet {account.rsplit(':', 1)[-1]}'s stakes"
    return account.removeprefix("player:")
