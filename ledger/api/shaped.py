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

What keeps the two from drifting apart: under TESTING, every shaped answer is read back
from the JSON sent, dumped through its schema, and must come out equal to itself, or the
request fails (`ShapeDrift`); and schemathesis checks every answer against openapi.yaml.
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Response, current_app
from marshmallow import Schema

View = TypeVar("View", bound=Callable[..., Any])


class ShapeDrift(AssertionError):
    """A shaped answer that its schema's dump would change: the view and its documented
    shape have drifted apart."""


class Raw:
    """JSON text, as a read model stores it, to be sent as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text!r})"


_MARK = "\x00" + secrets.token_hex(8)
"""What a Raw is first encoded as: a string no answer holds (a NUL, which the encoder
escapes, and this process's random mark). The encoder meets the Raws in the order it
writes them, so the text between its marks and the Raws' texts interleave."""
_ENCODED_MARK = json.dumps(_MARK)


def encode(body: Any) -> str:
    """`body` as compact JSON, each Raw in it as its own text."""
    raws: list[str] = []

    def default(value: Any) -> str:
        if isinstance(value, Raw):
            raws.append(value.text)
            return _MARK
        raise TypeError(f"{type(value).__name__} is not JSON")

    text = json.dumps(body, default=default, separators=(",", ":"))
    if not raws:
        return text
    parts = text.split(_ENCODED_MARK)
    assert len(parts) == len(raws) + 1
    raws.append("")
    return "".join([piece for pair in zip(parts, raws, strict=True) for piece in pair])


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
            response = current_app.response_class(text + "\n", mimetype="application/json")
            return (response, *rest) if rest else response

        return wrapper  # type: ignore[return-value]

    return decorator
