"""The dispute pages say the service's answer and the what-if in the club's money, from
the amounts the engine keeps in its words as data (engine.phrase.Phrase), where the API
says minor units: the setter's page (ledger.console.disputes), the player's (from
ledger.console.player), and the setter's correction refused at review.

The round is tests/api/disputekit.py's `odds_round`: ann's 25 odds on a chance of 4;
had the chance been 5 they would pay 75/2, half a penny, which english rules refuse.
Through Flask's test client, on SQLite and PostgreSQL."""

from __future__ import annotations

import html
from typing import Any

from engine import disputes as engine_disputes
from ledger.audit import disputes
from ledger.console import amounts
from ledger.house import House
from tests.api import disputekit
from tests.api.conftest import Api
from tests.console.formkit import csrf
from tests.console.officekit import console, form_of, writes
from tests.engine.disputekit import tampered_nick

# What the API says, in minor units, and the page in pounds: the command the re-run
# stops at, the event it recorded, and the refusal the engine gives there.
STOPPED_IN_MINOR_UNITS = (
    "ann's odds of 25 on the chance at version {odds} under english rules (main 7, chance "
    "4) (OddsLaid b{odds}: ann lays 25 on the chance, payout 50 with breakage 0) could not "
    "have happened: odds of 3/2 on a stake of 25 would pay 75/2 minor units; the nearest "
    "stakes that pay exactly are 24 and 26"
)
STOPPED_IN_POUNDS = (
    "ann's odds of £0.25 on the chance at version {odds} under english rules (main 7, chance "
    "4) (OddsLaid b{odds}: ann lays £0.25 on the chance, payout £0.50 with breakage £0.00) "
    "could not have happened: odds of 3/2 on a stake of £0.25 would pay £0.37 and 1/2 of a "
    "penny; the nearest stakes that pay exactly are £0.24 and £0.26"
)


def _disputed(api: Api) -> tuple[Any, str, int, int]:
    """ann's dispute that the 1+3 was 2+3: the evening, its id, the throw's version and
    the odds' (the command after the throw)."""
    night, four = disputekit.odds_round(api)
    dispute = disputekit.open_dispute(
        night, "ann", 1, {"claim": "the 1+3 was 2+3", "throw": four, "dice": [2, 3]}
    )
    return night, dispute["dispute_id"], four, four + 1


def test_the_api_says_the_what_if_in_minor_units(api: Api) -> None:
    night, dispute_id, four, odds = _disputed(api)
    answer = night.bank.get(f"/tables/t1/disputes/{dispute_id}").get_json()["answer"]
    what = answer["what_if"]
    assert what["stopped"] == STOPPED_IN_MINOR_UNITS.format(odds=odds)
    assert what["refused"] == (
        f"with 2+3 at version {four}, {STOPPED_IN_MINOR_UNITS.format(odds=odds)}: void the "
        "round instead"
    )


def test_the_setters_dispute_page_says_the_what_if_in_the_clubs_money(api: Api) -> None:
    _, dispute_id, four, odds = _disputed(api)
    setter = console(api, "setter", "bank")
    page = html.unescape(setter.get(f"/console/office/disputes/t1/{dispute_id}").text)
    stopped = STOPPED_IN_POUNDS.format(odds=odds)
    assert f'data-field="what-if">With 2 + 3 at version {four}' in page
    assert f"(main 7, chance 5). {stopped}</p>" in page  # what the re-run stops at
    assert (
        "A correction to 2 + 3 would be refused (correction-reaches-beyond-round): with 2+3 "
        f"at version {four}, {stopped}: void the round instead</p>"
    ) in page
    assert "minor unit" not in page and "odds of 25 " not in page


def test_a_correction_refused_at_review_names_its_amounts_in_the_clubs_money(
    api: Api,
) -> None:
    """The setter's correction to the claimed dice is refused as the answer said it
    would be, in the same words, in pounds; nothing is written."""
    _, dispute_id, four, odds = _disputed(api)
    setter = console(api, "setter", "bank")
    path = f"/console/office/disputes/t1/{dispute_id}"
    page = setter.get(path).text
    sent = {
        **form_of(page, path + "/resolution"),
        "resolution": "corrected",
        "reason": "camera: 2+3",
        "throw": str(four),
        "die1": "2",
        "die2": "3",
    }
    before = writes(api)
    refused = setter.post(path + "/resolution", data=sent)
    text = html.unescape(refused.text)
    assert refused.status_code == 422 and writes(api) == before
    said = f"with 2+3 at version {four}, {STOPPED_IN_POUNDS.format(odds=odds)}: void the round"
    assert f'data-error="resolution">{said} instead (rule correction-reaches-beyond' in text
    assert "minor unit" not in text


def test_the_players_dispute_page_says_the_what_if_in_the_clubs_money(api: Api) -> None:
    _, dispute_id, four, odds = _disputed(api)
    ann = console(api, "player", "ann")
    page = html.unescape(ann.get(f"/console/me/tables/t1/disputes/{dispute_id}").text)
    stopped = STOPPED_IN_POUNDS.format(odds=odds)
    assert f"Had the throw at version {four} been 2+3: " in page
    assert f"({stopped})." in page
    assert f"It could not be corrected: with 2+3 at version {four}, {stopped}: void" in page
    assert "minor unit" not in page and "odds of 25 " not in page


def test_a_round_the_engine_pays_otherwise_is_said_in_the_clubs_money() -> None:
    """The answer's `mismatch` (a round read back that the engine pays otherwise: a
    stream that disagrees with it) as the page reads it, in pounds, and as the API's
    JSON, in minor units, unchanged."""
    g, record = tampered_nick()
    found = engine_disputes.answer(g.state, record)
    api = disputes.answer_view("table:t1", found)
    page = disputes.answer_view("table:t1", found, amounts.money_words(House()))
    assert api["mismatch"] == record.mismatch and "pays player ann 21, " in api["mismatch"]
    assert page["mismatch"] == record.mismatch.replace("ann 21,", "ann £0.21,").replace(
        "is paid 20", "is paid £0.20"
    )


def test_a_dispute_opened_from_the_table_is_answered_in_the_clubs_money(api: Api) -> None:
    """The croupier opens the same claim from round 1's row on the table page: the card
    the answer swaps in says why a correction cannot reach it, in pounds."""
    _, four = disputekit.odds_round(api)
    croupier = console(api, "croupier", "cecil")
    page = croupier.get("/console/tables/t1/rounds/1/dispute")
    sent = {
        "csrf_token": csrf(page),
        "claim": "the 1+3 was 2+3",
        "throw": str(four),
        "die1": "2",
        "die2": "3",
        "key": "from-the-table",
    }
    opened = croupier.post(
        "/console/tables/t1/rounds/1/disputes", data=sent, headers={"HX-Request": "true"}
    )
    text = html.unescape(opened.get_data(as_text=True))
    assert opened.status_code == 200, text[-2000:]
    stopped = STOPPED_IN_POUNDS.format(odds=four + 1)
    assert f"which a correction cannot reach (with 2+3 at version {four}, {stopped}" in text
    assert "minor unit" not in text and "odds of 25 " not in text
