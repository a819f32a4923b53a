"""The player's own page (/console/me) in a real browser and through Flask's test client:
the statement newest first, in the game's words, with the balance after each line, in
the club's money and time; paged and filtered by table and by evening; each line's
receipt checked in the browser; a dispute opened from a line, sent by htmx and said in
the aria-live region; the same form refused as the API refuses it, and nothing written;
and at a phone's width, nothing scrolls sideways and every target is 44 px.

The club: ann, bob and cat, and deepkit's four rounds at t1 (ann casts: round 1 she wins
on the chance, round 2 is thrown out and she loses the stake cat laid and she covered),
then a penny at a time, deposits enough to run the statement past a page.
"""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.commands.disputes import resolve_dispute
from ledger.store.schema import events
from ledger.store.vocabulary import STORED_EVENTS, Deposited, Withdrawn
from tests.api.conftest import Api
from tests.console.conftest import Served, sign_in
from tests.console.formkit import csrf, signed_in
from tests.console.tablekit import count
from tests.ledger.deepkit import play

EVENT_NAMES = re.compile(r"\b(" + "|".join(cls.__name__ for cls in STORED_EVENTS) + r")\b")
RAW_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z|\d{2}:\d{2}:\d{2}\.\d{3,}")
TOPUPS = 30  # deposits of 1p each: the statement runs past its first page of 25


def evening(club: Any) -> None:
    play(club)
    for _ in range(TOPUPS):
        club.account_command("ann", Deposited, 1, "setter:bank")
    club.account_command("ann", Withdrawn, 250, "setter:bank")


def pence(text: str) -> int:
    """ "+£1,234.56" as minor units, exactly."""
    sign = -1 if text.strip().startswith("-") else 1
    return sign * int(re.sub(r"[^0-9]", "", text))


def rows(page: Any, checks: bool = True) -> list[dict[str, str]]:
    """The statement's lines, each cell by its column's heading (without the browser's
    check of each receipt, which runs on as the page is read, unless `checks`)."""
    table = page.locator("table.statement")
    heads = table.locator("thead th").all_inner_texts()
    found = []
    for row in table.locator("tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        if len(cells) == 1:  # "Nothing here."
            continue
        line = dict(zip(heads, cells, strict=True))
        if not checks:
            line.pop("In your browser")
        found.append(line)
    return found


@pytest.fixture
def ann(served: Served, page: Any) -> Any:
    evening(served.app.extensions["hazard.club"])
    sign_in(page, served.url, served.token("player", "ann"))
    page.goto(served.url + "/console/me")
    return page


def test_the_statement_reads_newest_first_in_words_with_the_balance_after_each_line(
    served: Served, ann: Any
) -> None:
    page = ann
    assert page.locator("#balance").inner_text() == f"£{served.balance('ann') / 100:,.2f}"
    lines = rows(page)
    assert len(lines) == 25  # a page
    assert lines[0]["What"] == "withdrawal" and lines[0]["Amount"] == "-£2.50"
    assert lines[1]["What"] == "deposit" and lines[1]["Amount"] == "+£0.01"
    # The balance after each line is the one after the line below it, plus its amount.
    for newer, older in itertools.pairwise(lines):
        assert pence(newer["Balance"]) == pence(older["Balance"]) + pence(newer["Amount"])
    assert pence(lines[0]["Balance"]) == served.balance("ann")
    main = page.locator("main").inner_text()
    assert not EVENT_NAMES.search(main), EVENT_NAMES.search(main)
    assert not RAW_TIME.search(main), RAW_TIME.search(main)
    now = datetime.now(UTC).strftime("%d %b %Y")
    assert lines[0]["When"].startswith(now) and lines[0]["When"].endswith(" UTC")


def test_older_and_newer_pages_and_the_lines_of_a_round(served: Served, ann: Any) -> None:
    page = ann
    first = rows(page, checks=False)
    page.get_by_role("link", name="Older").click()
    page.wait_for_load_state()
    older = rows(page)
    assert older and older[0]["Balance"] != first[0]["Balance"]
    assert pence(first[-1]["Balance"]) == pence(older[0]["Balance"]) + pence(first[-1]["Amount"])
    words = [line["What"] for line in older]
    # ann's evening at t1, each in the game's words.
    assert "won the stake at t1, round 1 (the chance thrown)" in words
    assert "won the odds on the chance at t1, round 1 (the chance thrown)" in words
    assert "laid odds on the chance at t1, round 1, at 2 to 1" in words
    assert "lost the laid stake at t1, round 2 (thrown out)" in words
    assert "covered a stake laid against you at t1, round 2" in words
    assert "the side bet that the first throw nicks returned at t1, round 1 (never taken)" in words
    assert older[-1]["What"] == "deposit" and page.get_by_role("link", name="Older").count() == 0
    page.get_by_role("link", name="Newer").click()
    page.wait_for_load_state()
    assert rows(page, checks=False) == first


def test_filtered_by_table_and_by_evening(served: Served, ann: Any) -> None:
    page = ann
    page.get_by_label("Table", exact=True).fill("t1")
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state()
    lines = rows(page, checks=False)
    assert lines and all(" at t1" in line["What"] for line in lines)
    assert "table=t1" in page.url
    # Today (the club's zone is UTC here): everything; a day with nothing: nothing.
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    page.get_by_label("Evening").fill(today)
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state()
    assert rows(page, checks=False) == lines
    page.get_by_label("Evening").fill("2001-01-01")
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state()
    assert rows(page) == []
    assert "Nothing here." in page.locator("table.statement").inner_text()
    page.get_by_role("link", name="Show everything").click()
    page.wait_for_load_state()
    assert len(rows(page)) == 25


def test_each_lines_receipt_is_checked_in_the_browser(served: Served, ann: Any) -> None:
    page = ann
    section = page.locator("section.receipt-check[data-done]")
    section.wait_for()
    assert section.get_attribute("data-done") == "passed"
    checked = [line["In your browser"] for line in rows(page)]
    assert checked == ["checked"] * 25
    said = " ".join(section.locator("#receipt-check-status").inner_text().split())
    assert said.startswith("All 25 of your receipts hold.")
    size = count(served)
    assert f"against the checkpoint of size {size}" in said  # the newest


def _lost_round_two(page: Any) -> None:
    line = page.locator("table.statement tbody tr", has_text="lost the laid stake at t1, round 2")
    line.get_by_role("link", name="Dispute this round").click()
    page.get_by_role("heading", name="Dispute round 2 at t1").wait_for()


def _disputing_round_two(served: Served, page: Any) -> tuple[Any, int]:
    """ann's form disputing round 2, reached from her statement's older lines, with her
    reason typed; the page marked, to tell a swap from a reload (window.still). The form,
    and the disputes opened so far."""
    page.get_by_role("link", name="Older").click()
    _lost_round_two(page)
    page.evaluate("window.still = 'the same page'")
    before = count(served, "DisputeOpened")
    form = page.get_by_role("form", name="Dispute round 2 at t1")
    form.get_by_label("Your reason").fill("the croupier read 1+1; it was 1+2")
    return form, before


def test_a_dispute_opened_from_a_line_is_said_and_swapped_in(served: Served, ann: Any) -> None:
    page = ann
    form, before = _disputing_round_two(served, page)
    form.get_by_label("Which throw").select_option(index=1)
    form.get_by_label("It showed die 1").select_option("1")
    # One die alone is refused, by the API's rule, beside the form; nothing is written.
    form.get_by_role("button", name="Open the dispute").click()
    page.locator("[data-error=dispute]").wait_for()
    assert "dice: give both dice, or neither" in page.locator("[data-error=dispute]").inner_text()
    assert "give both dice" in page.locator("#announce").inner_text()
    assert count(served, "DisputeOpened") == before
    form = page.get_by_role("form", name="Dispute round 2 at t1")
    assert form.get_by_label("Your reason").input_value() == "the croupier read 1+1; it was 1+2"
    form.get_by_label("and die 2").select_option("2")
    form.get_by_role("button", name="Open the dispute").dblclick()
    page.locator("#dispute-answer").wait_for()
    assert page.evaluate("window.still") == "the same page"  # swapped in, not reloaded
    said = page.locator("#announce").inner_text()
    assert re.fullmatch(r"Dispute d\d+ opened over round 2 at t1\.", said), said
    assert count(served, "DisputeOpened") == before + 1  # a double click posts once
    assert page.locator("#dispute-answer").inner_text() == (
        "The round paid what its events say: thrown out."
    )
    assert "Had the throw at version" in page.locator("#dispute-what-if").inner_text()
    assert re.search(r"/console/me/tables/t1/disputes/d\d+$", page.url)
    dispute_id = page.url.rsplit("/", 1)[1]

    # The setter voids the round: the player's page lists the outcome, and the statement
    # says what it moved, in words.
    club = served.app.extensions["hazard.club"]
    resolve_dispute(club, "t1", "setter:bank", dispute_id, "voided", "the camera agrees")
    page.goto(served.url + "/console/me")
    listed = page.get_by_role("table", name="Your disputes")
    assert "voided: every bet of the round reversed" in listed.inner_text()
    assert "the camera agrees" in listed.inner_text()
    words = [line["What"] for line in rows(page)]
    assert (
        f"dispute {dispute_id} at t1, round 2: the round voided, the laid stake reversed" in words
    )
    # The receipt of the dispute's opening is ann's own, and opens.
    listed.get_by_role("link", name=dispute_id).click()
    page.get_by_role("link", name="the receipt of its opening").click()
    page.get_by_role("heading", name="Receipt of the event at position").wait_for()
    assert page.locator("#receipt-what").inner_text() == (
        f"opened dispute {dispute_id} over round 2 at t1"
    )


def test_a_stale_csrf_token_on_the_dispute_page_is_said_as_an_alert(
    served: Served, ann: Any
) -> None:
    """A refusal before the page's own code, sent by htmx, is its announcement alone
    (ledger.console.errors, HX-Reswap: none): the page's one htmx-config (base.html)
    swaps it in, where this page's own once dropped every 4xx and said nothing."""
    page = ann
    form, before = _disputing_round_two(served, page)
    # The token of a session since ended: the page was left open across a sign-in.
    form.locator("input[name=csrf_token]").evaluate("(e) => { e.value = 'stale' + e.value; }")
    form.get_by_role("button", name="Open the dispute").click()
    alert = page.locator("#announce[role=alert]")
    alert.wait_for()
    assert "CSRF" in alert.inner_text() and alert.inner_text().startswith("Refused")
    assert page.evaluate("window.still") == "the same page"  # the page stays as it was
    assert form.get_by_label("Your reason").input_value() == "the croupier read 1+1; it was 1+2"
    assert form.get_by_role("button", name="Open the dispute").is_enabled()  # may be sent again
    assert count(served, "DisputeOpened") == before


def test_without_script_a_dispute_posts_and_lands_on_its_page(served: Served, browser: Any) -> None:
    evening(served.app.extensions["hazard.club"])
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in(page, served.url, served.token("player", "ann"))
        page.goto(served.url + "/console/me")
        page.get_by_role("link", name="Older").click()
        _lost_round_two(page)
        form = page.get_by_role("form", name="Dispute round 2 at t1")
        form.get_by_label("Your reason").fill("the dice were cocked")
        form.get_by_role("button", name="Open the dispute").click()
        page.locator("#dispute-answer").wait_for()
        assert re.fullmatch(
            r"Dispute d\d+ opened over round 2 at t1\.", page.locator("#announce").inner_text()
        )
        assert count(served, "DisputeOpened") == 1
    finally:
        context.close()


def test_at_a_phones_width_nothing_scrolls_sideways_and_targets_are_44px(
    served: Served, ann: Any
) -> None:
    page = ann
    page.set_viewport_size({"width": 390, "height": 844})
    newest = page.locator("table.statement tbody tr").first.get_attribute("data-position")
    for url in (
        "/console/me",
        "/console/me?before=60",
        "/console/me/tables/t1/rounds/2/dispute",
        f"/console/me/receipts/{newest}",
    ):
        page.goto(served.url + url)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (url, width)
        small = page.evaluate(
            """() => [...document.querySelectorAll('main a, main button, main select, main input')]
                .filter((el) => el.type !== 'hidden' && el.offsetParent !== null)
                .map((el) => [el.textContent.trim() || el.name, el.getBoundingClientRect().height])
                .filter(([, h]) => h < 44)"""
        )
        assert small == [], (url, small)
    page.goto(served.url + "/console/me?before=60")
    # Each line a card: its cells stacked, each headed.
    first = page.locator("table.statement tbody tr").first
    assert first.locator("td").first.evaluate("(td) => getComputedStyle(td).display") == "block"


AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"


def violations(page: Any) -> list[str]:
    """What axe-core finds on the page as it stands: each rule broken, and where."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [f"{v['id']}: {[n['target'] for n in v['nodes']]}" for v in found]


def test_the_players_pages_pass_axe(served: Served, ann: Any) -> None:
    page = ann
    page.get_by_role("link", name="Older").click()
    page.wait_for_load_state()
    assert violations(page) == []
    _lost_round_two(page)
    assert violations(page) == []
    form = page.get_by_role("form", name="Dispute round 2 at t1")
    form.get_by_label("Your reason").fill("the dice were cocked")
    form.get_by_role("button", name="Open the dispute").click()
    page.locator("#dispute-answer").wait_for()
    assert violations(page) == []
    page.goto(page.url)  # the dispute's own page
    assert violations(page) == []
    page.get_by_role("link", name="the receipt of its opening").click()
    page.get_by_role("heading", name="Receipt of the event at position").wait_for()
    assert violations(page) == []


# -- the dispute form through Flask's test client, on both databases -------------------------


def _club(api: Api) -> Any:
    club = api.app.extensions["hazard.club"]
    play(club)
    return club


def _form(client: Any, number: int = 2) -> tuple[str, str]:
    page = client.get(f"/console/me/tables/t1/rounds/{number}/dispute")
    assert page.status_code == 200
    version = re.search(rb'name="version" value="(\d+)"', page.data)
    assert version is not None
    return csrf(page), version.group(1).decode()


def _disputes(api: Api) -> int:
    with api.book.store.engine.connect() as conn:
        query = sa.select(sa.func.count()).where(events.c.type == "DisputeOpened")
        return int(conn.execute(query).scalar_one())


def test_the_dispute_form_runs_the_apis_command_once_per_key(api: Api) -> None:
    _club(api)
    ann = signed_in(api, "player", "ann")
    token, version = _form(ann)
    sent = {"csrf_token": token, "key": "k1", "version": version, "claim": "the dice were cocked"}
    first = ann.post("/console/me/tables/t1/rounds/2/dispute", data=sent)
    again = ann.post("/console/me/tables/t1/rounds/2/dispute", data=sent)
    assert first.status_code == again.status_code == 302
    assert first.headers["Location"] == again.headers["Location"]
    assert _disputes(api) == 1
    landed = ann.get(first.headers["Location"])
    assert b"Dispute d" in landed.data and b"opened over round 2 at t1." in landed.data
    # Another player may not read it; the API's listing for ann has it.
    bob = signed_in(api, "player", "bob")
    assert bob.get(first.headers["Location"]).status_code == 403
    listed = api.client("player", "ann").get("/disputes")
    assert [d["claim"] for d in listed.json["items"]] == ["the dice were cocked"]


@pytest.mark.parametrize(
    ("fields", "status", "said"),
    [
        ({"csrf_token": ""}, 400, b"CSRF"),
        ({"version": "1"}, 409, b"The table has moved on"),
        ({"claim": ""}, 422, b"claim:"),
        ({"claim": "x" * 501}, 422, b"claim:"),
        ({"die1": "7", "die2": "1"}, 422, b"dice:"),
        ({"die1": "3"}, 422, b"give both dice, or neither"),
        ({"throw": "--5", "die1": "1", "die2": "2"}, 422, b"throw:"),
        ({"key": "k\x00"}, 422, b"Idempotency-Key"),
    ],
)
def test_a_hostile_dispute_form_is_refused_and_writes_nothing(
    api: Api, fields: dict[str, str], status: int, said: bytes
) -> None:
    _club(api)
    ann = signed_in(api, "player", "ann")
    token, version = _form(ann)
    sent = {"csrf_token": token, "key": "k2", "version": version, "claim": "wrong dice", **fields}
    answer = ann.post("/console/me/tables/t1/rounds/2/dispute", data=sent)
    assert answer.status_code == status, answer.data[:2000]
    assert said in answer.data
    assert _disputes(api) == 0


def test_a_round_the_player_had_no_money_in_is_refused_by_the_engines_rule(api: Api) -> None:
    """cat sat down at round 2: she had nothing in round 1."""
    _club(api)
    cat = signed_in(api, "player", "cat")
    token, version = _form(cat, 1)
    sent = {"csrf_token": token, "key": "k3", "version": version, "claim": "I was robbed"}
    answer = cat.post("/console/me/tables/t1/rounds/1/dispute", data=sent)
    assert answer.status_code == 422
    assert b"(rule " in answer.data
    assert _disputes(api) == 0


def test_the_statements_address_is_read_as_the_api_reads_one(sqlite_api: Api) -> None:
    _club(sqlite_api)
    ann = signed_in(sqlite_api, "player", "ann")
    for query, status in [
        ("before=0", 400),
        ("after=-1", 400),
        (f"before={2**63}", 400),
        ("before=5&after=2", 400),
        ("evening=2026-13-01", 400),
        ("evening=yesterday", 400),
        ("table=no%20such", 400),
        ("table=t9", 404),
        ("table=&evening=", 200),
        (f"before={2**63 - 1}", 200),
    ]:
        assert ann.get(f"/console/me?{query}").status_code == status, query
    assert ann.get("/console/me/tables/t1/rounds/99/dispute").status_code == 404
    assert ann.get(f"/console/me/tables/t1/rounds/{2**40}/dispute").status_code == 404
    assert ann.get("/console/me/tables/t9/rounds/1/dispute").status_code == 404
    assert ann.get("/console/me/tables/t1/disputes/x1").status_code == 404
