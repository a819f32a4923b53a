"""The back office and the auditor's pages in a real browser (Debian's chromium, driven
by Playwright): money confirmed before it is written, a dispute resolved, each write
swapped in by htmx without a reload and said in the aria-live region; and at a phone's
width (390 px) no page scrolls sideways, every control is a 44 px target, and axe-core
finds nothing.

The dispute is tests/api/disputekit.py's: bob says round 2's 4+4 was 4+5, and the
setter corrects it; cat pays bob back 70 (bob 890 -> 960, cat 1050 -> 980)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ledger.store.schema import events
from tests.api import disputekit
from tests.api.conftest import Api
from tests.console.conftest import Served, sign_in

AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
PHONE = {"width": 390, "height": 844}


def event_count(served: Served, kind: str) -> int:
    e = events.c
    with served.book.store.engine.connect() as conn:
        query = sa.select(sa.func.count()).select_from(events).where(e.type == kind)
        return int(conn.execute(query).scalar_one())


def _announced(page: Any) -> str:
    text: str = page.locator("#announce").inner_text()
    return text


def _still_the_same_page(page: Any) -> None:
    """Nothing reloaded the page since `_mark`: the mark set on its window is there."""
    assert page.evaluate("window.hazardMark") == "kept"


def _mark(page: Any) -> None:
    page.evaluate("window.hazardMark = 'kept'")


def test_a_deposit_is_confirmed_in_words_then_written_once(served: Served, page: Any) -> None:
    club = served.app.extensions["hazard.club"]
    club.create_player("ann", "setter:bank")
    sign_in(page, served.url, served.token("setter", "bank"))
    page.goto(served.url + "/console/office")
    _mark(page)
    deposits = event_count(served, "Deposited")
    row = page.get_by_role("form", name="Money for ann")
    row.get_by_label("Amount for ann, in GBP").fill("12.50")
    row.get_by_role("button", name="Deposit…").click()
    confirm = page.get_by_role("button", name="Confirm: deposit £12.50")
    confirm.wait_for()
    assert (
        page.locator("[data-field=confirm-words]").inner_text() == "twelve pounds and fifty pence"
    )
    assert _announced(page) == "Confirm: Deposit £12.50 into ann's account."
    assert event_count(served, "Deposited") == deposits  # nothing yet
    confirm.dblclick()  # a double click on "Confirm"
    page.get_by_text("Deposited £12.50 into ann's account.", exact=True).wait_for()
    assert _announced(page).startswith("Deposited £12.50 into ann's account. Receipt: position")
    assert page.locator("#player-ann [data-field=balance]").inner_text() == "£12.50"
    assert event_count(served, "Deposited") == deposits + 1
    assert served.balance("ann") == 1250
    _still_the_same_page(page)
    # Too many decimals: refused, naming the rule, and nothing written.
    row.get_by_label("Amount for ann, in GBP").fill("1.005")
    row.get_by_role("button", name="Withdraw…").click()
    page.locator("[data-error='withdraw:ann']").wait_for()
    assert "at most 2 decimal places" in _announced(page)
    assert served.balance("ann") == 1250
    _still_the_same_page(page)


def test_a_dispute_is_resolved_in_the_browser(served: Served, page: Any) -> None:
    api = Api(served.app)
    night, versions = disputekit.two_rounds(api)
    opened = disputekit.open_dispute(
        night, "bob", 2, {"claim": "the 4+4 was 4+5", "throw": versions["eight"], "dice": [4, 5]}
    )
    sign_in(page, served.url, served.token("setter", "bank"))
    page.goto(served.url + "/console/office")
    page.get_by_role("link", name=opened["dispute_id"]).click()
    page.get_by_role("heading", name="The service's answer").wait_for()
    _mark(page)
    page.get_by_label("Correct the throw: the round paid again with the dice below").check()
    page.get_by_label("The reason (kept in the log)").fill("the camera shows 4+5")
    page.get_by_role("button", name="Review the resolution…").click()
    confirm = page.get_by_role(
        "button", name=f"Confirm: correct the throw at version {versions['eight']} to 4 + 5"
    )
    confirm.wait_for()
    assert page.locator("#confirm-posts tbody td").all_inner_texts() == ["cat", "bob", "£0.70"]
    confirm.click()
    page.locator("#adjustments-made").wait_for()
    assert _announced(page).startswith(f"Dispute {opened['dispute_id']} resolved: corrected.")
    assert night.balances() == {"ann": 1160, "bob": 960, "cat": 980, "setter": 9900}
    _still_the_same_page(page)


def _fits_a_phone(page: Any, url: str) -> None:
    """At 390 px: no sideways scroll, 44 px targets, and axe-core finds nothing."""
    page.goto(url)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], (url, width)
    small = page.evaluate(
        """() => [...document.querySelectorAll(
             'main button, main select, main input:not([type=hidden]):not([type=radio]), '
             + 'main a.button, .subnav a, .pager a, .stepper a, main .choice')]
           .filter((e) => e.offsetParent !== null)
           .map((e) => [e.outerHTML.slice(0, 80), e.getBoundingClientRect().height])
           .filter(([, h]) => h < 44)"""
    )
    assert small == [], (url, small)
    page.add_script_tag(path=str(AXE))
    violations = page.evaluate(
        "async () => (await axe.run()).violations"
        ".map((v) => [v.id, v.nodes.length, v.nodes[0].html])"
    )
    assert violations == [], (url, violations)


def test_the_office_and_the_auditor_s_pages_fit_a_phone(served: Served, browser: Any) -> None:
    api = Api(served.app)
    night, versions = disputekit.two_rounds(api)
    opened = disputekit.open_dispute(
        night, "bob", 2, {"claim": "the 4+4 was 4+5", "throw": versions["eight"], "dice": [4, 5]}
    )
    context = browser.new_context(viewport=PHONE)
    phone = context.new_page()
    try:
        sign_in(phone, served.url, served.token("setter", "bank"))
        for path in [
            "/console/office",
            f"/console/office/disputes/t1/{opened['dispute_id']}",
            "/console/audit",
            "/console/audit?after=0",
            "/console/audit/replay/t1/2?step=5",
            "/console/audit/fairness",
            "/console/audit/verify",
            "/console/nothing-here",
        ]:
            _fits_a_phone(phone, served.url + path)
        # The confirmation step too.
        phone.goto(served.url + "/console/office")
        row = phone.get_by_role("form", name="Money for ann")
        row.get_by_label("Amount for ann, in GBP").fill("3")
        row.get_by_role("button", name="Deposit…").click()
        phone.get_by_role("button", name="Confirm: deposit £3.00").wait_for()
        assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    finally:
        from tests.console.conftest import SHOTS

        SHOTS.mkdir(parents=True, exist_ok=True)
        phone.screenshot(path=str(SHOTS / "office-phone.png"), full_page=True)
        context.close()
