"""Disputes resolved from the console (ledger.console.disputes): the page shows the
service's answer, the what-if and what each resolution would post; the setter upholds,
voids or corrects with a reason, confirmed first, and the events written are the API's,
event for event, as POST /tables/{t}/disputes/{id}/resolution writes them.

The rounds are tests/api/disputekit.py's, worked by hand: after them ann 1160, bob 890,
cat 1050, the setter 9900. bob disputes round 2's 4+4 (it was 4+5: bob wins the side
bet, and cat owes him back his 50 and her 20, 70 in all) and round 1 in words only; the
croupier disputes round 1 too. The setter corrects the first (bob 890 -> 960, cat 1050 ->
980), voids round 1 (ann gives back the setter's 100 and bob's 60: ann 1000, bob 1020,
the setter 10 000) and upholds the croupier's (nothing moves).

Regression: the dispute page left out the answer and the what-if, and told the setter to
POST .../resolution over the API."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from ledger.api import create_app
from ledger.books.book import Book
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log.heads import SEALS
from ledger.store.schema import events
from tests.api import disputekit
from tests.api.conftest import Api
from tests.console.officekit import console, form_of, writes
from tests.signing import SIGNER

RESOLVED = {"ann": 1000, "bob": 1020, "cat": 980, "setter": 10_000}


def _disputed(api: Api) -> tuple[Any, dict[str, str], int]:
    """The two rounds and three disputes: their ids by what the setter will do, and the
    version of round 2's 4+4."""
    night, versions = disputekit.two_rounds(api)
    eight = versions["eight"]
    corrected = disputekit.open_dispute(
        night, "bob", 2, {"claim": "the 4+4 was 4+5", "throw": eight, "dice": [4, 5]}
    )["dispute_id"]
    voided = disputekit.open_dispute(night, "bob", 1, {"claim": "the dice left the table"})
    upheld = disputekit.open_dispute(night, night.croupier, 1, {"claim": "check the 3+4"})
    ids = {
        "corrected": corrected,
        "voided": voided["dispute_id"],
        "upheld": upheld["dispute_id"],
    }
    return night, ids, eight


def _resolutions(ids: dict[str, str], eight: int) -> list[tuple[str, dict[str, Any]]]:
    """What the setter decides, as the API's body."""
    return [
        (
            ids["corrected"],
            {"resolution": "corrected", "reason": "camera: 4+5", "throw": eight, "dice": [4, 5]},
        ),
        (ids["voided"], {"resolution": "voided", "reason": "the dice left the table"}),
        (ids["upheld"], {"resolution": "upheld", "reason": "the camera shows 3+4"}),
    ]


def _resolve_in_the_console(
    setter: FlaskClient, dispute_id: str, body: dict[str, Any], headers: Any = None
) -> str:
    """The dispute's page, its form filled as `body` says, reviewed, and confirmed twice;
    the page it ends on."""
    path = f"/console/office/disputes/t1/{dispute_id}"
    page = setter.get(path).get_data(as_text=True)
    action = path + "/resolution"
    sent = {**form_of(page, action), "resolution": body["resolution"], "reason": body["reason"]}
    if body.get("dice"):
        sent.update(throw=str(body["throw"]), die1=str(body["dice"][0]), die2=str(body["dice"][1]))
    review = setter.post(action, data=sent, headers=headers)
    assert review.status_code == 200, review.get_data(as_text=True)[-3000:]
    confirm = form_of(review.get_data(as_text=True), action)
    assert confirm["confirmed"] == "yes" and confirm["key"] == sent["key"]
    first = setter.post(action, data=confirm, headers=headers)
    again = setter.post(action, data=confirm, headers=headers)  # a double confirm
    assert first.status_code == again.status_code == (200 if headers else 302)
    final = first if headers else setter.get(first.headers["Location"])
    return html.unescape(final.get_data(as_text=True))


def _table_events(api: Api, after: int) -> list[tuple[str, int, str, str]]:
    """The events written after position `after`, but the log's seals (whose hashes hold
    the time): stream, version, type and payload."""
    e = events.c
    with api.book.store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(e.stream, e.version, e.type, e.payload)
            .where(e.position > after, e.stream != SEALS)
            .order_by(e.position)
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def _last_position(api: Api) -> int:
    with api.book.store.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.max(events.c.position))).scalar_one())


@pytest.fixture
def second(tmp_path: Path) -> Iterator[Api]:
    """Another club on its own database (SQLite), for the same evening over the API."""
    engine = db.make_engine(f"sqlite:///{tmp_path / 'second.sqlite3'}")
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    yield Api(create_app(book=Book(store), TESTING=True))
    store.close()
    engine.dispose()


def test_each_resolution_writes_the_events_the_api_s_resolution_writes(
    api: Api, second: Api
) -> None:
    night, ids, eight = _disputed(api)
    over_http, http_ids, http_eight = _disputed(second)
    assert (http_ids, http_eight) == (ids, eight)
    start, http_start = _last_position(api), _last_position(second)
    setter = console(api, "setter", "bank")
    for dispute_id, body in _resolutions(ids, eight):
        before = writes(api)
        page = _resolve_in_the_console(setter, dispute_id, body)
        assert writes(api)[1] == before[1] + 1  # confirmed twice, written once
        announced = re.search(r'<p id="announce"[^>]*>([^<]*)</p>', page)
        assert announced, "said, in the aria-live region"
        resolved = f"Dispute {dispute_id} resolved: {body['resolution']}. Receipt: position"
        assert announced.group(1).startswith(resolved)
        disputekit.resolve(over_http, dispute_id, body)
    assert _table_events(api, start) == _table_events(second, http_start)
    assert night.balances() == over_http.balances() == RESOLVED


def test_the_dispute_page_shows_the_answer_the_what_if_and_what_each_would_post(
    api: Api,
) -> None:
    _, ids, eight = _disputed(api)
    setter = console(api, "setter", "bank")
    page = html.unescape(setter.get(f"/console/office/disputes/t1/{ids['corrected']}").text)
    assert "POST /tables" not in page  # resolved here, not over the API
    assert '<blockquote data-field="claim">the 4+4 was 4+5</blockquote>' in page
    # The service's answer: the record matches its events; cat won bob's 50.
    assert "match the round's events" in page and "<strong>chance</strong>" in page
    assert re.search(r'id="answer-bets".*?<td>cat</td><td>bob -£0.50; cat \+£0.50</td>', page, re.S)
    # The what-if: with 4+5 the next throw was a 9, and bob wins the side bet.
    assert f"With 4 + 5 at version {eight}, the round ends <strong>chance</strong>" in page
    assert re.search(
        r'id="what-if-bets".*?<td>bob</td><td>bob \+£0.20; cat -£0.20</td>', page, re.S
    )
    # What a correction would post: cat pays bob back 70; a void, the 50 he lost.
    assert re.search(
        r'id="correction-posts".*?<td>cat</td><td>bob</td><td class="amount">£0.70<', page, re.S
    )
    assert re.search(
        r'id="void-posts".*?<td>cat</td><td>bob</td><td class="amount">£0.50<', page, re.S
    )
    assert 'aria-label="Resolve the dispute"' in page
    # Round 1's dispute in words: no what-if; its void reverses both of round 1's bets.
    words = html.unescape(setter.get(f"/console/office/disputes/t1/{ids['voided']}").text)
    assert "The claim names no dice" in words
    void = re.search(r'id="void-posts".*?</table>', words, re.S)
    assert void and "£1.00" in void.group(0) and "£0.60" in void.group(0)
    # The auditor reads it all, and has no form.
    auditor = console(api, "auditor", "audrey").get(
        f"/console/office/disputes/t1/{ids['corrected']}"
    )
    assert auditor.status_code == 200
    assert "Waiting for the setter" in auditor.text and "Resolve the dispute" not in auditor.text


def _corrected(
    setter: Any, path: str, reason: str, throw: int, die1: int, die2: int
) -> tuple[Any, str]:
    """The setter's form on the dispute page at `path` sent as a correction of `throw`
    to die1 + die2 for `reason`, unconfirmed: the answer, and the page as drawn."""
    page: str = setter.get(path).text
    sent = {
        **form_of(page, path + "/resolution"),
        "resolution": "corrected",
        "reason": reason,
        "throw": str(throw),
        "die1": str(die1),
        "die2": str(die2),
    }
    return setter.post(path + "/resolution", data=sent), page


def test_a_resolution_is_reviewed_before_it_is_written(api: Api) -> None:
    _, ids, eight = _disputed(api)
    setter = console(api, "setter", "bank")
    path = f"/console/office/disputes/t1/{ids['corrected']}"
    before = writes(api)
    review, _ = _corrected(setter, path, "camera: 4+5", eight, 4, 5)
    text = html.unescape(review.text)
    assert review.status_code == 200 and writes(api) == before
    assert f"Confirm: correct the throw at version {eight} to 4 + 5" in text
    assert re.search(
        r'id="confirm-posts".*?<td>cat</td><td>bob</td><td class="amount">£0.70<', text, re.S
    )
    assert '<q data-field="confirm-reason">camera: 4+5</q>' in text


def test_a_correction_the_rules_refuse_is_refused_at_review_naming_the_rule(api: Api) -> None:
    """Round 1's nick corrected to 2+2 would leave the round in play: refused, beyond
    its round, at review; nothing is written, and the form keeps what was typed."""
    _, ids, _ = _disputed(api)
    setter = console(api, "setter", "bank")
    path = f"/console/office/disputes/t1/{ids['voided']}"
    before = writes(api)
    refused, page = _corrected(setter, path, "it was 2+2", 13, 2, 2)
    text = html.unescape(refused.text)
    assert refused.status_code == 422
    assert 'data-error="resolution"' in text and "correction-reaches-beyond-round" in text
    assert ">it was 2+2</textarea>" in text
    for bad, named in [
        (
            {"resolution": "corrected", "reason": "x", "throw": "x", "die1": "2", "die2": "2"},
            "throw",
        ),
        (
            {"resolution": "corrected", "reason": "x", "throw": "13", "die1": "7", "die2": "2"},
            "dice",
        ),
        ({"resolution": "upheld", "reason": ""}, "reason"),
        ({"resolution": "forgiven", "reason": "x"}, "invalid-resolution"),
    ]:
        answer = setter.post(
            path + "/resolution", data={**form_of(page, path + "/resolution"), **bad}
        )
        assert answer.status_code == 422, (bad, answer.status_code)
        assert named in answer.text, (bad, answer.text[-2000:])
    assert writes(api) == before


def test_a_stale_page_is_refused_and_shows_the_table_as_it_is(api: Api) -> None:
    night, ids, _ = _disputed(api)
    setter = console(api, "setter", "bank")
    path = f"/console/office/disputes/t1/{ids['upheld']}"
    page = setter.get(path).text
    sent = {**form_of(page, path + "/resolution"), "resolution": "upheld", "reason": "fine"}
    review = setter.post(path + "/resolution", data=sent)
    night.do(night.croupier, "main", {"main": 7})  # the table moves on meanwhile
    before = writes(api)
    stale = setter.post(path + "/resolution", data=form_of(review.text, path + "/resolution"))
    assert stale.status_code == 409 and "The table has moved on" in stale.text
    assert writes(api) == before
    # Looked at again, it goes through.
    _resolve_in_the_console(setter, ids["upheld"], {"resolution": "upheld", "reason": "fine"})
    assert writes(api)[1] == before[1] + 1


def test_only_the_setter_resolves_and_a_forged_form_writes_nothing(sqlite_api: Api) -> None:
    _, ids, _ = _disputed(sqlite_api)
    path = f"/console/office/disputes/t1/{ids['upheld']}/resolution"
    before = writes(sqlite_api)
    for role, name in [("auditor", "audrey"), ("croupier", "carl"), ("player", "bob")]:
        client = console(sqlite_api, role, name)
        page = client.get("/").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert token
        data = {"csrf_token": html.unescape(token.group(1)), "resolution": "upheld", "reason": "x"}
        answer = client.post(path, data={**data, "confirmed": "yes"})
        assert answer.status_code == 403, (role, answer.status_code)
    setter = console(sqlite_api, "setter", "bank")
    forged = setter.post(path, data={"resolution": "upheld", "reason": "x", "confirmed": "yes"})
    assert forged.status_code == 400 and "CSRF" in forged.text
    assert writes(sqlite_api) == before


def test_with_script_the_resolution_swaps_the_dispute_and_is_announced(api: Api) -> None:
    night, ids, eight = _disputed(api)
    setter = console(api, "setter", "bank")
    body = {"resolution": "corrected", "reason": "camera: 4+5", "throw": eight, "dice": [4, 5]}
    text = _resolve_in_the_console(setter, ids["corrected"], body, headers={"HX-Request": "true"})
    assert text.startswith('<div id="dispute">') and "<!doctype" not in text
    assert re.search(
        r'<p id="announce"[^>]*hx-swap-oob="true">Dispute d\d+ resolved: corrected', text
    )
    assert 'data-field="receipt-positions"' in text
    assert re.search(
        r'id="adjustments-made".*?<td>cat</td><td>bob</td><td class="amount">£0.70<', text, re.S
    )
    assert night.balances() == {"ann": 1160, "bob": 960, "cat": 980, "setter": 9900}
