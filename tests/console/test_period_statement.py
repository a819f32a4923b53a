"""A player's statement for a period in the console (/console/statement): through Flask's
test client on both databases (the figures, who may read whose, a bad period refused
beside the picker, the CSV, the PDF and the export that proves it), and in a real
browser: picked by month from the player's page, at 1280 and 390 px (nothing scrolls
sideways, every target 44 px), and axe. The club is tests.api.periodkit's November."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ledger.exports import offline
from tests.api.conftest import Api
from tests.api.periodkit import november
from tests.console.conftest import Served, sign_in
from tests.console.formkit import signed_in
from tests.ledger.nightkit import closed_evening
from tests.signing import VERIFIER

SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"


def violations(page: Any) -> list[str]:
    """What axe-core finds on the page as it stands: each rule broken, and where."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [f"{v['id']}: {[n['target'] for n in v['nodes']]}" for v in found]


def _figures(html: str) -> dict[str, str]:
    """Each line of the statement's first table: its words and its amount."""
    found = re.findall(
        r"<tr[^>]*><td>([^<]+)</td>\s*<td>[^<]*</td>\s*<td class=\"n\">([^<]+)</td>", html
    )
    return dict(found)


def test_a_player_reads_their_month(api: Api) -> None:
    november(api)
    ann = signed_in(api, "player", "ann")
    page = ann.get("/console/statement?month=2026-11")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    lines = _figures(html)
    assert 'id="p-evening" type="date"' in html  # the club records no evenings: a date
    assert lines["Balance at the start"] == "£0.00"
    assert lines["Balance at the end"] == "£8.20"
    assert lines["Bets won: winnings over the stakes"] == "+£1.60"
    assert lines["Disputes&#39; adjustments"] == "-£1.60"
    assert "the dice left the table" in html
    # Another's, or the bank's, is refused; an evening with nothing is the balance standing.
    assert ann.get("/console/statement?month=2026-11&player=bob").status_code == 403
    assert ann.get("/console/statement.csv?month=2026-11&player=bob").status_code == 403
    assert ann.get("/console/statement/export?player=bob").status_code == 403
    quiet = _figures(ann.get("/console/statement?evening=2026-11-05").get_data(as_text=True))
    assert quiet["Balance at the start"] == quiet["Balance at the end"] == "£11.60"


def test_the_setter_names_the_player(api: Api) -> None:
    november(api)
    bank = signed_in(api, "setter", "bank")
    asking = bank.get("/console/statement").get_data(as_text=True)
    assert 'aria-label="Whose statement"' in asking
    bob = _figures(bank.get("/console/statement?player=bob&month=2026-11").get_data(as_text=True))
    assert bob["Balance at the end"] == "£9.50"
    assert bank.get("/console/statement?player=nobody&month=2026-11").status_code == 404
    assert bank.get("/console/statement?player=setter&month=2026-11").status_code == 404
    croupier = signed_in(api, "croupier", "cecil")
    assert croupier.get("/console/statement?player=ann").status_code == 403


def test_a_bad_period_is_said_beside_the_picker(api: Api) -> None:
    november(api)
    ann = signed_in(api, "player", "ann")
    for query, said in (
        ("month=2026-13", "month &#39;2026-13&#39; is not a month"),
        ("from=2026-11-03&to=2026-11-01", "to (2026-11-01) is before from (2026-11-03)"),
        ("week=2026-W48&month=2026-11", "ask for one period"),
    ):
        page = ann.get(f"/console/statement?{query}")
        assert page.status_code == 400, query
        html = page.get_data(as_text=True)
        assert 'role="alert"' in html and said in html, (query, html[-2000:])
    assert ann.get("/console/statement?evening=" + "2" * 5000).status_code == 400
    assert ann.get("/console/statement.pdf?month=2026-13").status_code == 400


def test_the_files_and_the_export_that_proves_it(api: Api) -> None:
    november(api)
    ann = signed_in(api, "player", "ann")
    html = ann.get("/console/statement?month=2026-11").get_data(as_text=True)
    links = dict(re.findall(r'<a class="button[^"]*" href="([^"]+)" download>([^<]+)</a>', html))
    by_words = {words: href.replace("&amp;", "&") for href, words in links.items()}
    sheet = ann.get(by_words["Download as CSV"])
    assert sheet.status_code == 200 and "Balance at the end,,820,8.20" in sheet.get_data(
        as_text=True
    )
    paper = ann.get(by_words["Download as PDF"])
    assert paper.status_code == 200 and paper.get_data().startswith(b"%PDF")
    proof = ann.get(by_words["The export that proves it"])
    assert proof.status_code == 200, proof.get_data(as_text=True)
    checked = offline.verify(proof.get_data().splitlines(), VERIFIER)
    money = checked.money["player:ann"]
    assert (money.deposited, money.withdrawn, money.staked, money.paid, money.adjusted) == (
        1000, 100, 240, 320, -160,
    )  # fmt: skip
    history = ann.get(by_words["The history before it"])
    assert history.status_code == 200
    assert offline.verify(history.get_data().splitlines(), VERIFIER).money == {}


def _targets(page: Any) -> list[Any]:
    """The targets on the page under 44 px tall: (words, height)."""
    small: list[Any] = page.evaluate(
        """() => [...document.querySelectorAll('main a, main button, main select, main input')]
            .filter((el) => el.type !== 'hidden' && el.offsetParent !== null)
            .map((el) => [el.textContent.trim() || el.name, el.getBoundingClientRect().height])
            .filter(([, h]) => h < 44)"""
    )
    return small


def test_picked_by_month_in_a_browser_at_both_widths(served: Served, page: Any) -> None:
    november(Api(served.app))
    sign_in(page, served.url, served.token("player", "ann"))
    page.goto(served.url + "/console/me")
    page.get_by_role("link", name=re.compile("Your statement for an evening")).click()
    form = page.get_by_role("form", name="A month")
    form.get_by_label("Month").fill("2026-11")
    form.get_by_role("button", name="Show the month").click()
    page.get_by_role("heading", name="The month 2026-11").wait_for()
    assert "£8.20" in page.locator(".period-statement").inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert _targets(page) == [], width
        page.screenshot(path=str(SHOTS / f"period-statement-{width}.png"), full_page=True)
    assert violations(page) == []


def test_a_recorded_evening_is_picked_by_its_number(api: Api) -> None:
    # Once the setter records evenings, the picker offers them (before, it asks a date).
    closed_evening(api.book.store)
    ann = signed_in(api, "player", "ann")
    after = ann.get("/console/statement").get_data(as_text=True)
    assert re.search(r'<select id="p-evening" name="evening" required>\s*<option value="1"', after)
    evening = ann.get("/console/statement?evening=1")
    assert evening.status_code == 200
    html = evening.get_data(as_text=True)
    assert "The evening 1" in html
    assert _figures(html)["Balance at the end"]
    unknown = ann.get("/console/statement?evening=7")
    assert unknown.status_code == 400
    assert "no evening numbered 7" in unknown.get_data(as_text=True)
