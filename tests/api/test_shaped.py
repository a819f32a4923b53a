"""Answers sent without marshmallow's dump (ledger.api.shaped) stay in their schema's
shape: under TESTING a drift fails the request, which every API test then reports."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask
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
    assert encode({"a": Raw('{"b":[1]}'), "c": [Raw("2"), "x"]}) == '{"a":{"b":[1]},"c":[2,"x"]}'


@pytest.mark.parametrize("text", ["\x00", "\\u0000", '"\x00abc:0"', "\\u0000:0"])
def test_a_string_that_looks_like_the_placeholder_is_sent_as_a_string(text: str) -> None:
    """The encoder marks where a Raw goes with a NUL and a random mark, in a string:
    a string of an answer, whatever it holds, stays that string."""
    body = {"s": text, "r": Raw("[1]")}
    assert json.loads(encode(body)) == {"s": text, "r": [1]}


def test_raw_json_that_drifts_from_the_schema_fails_under_testing() -> None:
    with pytest.raises(ShapeDrift):
        _app({"items": Raw('["1"]'), "next_after": None}, testing=True).test_client().get("/page")
