"""Answers sent without marshmallow's dump (ledger.api.shaped) stay in their schema's
shape: under TESTING a drift fails the request, which every API test then reports."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask
from hypothesis import given
from hypothesis import strategies as st
from marshmallow import Schema, fields

from ledger.api.shaped import Raw, ShapeDrift, encode, shaped


class PageSchema(Schema):
    items = fields.List(fields.Integer(), required=True)
    next_after = fields.Integer(allow_none=True, required=True)


def _app(answer: Any, testing: bool) -> Flask:
    app = Flask("shaped", static_folder=None)
    app.testing = testing

    @app.get("/page")
    @shaped(PageSchema)
    def page() -> Any:
        return answer

    return app


def test_an_answer_in_its_schemas_shape_is_sent_as_it_is() -> None:
    got = _app({"items": [1, 2], "next_after": None}, testing=True).test_client().get("/page")
    assert got.status_code == 200
    assert got.get_json() == {"items": [1, 2], "next_after": None}


def test_status_and_headers_pass_through() -> None:
    answer = ({"items": [], "next_after": 3}, 200, {"ETag": '"3"'})
    got = _app(answer, testing=True).test_client().get("/page")
    assert got.headers["ETag"] == '"3"'
    assert got.get_json() == {"items": [], "next_after": 3}


@pytest.mark.parametrize(
    "drifted",
    [
        {"items": [1], "next_after": None, "extra": "a key the schema does not have"},
        {"items": ["1"], "next_after": None},  # a string where the schema says integer
    ],
)
def test_a_drifted_answer_fails_under_testing(drifted: dict[str, Any]) -> None:
    with pytest.raises(ShapeDrift, match="PageSchema would send"):
        _app(drifted, testing=True).test_client().get("/page")


def test_outside_testing_no_dump_is_made() -> None:
    """The point of it: in service, the answer is not walked a second time."""
    odd = {"items": [1], "next_after": None, "extra": 1}
    got = _app(odd, testing=False).test_client().get("/page")
    assert got.get_json() == odd


def test_raw_json_text_is_sent_as_it_is_stored() -> None:
    answer = {"items": Raw("[1,2]"), "next_after": None}
    got = _app(answer, testing=True).test_client().get("/page")
    assert got.get_json() == {"items": [1, 2], "next_after": None}
    assert encode({"a": Raw('{"b":[1]}'), "c": [Raw("2"), "x"]}) == b'{"a":{"b":[1]},"c":[2,"x"]}'


@pytest.mark.parametrize("text", ["\x00", "\\u0000", '"\x00abc:0"', "\\u0000:0"])
def test_a_string_that_looks_like_the_placeholder_is_sent_as_a_string(text: str) -> None:
    """The encoder marks where a Raw goes with a NUL and a random mark, in a string:
    a string of an answer, whatever it holds, stays that string."""
    body = {"s": text, "r": Raw("[1]")}
    assert json.loads(encode(body)) == {"s": text, "r": [1]}


def test_raw_json_that_drifts_from_the_schema_fails_under_testing() -> None:
    with pytest.raises(ShapeDrift):
        _app({"items": Raw('["1"]'), "next_after": None}, testing=True).test_client().get("/page")


# JSON values as the read models build them (no floats: money is exact), and Raw text
# made from such values by json.dumps, as the read models store it.
_leaves = st.none() | st.booleans() | st.integers() | st.text()
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_with_raws = st.recursive(
    _values | _values.map(lambda v: Raw(json.dumps(v))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _as_json_dumps_sent_it(body: Any) -> str:
    """What the answer was before msgspec: json.dumps, each Raw parsed into its value."""

    def plain(value: Any) -> Any:
        if isinstance(value, Raw):
            return json.loads(bytes(value))
        if isinstance(value, list):
            return [plain(x) for x in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    return json.dumps(plain(body), separators=(",", ":"))


@given(_with_raws)
def test_the_answer_is_the_json_value_json_dumps_sent(body: Any) -> None:
    """msgspec's bytes are the same JSON as json.dumps' text, Raws spliced in as values."""
    assert json.loads(encode(body)) == json.loads(_as_json_dumps_sent_it(body))


@given(_values)
def test_without_raws_the_bytes_are_json_dumps_but_for_escapes(body: Any) -> None:
    """Byte for byte, but that msgspec sends a character outside ASCII as itself."""
    assert encode(body) == json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def test_a_lone_surrogate_is_sent_escaped_as_json_dumps_sent_it() -> None:
    """A string Python holds but UTF-8 cannot (json.loads makes one of `"\\udce9"`):
    msgspec refuses it, so the answer is made as before, by json.dumps, not a 500."""
    body = {"s": "\udce9", "r": Raw("[1]"), "t": [Raw('{"a":"\\udce9"}')]}
    assert json.loads(encode(body)) == {"s": "\udce9", "r": [1], "t": [{"a": "\udce9"}]}
