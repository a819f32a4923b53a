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

What keeps the two from drifting apart: under TESTING, every shaped answer is dumped
through its schema as well and must come out equal to itself, or the request fails
(`ShapeDrift`); and schemathesis checks every answer against openapi.yaml.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Response, current_app
from marshmallow import Schema

View = TypeVar("View", bound=Callable[..., Any])


class ShapeDrift(AssertionError):
    """A shaped answer that its schema's dump would change: the view and its documented
    shape have drifted apart."""


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
            if current_app.testing:
                dumped = checker.dump(body)
                if dumped != body:
                    raise ShapeDrift(f"{schema.__name__} would send {dumped!r}, not {body!r}")
            response = current_app.json.response(body)
            return (response, *rest) if rest else response

        return wrapper  # type: ignore[return-value]

    return decorator
