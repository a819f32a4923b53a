"""What a request may not smuggle past the schemas: a JSON key given twice, a number
written in other scripts' digits, a compressed body read as if it were not."""

from __future__ import annotations

import json

import pytest

from engine.rulesets import BUILTIN
from tests.api.conftest import Api
from tests.api.readkit import play

ENGLISH = {"name": "house", "table": BUILTIN["english"].to_mapping()["table"]}


def _with_main_5_twice() -> str:
    text = json.dumps({"id": "rs7", "rules": ENGLISH})
    five = '"5": {"nicks": [5], "outs": [2, 3, 11, 12]}'
    assert five in text
    return text.replace(five, f'{five}, "5": {{"nicks": [5], "outs": [2, 3, 12]}}')


TWICE = {
    "rules.table.5": _with_main_5_twice(),
    "id": '{"id": "rs7", "id": "rs8"}',
    "ruleset": '{"id": "rs7", "ruleset": "english", "ruleset": "english"}',
}


@pytest.mark.parametrize("where", TWICE, ids=TWICE.keys())
def test_a_key_given_twice_in_one_object_is_refused_naming_where(
    sqlite_api: Api, where: str
) -> None:
    """As the CLI refuses it in a rule set file: the last one does not silently win."""
    bank = sqlite_api.client()
    answer = bank.post("/tables", data=TWICE[where], headers={"Content-Type": "application/json"})
    problem = answer.get_json()
    assert answer.status_code == 400, problem
    assert problem["type"] == "urn:hazard:bad-request"
    assert problem["detail"] == f"the body is not JSON this service reads: {where}: is given twice"
    assert bank.get("/tables/rs7").status_code == 404  # nothing was made
    assert bank.get("/tables/rs8").status_code == 404


def test_the_same_key_in_two_objects_is_not_given_twice(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    made = bank.post(
        "/tables",
        data=json.dumps({"id": "rs7", "rules": ENGLISH}),
        headers={"Content-Type": "application/json"},
    )
    assert made.status_code == 201, made.get_json()  # "nicks", "outs" in each main


def test_a_key_given_twice_deep_in_a_deep_body_is_refused_as_too_deep(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    deep = '{"a": ' * 5_000 + '{"k": 1, "k": 2}' + "}" * 5_000
    answer = bank.post("/tables", data=deep, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400
    assert "nests more than" in answer.get_json()["detail"]


FULL_WIDTH_1 = "%EF%BC%91"
"""The full-width digit one, U+FF11, which Python's int() reads as 1."""
ARABIC_INDIC_12 = "%D9%A1%D9%A2"


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        (f"/events?after={FULL_WIDTH_1}", "after"),
        (f"/events?limit={ARABIC_INDIC_12}", "limit"),
        (f"/settlements?after={FULL_WIDTH_1}", "after"),
        (f"/settlements?table=t1&round={FULL_WIDTH_1}", "round"),
        (f"/tables/t1/rounds?after={FULL_WIDTH_1}", "after"),
        (f"/tables/t1/rounds/1?limit={FULL_WIDTH_1}", "limit"),
        (f"/tables/t1?after={FULL_WIDTH_1}", "after"),
        (f"/tables/t1?limit={FULL_WIDTH_1}", "limit"),
        (f"/players/bank/statement?after={FULL_WIDTH_1}", "after"),
    ],
)
def test_a_query_number_in_other_digits_is_a_validation_naming_it(
    sqlite_api: Api, path: str, parameter: str
) -> None:
    bank = sqlite_api.client()
    bank.ok("post", "/tables", {"id": "t1"})
    answer = bank.get(path)
    problem = answer.get_json()
    assert answer.status_code == 422, problem
    assert problem["type"] == "urn:hazard:validation"
    assert list(problem["errors"]) == [parameter]
    # The same number in ASCII digits is read.
    ascii_path = path.replace(FULL_WIDTH_1, "1").replace(ARABIC_INDIC_12, "12")
    assert bank.get(ascii_path).status_code in (200, 404), ascii_path


def test_a_round_number_in_other_digits_is_no_such_path(sqlite_api: Api) -> None:
    bank = play(sqlite_api)  # t1 has a round 1
    assert bank.get("/tables/t1/rounds/1").status_code == 200
    for digits in (FULL_WIDTH_1, "%D9%A1", "%E0%A5%A7"):  # full-width, Arabic-Indic, Devanagari
        answer = bank.get(f"/tables/t1/rounds/{digits}")
        assert answer.status_code == 404, digits
        assert answer.get_json()["type"] == "urn:hazard:not-found"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "identity, gzip"])
def test_a_compressed_body_is_a_415_saying_bodies_come_uncompressed(
    sqlite_api: Api, encoding: str
) -> None:
    bank = sqlite_api.client()
    answer = bank.post(
        "/players",
        data=b'{"name": "ann"}',
        headers={"Content-Type": "application/json", "Content-Encoding": encoding},
    )
    problem = answer.get_json()
    assert answer.status_code == 415, problem
    assert problem["type"] == "urn:hazard:unsupported-media-type"
    assert problem["detail"] == (
        f"send the body uncompressed: this service does not take Content-Encoding: {encoding}"
    )
    assert bank.get("/players/ann/balance").status_code == 404  # nothing was made
    plain = {"Content-Type": "application/json", "Content-Encoding": "identity"}
    assert bank.post("/players", data=b'{"name": "ann"}', headers=plain).status_code == 201


@pytest.mark.parametrize("path", ["/players/setter/balance", "/tables/t1"])
def test_an_as_of_of_5000_digits_is_a_validation_naming_it(sqlite_api: Api, path: str) -> None:
    """Regression: int() refuses more than 4,300 digits with a ValueError, which the
    `as_of` field let through: a 500 to any token (found by tests/api/test_hostile.py)."""
    bank = sqlite_api.client()
    bank.ok("post", "/tables", {"id": "t1"})
    for digits in ("9" * 5_000, "9" * 20, str(2**63)):
        answer = bank.get(f"{path}?as_of={digits}")
        problem = answer.get_json()
        assert answer.status_code == 422, problem
        assert problem["type"] == "urn:hazard:validation"
        assert list(problem["errors"]) == ["as_of"]
    assert bank.get(f"{path}?as_of=1").status_code == 200


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"name": "\\ud800"}', "name"),
        ('{"name": "ann\\udfff"}', "name"),
        ('{"name": "ann", "\\ud800": 1}', "the body"),
        ('{"id": "t9", "rules": {"name": ["\\udc00"]}}', "rules.name.0"),
    ],
)
def test_a_lone_surrogate_in_a_string_is_refused_naming_where(
    sqlite_api: Api, body: str, where: str
) -> None:
    """Regression: JSON's `\\ud800` escape decodes to a string UTF-8 cannot encode, and
    writing the event that held it was a 500 (a dispute's claim, a bet id; found by
    tests/api/test_hostile.py). A pair of surrogates is the one character it encodes."""
    bank = sqlite_api.client()
    path = "/tables" if '"id"' in body else "/players"
    answer = bank.post(path, data=body, headers={"Content-Type": "application/json"})
    problem = answer.get_json()
    assert answer.status_code == 400, problem
    assert problem["type"] == "urn:hazard:bad-request"
    assert problem["detail"].startswith(f"the body is not JSON this service reads: {where}: ")
    assert "lone surrogate" in problem["detail"]
    paired = bank.post(
        "/tables",
        data='{"id": "t8", "rules": {"name": "\\ud83c\\udfb2"}}',
        headers={"Content-Type": "application/json"},
    )
    assert paired.status_code != 400 or "surrogate" not in paired.get_json()["detail"]
