"""The period the club's books are read for, as the API (ledger.api.clubreports) and the
console (ledger.console.clubbooks) both read it from a URL's query."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, validate, validates_schema

from ledger.web.numbers import QueryInteger
from ledger.web.readschemas import StoredTime


class PeriodQuerySchema(Schema):
    since = StoredTime(metadata={"description": "Recorded at or after this time (ISO-8601)"})
    until = StoredTime(metadata={"description": "Recorded before this time (ISO-8601)"})
    after = QueryInteger(
        load_default=0,
        validate=validate.Range(0, 2**62),
        metadata={"description": "Rows after this position: a page's `next_after`"},
    )

    @validates_schema
    def _consistent(self, data: dict[str, Any], **_: Any) -> None:
        if "since" in data and "until" in data and data["since"] >= data["until"]:
            raise ValidationError("Must be later than `since`.", "until")
