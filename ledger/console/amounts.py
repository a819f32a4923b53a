"""Amounts as a person types them at the table and when opening one: in the club's major
units ("12.50"), read exactly into the minor units the API's schemas take by the same
reader the office uses (ledger.house.House.parse). The API itself keeps minor units;
only the page converts.

A typed amount the club cannot read is refused as a field of the form, naming the rule
it broke ("stake: 12.345 has 3 decimal places: GBP is counted to the penny, ..."), and
an amount out of the schema's range is said in the club's money, never in minor units,
as is every amount a refusal of the engine or the books names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from engine.errors import Amount, RuleBroken
from ledger.books.limits import LimitReached, OnBreak
from ledger.books.projections import CreditInUse, Overdraft
from ledger.console.views import _fields
from ledger.house import CURRENCIES, BadAmount, House
from ledger.store.eventstore import Refused


def read(house: House, form: Mapping[str, str], field: str) -> int:
    """The amount typed in `field`, in minor units; a ValidationError of that field
    (the rule it broke) when the club cannot read it exactly."""
    try:
        return house.parse(form[field])
    except BadAmount as exc:
        raise ValidationError({field: [str(exc)]}) from exc


MONEY = frozenset({"amount", "stake", "asks", "min_stake", "max_stake", "max_exposure"})
"""The fields of the table's forms that hold money."""


def refusal(house: House, exc: ValidationError, schema: Schema) -> str:
    """The schema's refusal, a money field's range said in the club's money ("amount:
    an amount from £0.01 to £10,000,000,000,000.00") rather than the minor units the
    API speaks; a nested schema's fields (the limits) by their own names."""
    messages = exc.normalized_messages()  # type: ignore[no-untyped-call]
    if not isinstance(messages, dict):
        return _fields(exc)
    return _fields(ValidationError(_said(house, messages, schema)))


def _said(house: House, messages: dict[str, Any], schema: Schema) -> dict[str, Any]:
    said: dict[str, Any] = {}
    for name, message in messages.items():
        field = schema.fields.get(name)
        if isinstance(message, dict) and isinstance(field, fields.Nested):
            said.update(_said(house, message, field.schema))
            continue
        bounds = _range(field) if name in MONEY else None
        if (
            bounds is not None
            and bounds.min is not None
            and bounds.max is not None
            and message == [_out_of(bounds)]  # the range's refusal, not the reader's
        ):
            least, most = house.money(int(bounds.min)), house.money(int(bounds.max))
            said[name] = [f"an amount from {least} to {most}"]
        else:
            said[name] = message
    return said


def _out_of(bounds: validate.Range) -> str:
    """The Range's own refusal of a value outside it, as marshmallow words it."""
    return bounds.message_all.format(min=bounds.min, max=bounds.max)


def _range(field: fields.Field[Any] | None) -> validate.Range | None:
    found = [v for v in getattr(field, "validators", []) if isinstance(v, validate.Range)]
    return found[0] if found else None


def rule_words(house: House, broken: RuleBroken) -> str:
    """A rule's refusal as the page says it: its amounts in the club's money ("the stake
    of £0.50 is below the table minimum of £1.00"), written from the amounts the engine
    gives as data (RuleBroken.amounts), where the engine, which knows no currency, writes
    minor units; a refusal that names no amount as the engine words it."""
    return broken.said(money_words(house))


def money_words(house: House) -> Callable[[Amount], str]:
    """How the engine's words name an amount on a page: in the club's money (`said`),
    for words it keeps its amounts in as data (engine.phrase.Phrase.said, a what-if's)."""
    return lambda amount: said(house, amount)


def said(house: House, amount: Amount) -> str:
    """An amount a refusal names, in the club's money: £12.50, or a payout between
    pennies as "£0.52 and 1/2 of a penny"."""
    if isinstance(amount, int):
        return house.money(amount)
    whole, part = divmod(amount.exact, 1)
    of = f"{part.numerator}/{part.denominator} of {_smallest(house)}"
    return f"{house.money(int(whole))} and {of}" if whole else of


def _smallest(house: House) -> str:
    """The club's smallest coin, by name where the currency has one ("a penny", "a
    yen"), else as money ("SEK 0.01")."""
    known = CURRENCIES.get(house.currency)
    if known and house.minor_units == known[5]:
        name = known[3] or known[1]  # a currency without a minor unit counts in its major
        return f"a {name}"
    return house.money(1)


def refused_words(house: House, exc: Refused) -> str:
    """The books' refusal of a write, its amounts in the club's money: the sentence the
    API says (ledger.books.projections), from the refusal's own fields."""
    money = house.money
    if isinstance(exc, Overdraft):  # a stake one cannot fund: whose, by name
        player = exc.account.split(":", 1)[-1]
        credit = (
            f"below their credit limit of {money(exc.credit_limit)}"
            if exc.credit_limit
            else "and they have no credit"
        )
        return (
            f"not enough funds (overdraft): {player} would stand at {money(exc.balance)}, {credit}"
        )
    if isinstance(exc, CreditInUse):
        return (
            f"{exc.account} has drawn {money(exc.drawn)} on its credit: its limit cannot go "
            f"below {money(exc.drawn)} (asked for {money(exc.credit_limit)}) until that is "
            "repaid"
        )
    if isinstance(exc, LimitReached):
        return exc.words(money)
    if isinstance(exc, OnBreak):
        return exc.words(house.when)
    return str(exc)
