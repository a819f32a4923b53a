"""The console's sessions and forms, through Flask's test client (no browser): the
cookie's flags, signing out, a stale page's 409, a repeat posting once, and a bad
token. The browser tests (test_evening.py) play the same through chromium."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

from ledger.store.schema import events
from ledger.store.vocabulary import Deposited
from tests.api.conftest import Api


def csrf(page: Any) -> str:
    found = re.search(rb'name="csrf_token" value="([^"]+)"', page.data)
    assert found is not None
    return found.group(1).decode()


def signed_in(api: Api, role: str, name: str, https: bool = False) -> Any:
    """A test client signed in with a new token of `role`; its cookie jar keeps the
    session, and `cookie` is the Set-Cookie header that gave it."""
    token = api.client(role, name).token
    client = api.app.test_client()
    base = "https://localhost" if https else "http://localhost"
    answer = client.post(
        "/console/sign-in",
        data={"token": token, "csrf_token": csrf(client.get("/", base_url=base))},
        base_url=base,
    )
    assert answer.status_code == 302
    client.cookie = answer.headers["Set-Cookie"]
    return client


def count(api: Api) -> int:
    with api.book.store.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())


def a_table(api: Api) -> Any:
    club = api.app.extensions["hazard.club"]
    for name in ("ann", "bob"):
        club.create_player(name, "setter:bank")
        club.account_command(name, Deposited, 500, "setter:bank")
    croupier = signed_in(api, "croupier", "cecil")
    page = croupier.get("/")
    assert (
        croupier.post(
            "/console/tables",
            data={"id": "t1", "ruleset": "english", "csrf_token": csrf(page), "key": "k0"},
        ).status_code
        == 302
    )
    return croupier


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
