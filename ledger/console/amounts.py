"""Amounts as a person types them at the table and when opening one: in the club's major
units ("12.50"), read exactly into the minor units the API's schemas take by the same
reader the office uses (ledger.house.House.parse). The API itself keeps minor units;
only the page converts.

A typed amount the club cannot read is refused as a field of the form, naming the rule
it broke ("stake: 12.345 has 3 decimal places: GBP is counted to the penny, ..."), and
an amount out of the schema's range is said in the club's money, never in minor units.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from ledger.console.views import _fields
from ledger.house import BadAmount, House


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


_LIMITS = {
    "stake-below-minimum": re.compile(r"the (.+) of (\d+) is below the table minimum of (\d+)"),
    "stake-above-maximum": re.compile(r"the (.+) of (\d+) is above the table maximum of (\d+)"),
    "exposure-limit": re.compile(r"the setter would stand to lose (\d+), over its cap of (\d+)"),
}
"""The engine's refusals of a table's limits, which give their amounts in minor units
(engine.command.require_stake, require_exposure)."""


def rule_words(house: House, code: str, detail: str) -> str:
    """A rule's refusal as the page says it: a limit's amounts in the club's money ("the
    stake of £0.50 is below the table minimum of £1.00"), where the engine, which knows
    no currency, gives minor units; any other refusal as the engine words it."""
    found = _LIMITS.get(code)
    matched = found.match(detail) if found else None
    if matched is None:
        return detail
    said, at = [], 0
    for group in range(1, (matched.lastindex or 0) + 1):
        text = matched.group(group)
        if text.isdigit():  # an amount, in minor units: said as money, in its place
            start, end = matched.span(group)
            said += [detail[at:start], house.money(int(text))]
            at = end
    return "".join(said) + detail[at:]
