"""Request bodies: JSON, read strictly, and every way it can be wrong a 4xx that says so.

webargs (under flask-smorest) hands the body to `json.loads` as it comes. Python's
decoder recurses once per level of nesting, so a body of a few thousand `[` ran out of
stack (RecursionError), and it refuses to read an integer of more than 4,300 digits
(ValueError): both were 500s, to any token. Here the body is read with a bound on both
(no request needs more than a few levels or a few dozen digits), NaN and Infinity are
refused (they are not JSON), and a body that is not JSON at all says where it fails.
A string with a lone UTF-16 surrogate (`"\\ud800"`, which the decoder reads into a
string UTF-8 cannot encode) is refused: it was a 500 when the event that held it was
written. An object that gives a key twice is refused too, naming where
(`rules.table.5`), as the CLI refuses a rule set file that does: the decoder would let
the last one win.
A body sent as anything but JSON, or compressed, is refused with 415 rather than read
as no body or as the bytes it is not. JSON is `application/json` alone: webargs also
takes any `application/*+json` (a `application/vnd.foo+json`, even the service's own
`application/problem+json`), which the contract does not. A write that takes no body
(closing a table, passing the dice) refuses one as the others refuse a bad one
(`no_body`): it used to ignore it, so that a body 30,000 levels deep, or not JSON at
all, closed the table.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

import flask_smorest
from flask import Request
from flask_smorest import abort
from marshmallow import Schema
from webargs import core
from webargs.flaskparser import FlaskParser

MAX_DEPTH = 32
"""How deep a body may nest. A custom rule set, the deepest body taken, is four levels."""
MAX_DIGITS = 100
"""How many digits a number in a body may have. No field takes a number near this
long; one that is longer but still readable is refused field by field (422)."""
JSON = "application/json"


class NotJson(ValueError):
    """A body the decoder reads but this service does not take as JSON."""


def _number(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise NotJson(f"a number of {len(text.lstrip('-'))} digits; at most {MAX_DIGITS}")
    return int(text)


def _constant(name: str) -> NoReturn:
    raise NotJson(f"{name} is not a JSON number")


class _Twice(dict[str, Any]):
    """A decoded object that gave `key` more than once (the first such key)."""

    key: str


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The decoder's hook for each object, innermost first: it cannot know where the
    object is, so it marks one that repeats a key, and `_check` names where."""
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            break
        seen.add(key)
    twice = _Twice(found)
    twice.key = key
    return twice


SURROGATE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate on its own: JSON's `\\ud800` escape makes one (a pair makes the one
character it encodes), but it is no character, and UTF-8 cannot encode it."""


def _characters(text: str, path: tuple[str, ...]) -> None:
    found = SURROGATE.search(text)
    if found:
        where = ".".join(path) or "the body"
        raise NotJson(f"{where}: a lone surrogate (U+{ord(found[0]):04X}) is no character")


def _check(value: Any) -> None:
    """Refuse a body nested deeper than MAX_DEPTH, with a key given twice in one object
    (the first in document order, by its path), or with a lone surrogate in a string;
    without recursion."""
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(value, 1, ())]
    while stack:
        item, level, path = stack.pop()
        if isinstance(item, str):
            _characters(item, path)
            continue
        if not isinstance(item, dict | list):
            continue
        if level > MAX_DEPTH:
            _too_deep()  # before anything below it is looked at
        if isinstance(item, _Twice):
            raise NotJson(f"{'.'.join((*path, item.key))}: is given twice")
        for key in item if isinstance(item, dict) else ():
            _characters(key, path)  # where the key is: the key itself is not echoed
        children = item.items() if isinstance(item, dict) else enumerate(item)
        stack += reversed([(child, level + 1, (*path, str(key))) for key, child in children])


def read(body: bytes) -> Any:
    """A request body as JSON, or a 400 that says what is wrong with it."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        _bad(f"the body is not UTF-8 text: byte {exc.start} ({exc.reason})")
    try:
        value = json.loads(
            text, parse_int=_number, parse_constant=_constant, object_pairs_hook=_object
        )
        _check(value)
    except json.JSONDecodeError as exc:
        _bad(
            f"the body is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f"column {exc.colno} (char {exc.pos})"
        )
    except NotJson as exc:
        _bad(f"the body is not JSON this service reads: {exc}")
    except RecursionError:
        _too_deep()
    return value


def _too_deep() -> NoReturn:
    _bad(f"the body nests more than {MAX_DEPTH} levels deep; no request needs that many")


def _bad(detail: str) -> NoReturn:
    abort(400, message=detail)
    raise AssertionError("abort raises")  # for the type checker


class Parser(FlaskParser):
    """webargs' Flask parser, reading bodies with `read` and refusing non-JSON ones."""

    def load_json(self, req: Request, schema: Schema) -> Any:
        encoding = req.headers.get("Content-Encoding", "identity").strip()
        if encoding.lower() != "identity":
            # Nothing here inflates a body: read as it came, it would be the wrong bytes.
            abort(
                415,
                message="send the body uncompressed: this service does not take "
                f"Content-Encoding: {encoding}",
            )
        body = req.get_data(cache=True)
        if req.mimetype != JSON:  # the type alone: its parameters (charset) may vary
            if not body:
                return core.missing  # no body: each field the schema requires is named
            sent = req.mimetype or "none"
            abort(
                415,
                message=f"send the body as JSON, with Content-Type: {JSON} "
                f"(this request's Content-Type is {sent})",
            )
        if not body:
            return core.missing
        return read(body)


NO_BODY = "this operation takes no body: send none, or {}"


def no_body(req: Request) -> None:
    """For a write that takes no body: none, or an empty JSON object, or the 4xx any
    other body gets (415 not JSON, 400 unreadable); anything else is a 422."""
    value = Parser().load_json(req, Schema())
    if value is not core.missing and value != {}:
        abort(422, messages={"json": {"_schema": [NO_BODY]}})


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]  # flask-smorest is untyped
    """flask-smorest's Blueprint, its bodies read by `Parser`."""

    ARGUMENTS_PARSER = Parser()

    def arguments(self, schema: Any, *args: Any, **kwargs: Any) -> Any:
        # One instance for every request: given a class, webargs makes a new schema
        # for each request it parses, deep-copying every field (a tenth of a small
        # read's time, bench.api). A schema's load keeps no state between calls.
        if isinstance(schema, type):
            schema = schema()
        return super().arguments(schema, *args, **kwargs)
