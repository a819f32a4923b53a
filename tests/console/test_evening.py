"""An evening at the table, played through the console in a real browser (Debian's
chromium, driven by Playwright), with every balance worked by hand: the setter funds the
players in the back office, a croupier opens the table and plays three rounds, a player
reads her statement and a receipt, and an auditor steps through a round's replay,
downloads the table's export and verifies it with `hazard verify`.

English rules: the caster calls the main; 11 nicks a main of 7, 2 throws out; once a
chance is set, the chance wins and the main loses; odds on the chance pay ways(main)
to ways(chance). Deposits ann 1000, bob 1000, cat 1000, the setter 10 000.

| round | main | throws   | bets                                   | after                     |
|-------|------|----------|----------------------------------------|---------------------------|
| 1     | 7    | 5+6 nick | ann stakes 100; bob lays 50, covered    | ann 1150, bob 950, S 9900 |
| 2     | 6    | 1+1 out  | ann stakes 100                          | ann 1050, S 10000         |
| 3     | 7    | 2+2, 1+3 | ann stakes 100; chance 4; odds 50 at 2:1| ann 1250, S 9800          |
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ledger.store.schema import events
from tests.console.conftest import SHOTS, Served, sign_in

DEPOSITS = {"ann": 1000, "bob": 1000, "cat": 1000}


def fund(served: Served) -> None:
    club = served.app.extensions["hazard.club"]
    from ledger.store.vocabulary import Deposited

    for name, amount in DEPOSITS.items():
        club.create_player(name, "setter:bank")
        club.account_command(name, Deposited, amount, "setter:bank")
    club.account_command("setter", Deposited, 10_000, "setter:bank")


def _pence(text: str) -> int:
    """Money as the page writes it ("-£1,000.50") in minor units, exactly."""
    digits = int("".join(c for c in text if c.isdigit()))
    return -digits if text.strip().startswith("-") else digits


def event_count(served: Served, kind: str | None = None) -> int:
    query = sa.select(sa.func.count()).select_from(events)
    if kind is not None:
        query = query.where(events.c.type == kind)
    with served.book.store.engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def control(page: Any, label: str) -> Any:
    """The form of one control, by its accessible name."""
    return page.get_by_role("form", name=label)


def answered(page: Any, press: Any) -> None:
    """Press a control, and wait for its answer: the page is not reloaded, the table's
    parts are drawn again (its version moves on) or a refusal is said beside it."""
    version = page.locator("#board").get_attribute("data-version")
    press()
    page.locator(f"#board:not([data-version='{version}']), #controls [role=alert]").first.wait_for()


def throw(page: Any, die1: int, die2: int) -> None:
    form = control(page, "Record a throw")
    form.locator(f"label[for='d1-{die1}']").click()
    form.locator(f"label[for='d2-{die2}']").click()
    answered(page, form.get_by_role("button", name="Record throw").click)


def submit(page: Any, label: str, button: str, **fields: str) -> None:
    form = control(page, label)
    for field, value in fields.items():
        form.get_by_label(field, exact=False).fill(value)
    answered(page, form.get_by_role("button", name=button).click)


def open_bet(page: Any, kind: str) -> str:
    """The id of the one open bet of `kind` the table shows waiting."""
    row = page.locator("#bets tr[data-state=waiting]", has_text=kind)
    bet: str = row.first.get_attribute("data-bet")
    return bet


def set_up_table(served: Served, page: Any) -> None:
    sign_in(page, served.url, served.token("croupier", "cecil"))
    page.get_by_label("New table").fill("t1")
    page.get_by_label("Rule set").select_option("english")
    page.get_by_role("button", name="Open the table").click()
    page.get_by_role("heading", name="Table t1").wait_for()
    # Players are picked from those the club has, not typed; each casts with one press.
    for name in ("ann", "bob", "cat"):
        submit(page, "Seat a player", f"Seat {name}")
    for name, die in (("ann", "1"), ("bob", "3"), ("cat", "5")):
        answered(page, page.get_by_role("button", name=f"{name} cast a {die}").click)
    assert page.locator("[data-field=caster]").inner_text() == "ann"


def fund_in_the_office(served: Served, browser: Any) -> None:
    """The setter creates the players and makes the deposits, in the back office."""
    office = browser.new_context().new_page()
    sign_in(office, served.url, served.token("setter", "bank"))
    office.goto(served.url + "/console/office")
    for name in DEPOSITS:
        form = control(office, "Create a player")
        form.get_by_label("New player").fill(name)
        form.get_by_role("button", name="Create the player").click()
        office.locator(f"#player-{name}").wait_for()  # swapped in, without a reload
    # The bank's float first: after each write the players are shown from its row on.
    office.goto(served.url + "/console/office")
    for name, amount in {"setter": 10_000, **DEPOSITS}.items():
        # Typed in pounds, and confirmed in figures before it is written.
        pounds = f"{amount // 100}.{amount % 100:02d}"
        form = control(office, f"Money for {name}")
        form.get_by_label(f"Amount for {name}, in GBP").fill(pounds)
        form.get_by_role("button", name="Deposit…").click()
        office.get_by_role(
            "button", name=f"Confirm: deposit £{amount // 100:,}.{amount % 100:02d}"
        ).click()
        office.locator("[data-field=receipt-sentence]").wait_for()
    office.goto(served.url + "/console/office")  # every player's row, on the first page
    shown = {
        name: int(
            office.locator(f"#player-{name} [data-field=balance]").get_attribute("data-minor")
        )
        for name in DEPOSITS
    }
    assert shown == DEPOSITS
    office.context.close()


def test_an_evening_through_the_console(
    served: Served, page: Any, browser: Any, tmp_path: Path
) -> None:
    fund_in_the_office(served, browser)
    assert served.balance("setter") == 10_000
    set_up_table(served, page)

    # Round 1: ann stakes 100; bob lays 50 and ann covers it; main 7; 5+6 nicks.
    submit(page, "Caster stake", "ann stakes", **{"ann's stake against the setter": "1.00"})
    submit(page, "Lay against the caster", "bob lays", **{"A stake laid against ann": "0.50"})
    laid = open_bet(page, "bob lays against")
    answered(page, control(page, f"Cover {laid}").get_by_role("button").click)
    answered(page, control(page, "Call the main").get_by_role("button", name="Main 7").click)
    throw(page, 5, 6)
    assert (served.balance("ann"), served.balance("bob"), served.balance("setter")) == (
        1150,
        950,
        9900,
    )

    # Round 2: ann stakes 100; main 6; 1+1 throws out.
    submit(page, "Caster stake", "ann stakes", **{"ann's stake against the setter": "1.00"})
    answered(page, control(page, "Call the main").get_by_role("button", name="Main 6").click)
    throw(page, 1, 1)
    assert (served.balance("ann"), served.balance("setter")) == (1050, 10_000)

    # Round 3: ann stakes 100; main 7; 2+2 sets the chance 4; ann lays 50 odds on the
    # chance at 2:1 (6 ways to 3); 1+3 is the chance: 100 and 100 more.
    submit(page, "Caster stake", "ann stakes", **{"ann's stake against the setter": "1.00"})
    answered(page, control(page, "Call the main").get_by_role("button", name="Main 7").click)
    throw(page, 2, 2)
    assert page.locator("[data-field=chance]").inner_text() == "4"
    form = control(page, "Lay odds")
    form.get_by_label("the chance (4)").check()
    form.get_by_label("Odds, up to", exact=False).fill("0.50")  # in pounds
    answered(page, form.get_by_role("button", name="ann lays odds").click)
    throw(page, 1, 3)
    # The table says what the last throw did, and keeps the evening's rounds in view.
    assert "1 and 3, 4: Chance thrown: the caster wins" in page.locator("#result").inner_text()
    rounds = page.locator("#rounds tr[data-round]").all_inner_texts()
    assert [r.split("\t")[4] for r in rounds] == [
        "chance thrown: ann wins",
        "thrown out: the setter wins",
        "nick: ann wins",
    ]
    balances = {name: served.balance(name) for name in ("ann", "bob", "cat", "setter")}
    assert balances == {"ann": 1250, "bob": 950, "cat": 1000, "setter": 9800}
    assert sum(balances.values()) == 13_000

    # ann reads her own statement: her balance, and every posting that made it.
    reader = browser.new_context().new_page()
    sign_in(reader, served.url, served.token("player", "ann"))
    reader.goto(served.url + "/console/me")
    assert reader.title() == "My account · Hazard ledger"
    # In the club's money (GBP, 2 minor units: 1250 is £12.50), newest first, each line
    # in words with the balance after it.
    assert reader.locator("#balance").inner_text() == "£12.50"
    assert reader.get_by_role("table", name="Your disputes").count() == 1
    statement = reader.locator("table.statement tbody tr")
    amounts = [_pence(a) for a in statement.locator("td[data-label=Amount]").all_inner_texts()]
    assert sum(amounts) == 1250
    balances = [_pence(b) for b in statement.locator("td[data-label=Balance]").all_inner_texts()]
    assert balances[0] == 1250 and balances[-1] == amounts[-1] == 1000  # the deposit, oldest
    assert statement.first.locator("td[data-label=What]").inner_text() == (
        "won the odds on the chance at t1, round 3 (the chance thrown)"
    )
    # Each line has its receipt: the event's leaf and audit path to a signed checkpoint.
    reader.get_by_role("link", name="receipt").last.click()
    reader.get_by_role("heading", name="Receipt of the event at position").wait_for()
    assert "test.hazard/ledger" in reader.locator("dl.receipt pre").inner_text()  # the note
    # ...which her browser checks for itself: the club names no witness, so against the
    # bank's signature alone, and the page says so.
    check = reader.locator("section.receipt-check[data-done]")
    assert check.get_attribute("data-done") == "passed"
    said = check.locator("#receipt-check-status").inner_text()
    assert said.startswith("Your receipt holds. The club's policy names no witness: it was")
    reader.context.close()

    # The auditor steps through round 3's replay, throw by throw...
    auditor = browser.new_context(accept_downloads=True).new_page()
    sign_in(auditor, served.url, served.token("auditor", "audrey"))
    auditor.goto(served.url + "/console/audit")
    form = control(auditor, "Replay a round")
    form.get_by_label("Table").fill("t1")  # the newest are offered; any is typed
    form.get_by_label("Round").fill("3")
    form.get_by_role("button", name="Replay").click()
    seen = []
    while True:
        auditor.wait_for_load_state()
        seen.append(
            (
                auditor.locator("#step-type").inner_text(),
                auditor.locator("#step-state [data-field=chance]").inner_text(),
            )
        )
        if auditor.locator("#step-on").count() == 0:
            break
        auditor.locator("#step-on").click()
    SHOTS.mkdir(parents=True, exist_ok=True)
    auditor.screenshot(path=str(SHOTS / "auditor-replay-last-step.png"), full_page=True)
    kinds = [kind for kind, _ in seen]
    assert kinds.count("DiceThrown") == 2 and kinds.count("BetSettled") == 2
    assert ("DiceThrown", "4") in seen  # 2+2 set the chance 4
    assert "OddsLaid" in kinds
    # ... then downloads the table's export and checks it offline, without the server.
    auditor.goto(served.url + "/console/audit#exports")
    form = control(auditor, "Export a table")
    form.get_by_label("Table").fill("t1")
    form.get_by_label("Format").select_option("jsonl")
    with auditor.expect_download() as download:
        form.get_by_role("button", name="Download").click()
    exported = tmp_path / "t1.jsonl"
    download.value.save_as(exported)
    checked = subprocess.run(
        [sys.executable, "-m", "ledger", "verify", str(exported)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("verified")
    auditor.context.close()


def test_a_refused_command_shows_its_rule_beside_the_control(served: Served, page: Any) -> None:
    fund(served)
    set_up_table(served, page)
    submit(page, "Lay against the caster", "bob lays", **{"A stake laid against ann": "0.50"})
    answered(page, control(page, "Call the main").get_by_role("button", name="Main 7").click)
    before = event_count(served)
    throw(page, 3, 4)  # bob's lay is neither covered nor refused
    error = control(page, "Record a throw").get_by_role("alert")
    assert "stakes-pending" in error.inner_text()
    assert event_count(served) == before


def test_a_double_click_on_record_throw_posts_once(served: Served, page: Any) -> None:
    fund(served)
    set_up_table(served, page)
    answered(page, control(page, "Call the main").get_by_role("button", name="Main 7").click)
    form = control(page, "Record a throw")
    form.locator("label[for='d1-4']").click()
    form.locator("label[for='d2-4']").click()  # 8: the chance, the round goes on
    answered(page, form.get_by_role("button", name="Record throw").dblclick)
    page.wait_for_timeout(500)
    assert event_count(served, "DiceThrown") == 1


def test_a_second_browser_sees_the_table_change_by_itself(
    served: Served, page: Any, browser: Any
) -> None:
    fund(served)
    set_up_table(served, page)
    other = browser.new_context().new_page()
    sign_in(other, served.url, served.token("croupier", "carol"))
    other.goto(served.url + "/console/tables/t1")
    assert other.locator("[data-field=main]").inner_text() == "—"
    answered(page, control(page, "Call the main").get_by_role("button", name="Main 8").click)
    # No reload: the second screen polls and redraws itself.
    other.locator("[data-field=main]", has_text="8").wait_for(timeout=5_000)
    other.context.close()


def test_a_player_watches_the_table_but_cannot_run_it_nor_reach_the_setters_pages(
    served: Served, page: Any
) -> None:
    fund(served)
    croupier = page
    set_up_table(served, croupier)
    player = croupier.context.browser.new_context().new_page()
    sign_in(player, served.url, served.token("player", "bob"))
    before = event_count(served)
    # The table is public, as the API makes it: bob watches it, without the croupier's
    # controls (his own bets are test_table_page.py's).
    answer = player.goto(served.url + "/console/tables/t1")
    assert answer.status == 200
    for croupiers in ("Seat a player", "Call the main", "Caster stake", "Close the table"):
        assert control(player, croupiers).count() == 0, croupiers
    assert player.goto(served.url + "/console/office").status == 403  # nor the setter's
    # Nor post to its forms, with a CSRF token of their own session.
    token = player.evaluate(
        "() => fetch('/').then(r => r.text())"
        '  .then(t => t.match(/name="csrf_token" value="([^"]+)"/)[1])'
    )
    status = player.evaluate(
        """([token]) => fetch('/console/tables/t1/do/seats', {method: 'POST',
             headers: {'Content-Type': 'application/x-www-form-urlencoded'},
             body: new URLSearchParams({csrf_token: token, player: 'dan', key: 'k'})})
             .then(r => r.status)""",
        [token],
    )
    assert status == 403
    assert event_count(served) == before
    player.context.close()


def test_a_form_without_its_csrf_token_is_refused(served: Served, page: Any) -> None:
    fund(served)
    set_up_table(served, page)
    before = event_count(served)
    page.evaluate(
        "() => document.querySelectorAll('input[name=csrf_token]').forEach(e => e.remove())"
    )
    control(page, "Call the main").get_by_role("button", name="Main 7").click()
    assert "CSRF" in page.get_by_role("alert").inner_text()
    assert event_count(served) == before
    # The refusal is said beside the table, which stays as it was.
    assert control(page, "Call the main").get_by_role("button", name="Main 7").is_visible()


def test_a_throw_is_recorded_from_the_keyboard(served: Served, page: Any) -> None:
    """Tab to the dice, arrows to choose, Enter to record: no mouse at the table."""
    fund(served)
    set_up_table(served, page)
    answered(page, control(page, "Call the main").get_by_role("button", name="Main 7").click)
    page.locator("#d1-1").focus()
    page.keyboard.press("ArrowRight")  # die 1: 2
    page.keyboard.press("Tab")  # to die 2's group
    page.keyboard.press("ArrowRight")  # die 2: 2
    page.keyboard.press("ArrowRight")  # die 2: 3
    page.keyboard.press("Tab")  # past the keys' echo, to "Record throw"
    page.keyboard.press("Enter")
    page.locator("[data-field=chance]", has_text="5").wait_for()  # 2+3: the chance 5
    assert event_count(served, "DiceThrown") == 1
