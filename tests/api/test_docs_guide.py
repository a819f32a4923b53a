"""docs/api.md's evening in curl runs, against the app, and ends as it says."""

from __future__ import annotations

import re

from engine.errors import Rule
from ledger.api.problems import PREFIX, RULE_PREFIX, TYPES
from tests.api.conftest import Api
from tests.api.guidekit import GUIDE, requests_of


def test_the_evening_in_the_guide_plays_as_it_says(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    commands = requests_of()
    assert len(commands) > 20
    for method, url, body in commands:
        response = (
            getattr(bank, method.lower())(url, json=body)
            if body is not None
            else (getattr(bank, method.lower())(url))
        )
        assert response.status_code < 300, (method, url, response.get_json())
    # ann's chance of 4 came before her main of 7: she wins the setter's 100 against her
    # stake, bob's 60 she covered, and her 50 of odds on the chance at 2 to 1 (a main of
    # 7 is 6 ways, a chance of 4 is 3), 100.
    assert bank.ok("get", "/players/ann/balance")["balance"] == 1000 + 100 + 60 + 100
    assert bank.ok("get", "/players/bob/balance")["balance"] == 1000 - 60
    assert bank.ok("get", "/players/setter/balance")["balance"] == 100_000 - 100 - 100
    settled = bank.ok("get", "/settlements?table=t1&round=1")["items"]
    assert {(s["kind"], s["winner"]) for s in settled} == {
        ("caster", "ann"),
        ("laid", "ann"),
        ("odds", "ann"),
    }


def _section(title: str) -> str:
    found = re.search(rf"\n## {title}\n(.*?)(?=\n## |\Z)", GUIDE.read_text(), re.S)
    assert found is not None, title
    return found.group(1)


def test_the_guide_lists_exactly_the_problem_types_the_code_sends() -> None:
    errors = _section("Errors")
    named = set(re.findall(r"`(urn:hazard:[a-z-]+)`", errors))  # not the rule family
    assert named == {PREFIX + kind for kind in TYPES}
    assert f"`{RULE_PREFIX}<code>`" in errors
    family = errors.split(f"`{RULE_PREFIX}<code>`")[1].split("\n- ")[0]
    codes = set(re.findall(r"`([a-z-]+)`", family))
    assert codes and codes <= {rule.value for rule in Rule}


def test_the_guide_says_how_to_set_every_variable_it_uses() -> None:
    block = re.search(r"## An evening, in curl\n.*?```sh\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None
    used = set(re.findall(r"\$([A-Z_]+)", block.group(1)))
    assigned = set(re.findall(r"^([A-Z_]+)=", block.group(1), re.M))
    assert used and used <= assigned, used - assigned
    assert "make run" in block.group(1).split("SETTER=")[1].split("\n")[0]


def test_the_bet_ids_in_the_guide_are_the_ones_its_evening_makes(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    for method, url, body in requests_of():
        response = getattr(bank, method.lower())(url, json=body)
        assert response.status_code < 300, (method, url, response.get_json())
    settled = bank.ok("get", "/settlements?table=t1")["items"]
    made = {s["bet_id"] for s in settled}
    named = set(re.findall(r"`(b[0-9]+)`", GUIDE.read_text()))
    named |= {bet for *_, body in requests_of() if body for bet in body.get("bets", [])}
    assert named and named <= made, named - made


def test_the_dispute_in_the_guide_resolves_as_it_says(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    holders = {"bob": ("player", "bob"), "cecil": ("croupier", "cecil")}
    answers = {}
    for method, url, body, *who in requests_of() + requests_of("A dispute, in curl"):
        # Each token made at its holder's first request: bob's once the setter made bob.
        client = sqlite_api.client(*holders[who[0]]) if who else bank
        response = getattr(client, method.lower())(url, json=body)
        assert response.status_code < 300, (method, url, response.get_json())
        answers[method, url] = response.get_json()
    opened = answers["POST", "/tables/t1/rounds/2/disputes"]
    assert opened["dispute_id"] == "d26"
    assert opened["events"][0]["actor"] == sqlite_api.actor("player", "bob")
    answer = opened["answer"]
    assert answer["matches"] is True
    what = answer["what_if"]
    assert (what["result"], what["chance"], what["correctable"]) == ("chance", 6, True)
    assert [t for a in what["adjustments"] for t in a["transfers"]] == [
        {"source": "player:cat", "target": "player:bob", "amount": 70}
    ]
    upheld = answers["POST", "/tables/t1/rounds/1/disputes"]["answer"]["what_if"]
    assert (upheld["correctable"], upheld["refused_rule"]) == (
        False,
        "correction-reaches-beyond-round",
    )
    voided = answers["POST", "/tables/t1/disputes/d31/resolution"]["events"]
    assert [e["payload"].get("adjustment") for e in voided] == [None, *["reversal"] * 3]
    # After the evening: ann 1260, bob 940, cat 1000, the setter 99 800. Round 2: cat
    # wins bob's 50, then the correction has her pay him 70; round 1 voided gives the
    # setter back its 100 on ann's stake and 100 on her odds, and bob his 60.
    balances = {
        name: bank.ok("get", f"/players/{name}/balance")["balance"]
        for name in ("ann", "bob", "cat", "setter")
    }
    assert balances == {"ann": 1000, "bob": 1020, "cat": 980, "setter": 100_000}
    kinds = [e["type"] for e in answers["GET", "/tables/t1/rounds/1"]["events"]]
    assert kinds[-7:] == [*["DisputeOpened", "DisputeResolved"] * 2, *["BetAdjusted"] * 3]
    assert kinds[0] == "CasterChosen" and "BetSettled" in kinds
    assert answers["GET", "/disputes?status=open"]["items"] == []
