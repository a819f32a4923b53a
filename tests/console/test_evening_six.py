"""An evening of three rounds with six players, played through the console in Debian's
chromium, as each role in turn: the setter funds the players in the office, the
croupier opens the table and runs it, the players bet from their own pages where the
console lets them and read their balances there, a player disputes a round and the
setter decides it, and the auditor verifies the log. Every balance is checked against
the arithmetic below, worked by hand; screenshots of each role's page at 1280, 768 and
390 px wide go to build/screenshots/ (evening-six-ROLE-WIDTH.png), for the README and
docs/screenshots/: the setter's dispute page is shot while the dispute waits, with the
form that resolves it, and the other pages at the evening's end.

English rules: the caster calls the main; 7 or 11 nicks a main of 7, 6 or 12 a main of
6; 2, 3 and 12 throw out against 7, 2, 3 and 11 against 6; any other throw is the chance,
which then wins and the main loses.
Odds on the chance pay ways(main) to ways(chance): 6 to 3 for a chance of 4 on 7. A lay
is a stake against the caster, covered by the caster: the winner takes both. Deposits:
ann to fay 1000 each, the setter 10,000 (16,000 in all, and so always).

| round | main | throws          | bets                                  | after                 |
|-------|------|-----------------|---------------------------------------|-----------------------|
| 1     | 7    | 5+6 nick        | ann stakes 100; bob, cat lay 50 each, | ann 1200, bob 950,    |
|       |      |                 | covered                               | cat 950, setter 9900  |
| 2     | 6    | 1+1 out         | ann stakes 100; dan lays 100, covered | ann 1000, dan 1100,   |
|       |      |                 |                                       | setter 10,000         |
|       |      |                 | ann disputes round 2 (5+1, she says); | upheld: nothing moves |
|       |      |                 | the dice were as entered              |                       |
| 3     | 7    | 2+2 chance 4,   | ann stakes 100; eve, fay lay 50 each, | ann 1300, eve 950,    |
|       |      | 1+3 the chance  | covered; ann lays 50 odds at 2 to 1   | fay 950, setter 9800  |

The pages are driven by role and accessible name. Each step is taken on the page that
has its control; where a page lacks one, the step is taken the way the console allows,
and said (FALLBACKS, printed at the end):

- a player's lay and odds: the forms "Lay against the caster" and "Lay odds" on the
  player's own view of the table; else the croupier's;
- "Cover all" on the table; else each "Cover …" in turn;
- a throw: with the keys the dice pad names ("Keys: two dice, then Enter"); else a
  click on each die and on "Record throw";
- a player's dispute: "Dispute round N" on her round's row, then its form; else POST
  /tables/t1/rounds/2/disputes with her token;
- the setter's decision: the form "Resolve the dispute" on the dispute's page, then
  its confirmation; else POST …/resolution with the setter's token.

The table's forms take amounts in the club's minor units (`typed`); the office's money
is typed in its major units and confirmed before it is written (`in_major`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from ledger.store.schema import events
from tests.console.conftest import SHOTS, Served, sign_in

PLAYERS = ("ann", "bob", "cat", "dan", "eve", "fay")
DEPOSIT, BANK = 1000, 10_000
WIDTHS = (1280, 768, 390)
FALLBACKS: list[str] = []


def fallback(step: str) -> None:
    FALLBACKS.append(step)


def in_major(served: Served, amount: int) -> str:
    """An amount as the office and the table's forms take it: in major units (10.00 for
    1000 pence)."""
    figure: str = served.app.extensions["hazard.house"].figure(amount)
    return figure


def read_amount(served: Served, text: str) -> int:
    """An amount as a page shows it, in minor units: "1000" (bare minor units, as
    today's pages show them) or "£10.00" (the club's money)."""
    figure = re.sub(r"[^\d.\-\u2212]", "", text).replace("\u2212", "-")  # a minus sign too
    if "." not in figure:
        return int(figure)
    minor = served.app.extensions["hazard.house"].minor_units
    return int(Decimal(figure) * 10**minor)


def events_now(served: Served) -> int:
    with served.book.store.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())


@contextmanager
def wrote(tab: Any, served: Served, timeout: float = 10.0) -> Iterator[None]:
    """The block sends a write: wait until the log holds it and the page has settled (a
    page it navigated to loaded, or htmx's swap done); a write refused says why."""
    before = events_now(served)
    navigated: list[Any] = []
    loaded: list[Any] = []

    def on_request(request: Any) -> None:
        if request.is_navigation_request() and request.frame == tab.main_frame:
            navigated.append(request)

    def on_load(page: Any) -> None:
        loaded.append(page)

    tab.on("request", on_request)
    tab.on("load", on_load)
    try:
        yield
        waited = 0.0
        while events_now(served) == before or (navigated and not loaded):
            if waited >= timeout:
                alerts = tab.get_by_role("alert").all_inner_texts()
                raise AssertionError(f"nothing was written; the page says {alerts}")
            tab.wait_for_timeout(50)  # lets the page's events arrive meanwhile
            waited += 0.05
        tab.wait_for_function("() => !document.querySelector('.htmx-request')")
    finally:
        tab.remove_listener("request", on_request)
        tab.remove_listener("load", on_load)


def form(tab: Any, name: str | re.Pattern[str]) -> Any:
    return tab.get_by_role("form", name=name)


def choose(scope: Any, label: str | re.Pattern[str], value: str) -> None:
    """Give the field labelled `label` the value: pick it from a list or a group of
    choices where the page offers one, type it where the page asks for it typed."""
    field = scope.get_by_label(label).first
    kind = field.evaluate("e => e.tagName.toLowerCase() + ':' + (e.type || '')")
    if kind.startswith("select"):
        field.select_option(value)
    elif kind in ("input:radio", "input:checkbox"):
        scope.get_by_role("radio", name=value).check()
    else:
        field.fill(value)


# -- the setter ---------------------------------------------------------------------------


def fund(served: Served, office: Any) -> None:
    """The setter creates the six players and deposits for the bank and them, each
    amount typed in major units and confirmed in figures before it is written."""
    office.goto(served.url + "/console/office")
    for name in PLAYERS:
        with wrote(office, served):
            create = form(office, "Create a player")
            create.get_by_label("New player").fill(name)
            create.get_by_role("button", name="Create the player").click()
        office.locator(f"#player-{name}").wait_for()  # swapped in, without a reload
    # The bank's float first: after each write the players are shown from its row on.
    office.goto(served.url + "/console/office")
    currency = served.app.extensions["hazard.house"].currency
    for name, amount in {"setter": BANK, **dict.fromkeys(PLAYERS, DEPOSIT)}.items():
        money = form(office, f"Money for {name}")
        money.get_by_label(f"Amount for {name}, in {currency}").fill(in_major(served, amount))
        money.get_by_role("button", name="Deposit…").click()
        confirm = office.get_by_role("button", name=re.compile("^Confirm: deposit"))
        assert in_major(served, amount) in confirm.inner_text()  # the figure, to confirm
        with wrote(office, served):
            confirm.click()
        office.locator("[data-field=receipt-sentence]").wait_for()


def office_balance(served: Served, office: Any, name: str) -> int:
    """The balance the office's table of players shows in `name`'s row."""
    text = office.evaluate(
        """(name) => {
          for (const table of document.querySelectorAll("table")) {
            const heads = [...table.querySelectorAll("thead th")].map((h) => h.textContent.trim());
            const column = heads.indexOf("Balance");
            if (column < 0) continue;
            for (const row of table.querySelectorAll("tbody tr")) {
              if (row.cells[0] && row.cells[0].textContent.trim() === name)
                return row.cells[column].textContent;
            }
          }
          return null;
        }""",
        name,
    )
    assert text is not None, f"the office shows no balance for {name}"
    return read_amount(served, text)


# -- the croupier -------------------------------------------------------------------------


def open_and_seat(served: Served, table: Any) -> None:
    table.goto(served.url + "/")
    with wrote(table, served):
        table.get_by_label("New table").fill("t1")
        table.get_by_label("Rule set").select_option("english")
        table.get_by_role("button", name="Open the table").click()
    table.get_by_role("heading", name=re.compile("Table t1")).wait_for()
    # Players are picked from those the club has, each seated and cast with one press.
    for name in PLAYERS:
        with wrote(table, served):
            form(table, "Seat a player").get_by_role("button", name=f"Seat {name}").click()
    for die, name in enumerate(PLAYERS, start=1):  # ann casts 1, the lowest: she casts first
        with wrote(table, served):
            table.get_by_role("button", name=f"{name} cast a {die}").click()


def caught_up(served: Served, table: Any) -> None:
    """The croupier's page, left open, catches up by itself with a change made
    elsewhere (a dispute is an event of the table): its forms carry the table's new
    version within a couple of seconds, without a reload."""
    version = str(served.app.extensions["hazard.club"].state("t1").version)
    table.wait_for_function(
        """(v) => [...document.querySelectorAll("input[name=version]")]
                   .every((i) => i.value === v)""",
        arg=version,
        timeout=3_000,
    )


def stake(served: Served, table: Any, amount: int) -> None:
    with wrote(table, served):
        staked = form(table, "Caster stake")
        staked.get_by_label(re.compile("stake against the setter")).fill(in_major(served, amount))
        staked.get_by_role("button", name=re.compile(" stakes$")).click()


def own_view(served: Served, tab: Any) -> Any:
    """A player's view of the table, where she bets: the table itself if she may open
    it, else her own page."""
    answer = tab.goto(served.url + "/console/tables/t1")
    if answer is None or answer.status != 200:
        tab.goto(served.url + "/console/me")
    return tab


def lay(served: Served, table: Any, player: Any, name: str, amount: int) -> None:
    """`name` lays a stake against the caster, from her own view if it lets her."""
    own = form(own_view(served, player), "Lay against the caster")
    where = own if own.count() else form(table, "Lay against the caster")
    if not own.count():
        fallback(f"{name}'s lay of {amount}: entered by the croupier")
    tab = player if own.count() else table
    with wrote(tab, served):
        where.get_by_label(re.compile("^A stake laid against")).fill(in_major(served, amount))
        where.get_by_role("button", name=f"{name} lays").click()
    if tab is player:
        caught_up(served, table)


def cover_all(served: Served, table: Any) -> None:
    table.reload()
    every = table.get_by_role("button", name=re.compile("^Cover all"))
    if every.count():
        with wrote(table, served):
            every.click()
        return
    fallback("covering the lays: one Cover at a time")
    while (one := table.get_by_role("button", name=re.compile(r"^Cover \w"))).count():
        with wrote(table, served):
            one.first.click()


def call_main(served: Served, table: Any, main: int) -> None:
    with wrote(table, served):
        form(table, "Call the main").get_by_role("button", name=f"Main {main}").click()


def throw(served: Served, table: Any, die1: int, die2: int) -> None:
    pad = form(table, "Record a throw")
    keys = pad.get_by_text("Keys: two dice, then Enter").count()
    with wrote(table, served):
        if keys:
            table.evaluate("() => document.activeElement && document.activeElement.blur()")
            table.keyboard.press(str(die1))
            table.keyboard.press(str(die2))
            table.keyboard.press("Enter")
            return
        for die, value in (("Die 1", die1), ("Die 2", die2)):  # the face a person taps
            pad.get_by_role("group", name=die).get_by_text(str(value), exact=True).click()
        pad.get_by_role("button", name="Record throw").click()
    if not keys:
        fallback(f"the throw {die1}+{die2}: clicked")


def lay_odds(served: Served, table: Any, player: Any, name: str, amount: int) -> None:
    own = form(own_view(served, player), "Lay odds")
    if not own.count():
        fallback(f"{name}'s odds of {amount}: entered by the croupier")
    tab = player if own.count() else table
    where = own if own.count() else form(table, "Lay odds")
    with wrote(tab, served):
        where.get_by_label(re.compile("^the chance")).check()
        where.get_by_label(re.compile("^Odds, up to")).fill(in_major(served, amount))
        where.get_by_role("button", name=f"{name} lays odds").click()
    if tab is player:
        caught_up(served, table)  # the croupier throws on the table as it is now


# -- disputes -----------------------------------------------------------------------------


def dispute(served: Served, player: Any, token: str, round_: int) -> str:
    """ann disputes a round: she says its throw was 5+1."""
    claim = "the dice were 5+1, a nick, not 1+1"
    own_view(served, player)
    row = player.get_by_role("link", name=f"Dispute round {round_}")
    if row.count():
        row.click()  # the round's form, drawn beside the rounds
        asked = form(player, f"Dispute round {round_}")
        with wrote(player, served):
            asked.get_by_label("What went wrong").fill(claim)
            choose(asked, re.compile("^Die 1"), "5")
            choose(asked, re.compile("^Die 2"), "1")
            asked.get_by_role("button", name="Open the dispute").click()
    else:
        fallback(f"ann's dispute over round {round_}: by the API")
        answer = served.app.test_client().post(
            f"/tables/t1/rounds/{round_}/disputes",
            json={"claim": claim, "dice": [5, 1]},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 201, answer.get_json()
    listed = served.app.test_client().get(
        "/tables/t1/disputes", headers={"Authorization": f"Bearer {token}"}
    )
    [opened] = listed.get_json()["items"]
    dispute_id: str = opened["dispute_id"]
    return dispute_id


def uphold(served: Served, office: Any, token: str, dispute_id: str) -> None:
    office.goto(served.url + f"/console/office/disputes/t1/{dispute_id}")
    reason = "the croupier and two players saw 1+1"
    decide = form(office, "Resolve the dispute")
    if decide.count():
        decide.get_by_label(re.compile("^Uphold")).check()
        decide.get_by_label(re.compile("reason", re.I)).fill(reason)
        decide.get_by_role("button", name="Review the resolution…").click()  # what it posts
        with wrote(office, served):
            office.get_by_role("button", name=re.compile("^Confirm: uphold")).click()
    else:
        fallback("the setter's decision: by the API")
        answer = served.app.test_client().post(
            f"/tables/t1/disputes/{dispute_id}/resolution",
            json={"resolution": "upheld", "reason": reason},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 201, answer.get_json()
        office.reload()
    assert "upheld" in office.locator("main").inner_text()


# -- what each role reads -----------------------------------------------------------------


def my_balance(served: Served, player: Any) -> int:
    player.goto(served.url + "/console/me")
    shown = player.locator("dt", has_text=re.compile(r"^\s*Balance\s*$"))
    return read_amount(served, shown.locator("xpath=following-sibling::dd[1]").inner_text())


def verify(served: Served, auditor: Any) -> None:
    auditor.goto(served.url + "/console/audit/verify")
    auditor.get_by_role("button", name="Verify the whole log").click()
    auditor.get_by_text(re.compile("the log is verified")).wait_for()


def shoot(tab: Any, name: str) -> None:
    """The page as it stands, at each width, whole."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        tab.set_viewport_size({"width": width, "height": 1024 if width < 1280 else 800})
        tab.screenshot(path=str(SHOTS / f"evening-six-{name}-{width}.png"), full_page=True)


def balances(served: Served) -> dict[str, int]:
    return {name: served.balance(name) for name in (*PLAYERS, "setter")}


# -- the evening --------------------------------------------------------------------------


def test_an_evening_of_three_rounds_with_six_players_as_every_role(
    served: Served, browser: Any
) -> None:
    FALLBACKS.clear()
    tokens = {
        "setter": served.token("setter", "bank"),
        "croupier": served.token("croupier", "cecil"),
        "auditor": served.token("auditor", "audrey"),
    }

    def tab_for(token: str) -> Any:
        tab = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        tab.set_default_timeout(10_000)
        sign_in(tab, served.url, token)
        return tab

    office = tab_for(tokens["setter"])
    fund(served, office)
    office.reload()
    start = dict.fromkeys(PLAYERS, DEPOSIT)
    assert {name: office_balance(served, office, name) for name in PLAYERS} == start
    assert balances(served) == {**start, "setter": BANK}

    players = {}
    for name in PLAYERS:  # a player's token is made for a player who exists
        tokens[name] = served.token("player", name)
        players[name] = tab_for(tokens[name])
    table = tab_for(tokens["croupier"])
    open_and_seat(served, table)
    table.goto(served.url + "/console/tables/t1")
    assert table.locator("[data-field=caster]").inner_text() == "ann"

    # Round 1: ann stakes 100; bob and cat lay 50 each, covered; main 7; 5+6 nicks.
    stake(served, table, 100)
    for name in ("bob", "cat"):
        lay(served, table, players[name], name, 50)
    cover_all(served, table)
    call_main(served, table, 7)
    throw(served, table, 5, 6)
    after_1 = {**start, "ann": 1200, "bob": 950, "cat": 950, "setter": 9900}
    assert balances(served) == after_1

    # Round 2: ann stakes 100; dan lays 100, covered; main 6; 1+1 throws out.
    stake(served, table, 100)
    lay(served, table, players["dan"], "dan", 100)
    cover_all(served, table)
    call_main(served, table, 6)
    throw(served, table, 1, 1)
    after_2 = {**after_1, "ann": 1000, "dan": 1100, "setter": 10_000}
    assert balances(served) == after_2

    # ann disputes round 2; the setter reads it while it waits (the service's answer,
    # the what-if with her dice, what each resolution would post, and the form that
    # decides it: shot for the docs), then upholds it: nothing moves.
    disputed = dispute(served, players["ann"], tokens["ann"], 2)
    waiting = tab_for(tokens["setter"])
    waiting.goto(served.url + f"/console/office/disputes/t1/{disputed}")
    assert waiting.locator("[data-field=status]").inner_text() == "waiting for the setter"
    assert waiting.locator("[data-field=what-if]").inner_text().startswith("With 5 + 1")
    assert form(waiting, "Resolve the dispute").count() == 1
    shoot(waiting, "setter-dispute")
    waiting.context.close()
    uphold(served, office, tokens["setter"], disputed)
    assert balances(served) == after_2
    caught_up(served, table)

    # Round 3: ann stakes 100; eve and fay lay 50 each, covered; main 7; 2+2 sets the
    # chance 4; ann lays 50 odds on it at 6 to 3; 1+3 is the chance.
    stake(served, table, 100)
    for name in ("eve", "fay"):
        lay(served, table, players[name], name, 50)
    cover_all(served, table)
    call_main(served, table, 7)
    throw(served, table, 2, 2)
    table.goto(served.url + "/console/tables/t1")
    assert table.locator("[data-field=chance]").inner_text() == "4"
    lay_odds(served, table, players["ann"], "ann", 50)
    throw(served, table, 1, 3)
    after_3 = {**after_2, "ann": 1300, "eve": 950, "fay": 950, "setter": 9800}
    assert balances(served) == after_3
    assert sum(after_3.values()) == len(PLAYERS) * DEPOSIT + BANK

    # Each player reads her own balance on her page; the setter reads them all.
    for name in PLAYERS:
        assert my_balance(served, players[name]) == after_3[name], name
    office.goto(served.url + "/console/office")
    assert {name: office_balance(served, office, name) for name in PLAYERS} == {
        name: after_3[name] for name in PLAYERS
    }

    # The auditor verifies the log.
    auditor = tab_for(tokens["auditor"])
    verify(served, auditor)

    table.goto(served.url + "/console/tables/t1")
    players["ann"].goto(served.url + "/console/me")  # her statement, newest first
    for name, tab in (("croupier-table", table), ("player-ann", players["ann"]),
                      ("setter-office", office), ("auditor-verify", auditor)):  # fmt: skip
        shoot(tab, name)
    print("Taken the way today's console allows:", *FALLBACKS, sep="\n  ")
    for tab in (office, table, auditor, *players.values()):
        tab.context.close()
