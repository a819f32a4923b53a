"""The console's forms and pages, sent what a forged form or a hand-typed URL sends:
the companion of tests/api/test_hostile.py. Each is refused (a 4xx page) and writes
nothing, on both databases: PostgreSQL refuses a NUL where SQLite stores it."""

from __future__ import annotations

from tests.api.conftest import Api
from tests.console.test_forms import a_table, count, csrf, signed_in

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
        {"name": "zed", "key": "a\x00b"},
        {"name": "z", "key": "x" * 30_000},
    ]
    for sent in forged:
        answer = setter.post("/console/office/players", data={**sent, "csrf_token": token})
        assert answer.status_code == 422, (sent, answer.status_code)
    for what, field in (("deposit", "amount"), ("withdraw", "amount"), ("credit", "limit")):
        for value in (HUGE, "-" + HUGE, "²", "-1", str(2**63), "1.5"):
            data = {field: value, "csrf_token": token}
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
