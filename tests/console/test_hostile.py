"""The console's forms and pages, sent what a forged form or a hand-typed URL sends:
the companion of tests/api/test_hostile.py. Each is refused (a 4xx page) and writes
nothing, on both databases: PostgreSQL refuses a NUL where SQLite stores it."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.commands import Caller, Role, tables
from tests.api.conftest import Api
from tests.console.formkit import a_table, count, csrf, signed_in

HUGE = "9" * 5_000


def test_a_forged_table_form_is_refused_and_writes_nothing(api: Api) -> None:
    """Regression: a version in other digits ("²", which str.isdigit() takes and int()
    does not) or of 5,000 digits, and a key with a NUL (PostgreSQL) or of 30,000
    characters, were 500s. They are read as the API reads If-Match and Idempotency-Key."""
    croupier = a_table(api)
    token = csrf(croupier.get("/console/tables/t1"))
    for sent in [
        {"version": "²"},
        {"version": HUGE},
        {"version": "-1"},
        {"key": "a\x00b"},
        {"key": "k" * 30_000},
        {"key": "ключ"},
        {"player": "a\x00b"},
        {"player": "x" * 300},
        {"player": ".."},
    ]:
        before = count(api)
        data = {"player": "ann", "csrf_token": token, **sent}
        answer = croupier.post("/console/tables/t1/do/seats", data=data)
        assert answer.status_code == 422, (sent, answer.status_code)
        assert count(api) == before, sent
    for die in (HUGE, "²", "0", "7", "-" + HUGE):
        before = count(api)
        data = {"player": "ann", "die": die, "csrf_token": token}
        answer = croupier.post("/console/tables/t1/do/casts", data=data)
        assert answer.status_code == 422, (die, answer.status_code)
        assert count(api) == before, die
    data = {"player": "ann", "csrf_token": token, "version": '"1"', "key": "ok-1"}
    assert croupier.post("/console/tables/t1/do/seats", data=data).status_code in (302, 409)


def test_a_forged_office_form_is_refused_and_writes_nothing(api: Api) -> None:
    a_table(api)
    setter = signed_in(api, "setter", "boss")
    token = csrf(setter.get("/console/office"))
    before = count(api)
    forged = [
        {"name": "a\x00b"},
        {"name": "SETTER"},  # names of the ledger's own accounts (tests/api/test_writes.py)
        {"name": "cash"},
        {"name": "zed", "key": "a\x00b"},
        {"name": "z", "key": "x" * 30_000},
    ]
    for sent in forged:
        answer = setter.post("/console/office/players", data={**sent, "csrf_token": token})
        assert answer.status_code == 422, (sent, answer.status_code)
    for what in ("deposit", "withdraw", "credit"):
        # Typed in pounds: "1.505" has a decimal place more than the pence it can hold.
        for value in (HUGE, "-" + HUGE, "²", "-1", str(2**63), "1.505"):
            for confirmed in ("", "yes"):  # the first step, or sent as if confirmed
                data = {"amount": value, "csrf_token": token, "confirmed": confirmed}
                answer = setter.post(f"/console/office/players/ann/{what}", data=data)
                assert answer.status_code == 422, (what, value, answer.status_code)
    assert count(api) == before


def test_a_hostile_console_url_is_a_4xx(api: Api) -> None:
    """Regression: `after` of 5,000 digits on the audit page, and a NUL in a dispute's
    id (PostgreSQL), were 500s. A NUL in any console URL now asks for nothing there is."""
    a_table(api)
    setter = signed_in(api, "setter", "boss")
    before = count(api)
    for url in [
        f"/console/audit?after={HUGE}",
        "/console/audit?after=%EF%BC%91",
        f"/console/audit/verify/step?after={HUGE}",
        "/console/office/disputes/t1/%00",
        "/console/office/disputes/a%00b/d1",
        "/console/tables/a%00b",
        "/console/tables/t1/panel?x=%00",
        "/console/audit/replay?table=%00",
        "/console/audit/replay/a%00/1",
        f"/console/audit/replay/t1/{HUGE}",
        "/console/audit/export?table=%00",
        "/console/audit/fairness?table=%00",
        f"/console/me/receipts/{HUGE}",
    ]:
        answer = setter.get(url)
        assert 400 <= answer.status_code < 500, (url, answer.status_code)
    assert count(api) == before


def test_a_receipt_past_the_logs_bounds_is_refused_as_the_api_refuses_it(api: Api) -> None:
    """Regression: a player's receipt at position 2**63 or more was a 500 (int() overflow
    in the driver), on both databases. The position is read by the API's own query
    schema for an inclusion proof (1 to 2**63 - 1), and refused on the console's page."""
    a_table(api)
    ann = signed_in(api, "player", "ann")
    for position in (2**63, 2**64, 10**30, 0):
        answer = ann.get(f"/console/me/receipts/{position}")
        assert answer.status_code == 400, (position, answer.status_code)
        assert b"position" in answer.data and b"Refused" in answer.data
    # At the bound: a position the log could hold, which it does not.
    assert ann.get(f"/console/me/receipts/{2**63 - 1}").status_code == 404


HOSTILE_KEYS = ["a\x00b", "k" * 30_000, "ключ", "two words", "k" * 101]


def test_the_open_table_form_reads_its_key_as_the_api_reads_idempotency_key(api: Api) -> None:
    """Regression: the open-table form built its key as `{token}:{key}` unchecked. On
    PostgreSQL a NUL or 30,000 characters was a 500; on SQLite the table opened. The
    key is read by the API's Idempotency-Key schema: refused (422), nothing written."""
    a_table(api)
    croupier = signed_in(api, "croupier", "cecil")
    token = csrf(croupier.get("/"))
    for key in HOSTILE_KEYS:
        before = count(api)
        form = {"id": "t2", "ruleset": "english", "csrf_token": token, "key": key}
        answer = croupier.post("/console/tables", data=form)
        assert answer.status_code == 422, (key[:20], answer.status_code)
        assert b"Idempotency-Key" in answer.data and b"visible ASCII" in answer.data
        assert count(api) == before, key[:20]
    form = {"id": "t2", "ruleset": "english", "csrf_token": token, "key": "open-t2"}
    assert croupier.post("/console/tables", data=form).status_code == 302
    after = count(api)
    assert croupier.post("/console/tables", data=form).status_code == 302  # a repeat
    assert count(api) == after


def test_the_open_table_form_runs_the_tables_command_as_post_tables_does(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console keeps no copy of opening a table (issue 23): its form runs the one
    command (ledger.commands.tables.open_table), as POST /tables does, as the person
    signed in, with the form's key read and scoped as every form's key is. A hostile
    key is refused before the command is asked; a good one reaches it scoped to the
    token, as an Idempotency-Key does from the API."""
    a_table(api)
    asked: list[tuple[str, Caller, dict[str, Any]]] = []
    command = tables.open_table

    def spy(club: Any, table: str, caller: Caller, **values: Any) -> dict[str, Any]:
        asked.append((table, caller, values))
        return command(club, table, caller, **values)

    monkeypatch.setattr(tables, "open_table", spy)
    croupier = signed_in(api, "croupier", "cecil")
    token = csrf(croupier.get("/"))
    for key in HOSTILE_KEYS:
        form = {"id": "t2", "ruleset": "english", "csrf_token": token, "key": key}
        assert croupier.post("/console/tables", data=form).status_code == 422
    assert asked == []
    form = {"id": "t2", "ruleset": "english", "csrf_token": token, "key": "open-t2"}
    assert croupier.post("/console/tables", data=form).status_code == 302
    [(table, caller, values)] = asked
    assert (table, caller.role, caller.name) == ("t2", Role.CROUPIER, "cecil")
    assert values["key"].endswith(":open-t2") and values["ruleset"] == "english"
    assert values["request"] == {"path": "/tables", "body": values["request"]["body"]}
    client = api.client("croupier", "cora")
    answer = client.post("/tables", json={"id": "t3"}, headers={"Idempotency-Key": "open-t3"})
    assert answer.status_code == 201
    assert asked[1][0] == "t3" and asked[1][2]["key"].endswith(":open-t3")
    assert set(asked[1][2]) == set(values)


def test_open_table_forms_without_a_key_are_not_all_one_key(api: Api) -> None:
    """Regression: a form without a key was given the key `{token}:None`, the same for
    every such form: the second table was refused as that key reused."""
    a_table(api)
    croupier = signed_in(api, "croupier", "cecil")
    token = csrf(croupier.get("/"))
    for table in ("t2", "t3"):
        form = {"id": table, "ruleset": "english", "csrf_token": token}
        answer = croupier.post("/console/tables", data=form)
        assert answer.status_code == 302, (table, answer.status_code)
    assert croupier.get("/console/tables/t3").status_code == 200


def test_a_number_typed_with_two_minus_signs_is_refused(api: Api) -> None:
    """Regression: `--5` in any number of a form passed the form's own digit check and
    int() raised: a 500. A form's numbers are read as the API reads an integer."""
    croupier = a_table(api)
    token = csrf(croupier.get("/console/tables/t1"))
    before = count(api)
    for die in ("--5", "-", "+5", " 5 5", "5-"):
        data = {"player": "ann", "die": die, "csrf_token": token}
        answer = croupier.post("/console/tables/t1/do/casts", data=data)
        assert answer.status_code == 422, (die, answer.status_code)
    setter = signed_in(api, "setter", "boss")
    token = csrf(setter.get("/console/office"))
    for what in ("deposit", "withdraw", "credit"):
        data = {"amount": "--5", "csrf_token": token, "confirmed": "yes"}
        answer = setter.post(f"/console/office/players/ann/{what}", data=data)
        assert answer.status_code == 422, (what, answer.status_code)
    assert count(api) == before


def test_the_audit_pages_take_a_position_as_the_api_does(api: Api) -> None:
    """The audit page's `after` is a position, 0 to 2**63 - 1 as GET /events takes it
    (it was refused above 2**31 - 1, a round's bound); beyond it, refused."""
    a_table(api)
    setter = signed_in(api, "setter", "boss")
    assert setter.get(f"/console/audit?after={2**40}").status_code == 200
    for after in (str(2**63), "-1", "%EF%BC%91", "1.0"):
        answer = setter.get(f"/console/audit?after={after}")
        assert answer.status_code == 400, (after, answer.status_code)
        assert b"after" in answer.data


def test_the_consoles_heavy_pages_are_held_as_the_apis_heavy_reads(api: Api) -> None:
    """The console's verify, replay and dice-fairness pages read as much of the log as
    GET /audit/verify, a round's replay and GET /reports/dice: a signed-in token's heavy
    reads at once are capped with the API's (two; a third is 429 with Retry-After, on
    the console's page), and a worker's too (503), so that no reader's pages shut out
    the others'; the event log's page is light, and served."""
    a_table(api)
    auditor = signed_in(api, "auditor", "audrey")
    pages = [
        "/console/audit/verify?after=0",
        "/console/audit/verify/step?after=0",
        "/console/audit/fairness",
        "/console/audit/replay/t1/1",
    ]
    for page in pages:
        assert auditor.get(page).status_code in (200, 404), page  # served, alone
    ann = auditor.get("/console/audit/export?player=ann", buffered=False)
    bob = auditor.get("/console/audit/export?player=ann", buffered=False)
    assert (ann.status_code, bob.status_code) == (200, 200)  # two exports held, unread
    for page in pages:
        answer = auditor.get(page)
        assert answer.status_code == 429, (page, answer.status_code)
        assert answer.headers["Retry-After"].isdigit() and answer.mimetype == "text/html"
        assert "heavy reads" in answer.get_data(as_text=True)
    assert auditor.get("/console/audit").status_code == 200
    other = signed_in(api, "setter", "boss")  # another token's pages are served
    assert other.get("/console/audit/fairness").status_code == 200
    ann.close()
    bob.close()
    assert auditor.get("/console/audit/fairness").status_code == 200
