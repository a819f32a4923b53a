"""The setter's back office and the auditor's pages (ledger.console.office, .audit),
through Flask's test client: who may open them, what they show, and that a form posts
once, with its CSRF token, or not at all.

The evening is test_replay's, every figure worked by hand: ann (1000) casts against
the setter (10,000). Round 1: ann stakes 100, calls 7 and throws 3+4, a nick: the
escrow of 200 goes to ann (ann 1000 -> 900 -> 1100, the setter 10,000 -> 9900).
Round 2: ann stakes 50, calls 7 and throws 1+1, out: the setter takes the 100 (ann
1100 -> 1050, the setter 9900 -> 9850 -> 9950). So the setter's takings at t1 are
-100 + 50 = -50.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.api.conftest import Api
from tests.console.officekit import (
    cell,
    confirmed,
    console,
    csrf_of,
    evening,
    events_of,
    form_of,
    writes,
)

# -- who may open what ---------------------------------------------------------------


PAGES = {
    "/console/office": ("setter",),
    "/console/audit": ("setter", "auditor"),
    "/console/audit/verify": ("setter", "auditor"),
    "/console/audit/fairness": ("setter", "auditor"),
    "/console/audit/replay/t1/1": ("setter", "auditor"),
    "/console/audit/export?table=t1": ("setter", "auditor"),
}


def test_each_page_renders_for_its_roles_and_is_refused_to_the_others(sqlite_api: Api) -> None:
    evening(sqlite_api)
    people = {
        role: console(sqlite_api, role, name)
        for role, name in [
            ("setter", "bank"),
            ("auditor", "audrey"),
            ("croupier", "carl"),
            ("player", "ann"),
        ]
    }
    for path, roles in PAGES.items():
        for role, client in people.items():
            before = events_of(sqlite_api)
            answer = client.get(path)
            if role in roles:
                assert answer.status_code == 200, (path, role, answer.get_data(as_text=True))
            else:
                assert answer.status_code == 403, (path, role, answer.status_code)
                assert "may not open this page" in answer.get_data(as_text=True)
            assert events_of(sqlite_api) == before
    # The nav shows each their own.
    assert 'href="/console/office"' in people["setter"].get("/").get_data(as_text=True)
    auditor_home = people["auditor"].get("/").get_data(as_text=True)
    assert 'href="/console/audit"' in auditor_home and "/console/office" not in auditor_home
    # Signed out: the sign-in page, not the office.
    anonymous = sqlite_api.app.test_client().get("/console/office")
    assert anonymous.status_code == 302 and anonymous.headers["Location"].endswith("/")


def test_a_player_or_auditor_cannot_post_to_the_office_and_nothing_iswritten(
    sqlite_api: Api,
) -> None:
    setter = console(sqlite_api, "setter", "bank")
    form = form_of(setter.get("/console/office").get_data(as_text=True), "/console/office/players")
    setter.post("/console/office/players", data={**form, "name": "ann"})
    for role, name in [("auditor", "audrey"), ("player", "ann"), ("croupier", "carl")]:
        client = console(sqlite_api, role, name)
        page = client.get("/").get_data(as_text=True)
        before = events_of(sqlite_api)
        answer = client.post(
            "/console/office/players/ann/deposit",
            data={"csrf_token": csrf_of(page), "key": "k1", "amount": "500"},
        )
        assert answer.status_code == 403, (role, answer.status_code)
        assert events_of(sqlite_api) == before


# -- the office ---------------------------------------------------------------------


def test_the_office_shows_balances_exposure_takings_and_its_chart(sqlite_api: Api) -> None:
    night = evening(sqlite_api)
    night.do("ann", "stakes", {"amount": 30})  # round 3: the setter holds 30 against it
    page = console(sqlite_api, "setter", "bank").get("/console/office").get_data(as_text=True)
    assert cell(page, "player-ann", "balance") == "1020"  # 1050 - 30 in escrow
    assert cell(page, "player-bob", "balance") == "1000"
    assert cell(page, "player-setter", "balance") == "9920"  # 9950 - 30
    assert cell(page, "player-ann", "owed") == "0"
    assert 'data-minor="1020">£10.20<' in page  # shown in the club's money
    exposure = re.search(r'data-field="exposure" data-minor="(\d+)">£0.30<', page)
    assert exposure and exposure.group(1) == "30"
    # The takings: -100 in round 1, +50 in round 2, -30 out on round 3's stake.
    assert re.search(r'<td class="amount" data-minor="-80">-£0.80</td></tr>', page)
    assert "<svg" in page and re.search(r'class="bar series-0 negative"', page)
    assert "<caption>Per evening, all tables</caption>" in page
    assert "None waiting." in page


def test_a_deposit_through_the_office_moves_the_balance_once(api: Api) -> None:
    setter = console(api, "setter", "bank")
    page = setter.get("/console/office").get_data(as_text=True)
    created = setter.post(
        "/console/office/players", data={**form_of(page, "/console/office/players"), "name": "ann"}
    )
    assert created.status_code == 302
    page = setter.get("/console/office").get_data(as_text=True)
    assert cell(page, "player-ann", "balance") == "0"
    action = "/console/office/players/ann/deposit"
    form = {**form_of(page, action), "amount": "7.50"}
    events_before, writes_before = writes(api)
    review = setter.post(action, data=form)
    assert review.status_code == 200
    assert writes(api) == (events_before, writes_before)  # asked to confirm: nothing yet
    confirm = form_of(review.get_data(as_text=True), action)
    assert setter.post(action, data=confirm).status_code == 302
    assert setter.post(action, data=confirm).status_code == 302  # the same page, sent again
    assert writes(api) == (events_before + 1, writes_before + 1)  # one write, its deposit
    page = setter.get("/console/office").get_data(as_text=True)
    assert cell(page, "player-ann", "balance") == "750"
    # A withdrawal of more than there is: refused beside its control, nothing written.
    action = "/console/office/players/ann/withdraw"
    review = setter.post(action, data={**form_of(page, action), "amount": "7.51"})
    refused = setter.post(action, data=form_of(review.get_data(as_text=True), action))
    assert refused.status_code == 422
    text = refused.get_data(as_text=True)
    assert 'data-error="withdraw:ann"' in text and 'role="alert"' in text
    assert writes(api) == (events_before + 1, writes_before + 1)
    # Credit: set, and shown.
    confirmed(setter, "/console/office/players/ann/credit", page, "2.00")
    page = setter.get("/console/office").get_data(as_text=True)
    assert cell(page, "player-ann", "credit_limit") == "200"


def test_a_form_without_its_csrf_token_is_refused_and_writes_nothing(sqlite_api: Api) -> None:
    setter = console(sqlite_api, "setter", "bank")
    page = setter.get("/console/office").get_data(as_text=True)
    form = form_of(page, "/console/office/players")
    before = events_of(sqlite_api)
    answer = setter.post("/console/office/players", data={"key": form["key"], "name": "ann"})
    assert answer.status_code == 400
    assert "CSRF" in answer.get_data(as_text=True)
    forged = {"csrf_token": "forged", "key": form["key"], "name": "ann"}
    assert setter.post("/console/office/players", data=forged).status_code == 400
    assert events_of(sqlite_api) == before


def test_a_bad_amount_is_shown_beside_its_control(sqlite_api: Api) -> None:
    setter = console(sqlite_api, "setter", "bank")
    page = setter.get("/console/office").get_data(as_text=True)
    create = {**form_of(page, "/console/office/players"), "name": "ann"}
    setter.post("/console/office/players", data=create)
    page = setter.get("/console/office").get_data(as_text=True)
    before = events_of(sqlite_api)
    action = "/console/office/players/ann/deposit"
    answer = setter.post(action, data={**form_of(page, action), "amount": "ten"})
    assert answer.status_code == 422
    assert 'data-error="deposit:ann"' in answer.get_data(as_text=True)
    create = {**form_of(page, "/console/office/players"), "name": "ann"}
    again = setter.post("/console/office/players", data=create)
    assert again.status_code == 409 and 'data-error="create"' in again.get_data(as_text=True)
    assert events_of(sqlite_api) == before


# -- the auditor's pages -----------------------------------------------------------


def _steps_of(client: FlaskClient, path: str) -> list[str]:
    """Each step's page of a round, followed by its "Step on" link to the last."""
    pages = []
    url: str | None = path
    while url is not None:
        answer = client.get(url)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        page = answer.get_data(as_text=True)
        pages.append(page)
        found = re.search(r'<a href="([^"]+)" rel="next" id="step-on"', page)
        url = html.unescape(found.group(1)) if found else None
    return pages


def _field(page: str, field: str) -> str:
    start = page.index('id="step-state"')
    found = re.search(rf'data-field="{field}">([^<]*)<', page[start:])
    assert found
    return found.group(1)


def test_the_replay_steps_through_a_round_with_its_state_and_settlements(sqlite_api: Api) -> None:
    evening(sqlite_api)
    auditor = console(sqlite_api, "auditor", "audrey")
    pages = _steps_of(auditor, "/console/audit/replay/t1/1")
    types = [re.search(r'id="step-type">([^<]+)<', p).group(1) for p in pages]  # type: ignore[union-attr]
    assert types == ["CasterChosen", "CasterStaked", "MainCalled", "DiceThrown", "BetSettled"]
    chosen, staked, called, thrown, settled = pages
    assert _field(chosen, "caster") == "ann" and "No money moved." in chosen
    assert _field(staked, "phase") == "awaiting-main"
    assert re.search(r'>ann</th><td class="amount" data-minor="1000">£10.00</td>'
                     r'<td class="amount" data-minor="900">£9.00<', staked)  # fmt: skip
    assert re.search(r'the setter</th><td class="amount" data-minor="10000">£100.00</td>'
                     r'<td class="amount" data-minor="9900">£99.00<', staked)  # fmt: skip
    assert _field(called, "main") == "7"
    assert "3 + 4" in thrown and ">won<" not in chosen
    settled_rows = re.search(r'id="step-settlements".*?</table>', settled, re.S)
    assert settled_rows and ">ann<" in settled_rows.group(0)
    thrown_rows = re.search(r'id="step-settlements".*?</table>', thrown, re.S)
    assert thrown_rows and ">ann<" in thrown_rows.group(0)  # the throw decided it
    assert re.search(r'>ann</th><td class="amount" data-minor="900">£9.00</td>'
                     r'<td class="amount" data-minor="1100">£11.00<', settled)  # fmt: skip
    assert 'aria-disabled="true">Step on' in settled and 'rel="prev"' in settled
    # Past the last step: the last step.
    past = auditor.get("/console/audit/replay/t1/1?step=9")
    assert past.status_code == 302 and past.headers["Location"].endswith("step=5")
    assert auditor.get("/console/audit/replay/t1/99").status_code == 404
    assert auditor.get("/console/audit/replay/t1/1?step=x").status_code == 400
    # The form on the audit page goes to the round's first step.
    picked = auditor.get("/console/audit/replay?table=t1&round=2")
    assert picked.headers["Location"].endswith("/console/audit/replay/t1/2")


def test_the_fairness_page_has_its_chart_and_numbers(sqlite_api: Api) -> None:
    evening(sqlite_api)
    page = console(sqlite_api, "auditor", "audrey").get("/console/audit/fairness")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "<svg" in text and text.count("<rect ") == 11  # a bar for each total, 2 to 12
    assert text.count('class="mark"') == 11
    # Two throws, a 7 and a 2: expected sevens 2 * 6/36 = 0.33, twos 2 * 1/36 = 0.06.
    assert re.search(
        r'<th scope="row">7</th><td class="amount">1</td><td class="amount">0.33</td><td>1/6</td>',
        text,
    )
    assert re.search(
        r'<th scope="row">2</th><td class="amount">1</td><td class="amount">0.06</td><td>1/36</td>',
        text,
    )
    assert "2 throws." in text
    one = console(sqlite_api, "setter", "bank").get("/console/audit/fairness?table=t1")
    assert one.status_code == 200 and "table t1" in one.get_data(as_text=True)


def test_the_audit_page_shows_the_log_checkpoint_and_verifies(sqlite_api: Api) -> None:
    evening(sqlite_api)
    auditor = console(sqlite_api, "auditor", "audrey")
    total = events_of(sqlite_api)
    page = auditor.get("/console/audit").get_data(as_text=True)
    assert f'id="events-count">{total}<' in page
    assert f'id="checkpoint-size">{total}<' in page
    assert 'id="checkpoint-note"' in page and "DiceThrown" in page
    first = auditor.get("/console/audit?after=0").get_data(as_text=True)
    assert '<th scope="row">1</th>' in first
    # Verify: the step the page's script polls, and the page without script.
    step: dict[str, Any] = auditor.get("/console/audit/verify/step?after=0").get_json()
    assert step["ok"] is True and step["checked"] == total and step["next_after"] is None
    done = auditor.get("/console/audit/verify?after=0").get_data(as_text=True)
    assert "The log is verified" in done
    # An export to download: the table's file, as GET /export gives it.
    export = auditor.get("/console/audit/export?table=t1")
    assert export.status_code == 200
    assert "attachment" in export.headers["Content-Disposition"]
    assert export.get_data(as_text=True).count("\n") > 10
    assert auditor.get("/console/audit/export?table=t1&format=pdf").status_code == 400


@pytest.mark.parametrize("role", ["player", "croupier"])
def test_the_verify_step_and_exports_are_refused_to_others(sqlite_api: Api, role: str) -> None:
    sqlite_api.client().ok("post", "/players", {"name": "ann"})  # a player's token names one
    client = console(sqlite_api, role, "ann")
    assert client.get("/console/audit/verify/step?after=0").status_code == 403
    assert client.get("/console/audit/export?all=true").status_code == 403


def test_a_dispute_page_reads_its_id_as_the_api_does(sqlite_api: Api) -> None:
    night = evening(sqlite_api)
    opened = night.bank.ok("post", "/tables/t1/rounds/1/disputes", {"claim": "the 3 was a 2"})
    dispute_id = opened["dispute_id"]
    setter = console(sqlite_api, "setter", "bank")
    page = setter.get(f"/console/office/disputes/t1/{dispute_id}")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and '<blockquote data-field="claim">the 3 was a 2<' in text
    for wrong in (dispute_id + "x", dispute_id.upper(), "d0", "d" + "1" * 64):
        answer = setter.get(f"/console/office/disputes/t1/{wrong}")
        assert answer.status_code == 404, (wrong, answer.status_code)
        text = html.unescape(answer.get_data(as_text=True))
        assert f"there is no dispute {wrong!r}" in text and "<title>Refused" in text
