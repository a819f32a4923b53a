"""A player's limits and breaks over HTTP, on both databases: set, enforced, read, and
refused when bad, with nothing written (numbers of 5,000 digits, hostile names and text
are test_hostile.py's, for every write in rolekit.OPS)."""

from __future__ import annotations

from datetime import timedelta

from ledger.books.limitrules import parse
from ledger.commands import Caller, Role, limits
from ledger.store.eventstore import EventStore
from tests.api.conftest import Api
from tests.api.rolekit import club, event_count, prepare


def test_a_deposit_past_a_limit_is_a_problem_naming_the_limit(api: Api) -> None:
    bank = club(api)
    ann = api.client("player", "ann")
    answer = ann.ok("put", "/players/ann/limits/deposit_24h", {"limit": 0})
    assert answer["effective_at"] == answer["events"][0]["recorded_at"]
    before = event_count(api)
    refused = bank.post("/players/ann/deposits", {"amount": 1})
    assert refused.status_code == 422
    problem = refused.get_json()
    assert (problem["type"], problem["limit"]) == ("urn:hazard:limit-reached", "deposit_24h")
    assert "deposits over 24 hours" in problem["detail"]
    assert event_count(api) == before
    shown = ann.ok("get", "/players/ann/limits")
    [day] = [lim for lim in shown["limits"] if lim["kind"] == "deposit_24h"]
    assert (day["limit"], day["waiting"]) == (0, None)
    assert day["used"] > 0  # the club's deposit of a moment ago counts
    raised = ann.ok("delete", "/players/ann/limits/deposit_24h")
    assert raised["effective_at"] > raised["events"][0]["recorded_at"]
    shown = ann.ok("get", "/players/ann/limits")
    [day] = [lim for lim in shown["limits"] if lim["kind"] == "deposit_24h"]
    assert day["waiting"] == {"limit": None, "from": raised["effective_at"]}


def test_a_time_out_refuses_a_lay_but_not_a_withdrawal(api: Api) -> None:
    bank = club(api)
    context = prepare(bank, "caster")
    bob = api.client("player", "bob")
    taken = bob.post("/players/bob/breaks", json={"kind": "time-out", "length": 24})
    assert taken.status_code == 201
    before = event_count(api)
    refused = bob.post(f"/tables/{context['t']}/lays", json={"player": "bob", "amount": 50})
    assert refused.status_code == 403
    assert refused.get_json()["type"] == "urn:hazard:on-break"
    assert refused.get_json()["until"] == taken.get_json()["until"]
    assert event_count(api) == before
    bank.ok("post", "/players/bob/withdrawals", {"amount": 5})
    shown = bob.ok("get", "/players/bob/limits")
    assert shown["break"] == {"kind": "time-out", "until": taken.get_json()["until"]}
    assert shown["reality_check_minutes"] == 60
    shorter = bob.post("/players/bob/breaks", json={"kind": "time-out", "length": 24})
    assert shorter.status_code == 201  # a second later: it ends a second later
    assert "never shortened" not in shorter.get_data(as_text=True)


def test_bad_limits_and_breaks_are_refused_and_write_nothing(api: Api) -> None:
    club(api)
    ann = api.client("player", "ann")
    before = event_count(api)
    for path, body, status in [
        ("/players/ann/limits/stake", {"limit": -1}, 422),
        ("/players/ann/limits/stake", {"limit": "5"}, 422),
        ("/players/ann/limits/stake", {"limit": None}, 422),
        ("/players/ann/limits/stake", {}, 422),
        ("/players/ann/limits/bets", {"limit": 5}, 404),
        ("/players/ann/limits/" + "x" * 5000, {"limit": 5}, 404),
        ("/players/bob/limits/stake", {"limit": 5}, 403),
        ("/players/nobody/limits/stake", {"limit": 5}, 403),
    ]:
        response = ann.put(path, json=body)
        assert response.status_code in (status, 414), (path, body, response.get_json())
    for body in [
        {"kind": "time-out", "length": 23},
        {"kind": "time-out", "length": 1009},
        {"kind": "self-exclusion", "length": 5},
        {"kind": "self-exclusion", "length": 121},
        {"kind": "nap", "length": 30},
    ]:
        response = ann.post("/players/ann/breaks", json=body)
        assert response.status_code == 422, (body, response.get_json())
    assert api.client("player", "bob").get("/players/ann/limits").status_code == 403
    assert api.client().get("/players/nobody/limits").status_code == 404
    assert event_count(api) == before


def test_the_club_s_cooling_off_is_the_app_s_setting(store: EventStore) -> None:
    from ledger.api import create_app
    from ledger.books.book import Book

    app = create_app(Book(store), HAZARD_LIMIT_COOLING_OFF="2")
    club = app.extensions["hazard.club"]
    club.create_player("ann", "setter:bank")
    setter = Caller(Role.SETTER, "bank")
    limits.set_limit(club, setter, "ann", "stake", 10)
    raised = limits.set_limit(club, setter, "ann", "stake", 20)
    recorded = parse(raised["events"][0]["recorded_at"])
    assert parse(raised["effective_at"]) - recorded == timedelta(hours=2)


def test_a_deep_check_names_a_deposit_an_insider_wrote_past_a_limit(api: Api) -> None:
    from ledger.books.accounts import account_stream
    from ledger.store.vocabulary import Deposited
    from ledger.unit_of_work import UnitOfWork

    bank = club(api)
    api.client("player", "ann").ok("put", "/players/ann/limits/deposit_24h", {"limit": 0})
    clean = bank.ok("get", "/audit/verify", query_string={"deep": "true"})
    assert clean["ok"] and clean["limits"] == []
    assert "limits" not in bank.ok("get", "/audit/verify")
    store, stream = api.book.store, account_stream("player:ann")
    with UnitOfWork(store) as uow:  # past the club's check, as an insider with the store
        version = store.stream_version(uow.conn, stream)
        event = Deposited(version=version + 1, account="player:ann", amount=7)
        [row] = uow.record(stream, version, [event], "setter:bank")
        uow.commit()
    found = bank.ok("get", "/audit/verify", query_string={"deep": "true"})
    assert found["ok"] is False and found["problems"] == [] and found["read_models"] == []
    [breach] = found["limits"]
    assert breach.startswith(f"position {row.position}: player:ann: a deposit of 7 past the limit")
