"""Amounts as a person types them at the table and when opening one: in the club's major
units ("12.50"), read exactly into the minor units the API's schemas take by the same
reader the office uses (ledger.house.House.parse). The API itself keeps minor units;
only the page converts.

A typed amount the club cannot read is refused as a field of the form, naming the rule
it broke ("stake: 12.345 has 3 decimal places: GBP is counted to the penny, ..."), and
an amount out of the schema's range is said in the club's money, never in minor units.
"""

from __future__ import annotations

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
        if bounds is not None and bounds.min is not None and bounds.max is not None:
            least, most = house.money(int(bounds.min)), house.money(int(bounds.max))
            said[name] = [f"an amount from {least} to {most}"]
        else:
            said[name] = message
    return said


def _range(field: fields.Field[Any] | None) -> validate.Range | None:
    found = [v for v in getattr(field, "validators", []) if isinstance(v, validate.Range)]
    return found[0] if found else None
