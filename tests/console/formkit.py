"""The console's forms through Flask's test client: a page's CSRF token, a client signed
in with a token of a role, a table opened from the croupier's form, and the events
written (to show a refused form wrote none)."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

from ledger.commands import Caller, Role, tables
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


HTMX = {"HX-Request": "true"}
CECIL = Caller(Role.CROUPIER, "cecil")


def playing(api: Api) -> Any:
    """t1 with ann the caster and bob seated, and a croupier's client at it."""
    croupier = a_table(api)
    club = api.app.extensions["hazard.club"]
    club.account_command("setter", Deposited, 10_000, "setter:bank")
    for name in ("ann", "bob"):
        tables.seat(club, "t1", CECIL, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t1", CECIL, name, die)
    return croupier, club


def form(client: Any, **fields: str) -> dict[str, str]:
    page = client.get("/console/tables/t1")
    version = re.search(rb'name="version" value="(\d+)"', page.data)
    assert version is not None
    return {
        "csrf_token": csrf(page),
        "version": version.group(1).decode(),
        "from": "table",
        **fields,
    }
