"""The croupier's table page in a real browser (issue 26, "The croupier's table"), and
everyone's live view of a table: a write redraws the table without reloading the page,
a change made anywhere appears within a second with its controls, the controls are the
phase's and only those, players are picked, a throw says what it did, a mistake is put
right from the round's row, a stake far from the usual is asked about first, a throw
is entered from the keyboard, the table fits a tablet, and a player or an auditor
watches."""

from __future__ import annotations

import itertools
from typing import Any

from ledger.commands import Caller, Role, tables
from tests.console.conftest import Served, sign_in
from tests.console.tablekit import (
    CECIL,
    SIX,
    at_the_table,
    caught_up,
    control,
    count,
    funded,
    over_the_api,
    payloads,
    playing,
    said,
    same_document,
    throw,
)


def test_a_write_redraws_the_table_and_never_reloads_the_page(served: Served, page: Any) -> None:
    club = playing(served)
    tables.stake(club, "t1", CECIL, 500)
    at_the_table(served, page)
    page.set_viewport_size({"width": 1024, "height": 500})
    page.mouse.wheel(0, 120)
    page.wait_for_function("() => window.scrollY > 0")
    place = page.locator("#result").bounding_box()["y"]  # where it is on the screen
    keys = page.locator("input[name=key]").evaluate_all("(inputs) => inputs.map(i => i.value)")
    control(page, "Call the main").get_by_role("button", name="Main 7").click()
    said(page, "The main is 7.")
    assert page.locator("[data-field=main]").inner_text() == "7"
    assert control(page, "Record a throw").count() == 1  # the phase's controls, redrawn
    assert same_document(page)
    assert page.evaluate("() => window.scrollY") > 0  # not back at the top
    assert abs(page.locator("#result").bounding_box()["y"] - place) < 1  # keeps its place
    version = str(club.state("t1").version)
    assert set(page.locator("input[name=version]").evaluate_all("(i) => i.map(e => e.value)")) == {
        version
    }
    fresh = page.locator("input[name=key]").evaluate_all("(inputs) => inputs.map(i => i.value)")
    assert not set(fresh) & set(keys)  # every form drawn again carries a key of its own

    # A refusal is drawn beside its control, and writes nothing.
    before = count(served)
    page.locator("#lay-amount").fill("0")
    control(page, "Lay against the caster").get_by_role("button", name="bob lays").click()
    error = control(page, "Lay against the caster").get_by_role("alert")
    error.wait_for()
    assert "amount" in error.inner_text()
    assert count(served) == before and same_document(page)
    said(page, "Refused")


def test_a_lay_sent_over_the_api_appears_with_its_cover_and_refuse_within_a_second(
    served: Served, page: Any
) -> None:
    club = playing(served)
    tables.stake(club, "t1", CECIL, 500)
    at_the_table(served, page)
    answer = over_the_api(
        served, served.token("player", "bob"), "/tables/t1/lays", {"player": "bob", "amount": 200}
    )
    bet = answer["events"][0]["payload"]["bet_id"]
    # The page asks every second: the lay, and the buttons to cover and refuse it, come
    # at the next ask (a second), with room for a busy machine; no reload.
    page.get_by_role("button", name=f"Cover {bet}").wait_for(timeout=2_500)
    assert page.get_by_role("button", name=f"Refuse {bet}").is_visible()
    assert page.get_by_role("button", name="Cover all 1").is_visible()
    assert same_document(page)
    page.get_by_role("button", name=f"Cover {bet}").click()
    said(page, f"ann covers {bet} with £2.00.")
    assert count(served, "StakeCovered") == 1


def test_a_change_made_elsewhere_is_said_in_the_live_region_and_focus_stays(
    served: Served, page: Any
) -> None:
    club = playing(served)
    tables.stake(club, "t1", CECIL, 500)
    at_the_table(served, page)
    page.locator("#lay-amount").fill("3")  # the croupier is typing a lay meanwhile
    assert page.locator("#announce").inner_text() == ""
    answer = over_the_api(
        served, served.token("player", "bob"), "/tables/t1/lays", {"player": "bob", "amount": 500}
    )
    bet = answer["events"][0]["payload"]["bet_id"]
    # Heard at the next poll, in the words of a write's own answer, as a status (polite).
    page.locator("#announce", has_text=f"bob lays £5.00 against the caster ({bet}).").wait_for(
        timeout=2_500
    )
    assert page.locator("#announce").get_attribute("role") == "status"
    assert page.evaluate("document.activeElement.id") == "lay-amount"  # focus stays
    assert page.locator("#lay-amount").input_value() == "3"
    # Several at once (a poll spans them): each said, a throw with what it did.
    tables.cover(club, "t1", CECIL, [bet])
    tables.call_main(club, "t1", CECIL, 7)
    tables.throw(club, "t1", CECIL, 5, 6)
    page.locator("#announce", has_text="Thrown: 5 and 6, 11").wait_for(timeout=2_500)
    assert "The main is 7." in page.locator("#announce").inner_text()
    assert page.evaluate("document.activeElement.id") == "lay-amount"
    assert same_document(page)


def test_each_phase_shows_its_controls_and_only_those(served: Served, page: Any) -> None:
    club = funded(served)
    tables.open_table(club, "t1", CECIL, ruleset="english")
    at_the_table(served, page)

    def shown() -> set[str]:
        names = {
            "Seat a player",
            "ann casts for first caster",
            "Call the main",
            "Record a throw",
            "Caster stake",
            "Lay against the caster",
            "Lay odds",
            "Cover all waiting lays",
        }
        return {name for name in names if control(page, name).count()}

    assert shown() == {"Seat a player"}  # before play: seating
    for name in ("ann", "bob", "cat"):
        control(page, "Seat a player").get_by_role("button", name=f"Seat {name}").click()
        said(page, f"{name} is seated.")
    assert shown() == {"Seat a player", "ann casts for first caster"}
    for name, die in (("ann", 1), ("bob", 3), ("cat", 5)):
        page.get_by_role("button", name=f"{name} cast a {die}").click()
        said(page, f"{name} cast a {die}.")
    said(page, "ann is the first caster.")
    # The main is due, and the round's stakes may be made: no dice yet (english rules
    # call the main), no seating, no odds.
    assert shown() == {"Call the main", "Caster stake", "Lay against the caster"}
    page.locator("#stake-amount").fill("5.00")
    page.get_by_role("button", name="ann stakes").click()
    said(page, "ann stakes £5.00 against the setter")
    page.locator("#lay-amount").fill("2")
    page.get_by_role("button", name="bob lays").click()
    said(page, "bob lays £2.00 against the caster")
    assert shown() == {"Call the main", "Lay against the caster", "Cover all waiting lays"}
    control(page, "Call the main").get_by_role("button", name="Main 7").click()
    said(page, "The main is 7.")
    # The dice, once there is a main; the lay still to cover is said beside them.
    assert shown() == {"Record a throw", "Lay against the caster", "Cover all waiting lays"}
    assert "Cover or refuse" in page.locator(".dicepad").inner_text()
    page.get_by_role("button", name="Cover all 1").click()
    said(page, "ann covers")
    throw(page, 2, 2)  # the chance 4: odds may be laid, stakes no more
    assert shown() == {"Record a throw", "Lay odds"}
    odds = control(page, "Lay odds")
    assert {b.inner_text() for b in odds.get_by_role("button").all()} >= {"ann lays odds"}

    # French rules: the main is rolled, so the dice are the control while it is due.
    tables.open_table(club, "t2", CECIL, ruleset="french")
    for name in ("ann", "bob"):
        tables.seat(club, "t2", CECIL, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t2", CECIL, name, die)
    page.goto(served.url + "/console/tables/t2")
    assert page.get_by_role("heading", name="Roll for the main").is_visible()
    assert control(page, "Call the main").count() == 0


def test_players_are_picked_and_one_press_covers_every_waiting_lay(
    served: Served, page: Any
) -> None:
    club = playing(served)
    tables.stake(club, "t1", CECIL, 500)
    at_the_table(served, page)
    lays = control(page, "Lay against the caster")
    who = lays.get_by_role("group", name="Who lays").get_by_role("button")
    assert [b.inner_text() for b in who.all()] == [
        f"{name} lays"
        for name in SIX[1:]  # the seated, but not the caster
    ]
    assert lays.get_by_role("button", name="Everyone lays").count() == 1  # beside them
    # The table's usual stakes are offered: the last one played, and the minimum's multiples.
    lays.get_by_role("button", name="£5.00").click()
    assert page.locator("#lay-amount").input_value() == "5.00"  # in the club's money
    assert "£5.00" in page.locator("#lay-amount-echo").inner_text()
    for name in SIX[1:]:
        lays = control(page, "Lay against the caster")
        lays.get_by_role("button", name=f"{name} lays").click()
        said(page, f"{name} lays £5.00 against the caster")
    assert page.locator("#lay-amount").input_value() == "5.00"  # kept as the table redrew
    page.get_by_role("button", name="Cover all 5 (£25.00)").click()
    said(page, "ann covers")
    assert count(served, "StakeCovered") == 5
    assert page.locator("#bets tr[data-bet]", has_text="waiting").count() == 0
    assert club.state("t1").open_bets[-1].pending is False


def test_a_latecomer_is_seated_during_play_from_a_list(served: Served, page: Any) -> None:
    club = funded(served, SIX[:3])
    tables.open_table(club, "t1", CECIL, ruleset="english")
    for name in ("ann", "bob"):
        tables.seat(club, "t1", CECIL, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t1", CECIL, name, die)
    tables.call_main(club, "t1", CECIL, 7)
    at_the_table(served, page)
    assert control(page, "Seat a player").count() == 0  # not the phase's: under "More"
    page.locator("#more summary").click()
    page.get_by_role("link", name="Seat a player…").click()
    form = control(page, "Seat a player")
    form.get_by_label("Seat a player").select_option("cat")
    form.get_by_role("button", name="Seat").click()
    said(page, "cat is seated.")
    assert club.state("t1").seats == ("ann", "bob", "cat")
    assert same_document(page)


def test_after_a_throw_the_table_says_what_happened(served: Served, page: Any) -> None:
    club = playing(served, SIX[:3])
    tables.stake(club, "t1", CECIL, 500)
    laid = tables.lay(club, "t1", CECIL, "bob", 200)["events"][0]["payload"]["bet_id"]
    tables.cover(club, "t1", CECIL, [laid])
    tables.call_main(club, "t1", CECIL, 7)
    at_the_table(served, page)
    throw(page, 5, 6)
    result = page.locator("#result")
    assert "5 and 6, 11: Nick: the caster wins" in result.inner_text()
    settled = result.get_by_role("list", name="Settled by the throw").inner_text()
    assert "ann's stake: ann is paid £10.00 (+£5.00)" in settled
    assert f"{laid}, bob's lay: ann is paid £4.00 (+£2.00)" in settled
    assert "ann has lost 0 in a row. ann keeps the dice." in result.inner_text()
    said(page, "Thrown: 5 and 6, 11: Nick: the caster wins.")
    assert page.locator("#board .strip li").first.inner_text().startswith("5·6 11")
    assert "nick: ann wins" in page.locator("#rounds tr[data-round='1']").inner_text()

    # Three rounds lost in a row under english rules: the dice pass, and the table says so.
    for main, (die1, die2) in ((6, (1, 1)), (7, (1, 2)), (8, (6, 5))):
        tables.call_main(club, "t1", CECIL, main)
        if (die1, die2) == (6, 5):
            break
        tables.throw(club, "t1", CECIL, die1, die2)
    caught_up(page, club)
    throw(page, 6, 5)  # 11 throws out a main of 8
    result = page.locator("#result").inner_text()
    assert "6 and 5, 11: Thrown out: the caster loses" in result
    assert "ann has lost 3 in a row. The dice pass to bob (3-losses)." in result
    assert page.locator("#board .strip li").count() == 4
    assert page.locator("#rounds tbody tr").count() == 5  # four played, the fifth begun
    assert page.locator("[data-field=caster]").inner_text() == "bob"


def test_a_throw_is_entered_with_two_number_keys_and_enter(served: Served, page: Any) -> None:
    club = playing(served, SIX[:2])
    tables.call_main(club, "t1", CECIL, 7)
    at_the_table(served, page)
    # Keys typed into a field are that field's: no die is picked.
    page.locator("#lay-amount").click()
    page.keyboard.type("56")
    assert page.locator("#lay-amount").input_value() == "56"
    assert page.locator("#keys-echo").inner_text() == ""
    page.locator("h1").click()  # out of the field
    page.keyboard.press("5")
    assert page.locator("#keys-echo").inner_text() == "5 and …"
    page.keyboard.press("6")
    assert page.locator("#keys-echo").inner_text().startswith("5 and 6")
    assert page.locator("#d1-5").is_checked() and page.locator("#d2-6").is_checked()
    assert count(served, "DiceThrown") == 0
    page.keyboard.press("Enter")
    said(page, "Thrown: 5 and 6, 11")
    assert payloads(served, "DiceThrown") == [{"die1": 5, "die2": 6}]
    assert same_document(page)


def test_a_stake_far_from_the_usual_is_asked_about_and_written_only_when_confirmed(
    served: Served, page: Any
) -> None:
    club = playing(served, SIX[:3])
    tables.stake(club, "t1", CECIL, 500)
    tables.lay(club, "t1", CECIL, "bob", 500)
    at_the_table(served, page)
    before = count(served)
    page.locator("#lay-amount").fill("0.05")  # meant as 5.00?
    page.get_by_role("button", name="cat lays").click()
    question = page.get_by_role("alertdialog")
    question.wait_for()
    assert "£0.05 (zero pounds and five pence)" in question.inner_text()
    assert "usually plays £5.00" in question.inner_text()
    assert count(served) == before  # the first step writes nothing
    question.get_by_role("button", name="Yes, £0.05").click()
    said(page, "cat lays £0.05 against the caster")
    assert count(served, "StakeLaid") == 2
    assert payloads(served, "StakeLaid")[-1]["amount"] == 5
    # A usual amount goes straight through.
    page.locator("#lay-amount").fill("4")
    page.get_by_role("button", name="cat lays").click()
    said(page, "cat lays £4.00 against the caster")
    assert page.get_by_role("alertdialog").count() == 0


def test_the_dice_pad_the_open_bets_and_the_last_result_fit_a_tablet(
    served: Served, page: Any
) -> None:
    club = playing(served)
    for main, dice in ((7, (5, 6)), (7, None)):
        tables.stake(club, "t1", CECIL, 500)
        for name in SIX[1:]:
            tables.lay(club, "t1", CECIL, name, 200)
        tables.cover(club, "t1", CECIL)
        tables.call_main(club, "t1", CECIL, main)
        if dice is not None:
            tables.throw(club, "t1", CECIL, *dice)
    page.set_viewport_size({"width": 768, "height": 1024})
    at_the_table(served, page)
    assert page.locator("#bets tr[data-bet]").count() == 6
    for part in (".dicepad", "#result", "#bets"):
        box = page.locator(part).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 1024, (part, box)
        assert box["x"] >= 0 and box["x"] + box["width"] <= 768, (part, box)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 768
    # Touch targets of 44 px at least, with room between them.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    for button in page.locator("#controls button:visible, #bets button:visible").all():
        box = button.bounding_box()
        assert box["width"] >= 44 and box["height"] >= 44, (button.inner_text(), box)
    dice = [page.locator(f"label[for='d1-{d}']").bounding_box() for d in range(1, 7)]
    assert all(b["height"] >= 44 and b["width"] >= 44 for b in dice)
    assert all(a["x"] + a["width"] < b["x"] for a, b in itertools.pairwise(dice))


def test_the_mains_stand_apart(served: Served, page: Any) -> None:
    playing(served, SIX[:2])
    at_the_table(served, page)
    for width in (1024, 768, 390):
        page.set_viewport_size({"width": width, "height": 900})
        boxes = [page.locator(f"#main-{m}").bounding_box() for m in range(5, 10)]
        for a, b in itertools.pairwise(boxes):
            apart = b["x"] - (a["x"] + a["width"]) if b["y"] == a["y"] else b["y"] - a["y"]
            assert apart >= 4, (width, a, b)
        assert all(b["width"] >= 44 and b["height"] >= 44 for b in boxes)


def test_a_player_watches_live_and_bets_for_themselves_alone(
    served: Served, page: Any, browser: Any
) -> None:
    club = playing(served, SIX[:3])
    tables.stake(club, "t1", CECIL, 500)
    bob = at_the_table(served, page, "player", "bob")
    assert control(bob, "Call the main").count() == 0
    assert control(bob, "Caster stake").count() == 0
    assert control(bob, "Seat a player").count() == 0
    lays = control(bob, "Lay against the caster")
    assert [b.inner_text() for b in lays.get_by_role("button", name="lays").all()] == ["bob lays"]
    bob.locator("#lay-amount").fill("3.00")
    lays.get_by_role("button", name="bob lays").click()
    said(bob, "bob lays £3.00 against the caster")
    [laid] = payloads(served, "StakeLaid")
    assert laid["bettor"] == "bob" and laid["amount"] == 300
    assert bob.get_by_role("button", name=f"Cover {laid['bet_id']}").count() == 0  # ann's
    # The croupier's main appears on bob's screen by itself.
    tables.call_main(club, "t1", CECIL, 6)
    bob.locator("[data-field=main]", has_text="6").wait_for(timeout=2_500)
    assert control(bob, "Record a throw").count() == 0 and same_document(bob)

    # ann, the caster, covers what is laid against her.
    ann = at_the_table(served, browser.new_context().new_page(), "player", "ann")
    ann.get_by_role("button", name=f"Cover {laid['bet_id']}").click()
    said(ann, f"ann covers {laid['bet_id']}")
    assert payloads(served, "StakeCovered")[-1]["caster"] == "ann"
    ann.context.close()

    # An auditor watches, and has no control at all.
    auditor = at_the_table(served, browser.new_context().new_page(), "auditor", "audrey")
    assert auditor.locator("#controls form, #bets form, #rounds a.button").count() == 0
    assert "Watching" in auditor.locator("#controls").inner_text()
    assert auditor.locator("#bets tr[data-bet]").count() == 2
    auditor.context.close()


def test_a_mistake_is_put_right_from_the_rounds_row(
    served: Served, page: Any, browser: Any
) -> None:
    club = playing(served, SIX[:3])
    tables.stake(club, "t1", CECIL, 500)
    laid = tables.lay(club, "t1", CECIL, "bob", 200)["events"][0]["payload"]["bet_id"]
    tables.cover(club, "t1", CECIL, [laid])
    tables.call_main(club, "t1", CECIL, 7)
    tables.throw(club, "t1", CECIL, 1, 1)  # the croupier pressed 1 and 1; it was 5 and 6
    at_the_table(served, page)
    page.get_by_role("link", name="Dispute round 1").click()
    form = page.get_by_role("form", name="Dispute round 1")
    form.get_by_label("What went wrong").fill("the dice showed 5 and 6, not 1 and 1")
    form.get_by_label("Die 1").select_option("5")
    form.get_by_label("Die 2").select_option("6")
    form.get_by_role("button", name="Open the dispute").click()
    said(page, "opened over round 1")
    [opened] = payloads(served, "DisputeOpened")
    assert (opened["round"], opened["die1"], opened["die2"]) == (1, 5, 6)
    assert opened["claimant"] == "cecil" and opened["role"] == "croupier"
    assert "nick" in page.locator("[data-opened]").inner_text()  # what the dice would have made
    assert same_document(page)

    # bob had money in the round, and may dispute it from his view; cat had none.
    bob = at_the_table(served, browser.new_context().new_page(), "player", "bob")
    assert bob.get_by_role("link", name="Dispute round 1").count() == 1
    bob.context.close()
    cat = at_the_table(served, browser.new_context().new_page(), "player", "cat")
    assert cat.get_by_role("link", name="Dispute round 1").count() == 0
    cat.context.close()


def test_opening_a_table_sets_its_rules_limits_and_dice(served: Served, page: Any) -> None:
    funded(served, SIX[:2])
    sign_in(page, served.url, served.token("croupier", "cecil"))
    page.get_by_label("New table").fill("t9")
    page.get_by_label("Rule set").select_option("french")
    page.get_by_label("Odds multiple", exact=False).fill("3")
    # Typed in the club's money, as the office takes it.
    page.get_by_label("Minimum stake").fill("1.00")
    page.get_by_label("Maximum stake", exact=False).fill("100")
    page.get_by_label("The setter's exposure cap", exact=False).fill("£500.00")
    page.get_by_label("Dice").select_option("server")
    page.get_by_role("button", name="Open the table").click()
    page.get_by_role("heading", name="Table t9").wait_for()
    [opened] = payloads(served, "TableOpened")
    assert opened["limits"]["min_stake"] == 100
    assert opened["limits"]["max_stake"] == 10_000
    assert opened["limits"]["max_exposure"] == 50_000
    assert opened["rules"]["odds_multiple"] == 3 and opened["rules"]["name"] == "french, odds 3x"
    assert count(served, "ServerDiceChosen") == 1
    terms = page.locator(".terms").inner_text()
    assert "odds to 3\N{MULTIPLICATION SIGN}" in terms and "server dice" in terms
    assert "stakes from £1.00 to £100.00" in terms and "the setter's cap £500.00" in terms

    # Under the table's minimum, a stake is refused beside its control.
    club = served.app.extensions["hazard.club"]
    for name in ("ann", "bob"):
        tables.seat(club, "t9", CECIL, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t9", CECIL, name, die)
    page.reload()
    page.locator("#stake-amount").fill("0.50")
    page.get_by_role("button", name="ann stakes").click()
    error = control(page, "Caster stake").get_by_role("alert")
    error.wait_for()
    assert "stake-below-minimum" in error.inner_text()
    # In the club's money, as it was typed, not the engine's minor units.
    assert "the stake of £0.50 is below the table minimum of £1.00" in error.inner_text()
    assert count(served, "CasterStaked") == 0


def test_a_player_caster_throws_the_server_dice_from_the_table(served: Served, page: Any) -> None:
    club = funded(served, SIX[:2])
    tables.open_table(club, "s1", CECIL, ruleset="club", dice="server")
    for name in ("ann", "bob"):
        tables.seat(club, "s1", CECIL, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "s1", CECIL, name, die)
    tables.stake(club, "s1", Caller(Role.PLAYER, "ann"), 100)
    sign_in(page, served.url, served.token("player", "ann"))
    page.goto(served.url + "/console/tables/s1")
    form = control(page, "Throw the server dice")
    seed = form.get_by_label("Your client seed", exact=False).input_value()
    assert len(seed) == 32  # made in her browser
    form.get_by_role("button", name="Throw").click()
    said(page, "Thrown:")
    assert count(served, "DiceDrawn") == 1
    assert payloads(served, "ClientSeedGiven")[0]["client_seed"] == seed


def test_one_tap_on_the_grid_of_36_throws_records_a_throw(served: Served, page: Any) -> None:
    club = playing(served, SIX[:2])
    at_the_table(served, page)
    assert page.get_by_role("button", name="Throw 4 and 3").count() == 0  # no main yet
    tables.call_main(club, "t1", CECIL, 7)
    caught_up(page, club)
    grid = control(page, "Throw by tapping")
    throws = grid.get_by_role("group", name="The 36 throws").get_by_role("button")
    assert throws.count() == 36
    hint = grid.locator("#throw-grid-hint").inner_text()
    assert "dispute" in hint and "round's row" in hint  # what a mis-tap is put right by
    # Rows are die 1, columns die 2: the fourth row's third button throws 4 and 3.
    boxes = [throws.nth(i).bounding_box() for i in (18, 20, 21)]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[1]["x"] < boxes[2]["x"]
    named = grid.get_by_role("button", name="Throw 4 and 3", exact=True)
    assert named.bounding_box() == throws.nth(20).bounding_box()
    assert control(page, "Record a throw").count() == 1  # the dice pad and its keys stay
    page.get_by_role("button", name="Throw 4 and 3").click()  # one tap
    said(page, "Thrown: 4 and 3, 7")
    assert payloads(served, "DiceThrown") == [{"die1": 4, "die2": 3}]
    assert same_document(page)


def test_everyone_lays_in_one_press_and_the_page_says_who(served: Served, page: Any) -> None:
    club = playing(served)
    tables.stake(club, "t1", CECIL, 500)
    at_the_table(served, page)
    page.locator("#lay-amount").fill("0.50")
    control(page, "Lay against the caster").get_by_role("button", name="Everyone lays").click()
    said(page, "bob, cat, dan, eve and fay each lay £0.50 against ann.")
    assert [p["bettor"] for p in payloads(served, "StakeLaid")] == list(SIX[1:])
    assert {p["amount"] for p in payloads(served, "StakeLaid")} == {50}
    assert page.locator("#bets tr[data-state=waiting]").count() == 5
    assert same_document(page)
