"""The contract, fuzzed: schemathesis makes requests from openapi.yaml, the file a client
reads, and sends them in-process to the app; every answer must be what the file says.

Each operation gets a fresh copy of a seeded club, so that generated requests often
name real things: tables t1 (a round under way, bets open) and t2 (a round played out),
players ann, bob and cat with money, a funded bank. Each request carries the token of
a holder chosen for it, mostly the setter's, so that most get past the role checks.
Schemathesis's phases all run: the coverage phase (each field's edge values, missing
and wrong ones, methods the path does not take) and the fuzzing phase (random requests,
valid and not). The checks, on every answer:
  - no 5xx;
  - its status, content type, headers and body are documented for the operation;
  - a request the schema forbids is refused; the same request without a token gets a
    401; a method the path does not take gets a 405 with Allow;
  - an error is application/problem+json, with a documented `type` and its status.
Left out: schemathesis's `positive_data_acceptance`, which wants every schema-valid
request accepted. A valid request is refused with 422 whenever the game's rules forbid
it at that moment (a throw before the main), which is state no schema can describe.

The fuzzing runs on SQLite; what only PostgreSQL refuses is tried at the end on both.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from ledger.store import db
from tests.api.conftest import Api
from tests.api.contractkit import OPENAPI, SETTINGS, api_on, problem_details, seed

CONFIG = schemathesis.Config.from_dict(SETTINGS)
schema = schemathesis.openapi.from_path(OPENAPI, config=CONFIG)

HOLDERS = [("setter", "bank"), ("croupier", "cecil"), ("auditor", "audrey"), ("player", "ann")]
WEIGHTED = [HOLDERS[0]] * 4 + HOLDERS
"""Whose token a request carries: mostly the setter's, who may do anything."""


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A club seeded once: each test gets a copy rather than a second of seeding."""
    path = tmp_path_factory.mktemp("contract") / "seeded.sqlite3"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    engine.dispose()
    for api in api_on(path):
        seed(api)
    return path


Club = tuple[Api, dict[tuple[str, str], str]]
"""The app on a copy of the seeded club, and a token of each of HOLDERS."""


@pytest.fixture
def club(seeded: Path, tmp_path: Path) -> Iterator[Club]:
    path = tmp_path / "club.sqlite3"
    # SQLite's backup API: a consistent copy, whatever is still in the WAL.
    with closing(sqlite3.connect(seeded)) as source, closing(sqlite3.connect(path)) as copy:
        source.backup(copy)
    for api in api_on(path):
        yield api, {who: api.client(*who).token or "" for who in HOLDERS}


def holder_for(case: schemathesis.Case) -> tuple[str, str]:
    """The holder whose token `case` carries, by a hash of the request: the same request
    always goes as the same holder, so a failure replays as it happened. (Not drawn by
    Hypothesis: a strategy given to the test would turn off schemathesis's coverage
    phase, the edge values of every field.)"""
    request = repr((case.method, case.path_parameters, case.query, case.headers, case.body))
    return WEIGHTED[zlib.crc32(request.encode()) % len(WEIGHTED)]


@schema.parametrize()
@settings(
    max_examples=50,
    deadline=None,  # a write commits to SQLite with fsync: its time is not under test here
    # The club fixture is a fresh copy per operation, not per example: the examples of an
    # operation share its state, as a client's requests would.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_every_answer_is_as_documented(case: schemathesis.Case, club: Club) -> None:
    api, tokens = club
    # Schemathesis sends requests of its own (the same without the token, for
    # ignored_auth) through the schema's transport: both must know the app.
    case.operation.app = case.operation.schema.app = api.app
    case.call_and_validate(
        headers={"Authorization": f"Bearer {tokens[holder_for(case)]}"},
        excluded_checks=[positive_data_acceptance],
        additional_checks=[problem_details],
    )


# -- what the fuzzing here cannot see: PostgreSQL ---------------------------------------

NOWHERE = ("a\x00b", "t1\n", "x" * 101)
"""Names no table or player can have: a NUL (which PostgreSQL refuses as a parameter,
where SQLite just finds no row), a trailing newline, too long."""


@pytest.mark.parametrize("name", NOWHERE, ids=["nul", "newline", "long"])
def test_a_name_nothing_can_have_is_not_found(api: Api, name: str) -> None:
    bank = api.client()
    where = quote(name, safe="")
    for method, path, body in [
        ("get", f"/tables/{where}", None),
        ("post", f"/tables/{where}/throws", {"die1": 1, "die2": 1}),
        ("post", f"/tables/{where}/close", {}),
        ("get", f"/players/{where}/balance", None),
        ("post", f"/players/{where}/deposits", {"amount": 1}),
        ("post", f"/players/{where}/withdrawals", {"amount": 1}),
        ("put", f"/players/{where}/credit-limit", {"limit": 1}),
    ]:
        answer = getattr(bank, method)(path, json=body)
        assert answer.status_code == 404, (method, path, answer.get_json())
    for path, body in [("/players", {"name": name}), ("/tables", {"id": name})]:
        answer = bank.post(path, json=body)
        assert answer.status_code == 422, (path, answer.get_json())


# -- what the fuzzing never sends: hostile bodies --------------------------------------

HOSTILE_BODIES = {
    # Python's JSON decoder recurses once a level: this ran it out of stack.
    "deep": "[" * 30_000 + "]" * 30_000,
    "deep-in-a-field": '{"player": "ann", "amount": ' + "[" * 5_000 + "]" * 5_000 + "}",
    "deep-but-decodable": '{"player": "ann", "amount": ' + "[" * 200 + "]" * 200 + "}",
    # Python refuses to read an integer of more than 4,300 digits.
    "long-number": '{"player": "ann", "amount": ' + "9" * 5_000 + "}",
    "long-negative": '{"player": "ann", "amount": -' + "9" * 5_000 + "}",
    "nan": '{"player": "ann", "amount": NaN}',
    "not-utf-8": b'{"player": "\xff"}',
}
WRITES = [
    ("post", "/players"),
    ("post", "/players/ann/deposits"),
    ("put", "/players/ann/credit-limit"),
    ("post", "/tables"),
    ("post", "/tables/t1/lays"),
    ("post", "/tables/t1/side-bets"),
]


@pytest.mark.parametrize("body", HOSTILE_BODIES.values(), ids=HOSTILE_BODIES.keys())
def test_a_hostile_body_is_a_400_to_anyone(club: Club, body: str | bytes) -> None:
    api, tokens = club
    for holder in (("player", "ann"), ("setter", "bank")):
        for method, path in WRITES:
            answer = getattr(api.app.test_client(), method)(
                path,
                data=body,
                headers={
                    "Authorization": f"Bearer {tokens[holder]}",
                    "Content-Type": "application/json",
                },
            )
            problem = answer.get_json()
            assert answer.status_code == 400, (holder, path, problem)
            assert problem["type"] == "urn:hazard:bad-request"
            assert problem["detail"].startswith("the body "), problem


def test_a_body_that_is_not_json_says_where_it_fails(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    answer = bank.post(
        "/players", data='{"name": "ann",\n "x": }', headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 400
    assert answer.get_json()["detail"] == (
        "the body is not valid JSON: Expecting value at line 2, column 7 (char 22)"
    )


def test_a_body_that_is_not_sent_as_json_is_a_415_naming_the_type(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    for content_type in ("application/x-www-form-urlencoded", "text/plain", None):
        headers = {} if content_type is None else {"Content-Type": content_type}
        answer = bank.post("/players", data='{"name": "ann"}', headers=headers)
        problem = answer.get_json()
        assert answer.status_code == 415, problem
        assert problem["type"] == "urn:hazard:unsupported-media-type"
        assert "Content-Type: application/json" in problem["detail"]
    # A body as JSON is taken with its charset; one that takes no body needs no type.
    assert (
        bank.post(
            "/players",
            data='{"name": "ann"}',
            headers={"Content-Type": "application/json; charset=utf-8"},
        ).status_code
        == 201
    )
    bank.ok("post", "/tables", {"id": "t1"})
    assert bank.post("/tables/t1/close").status_code == 201
