"""A settlement query read without webargs (ledger.api.quickargs) is read exactly as
webargs reads it, or left to webargs: never a value of its own, never a refusal."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import Flask, request
from hypothesis import example, given
from hypothesis import strategies as st
from webargs.flaskparser import FlaskParser

from ledger.api.bodies import Parser
from ledger.api.quickargs import QUICK, quick
from ledger.web import readschemas as rs

KEYS = ["table", "player", "after", "limit", "round", "bet", "since", "until", "tabel"]
VALUES = [
    *("t1", "ann", "setter", "a.b-c_9", "..", "", " ann", "ann\n", "x" * 64, "x" * 65),
    *("0", "1", "50", "500", "501", "-1", "-0", "007", "+5", "1_0", " 1", "\uff11"),
    *(str(2**63 - 1), str(2**63), "1" * 21, "1" * 5000, "2026-11-21T01:18:22Z"),
]

_app = Flask("quickargs")
_parser = Parser()


def _webargs(schema: Any, query: str) -> Any:
    """What webargs makes of the query: the loaded dict, or the refusal's status and body."""
    with _app.test_request_context(query_string=query):
        try:
            return FlaskParser.parse(_parser, schema, request, location="query", unknown=None)
        except Exception as refused:  # webargs' abort: an HTTPException holding the body
            return ("refused", getattr(refused, "code", None), getattr(refused, "data", None))


def _quick(schema: Any, query: str) -> Any:
    with _app.test_request_context(query_string=query):
        return quick(schema, request.args)


@given(
    pairs=st.lists(
        st.tuples(
            st.sampled_from(KEYS),
            st.one_of(
                st.sampled_from(VALUES),
                st.text(max_size=70),
                st.from_regex(r"-?[0-9]{1,25}", fullmatch=True),
            ),
        ),
        max_size=5,
    )
)
@example(pairs=[("table", "t1"), ("limit", "50")])
@example(pairs=[("player", "ann"), ("after", "120"), ("limit", "7")])
@example(pairs=[("table", "t1"), ("table", "t2")])
@example(pairs=[("limit", "1" * 5000)])
def test_a_quick_read_is_webargs_read_or_none(pairs: list[tuple[str, str]]) -> None:
    schema = rs.SettlementQuerySchema()
    query = urlencode(pairs)
    got = _quick(schema, query)
    if got is not None:
        assert got == _webargs(schema, query)


def test_the_plain_queries_are_read_quickly() -> None:
    schema = rs.SettlementQuerySchema()
    for query, loaded in [
        ("table=t1&limit=50", {"table": "t1", "limit": 50, "after": 0}),
        ("player=ann&after=9", {"player": "ann", "after": 9, "limit": 50}),
        ("", {"after": 0, "limit": 50}),
    ]:
        assert _quick(schema, query) == loaded == _webargs(schema, query)


def test_a_schema_not_listed_is_left_to_webargs() -> None:
    assert rs.PageQuerySchema not in QUICK
    assert _quick(rs.PageQuerySchema(), "limit=5") is None


def test_the_parser_answers_a_route_as_webargs_would() -> None:
    schema = rs.SettlementQuerySchema()
    for query in (
        "table=t1&limit=50",
        "table=t1&limit=0",
        "round=3",
        "tabel=t1",
        "limit=%EF%BC%91",
    ):
        with _app.test_request_context(query_string=query):
            try:
                got: Any = _parser.parse(schema, request, location="query", unknown=None)
            except Exception as refused:
                got = ("refused", getattr(refused, "code", None), getattr(refused, "data", None))
        assert got == _webargs(schema, query), query
