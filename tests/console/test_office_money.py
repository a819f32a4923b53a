"""Money the setter writes from the office is confirmed first (ledger.console.office): the
amount typed in the club's major units, read exactly, shown in figures and in words
with the player, and nothing written until the second POST, which carries the same
idempotency key, so that a confirmation sent twice writes once. The write's receipt is
shown and said in the page's aria-live region, with script (htmx) or without.

Regression: a deposit or withdrawal was written at the first click, in bare minor units
("750" for £7.50), with nothing read back to the setter."""

from __future__ import annotations

import html
import re

from flask.testing import FlaskClient

from ledger.house import House
from tests.api.conftest import Api
from tests.console.officekit import cell, console, form_of, writes

HTMX = {"HX-Request": "true"}
DEPOSIT = "/console/office/players/ann/deposit"


def _with_ann(api: Api) -> tuple[FlaskClient, str]:
    setter = console(api, "setter", "bank")
    page = setter.get("/console/office").get_data(as_text=True)
    made = setter.post(
        "/console/office/players", data={**form_of(page, "/console/office/players"), "name": "ann"}
    )
    assert made.status_code == 302
    return setter, setter.get("/console/office").get_data(as_text=True)


def _announced(page: str) -> str:
    found = re.search(r'<p id="announce"[^>]*>([^<]*)</p>', page)
    assert found, page[:300]
    return html.unescape(found.group(1))


def test_a_deposit_writes_nothing_until_confirmed_and_once_when_confirmed_twice(
    api: Api,
) -> None:
    setter, page = _with_ann(api)
    before = writes(api)
    review = setter.post(DEPOSIT, data={**form_of(page, DEPOSIT), "amount": "12.50"})
    text = html.unescape(review.get_data(as_text=True))
    assert review.status_code == 200
    assert writes(api) == before  # asked, not written
    # The amount in figures and in words, and whose account.
    assert 'data-field="confirm-amount">£12.50<' in text
    assert 'data-field="confirm-words">twelve pounds and fifty pence<' in text
    assert "Deposit £12.50 into ann's account." in text
    assert "Confirm: deposit £12.50" in text
    assert _announced(text) == "Confirm: Deposit £12.50 into ann's account."
    sent = form_of(text, DEPOSIT)
    assert sent["confirmed"] == "yes" and sent["amount"] == "12.50"
    assert sent["key"] == form_of(page, DEPOSIT)["key"]  # the same key, sent again
    first = setter.post(DEPOSIT, data=sent)
    second = setter.post(DEPOSIT, data=sent)  # a double click on "Confirm"
    assert (first.status_code, second.status_code) == (302, 302)
    assert writes(api) == (before[0] + 1, before[1] + 1)  # one deposit, one write
    office = setter.get("/console/office").get_data(as_text=True)
    assert cell(office, "player-ann", "balance") == "1250"


def test_the_receipt_is_shown_and_announced_after_the_write(api: Api) -> None:
    setter, page = _with_ann(api)
    review = setter.post(DEPOSIT, data={**form_of(page, DEPOSIT), "amount": "3"})
    written = setter.post(DEPOSIT, data=form_of(review.get_data(as_text=True), DEPOSIT))
    # Back to the office, at ann's row.
    assert written.headers["Location"].endswith("/console/office?from=ann#money-step")
    office = html.unescape(setter.get("/console/office?from=ann").get_data(as_text=True))
    # The receipt as the API's answer gives it: the position written, the checkpoint.
    with api.book.store.engine.connect() as conn:
        from ledger.store.log import proofs

        checkpoint = proofs.latest(conn).view()
    positions = re.search(r'data-field="receipt-positions">(\d+)<', office)
    assert positions and int(positions.group(1)) == checkpoint["size"] - 1  # then its seal
    assert checkpoint["checkpoint"].split("\n")[0] in office
    assert _announced(office) == (
        f"Deposited £3.00 into ann's account. Receipt: position {positions.group(1)} of the log."
    )
    # Shown once: the next visit to the office is the office alone.
    again = setter.get("/console/office").get_data(as_text=True)
    assert "receipt-positions" not in again and _announced(again) == ""


def test_an_amount_with_too_many_decimals_is_refused_naming_the_rule(api: Api) -> None:
    setter, page = _with_ann(api)
    before = writes(api)
    for typed, rule in [
        ("12.505", "12.505 has 3 decimal places: GBP is counted to the penny, at most 2"),
        ("-5", "without a sign"),
        ("ten", "'ten' is not an amount: write it in digits"),
        ("10000000000000.01", "amount: from £0.01 to £10,000,000,000,000.00"),
        ("0", "amount: from £0.01"),
    ]:
        answer = setter.post(DEPOSIT, data={**form_of(page, DEPOSIT), "amount": typed})
        text = html.unescape(answer.get_data(as_text=True))
        assert answer.status_code == 422, (typed, answer.status_code)
        assert 'data-error="deposit:ann"' in text and rule in text, (typed, text[-2000:])
        # Refused on its own, before any confirmation: there is nothing to confirm.
        assert 'name="confirmed"' not in text
    # Sent as if confirmed, it is refused all the same.
    forged = {**form_of(page, DEPOSIT), "amount": "1.001", "confirmed": "yes"}
    assert setter.post(DEPOSIT, data=forged).status_code == 422
    assert writes(api) == before


def test_a_club_counting_whole_yen_refuses_any_decimal(sqlite_api: Api) -> None:
    sqlite_api.app.extensions["hazard.house"] = House("JPY", 0)
    setter, page = _with_ann(sqlite_api)
    assert "Amounts are in JPY" in page and "Money in or out (JPY)" in page
    answer = setter.post(DEPOSIT, data={**form_of(page, DEPOSIT), "amount": "1500.5"})
    assert answer.status_code == 422
    assert "JPY is counted in whole yen, no decimal places" in answer.get_data(as_text=True)
    review = setter.post(DEPOSIT, data={**form_of(page, DEPOSIT), "amount": "1,500"})
    text = review.get_data(as_text=True)
    assert "¥1,500" in text and "one thousand five hundred yen" in text


def test_the_labels_say_the_currency(sqlite_api: Api) -> None:
    _, page = _with_ann(sqlite_api)
    assert "<caption>Players' accounts, in GBP</caption>" in page
    assert "Amount for ann, in GBP" in page
    assert 'data-minor="0">£0.00<' in page


def test_a_confirmation_sent_with_another_amount_under_its_key_is_refused(api: Api) -> None:
    """The key is the confirmation's: the same key with another amount is another request,
    refused as the API refuses an Idempotency-Key reused, and writes nothing more."""
    setter, page = _with_ann(api)
    review = setter.post(DEPOSIT, data={**form_of(page, DEPOSIT), "amount": "5"})
    sent = form_of(review.get_data(as_text=True), DEPOSIT)
    assert setter.post(DEPOSIT, data=sent).status_code == 302
    before = writes(api)
    answer = setter.post(DEPOSIT, data={**sent, "amount": "500"})
    assert answer.status_code == 422
    assert "Idempotency-Key" in answer.get_data(as_text=True)
    assert writes(api) == before


def test_withdrawals_credit_and_the_bank_s_float_are_confirmed_too(api: Api) -> None:
    setter, page = _with_ann(api)
    before = writes(api)
    for action, typed, said in [
        ("/console/office/players/setter/deposit", "100", "Deposit £100.00 into the setter's own"),
        ("/console/office/players/ann/withdraw", "1", "Withdraw £1.00 from ann's account."),
        ("/console/office/players/ann/credit", "20", "Set ann's credit limit to £20.00."),
    ]:
        review = setter.post(action, data={**form_of(page, action), "amount": typed})
        text = html.unescape(review.get_data(as_text=True))
        assert review.status_code == 200 and said in text, (action, text[-1500:])
    assert writes(api) == before
    # ann has nothing: her withdrawal, confirmed, is refused (an overdraft), after the fact.
    action = "/console/office/players/ann/withdraw"
    review = setter.post(action, data={**form_of(page, action), "amount": "1"})
    assert "Balance after" in review.get_data(as_text=True)
    refused = setter.post(action, data=form_of(review.get_data(as_text=True), action))
    assert refused.status_code == 422 and "not enough funds" in refused.get_data(as_text=True)
    assert writes(api) == before


def test_with_script_each_step_swaps_the_players_section_and_is_announced(api: Api) -> None:
    setter, page = _with_ann(api)
    before = writes(api)
    review = setter.post(DEPOSIT, data={**form_of(page, DEPOSIT), "amount": "2.25"}, headers=HTMX)
    text = html.unescape(review.get_data(as_text=True))
    assert review.status_code == 200 and not text.startswith("<!doctype")
    assert text.startswith('<section id="players-section"')
    assert 'hx-swap-oob="true"' in text and "Confirm: Deposit £2.25" in text
    assert writes(api) == before
    sent = form_of(text, DEPOSIT)
    written = setter.post(DEPOSIT, data=sent, headers=HTMX)
    again = setter.post(DEPOSIT, data=sent, headers=HTMX)
    assert (written.status_code, again.status_code) == (200, 200)
    assert writes(api) == (before[0] + 1, before[1] + 1)
    text = html.unescape(written.get_data(as_text=True))
    assert cell(text, "player-ann", "balance") == "225"
    assert "Deposited £2.25 into ann's account. Receipt: position" in _announced(text)
    assert 'data-field="receipt-positions"' in text
    # The row's forms carry a fresh key for the next write.
    assert form_of(text, DEPOSIT)["key"] != sent["key"]
    # A refusal swaps in its reason, with its status.
    refused = setter.post(DEPOSIT, data={**sent, "amount": "1.234"}, headers=HTMX)
    assert refused.status_code == 422 and "at most 2 decimal places" in refused.get_data(
        as_text=True
    )


def test_the_players_are_a_page_at_a_time_and_found_by_name(api: Api) -> None:
    """The office lists the setter and 50 players a page, by name (by its bytes, on
    both databases), and finds one by the start of their name: a club of many players
    is not one long page, and its money is typed in the row that is shown."""
    club = api.app.extensions["hazard.club"]
    names = [f"p{i:03d}" for i in range(60)] + ["Zed", "ann", "ann.b"]
    for name in names:
        club.create_player(name, "setter:bank")
    setter = console(api, "setter", "bank")
    first = setter.get("/console/office").get_data(as_text=True)
    rows = re.findall(r'<tr id="player-([^"]+)"', first)
    assert rows == ["setter", *sorted(names)[:50]]  # "Zed" before "ann": by the bytes
    following = re.search(r'href="/console/office\?from=([^"#]+)#players-h" rel="next"', first)
    assert following and following.group(1) == sorted(names)[50]
    rest = setter.get(f"/console/office?from={following.group(1)}").get_data(as_text=True)
    assert re.findall(r'<tr id="player-([^"]+)"', rest) == sorted(names)[50:]
    assert 'rel="next"' not in rest
    found = setter.get("/console/office?from=ann").get_data(as_text=True)
    assert re.findall(r'<tr id="player-([^"]+)"', found)[:2] == ["ann", "ann.b"]
    for bad in ("a b", "x" * 65, "%00", "<"):
        assert setter.get(f"/console/office?from={bad}").status_code == 400, bad
    # A write shows the page from its player's row, with its receipt.
    page = setter.get("/console/office?from=p059").get_data(as_text=True)
    action = "/console/office/players/p059/deposit"
    review = setter.post(action, data={**form_of(page, action), "amount": "1"}, headers=HTMX)
    confirmed = setter.post(action, data=form_of(review.text, action), headers=HTMX)
    assert re.findall(r'<tr id="player-([^"]+)"', confirmed.text)[0] == "p059"
    assert cell(confirmed.text, "player-p059", "balance") == "100"
