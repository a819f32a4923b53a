"""A settlement query's parameters read without webargs, where each is plainly valid.

webargs and marshmallow read `?table=t1&limit=50` in about 25 us of CPU, a tenth of
what the service spends on a settlement page beyond the bare view (docs/performance.md,
issue 27's "http2"). Most queries are a name or two and a page: `quick` reads those
itself, and only those. Whatever it does not take for certain (a parameter it does not
read, one given twice, a value its field's check would refuse, a number too long)
it leaves to webargs, so that every refusal, its status and its body, is webargs' as
before. tests/api/test_quickargs.py holds that it gives exactly webargs' result
wherever it gives one.

Only the fields named in `QUICK` are read, each a name (a `Whole` pattern) or a
number in a `Range` (`QueryInteger`); the schema-level checks of the schemas listed
read none of them (SettlementQuerySchema's read `round`, `since` and `until`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import Schema, fields, missing, validate
from werkzeug.datastructures import MultiDict

from ledger.web import readschemas as rs
from ledger.web.numbers import DIGITS, QueryInteger
from ledger.web.schemas import Whole

QUICK: Mapping[type[Schema], tuple[str, ...]] = {
    rs.SettlementQuerySchema: ("table", "player", "after", "limit"),
}
"""The query schemas read here, and the fields of each that are."""

_LONGEST = 20
"""Digits past a signed 64-bit number's: left to marshmallow (and int()'s own limits)."""


class _Reader:
    """What a schema's quick fields accept, and the defaults it loads."""

    def __init__(self, schema: Schema, names: tuple[str, ...]) -> None:
        self.checks: dict[str, Any] = {}
        self.defaults: dict[str, Any] = {}
        for name, field in schema.fields.items():
            if field.load_default is not missing:
                default = field.load_default
                self.defaults[name] = default() if callable(default) else default
        for name in names:
            field = schema.fields[name]
            assert field.data_key is None, name
            [check] = field.validators
            if type(field) is QueryInteger:
                assert isinstance(check, validate.Range), name
                assert check.min_inclusive and check.max_inclusive, name
                self.checks[name] = (check.min, check.max)
            else:
                assert type(field) is fields.String and isinstance(check, Whole), name
                self.checks[name] = check.regex

    def read(self, args: MultiDict[str, str]) -> dict[str, Any] | None:
        loaded = dict(self.defaults)
        for name, values in args.lists():
            check = self.checks.get(name)
            if check is None or len(values) != 1:
                return None
            [value] = values
            if isinstance(check, tuple):
                if len(value) > _LONGEST or not DIGITS.fullmatch(value):
                    return None
                number = int(value)
                if not check[0] <= number <= check[1]:
                    return None
                loaded[name] = number
            elif check.fullmatch(value) is None:
                return None
            else:
                loaded[name] = value
        return loaded


_readers: dict[int, tuple[Schema, _Reader | None]] = {}
"""By the schema instance's id, the schema kept with it so that the id stays its own
(the Blueprint makes one instance a route, ledger.api.bodies)."""


def quick(schema: Schema, args: MultiDict[str, str]) -> dict[str, Any] | None:
    """`args` as `schema` loads them, if this module reads them for certain; else None."""
    known = _readers.get(id(schema))
    if known is None:
        names = QUICK.get(type(schema))
        known = _readers[id(schema)] = (schema, None if names is None else _Reader(schema, names))
    reader = known[1]
    return None if reader is None else reader.read(args)
