"""Every error under the console is a page for people, never a JSON problem: a URL that
names no page, a missing table, a method a page does not take, a refusal, a busy or
overloaded server and an unexpected fault, each with its status (and Retry-After where
HTTP asks for it). The API's own paths keep their problems (ledger.api.problems).

Regression: `/console/` followed by anything the router does not know, and GET of a
page that only takes a POST, answered application/problem+json to a person's browser."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from ledger.books import takings
from ledger.service import InvalidAmount, StaleVersion
from ledger.store.eventstore import Busy, ConcurrencyError
from ledger.web.heavy import Overloaded, TooManyReads
from tests.api.conftest import Api
from tests.console.officekit import console, csrf_of, evening


def _page(answer: Any, status: int) -> str:
    """The answer is the console's HTML page for `status`, not a problem."""
    assert answer.status_code == status, (answer.status_code, answer.get_data(as_text=True))
    assert answer.mimetype == "text/html", answer.mimetype
    text: str = answer.get_data(as_text=True)
    assert text.startswith("<!doctype html>") and "problem+json" not in text
    assert f"({status})</span></h1>" in text
    assert 'href="/"' in text  # a way back home
    return text


def test_a_url_under_the_console_that_names_no_page_is_a_page(sqlite_api: Api) -> None:
    setter = console(sqlite_api, "setter", "bank")
    for url in ("/console/nothing", "/console/office/nothing/here", "/console/tables/t1/x/y"):
        text = _page(setter.get(url), 404)
        assert "Not found" in text
        assert 'href="/console/office"' in text  # the setter's ways on, in the nav
    # Signed out, too: a stranger's mistyped URL.
    _page(sqlite_api.app.test_client().get("/console/nothing"), 404)


def test_a_missing_table_s_url_is_a_page_for_each_role(sqlite_api: Api) -> None:
    evening(sqlite_api)
    for role, name in (("setter", "bank"), ("croupier", "carl")):
        client = console(sqlite_api, role, name)
        for url in ("/console/tables/nope", "/console/tables/nope/panel"):
            assert "there is no table &#39;nope&#39;" in _page(client.get(url), 404)
        page = client.get("/").get_data(as_text=True)
        posted = client.post(
            "/console/tables/nope/do/main", data={"csrf_token": csrf_of(page), "main": "7"}
        )
        _page(posted, 404)
    auditor = console(sqlite_api, "auditor", "audrey")
    _page(auditor.get("/console/audit/replay/nope/1"), 404)
    _page(auditor.get("/console/office/disputes/nope/d1"), 404)


def test_a_method_a_page_does_not_take_is_a_page_with_allow(sqlite_api: Api) -> None:
    setter = console(sqlite_api, "setter", "bank")
    answer = setter.get("/console/sign-out")
    _page(answer, 405)
    assert "POST" in answer.headers["Allow"]
    _page(setter.delete("/console/office"), 405)


def test_a_bad_request_and_a_forbidden_page_are_pages(sqlite_api: Api) -> None:
    evening(sqlite_api)
    setter = console(sqlite_api, "setter", "bank")
    assert "after" in _page(setter.get("/console/audit?after=x"), 400)
    assert "CSRF" in _page(setter.post("/console/office/players", data={"name": "x"}), 400)
    ann = console(sqlite_api, "player", "ann")
    assert "may not open this page" in _page(ann.get("/console/office"), 403)


REFUSALS = [
    (ConcurrencyError("table:t1", 3, 4), 409, None),
    (StaleVersion(3, 4), 409, None),
    (InvalidAmount("amount must be a whole, positive number of minor units"), 422, None),
    (TooManyReads("this token already runs 2 heavy reads"), 429, "2"),
    (Overloaded("the server already runs 4 heavy reads"), 503, "2"),
    (Busy("the database is busy with another writer; try again"), 503, "1"),
    (RuntimeError("a fault of the service"), 500, None),
]


@pytest.mark.parametrize(("raised", "status", "retry"), REFUSALS, ids=lambda x: str(x)[:30])
def test_whatever_the_api_s_handlers_answer_under_the_console_is_a_page(
    sqlite_api: Api,
    monkeypatch: pytest.MonkeyPatch,
    raised: Exception,
    status: int,
    retry: str | None,
) -> None:
    """A refusal or fault that escapes a page reaches the app's handlers, the API's; under
    the console their problem becomes the console's page, with the same status and
    Retry-After."""
    setter = console(sqlite_api, "setter", "bank")

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise raised

    monkeypatch.setattr(takings, "latest", fails)
    answer = setter.get("/console/office")
    text = _page(answer, status)
    assert answer.headers.get("Retry-After") == retry
    if status == 500:
        assert "a fault of the service" not in text  # the fault is logged, not shown
        assert "an unexpected error" in text


def test_an_htmx_request_that_fails_is_announced_and_swaps_nothing(sqlite_api: Api) -> None:
    setter = console(sqlite_api, "setter", "bank")
    answer = setter.get("/console/nothing", headers={"HX-Request": "true"})
    assert answer.status_code == 404 and answer.mimetype == "text/html"
    assert answer.headers["HX-Reswap"] == "none"
    text = answer.get_data(as_text=True)
    assert 'id="announce"' in text and 'hx-swap-oob="true"' in text and "Refused:" in text
    # A form refused by the page itself (its CSRF token stale): the same, not a whole
    # page swapped into the form's place.
    stale = setter.post(
        "/console/office/players/ann/deposit", data={"amount": "1"}, headers={"HX-Request": "true"}
    )
    assert stale.status_code == 400 and stale.headers["HX-Reswap"] == "none"
    assert "<!doctype" not in stale.text and "Refused: the form&#39;s CSRF token" in stale.text


def test_the_api_s_paths_keep_their_problems(sqlite_api: Api) -> None:
    client: FlaskClient = sqlite_api.app.test_client()
    for url in ("/nothing", "/tables/nope/x/y"):
        answer = client.get(url)
        assert answer.status_code == 404 and answer.mimetype == "application/problem+json"
    answer = sqlite_api.client().get("/tables/nope")
    assert answer.status_code == 404 and answer.mimetype == "application/problem+json"
    assert client.delete("/players").mimetype == "application/problem+json"
