"""Numbers in a URL: ASCII digits only.

Python's int() reads any script's decimal digits (U+FF11, the full-width one; U+0661,
the Arabic-Indic one), spaces around them and underscores between them, and
werkzeug's `int` converter matches `\\d+`, which is any script's digits too. So
`?after=%EF%BC%91` and `/rounds/%EF%BC%91` were read as 1. A client that writes 1
writes "1": anything else is refused, in a query as a validation problem naming the
parameter (422), in a path as no such path (404).
"""

from __future__ import annotations

import re
from typing import Any

from marshmallow import fields
from werkzeug.routing import IntegerConverter

DIGITS = re.compile(r"-?[0-9]+")
"""An integer as a URL writes it: an optional minus (refused by each parameter's range
where it makes no sense, with that range's message) and ASCII digits."""


class QueryInteger(fields.Integer):
    """An integer query parameter, in ASCII digits only; every query schema's."""

    def _validated(self, value: Any) -> int:
        if isinstance(value, str) and not DIGITS.fullmatch(value):
            raise self.make_error("invalid")
        return int(super()._validated(value))


class AsciiIntConverter(IntegerConverter):
    """werkzeug's `int` path converter, matching ASCII digits only: registered as `int`
    in create_app, so every `<int:...>` route takes only those."""

    regex = r"[0-9]+"
