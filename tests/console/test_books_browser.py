"""The club's books in a real browser: a stranger's guesses at the sign-in page, then
the auditor reads the authentication report (the flood one row, with its count) and the
exceptions report, at a desktop's and a phone's width (shots in build/screenshots/,
docs/auditor.md shows two of them)."""

from __future__ import annotations

from typing import Any

from ledger.commands import Caller, Role, tables
from ledger.commands import significant as command
from ledger.service import Club
from ledger.store.vocabulary import Deposited
from tests.console.conftest import SHOTS, Served, sign_in


def _evening(club: Club) -> None:
    bank = Caller(Role.SETTER, "bank")
    for name in ("ann", "bob"):
        club.create_player(name, "setter:bank")
        club.account_command(name, Deposited, 1000, "setter:bank")
    club.account_command("setter", Deposited, 10_000, "setter:bank")  # the bank's cover
    tables.open_table(club, "t1", bank, ruleset="english")
    for name in ("ann", "bob"):
        tables.seat(club, "t1", bank, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t1", bank, name, die)
    tables.stake(club, "t1", bank, 100)  # ann's, the caster's: voided as the table closes
    tables.call_main(club, "t1", bank, 7)
    tables.void_throw(club, "t1", bank, "cocked", 1, 6)
    tables.close(club, "t1", bank)


def test_the_auditor_reads_the_books_at_every_width(served: Served, browser: Any) -> None:
    club: Club = served.app.extensions["hazard.club"]
    _evening(club)
    stranger = browser.new_context().new_page()
    for n in range(12):
        stranger.goto(served.url + "/")
        stranger.get_by_label("Token").fill(f"hz_guess-{n}")
        stranger.get_by_role("button", name="Sign in").click()
        # Each refusal's page loaded whole before the next guess: a page left while its
        # script still downloads drops the connection, and the test server (werkzeug's)
        # then leaves the static file open, which the suite's warnings-as-errors fails.
        stranger.wait_for_load_state("load")
    tally: command.Tally = served.app.extensions["hazard.significant"]
    tally.flush()
    auditor = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(auditor, served.url, served.token("auditor", "abel"))
    auditor.goto(served.url + "/console/audit")
    auditor.get_by_role("link", name="Authentication").click()
    row = auditor.get_by_role("row").filter(has_text="sign-in refused")
    assert "12 (" in row.inner_text()
    assert "hz_guess" not in auditor.content()
    SHOTS.mkdir(parents=True, exist_ok=True)
    auditor.screenshot(path=str(SHOTS / "auditor-authentication-1280.png"), full_page=True)
    auditor.get_by_role("link", name="Exceptions").first.click()
    assert "throw voided" in auditor.content() and "cocked" in auditor.content()
    auditor.screenshot(path=str(SHOTS / "auditor-exceptions-1280.png"), full_page=True)
    auditor.set_viewport_size({"width": 390, "height": 844})
    width = auditor.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width  # the table scrolls in its own box, the page does not
    auditor.screenshot(path=str(SHOTS / "auditor-exceptions-390.png"), full_page=True)
