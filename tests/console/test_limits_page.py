"""A player's limits in the console, through Flask's test client on both databases: the
player sets their own and takes a break from their page, the setter sets them at a
player's request from the office, a refusal is said beside its form and writes
nothing, and the player's page shows the reality check."""

from __future__ import annotations

import html

from ledger.commands import Caller, Role, tables
from ledger.store.vocabulary import Deposited
from tests.api.conftest import Api
from tests.console.formkit import count, signed_in
from tests.console.officekit import form_of

STAKE = "/console/limits/ann/stake"
BREAK = "/console/limits/ann/break"


def _ann(api: Api) -> None:
    club = api.app.extensions["hazard.club"]
    club.create_player("ann", "setter:bank")
    club.account_command("ann", Deposited, 5000, "setter:bank")


def test_a_player_lowers_a_limit_at_once_and_a_raise_waits(api: Api) -> None:
    _ann(api)
    ann = signed_in(api, "player", "ann")
    page = ann.get("/console/me/limits").get_data(as_text=True)
    done = ann.post(STAKE, data={**form_of(page, STAKE), "amount": "12.50"})
    assert done.status_code == 302
    page = html.unescape(ann.get("/console/me/limits").get_data(as_text=True))
    assert "ann's limit on largest stake is £12.50, at once." in page
    assert 'data-field="limit">£12.50<' in page
    ann.post(STAKE, data={**form_of(page, STAKE), "amount": "20"})
    page = html.unescape(ann.get("/console/me/limits").get_data(as_text=True))
    assert "ann's limit on largest stake is £20.00, from " in page
    assert 'data-field="limit">£12.50<' in page  # the raise waits for its cooling-off


def test_a_refused_form_says_why_and_writes_nothing(api: Api) -> None:
    _ann(api)
    ann = signed_in(api, "player", "ann")
    page = ann.get("/console/me/limits").get_data(as_text=True)
    before = count(api)
    for data, said in [
        ({"amount": "12.505"}, "amount: 12.505 has 3 decimal places"),
        ({"amount": "-5"}, "amount: an amount is written without a sign"),
    ]:
        refused = ann.post(STAKE, data={**form_of(page, STAKE), **data})
        assert refused.status_code == 422
        assert said in html.unescape(refused.get_data(as_text=True))
    refused = ann.post(BREAK, data={**form_of(page, BREAK), "kind": "time-out", "length": "6"})
    assert refused.status_code == 422
    assert "a time-out is 24 to 1008 hours" in refused.get_data(as_text=True)
    assert count(api) == before
    api.app.extensions["hazard.club"].create_player("bob", "setter:bank")
    before = count(api)
    other = signed_in(api, "player", "bob")
    assert other.post(STAKE, data={**form_of(page, STAKE), "amount": "1"}).status_code in (
        400,
        403,
    )
    assert other.get("/console/office/players/ann/limits").status_code == 403
    assert count(api) == before


def test_a_time_out_from_the_office_and_the_reality_check(api: Api) -> None:
    _ann(api)
    club = api.app.extensions["hazard.club"]
    croupier = Caller(Role.CROUPIER, "cecil")
    club.create_player("bob", "setter:bank")
    club.account_command("bob", Deposited, 5000, "setter:bank")
    tables.open_table(club, "t1", croupier, ruleset="english")
    for name in ("ann", "bob"):
        tables.seat(club, "t1", croupier, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t1", croupier, name, die)
    tables.lay(club, "t1", Caller(Role.PLAYER, "bob"), "bob", 300)
    setter = signed_in(api, "setter", "bank")
    office = setter.get("/console/office").get_data(as_text=True)
    assert "/console/office/players/bob/limits" in office
    page = setter.get("/console/office/players/bob/limits").get_data(as_text=True)
    path = "/console/limits/bob/break"
    taken = setter.post(path, data={**form_of(page, path), "kind": "time-out", "length": "48"})
    assert taken.status_code == 302
    page = html.unescape(setter.get("/console/office/players/bob/limits").get_data(as_text=True))
    assert "bob is on a time-out until" in page
    bob = signed_in(api, "player", "bob")
    me = html.unescape(bob.get("/console/me").get_data(as_text=True))
    assert "You have been at the tables for 0 h 0 min this evening" in me
    assert "your net is -£3.00." in me
    assert "You are on a time-out until" in me
    assert 'hx-trigger="every 3600s"' in me


def test_a_deposit_past_a_limit_is_refused_in_the_office_in_the_club_s_money(api: Api) -> None:
    _ann(api)
    ann = signed_in(api, "player", "ann")
    page = ann.get("/console/me/limits").get_data(as_text=True)
    path = "/console/limits/ann/deposit_24h"
    ann.post(path, data={**form_of(page, path), "amount": "60"})
    setter = signed_in(api, "setter", "bank")
    office = setter.get("/console/office?from=ann").get_data(as_text=True)
    deposit = "/console/office/players/ann/deposit"
    before = count(api)
    refused = setter.post(deposit, data={**form_of(office, deposit), "amount": "12.50",
                                         "confirmed": "yes"})  # fmt: skip
    assert refused.status_code == 422
    said = html.unescape(refused.get_data(as_text=True))
    assert (
        "player:ann's limit on deposits over 24 hours: £60.00, of which £50.00 is paid in "
        "already, so £12.50 more would pass it (at most £10.00 more now)"
    ) in said
    assert count(api) == before
