"""The table page's forms through Flask's test client, on SQLite and PostgreSQL: without
script a form posts and the page comes back saying what it did; sent by htmx, the answer
is the table's parts, out of band; the poll is a 304 while the table stands still; a
stake far from the usual writes nothing until confirmed; the open-table form's limits,
and a dispute from a round's row, are read as the API reads them, and a bad one writes
nothing; a player and an auditor read the table and may not run it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.commands import tables
from ledger.store.schema import events
from ledger.store.vocabulary import Deposited
from tests.api.conftest import Api
from tests.console.formkit import CECIL, HTMX, a_table, count, csrf, form, playing, signed_in


def kinds(api: Api, kind: str) -> int:
    with api.book.store.engine.connect() as conn:
        query = sa.select(sa.func.count()).select_from(events).where(events.c.type == kind)
        return int(conn.execute(query).scalar_one())


def test_without_script_a_form_posts_and_the_page_says_what_it_did(api: Api) -> None:
    croupier = a_table(api)
    answer = croupier.post(
        "/console/tables/t1/do/seats", data=form(croupier, player="ann", key="k1")
    )
    assert answer.status_code == 302 and answer.headers["Location"].endswith("/console/tables/t1")
    page = croupier.get("/console/tables/t1").get_data(as_text=True)
    assert re.search(r'<p id="announce"[^>]*>ann is seated\.</p>', page)
    again = croupier.get("/console/tables/t1").get_data(as_text=True)
    assert "ann is seated." not in again  # said once


def test_a_form_sent_by_htmx_is_answered_with_the_tables_parts(api: Api) -> None:
    croupier = a_table(api)
    answer = croupier.post(
        "/console/tables/t1/do/seats", data=form(croupier, player="ann", key="k1"), headers=HTMX
    )
    assert answer.status_code == 200 and answer.headers["X-Table-Parts"] == "1"
    body = answer.get_data(as_text=True)
    assert "<html" not in body
    for part in ("board", "controls", "result", "bets", "rounds", "announce"):
        assert re.search(rf'id="{part}"[^>]*hx-swap-oob="true"', body), part
    assert "ann is seated." in body
    # The table's version 2, and while it seats, the club's two players (ann and bob).
    assert answer.headers["ETag"] == '"2-2"' and 'data-version="2"' in body
    # A refusal: the parts with the reason beside the control, its status, nothing written.
    before = count(api)
    refused = croupier.post(
        "/console/tables/t1/do/seats", data=form(croupier, player="ann", key="k2"), headers=HTMX
    )
    assert refused.status_code == 422 and refused.headers["X-Table-Parts"] == "1"
    assert 'data-error="seats"' in refused.get_data(as_text=True)
    assert "already-seated" in refused.get_data(as_text=True)
    assert count(api) == before


def test_the_poll_is_a_304_while_the_table_stands_still(api: Api) -> None:
    croupier, club = playing(api)
    version = club.state("t1").version
    still = croupier.get("/console/tables/t1/panel", headers={"If-None-Match": f'"{version}"'})
    assert still.status_code == 304 and still.data == b""
    tables.call_main(club, "t1", CECIL, 7)  # from another device
    moved = croupier.get("/console/tables/t1/panel", headers={"If-None-Match": f'"{version}"'})
    assert moved.status_code == 200 and moved.headers["ETag"] == f'"{version + 1}"'
    assert 'aria-label="Record a throw"' in moved.get_data(as_text=True)  # with its controls
    # What changed is said in the page's live region, out of band, as a write's answer is.
    assert re.search(
        r'<p id="announce"[^>]*role="status"[^>]*hx-swap-oob="true">The main is 7\.</p>',
        moved.get_data(as_text=True),
    )
    # A poll that names no version the page could have drawn hears nothing said.
    blind = croupier.get("/console/tables/t1/panel", headers={"If-None-Match": '"x"'})
    assert 'id="announce"' not in blind.get_data(as_text=True)


def test_a_stake_far_from_the_usual_writes_nothing_until_confirmed(api: Api) -> None:
    croupier, club = playing(api)
    tables.stake(club, "t1", CECIL, 500)
    before = count(api)
    asked = croupier.post(
        "/console/tables/t1/do/lays", data=form(croupier, player="bob", amount="0.05", key="k1")
    )
    assert asked.status_code == 200
    page = asked.get_data(as_text=True)
    assert "Yes, £0.05" in page and "usually plays £5.00" in page
    assert count(api) == before  # the first step writes nothing
    # Confirmed for another amount, it is asked again.
    other = form(croupier, player="bob", amount="0.05", key="k1", confirmed="50")
    assert "Yes, £0.05" in croupier.post("/console/tables/t1/do/lays", data=other).get_data(
        as_text=True
    )
    assert count(api) == before
    sure = form(croupier, player="bob", amount="0.05", key="k1", confirmed="5")
    assert croupier.post("/console/tables/t1/do/lays", data=sure).status_code == 302
    assert kinds(api, "StakeLaid") == 1
    assert croupier.post("/console/tables/t1/do/lays", data=sure).status_code == 302  # a repeat
    assert kinds(api, "StakeLaid") == 1


HUGE = "9" * 5_000


def test_an_amount_is_typed_in_the_clubs_money_and_a_bad_one_names_its_rule(api: Api) -> None:
    croupier, club = playing(api)
    tables.stake(club, "t1", CECIL, 500)
    before = count(api)
    for typed, rule in [
        ("5.005", "has 3 decimal places: GBP is counted to the penny"),
        ("-5", "without a sign"),
        ("5 pounds", "is not an amount"),
        ("", "type an amount"),
        (HUGE, "too large an amount"),
        ("0", "an amount from £0.01 to £10,000,000,000,000.00"),
    ]:
        sent = form(croupier, player="bob", amount=typed, key=f"k{len(typed)}")
        answer = croupier.post("/console/tables/t1/do/lays", data=sent, headers=HTMX)
        assert answer.status_code == 422, typed
        assert "amount: " in answer.get_data(as_text=True), typed
        assert rule in answer.get_data(as_text=True), typed
        assert count(api) == before, typed
    sent = form(croupier, player="bob", amount="£4.50", key="k-right")
    assert croupier.post("/console/tables/t1/do/lays", data=sent).status_code == 302
    with api.book.store.engine.connect() as conn:
        laid = conn.execute(sa.select(events.c.payload).where(events.c.type == "StakeLaid"))
        assert [json.loads(p)["amount"] for (p,) in laid] == [450]  # exactly, in minor units


def test_the_open_table_forms_limits_are_read_as_post_tables_reads_them(api: Api) -> None:
    croupier = a_table(api)
    token = csrf(croupier.get("/"))
    before = count(api)
    for sent in [
        {"min_stake": "--5"},
        {"min_stake": HUGE},
        {"min_stake": "0"},
        {"min_stake": "1.505"},
        {"min_stake": "5p"},
        {"max_stake": "-1"},
        {"max_exposure": "²"},
        {"min_stake": "1.00", "max_stake": "0.50"},
        {"odds_multiple": "x"},
        {"odds_multiple": "-1"},
        {"ruleset": "craps"},
    ]:
        data = {"id": "t2", "ruleset": "english", "csrf_token": token, **sent}
        answer = croupier.post("/console/tables", data=data)
        assert answer.status_code == 422, (sent, answer.status_code)
        assert b'role="alert"' in answer.data, sent
        assert count(api) == before, sent
    # A limit typed wrongly is refused by the rule it broke, in the club's money.
    for sent, rule in [
        ({"min_stake": "1.505"}, "1.505 has 3 decimal places: GBP is counted to the penny"),
        ({"min_stake": "0"}, "min_stake: an amount from £0.01 to"),
    ]:
        data = {"id": "t2", "ruleset": "english", "csrf_token": token, **sent}
        assert rule in croupier.post("/console/tables", data=data).get_data(as_text=True), sent
    # In the club's money, as the office takes it: £1.00 to £50.00, the cap £1,000.
    data = {"id": "t2", "ruleset": "english", "csrf_token": token, "min_stake": "1.00",
            "max_stake": "50", "max_exposure": "£1,000.00", "odds_multiple": "2"}  # fmt: skip
    assert croupier.post("/console/tables", data=data).status_code == 302
    state = api.app.extensions["hazard.club"].state("t2")
    assert (state.limits.min_stake, state.limits.max_stake, state.limits.max_exposure) == (
        100,
        5000,
        100_000,
    )
    assert state.rules is not None and state.rules.odds_multiple == 2


def test_a_dispute_from_a_rounds_row_is_read_as_post_disputes_reads_it(api: Api) -> None:
    croupier, club = playing(api)
    tables.call_main(club, "t1", CECIL, 7)
    tables.throw(club, "t1", CECIL, 1, 1)
    page = croupier.get("/console/tables/t1/rounds/1/dispute")
    assert page.status_code == 200 and b'name="claim"' in page.data
    token = csrf(page)
    url = "/console/tables/t1/rounds/1/disputes"
    before = count(api)
    for sent in [
        {"claim": ""},
        {"claim": "x" * 501},
        {"claim": "wrong", "die1": "7", "die2": "1"},
        {"claim": "wrong", "die1": "5"},
        {"claim": "wrong", "die1": "--5", "die2": "1"},
        {"claim": "wrong", "throw": HUGE},
        {"claim": "wrong", "key": "a\x00b"},
    ]:
        answer = croupier.post(url, data={"csrf_token": token, **sent})
        assert answer.status_code == 422, (sent, answer.status_code)
        assert b'data-error="dispute"' in answer.data, sent
        assert count(api) == before, sent
    for far in (
        f"/console/tables/t1/rounds/{HUGE}/disputes",
        "/console/tables/t1/rounds/9/disputes",
    ):
        assert croupier.post(far, data={"csrf_token": token, "claim": "x"}).status_code in (
            404,
            422,
        )
    assert count(api) == before
    good = {"csrf_token": token, "claim": "it was 5 and 6", "die1": "5", "die2": "6", "key": "d1"}
    assert croupier.post(url, data=good).status_code == 302
    assert croupier.post(url, data=good).status_code == 302  # the same key: one dispute
    assert kinds(api, "DisputeOpened") == 1
    auditor = signed_in(api, "auditor", "al")
    assert auditor.post(url, data={**good, "csrf_token": csrf(auditor.get("/"))}).status_code == 403


def test_a_player_and_an_auditor_read_the_table_and_may_not_run_it(api: Api) -> None:
    playing(api)
    before = count(api)
    for role, name in (("player", "bob"), ("auditor", "al")):
        client = signed_in(api, role, name)
        page = client.get("/console/tables/t1")
        assert page.status_code == 200, role
        body = page.get_data(as_text=True)
        assert 'aria-label="Call the main"' not in body and 'aria-label="Seat a player"' not in body
        token = csrf(page)
        seat = {"csrf_token": token, "player": "cat", "key": f"k-{role}"}
        assert client.post("/console/tables/t1/do/seats", data=seat).status_code == 403, role
        assert client.get("/console/tables/t1/panel").status_code == 200, role
    auditor = signed_in(api, "auditor", "al")
    lay = {"csrf_token": csrf(auditor.get("/")), "player": "bob", "amount": "100"}
    assert auditor.post("/console/tables/t1/do/lays", data=lay).status_code == 403
    assert count(api) == before


def everyone(api: Api, funded: tuple[str, ...] = ("cat", "dan")) -> tuple[Any, Any]:
    """t1 with ann the caster, and bob, cat and dan seated to lay against her; ann and bob
    have 500 each (a_table), and `funded` as much."""
    croupier, club = playing(api)
    for name in ("cat", "dan"):
        club.create_player(name, "setter:bank")
        if name in funded:
            club.account_command(name, Deposited, 500, "setter:bank")
        tables.seat(club, "t1", CECIL, name)
    tables.stake(club, "t1", CECIL, 100)
    return croupier, club


def test_everyone_lays_against_the_caster_in_one_form_once(api: Api) -> None:
    croupier, club = everyone(api)
    page = croupier.get("/console/tables/t1").get_data(as_text=True)
    assert 'formaction="/console/tables/t1/do/lays/everyone"' in page
    assert ">Everyone lays</button>" in page
    sent = form(croupier, amount="0.50", key="k-all")
    answer = croupier.post("/console/tables/t1/do/lays/everyone", data=sent, headers=HTMX)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    body = answer.get_data(as_text=True)
    assert "bob, cat and dan each lay £0.50 against ann." in body
    laid = [b for b in club.state("t1").open_bets if b.kind.value == "laid"]
    assert sorted((b.no, b.no_stake) for b in laid) == [("bob", 50), ("cat", 50), ("dan", 50)]
    # The same form again (its key): nothing written twice, the same answer.
    before = count(api)
    again = croupier.post("/console/tables/t1/do/lays/everyone", data=sent, headers=HTMX)
    assert again.status_code == 200
    assert "bob, cat and dan each lay £0.50 against ann." in again.get_data(as_text=True)
    assert count(api) == before and kinds(api, "StakeLaid") == 3


def test_everyone_lays_or_none_and_the_refusal_names_the_player_and_the_rule(api: Api) -> None:
    croupier, club = everyone(api, funded=("dan",))  # cat has nothing to lay with
    before = count(api)
    sent = form(croupier, amount="0.50", key="k-all")
    refused = croupier.post("/console/tables/t1/do/lays/everyone", data=sent, headers=HTMX)
    assert refused.status_code == 422
    body = refused.get_data(as_text=True)
    assert 'data-error="lays/everyone"' in body
    assert "not enough funds (overdraft): cat would stand at -£0.50" in body, body
    assert count(api) == before and kinds(api, "StakeLaid") == 0
    # A table's limit broken for all: the rule named, nothing written.
    club.account_command("cat", Deposited, 500, "setter:bank")
    sent = form(croupier, amount="0.00", key="k-all-2")
    refused = croupier.post("/console/tables/t1/do/lays/everyone", data=sent, headers=HTMX)
    assert refused.status_code == 422 and kinds(api, "StakeLaid") == 0
    assert "amount: an amount from £0.01" in refused.get_data(as_text=True)
    # A rule of the table one of them would break: whose, and which rule, nothing written.
    tables.open_table(club, "t2", CECIL, ruleset="english", limits={"max_stake": 100})
    for name in ("ann", "bob", "cat"):
        tables.seat(club, "t2", CECIL, name)
    for die, name in enumerate(("ann", "bob", "cat"), start=1):
        tables.cast(club, "t2", CECIL, name, die)
    before = count(api)
    with pytest.raises(hz.RuleBroken) as broken:
        tables.everyone_lays(club, "t2", CECIL, 200)
    assert broken.value.code == "stake-above-maximum" and broken.value.detail.startswith("bob: ")
    assert count(api) == before


def test_a_player_may_not_lay_for_everyone(api: Api) -> None:
    everyone(api)
    bob = signed_in(api, "player", "bob")
    assert "Everyone lays" not in bob.get("/console/tables/t1").get_data(as_text=True)
    sent = {"csrf_token": csrf(bob.get("/")), "amount": "0.50", "key": "k", "from": "table"}
    before = count(api)
    assert bob.post("/console/tables/t1/do/lays/everyone", data=sent).status_code == 403
    assert count(api) == before


def test_the_throw_grid_shows_the_36_throws_and_one_tap_records_one(api: Api) -> None:
    croupier, club = playing(api)
    page = croupier.get("/console/tables/t1").get_data(as_text=True)
    assert "Throw 4 and 3" not in page  # no main yet: no throw is due
    tables.call_main(club, "t1", CECIL, 7)
    page = croupier.get("/console/tables/t1").get_data(as_text=True)
    grid = page.split('aria-label="Throw by tapping"')[1].split("</form>")[0]
    names = [
        f"Throw {a} and {b}"  # the button's name: its hidden words and its dice
        for a, b in re.findall(
            r'hidden">Throw </span>(\d)<span aria-hidden="true">·</span>'
            r'<span class="visually-hidden"> and </span>(\d)</button>',
            grid,
        )
    ]
    assert names == [f"Throw {a} and {b}" for a in range(1, 7) for b in range(1, 7)]
    assert "dispute" in page.split('aria-label="Throw by tapping"')[1].split("</form>")[0]
    before = count(api)
    for n, dice in enumerate(("4", "", "4-", "4-7", "0-3", "-1", "٤-٣", "1\x00-1", "7" * 30_000)):
        sent = form(croupier, dice=dice, key=f"k-bad-{n}")
        bad = croupier.post("/console/tables/t1/do/throws", data=sent, headers=HTMX)
        assert bad.status_code == 422 and 'role="alert"' in bad.get_data(as_text=True), dice
    assert count(api) == before
    sent = form(croupier, dice="4-3", key="k-grid")
    answer = croupier.post("/console/tables/t1/do/throws", data=sent, headers=HTMX)
    assert answer.status_code == 200
    assert "Thrown: 4 and 3, 7" in answer.get_data(as_text=True)
    with api.book.store.engine.connect() as conn:
        thrown = conn.execute(
            sa.select(events.c.payload).where(events.c.type == "DiceThrown")
        ).scalar_one()
    assert json.loads(thrown) == {"die1": 4, "die2": 3}


def test_the_poll_brings_a_player_created_while_the_table_seats(api: Api) -> None:
    croupier, club = playing(api)
    club.account_command("setter", Deposited, 1, "setter:bank")  # not a table's event
    tables.open_table(club, "t2", CECIL, ruleset="english")
    first = croupier.get("/console/tables/t2/panel")
    etag = first.headers["ETag"]
    assert "Seat ann" in first.get_data(as_text=True)
    assert (
        croupier.get("/console/tables/t2/panel", headers={"If-None-Match": etag}).status_code == 304
    )
    club.create_player("zed", "setter:bank")  # the office, meanwhile: no event of the table's
    again = croupier.get("/console/tables/t2/panel", headers={"If-None-Match": etag})
    assert again.status_code == 200 and "Seat zed" in again.get_data(as_text=True)
    assert again.headers["ETag"] != etag
    # The page sends the ETag its board was drawn with.
    assert f'data-etag="{again.headers["ETag"][1:-1]}"' in again.get_data(as_text=True)
    same = croupier.get(
        "/console/tables/t2/panel", headers={"If-None-Match": again.headers["ETag"]}
    )
    assert same.status_code == 304
