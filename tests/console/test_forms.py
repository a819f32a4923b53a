"""The console's sessions and forms, through Flask's test client (no browser): the
cookie's flags, signing out, a stale page's 409, a repeat posting once, and a bad
token. The browser tests (test_evening.py) play the same through chromium."""

from __future__ import annotations

from tests.api.conftest import Api
from tests.console.formkit import a_table, count, csrf, signed_in


def test_the_session_cookie_is_httponly_strict_and_secure_over_https(sqlite_api: Api) -> None:
    plain = signed_in(sqlite_api, "croupier", "cecil").cookie
    assert "HttpOnly" in plain and "SameSite=Strict" in plain and "Secure" not in plain
    secure = signed_in(sqlite_api, "croupier", "cecil", https=True).cookie
    assert "Secure" in secure
    assert plain.startswith("hazard_console=")


def test_a_bad_token_signs_nobody_in_and_signing_out_forgets_the_token(sqlite_api: Api) -> None:
    client = sqlite_api.app.test_client()
    answer = client.post(
        "/console/sign-in", data={"token": "hz_nope", "csrf_token": csrf(client.get("/"))}
    )
    assert answer.status_code == 401 and b"not a live token" in answer.data
    croupier = signed_in(sqlite_api, "croupier", "cecil")
    assert b"Sign out" in croupier.get("/").data
    assert (
        croupier.post("/console/sign-out", data={"csrf_token": csrf(croupier.get("/"))}).status_code
        == 302
    )
    assert b"Paste the token" in croupier.get("/").data


def test_a_stale_page_gets_409_and_the_table_as_it_is(api: Api) -> None:
    croupier = a_table(api)
    page = croupier.get("/console/tables/t1")
    token = csrf(page)
    fresh = croupier.post(
        "/console/tables/t1/do/seats",
        data={"player": "ann", "csrf_token": token, "key": "k1", "version": "1"},
    )
    assert fresh.status_code == 302
    before = count(api)
    stale = croupier.post(  # drawn at version 1; the table is at 2 now
        "/console/tables/t1/do/seats",
        data={"player": "bob", "csrf_token": token, "key": "k2", "version": "1"},
    )
    assert stale.status_code == 409
    assert b"The table has changed" in stale.data
    assert b'data-field="version">2<' in stale.data  # the new state, shown
    assert count(api) == before


def test_a_resubmitted_form_posts_once(api: Api) -> None:
    croupier = a_table(api)
    token = csrf(croupier.get("/console/tables/t1"))
    form = {"player": "ann", "csrf_token": token, "key": "same", "version": "1"}
    assert croupier.post("/console/tables/t1/do/seats", data=form).status_code == 302
    after_first = count(api)
    assert croupier.post("/console/tables/t1/do/seats", data=form).status_code == 302
    assert count(api) == after_first


def test_a_refusal_names_its_rule_beside_the_control_and_writes_nothing(api: Api) -> None:
    croupier = a_table(api)
    token = csrf(croupier.get("/console/tables/t1"))
    before = count(api)
    answer = croupier.post(
        "/console/tables/t1/do/main", data={"main": "7", "csrf_token": token, "key": "k"}
    )
    assert answer.status_code == 422
    assert b'data-error="main"' in answer.data and b"wrong-phase" in answer.data
    assert count(api) == before
    answer = croupier.post(
        "/console/tables/t1/do/seats", data={"player": "zed", "csrf_token": token, "key": "k3"}
    )
    assert answer.status_code == 404 and b"there is no player" in answer.data
    assert count(api) == before
