"""A table made ready for the table page's browser tests: players funded and seated by
the commands themselves (the page is what is tested, not the setting up), a croupier
signed in, the events counted, and a write sent over the API as another device would."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from ledger.commands import Caller, Role, tables
from ledger.service import Club
from ledger.store.schema import events
from ledger.store.vocabulary import Deposited
from tests.console.conftest import Served, sign_in

CECIL = Caller(Role.CROUPIER, "cecil")
SIX = ("ann", "bob", "cat", "dan", "eve", "fay")


def club_of(served: Served) -> Club:
    found: Club = served.app.extensions["hazard.club"]
    return found


def funded(served: Served, names: Sequence[str] = SIX, each: int = 100_000) -> Club:
    club = club_of(served)
    for name in names:
        club.create_player(name, "setter:bank")
        club.account_command(name, Deposited, each, "setter:bank")
    club.account_command("setter", Deposited, 10_000_000, "setter:bank")
    return club


def playing(
    served: Served,
    names: Sequence[str] = SIX,
    rules: str = "english",
    limits: dict[str, int] | None = None,
) -> Club:
    """Table t1 under `rules`, `names` funded and seated, the first of them the caster
    (their cast the lowest)."""
    club = funded(served, names)
    tables.open_table(club, "t1", CECIL, ruleset=rules, limits=limits)
    for name in names:
        tables.seat(club, "t1", CECIL, name)
    for die, name in enumerate(names, 1):
        tables.cast(club, "t1", CECIL, name, min(die, 6))
    assert club.state("t1").caster == names[0]
    return club


def at_the_table(served: Served, page: Any, role: str = "croupier", name: str = "cecil") -> Any:
    sign_in(page, served.url, served.token(role, name))
    page.goto(served.url + "/console/tables/t1")
    page.get_by_role("heading", name="Table t1").wait_for()
    page.evaluate("() => { window.sameDocument = 'yes'; }")  # gone if the page reloads
    return page


def same_document(page: Any) -> bool:
    """Whether the page is the document it was when `at_the_table` opened it."""
    return bool(page.evaluate("() => window.sameDocument === 'yes'"))


def count(served: Served, kind: str | None = None) -> int:
    query = sa.select(sa.func.count()).select_from(events)
    if kind is not None:
        query = query.where(events.c.type == kind)
    with served.book.store.engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def payloads(served: Served, kind: str) -> list[dict[str, Any]]:
    with served.book.store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(events.c.payload).where(events.c.type == kind).order_by(events.c.position)
        ).scalars()
        return [json.loads(row) for row in rows]


def over_the_api(served: Served, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A write sent to the API, as another device sends it."""
    request = urllib.request.Request(
        served.url + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        found: dict[str, Any] = json.loads(answer.read())
        return found


def control(page: Any, label: str) -> Any:
    """The form of one control, by its accessible name."""
    return page.get_by_role("form", name=label)


def said(page: Any, text: str) -> None:
    """Wait until the page's aria-live region says `text`."""
    page.locator("#announce", has_text=text).wait_for()


def throw(page: Any, die1: int, die2: int) -> None:
    form = control(page, "Record a throw")
    form.locator(f"label[for='d1-{die1}']").click()
    form.locator(f"label[for='d2-{die2}']").click()
    version = page.locator("#board").get_attribute("data-version")
    form.get_by_role("button", name="Record throw").click()
    page.locator(f"#board:not([data-version='{version}'])").wait_for()


def caught_up(page: Any, club: Club, table: str = "t1") -> None:
    """Wait until the page shows the table as it is now (its poll has come round)."""
    version = club.state(table).version
    page.locator(f"#board[data-version='{version}']").wait_for()
