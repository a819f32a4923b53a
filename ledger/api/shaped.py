"""Answers a view builds in their documented shape, sent without marshmallow's dump.

flask-smorest dumps a view's answer through its response schema, field by field. For a
page of fifty settlements that walk took more time than the query, the token and the
rest of the request together (bench.api; docs/reliability.md, "The HTTP path"), and
changed nothing: the read models' views (ledger.books.tableviews) already build each
item in the schema's shape. A view decorated with `shaped` returns that dict, sent as
it is; the schema on `@blp.response` still documents it.

    @blp.response(200, rs.SettlementPageSchema)
    @shaped(rs.SettlementPageSchema)
    def list_settlements(...): ...

A value a read model stores as JSON text (a settlement's transfers and sources) may be
given as `Raw(text)`: it is sent as stored, neither parsed nor encoded again. Parsing
them and encoding them once more took a third of a settlement page's time in process.
The answer is encoded by msgspec, which splices a Raw in itself: json.dumps, with the
Raws marked and put back after, took about 140 us for a page of fifty settlements,
msgspec about 20 (docs/performance.md, issue 27's "http"). The JSON is the same value
json.dumps gave (tests/api/test_shaped.py holds it); a character outside ASCII is sent
as itself in UTF-8, where json.dumps wrote a \\u escape.

What keeps the two from drifting apart: under TESTING, every shaped answer is read back
from the JSON sent, dumped through its schema, and must come out equal to itself, or the
request fails (`ShapeDrift`); and schemathesis checks every answer against openapi.yaml.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from flask import Response, current_app
from marshmallow import Schema

View = TypeVar("View", bound=Callable[..., Any])


class ShapeDrift(AssertionError):
    """A shaped answer that its schema's dump would change: the view and its documented
    shape have drifted apart."""


Raw = msgspec.Raw
"""JSON text, as a read model stores it, to be sent as it is."""

_encoder = msgspec.json.Encoder()


def encode(body: Any) -> bytes:
    """`body` as compact JSON, each Raw in it as its own text."""
    try:
        return _encoder.encode(body)
    except UnicodeEncodeError:
        # A lone surrogate, which Python strings may hold (json.loads makes one of
        # "\\udce9") and UTF-8 cannot: written escaped, as json.dumps writes it, each
        # Raw parsed into its value first. Rare, and slow.
        return json.dumps(body, default=_parsed, separators=(",", ":")).encode()


def _parsed(value: Any) -> Any:
    if isinstance(value, Raw):
        return json.loads(bytes(value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def shaped(schema: type[Schema]) -> Callable[[View], View]:
    """Send the view's dict (or `(dict, status, headers)`) as JSON, undumped."""
    checker = schema()

    def decorator(view: View) -> View:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = view(*args, **kwargs)
            body, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
            if isinstance(body, Response):
                return result
            text = encode(body)
            if current_app.testing:
                sent = json.loads(text)
                dumped = checker.dump(sent)
                if dumped != sent:
                    raise ShapeDrift(f"{schema.__name__} would send {dumped!r}, not {sent!r}")
            response = current_app.response_class(text + b"\n", mimetype="application/json")
            return (response, *rest) if rest else response

        return wrapper  # type: ignore[return-value]

    return decorator
