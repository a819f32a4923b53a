"""Answers sent without marshmallow's dump (ledger.api.shaped) stay in their schema's
shape: under TESTING a drift fails the request, which every API test then reports."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from marshmallow import Schema, fields

from ledger.api.shaped import ShapeDrift, shaped


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
        {"items": (1, 2), "next_after": None},  # a tuple the dump would make a list
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
