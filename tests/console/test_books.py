"""The club's books on the console: the setter's and the auditor's pages of the
exceptions, the authentication report and the log of significant events for a period,
with their CSV; refused to a player and a croupier; a bad period refused on the page,
naming it. Both databases."""

from __future__ import annotations

from ledger.commands import significant as command
from tests.api.conftest import Api
from tests.api.disputekit import TABLE, two_rounds
from tests.console.formkit import signed_in

BOOKS = ("exceptions", "authentication", "significant")


def test_the_auditor_reads_each_book_and_its_csv(api: Api) -> None:
    night, _ = two_rounds(api)
    night.croupier.ok("post", f"/tables/{TABLE}/main", {"main": 7})
    night.croupier.ok("post", f"/tables/{TABLE}/void-throws", {"reason": "cocked", "off": 0})
    stranger = api.app.test_client()
    page = stranger.get("/").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    for _ in range(7):
        stranger.post("/console/sign-in", data={"csrf_token": token, "token": "hz_guess"})
    auditor = signed_in(api, "auditor", "abel")
    tally: command.Tally = api.app.extensions["hazard.significant"]
    tally.flush()
    exceptions = auditor.get("/console/books/exceptions").get_data(as_text=True)
    assert "throw voided" in exceptions and "cocked" in exceptions
    shown = auditor.get("/console/books/authentication").get_data(as_text=True)
    assert "sign-in refused" in shown and "hz_guess" not in shown
    assert ">7 (" in shown  # the flood, one row with its count
    csv_text = auditor.get("/console/books/exceptions.csv").get_data(as_text=True)
    assert csv_text.startswith("position,recorded_at,table,kind") and "cocked" in csv_text
    empty = auditor.get("/console/books/exceptions?until=2000-01-01T00:00:00Z")
    assert "Nothing in this period." in empty.get_data(as_text=True)
    blank = auditor.get("/console/books/significant?since=&until=")
    assert blank.status_code == 200  # the form's blank fields: the whole log


def test_a_player_or_a_croupier_is_refused_the_books(api: Api) -> None:
    api.client().ok("post", "/players", {"name": "ann"})
    for role, name in (("player", "ann"), ("croupier", "cecil")):
        client = signed_in(api, role, name)
        for book in BOOKS:
            for path in (f"/console/books/{book}", f"/console/books/{book}.csv"):
                assert client.get(path).status_code == 403, (role, path)


def test_a_bad_period_is_refused_on_the_page_naming_it(api: Api) -> None:
    auditor = signed_in(api, "auditor", "abel")
    backwards = "since=2026-11-28T00:00:00Z&until=2026-11-27T00:00:00Z"
    for query, name in (("since=tomorrow", "since"), ("after=" + "9" * 5000, "after"),
                        (backwards, "until")):  # fmt: skip
        answer = auditor.get(f"/console/books/exceptions?{query}")
        assert answer.status_code == 400, query
        assert name in answer.get_data(as_text=True), query
