"""A disputed round over HTTP, start to finish, for each of the three resolutions, with
every balance worked out by hand; and what disputes refuse. The table and its two
rounds, with the balances after each, are tests/api/disputekit.py's.
"""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api
from tests.api.disputekit import (
    TABLE,
    french_side_bet_round,
    open_dispute,
    resolve,
    seated,
    two_rounds,
)
from tests.api.gamekit import Evening, bet_id


def refused(response: Any, rule: str) -> str:
    problem = response.get_json()
    assert response.status_code == 422, problem
    assert problem["type"] == f"urn:hazard:rule:{rule}", problem
    detail: str = problem["detail"]
    return detail


def test_a_dispute_upheld_changes_nothing(api: Api) -> None:
    night, v = two_rounds(api)
    opened = open_dispute(night, "bob", 1, {"claim": "the 4 was a 5", "dice": [3, 5]})
    assert opened["events"][0]["type"] == "DisputeOpened"
    assert opened["events"][0]["actor"] == api.actor("player", "bob")
    answer = opened["answer"]
    assert answer["matches"] is True and answer["result"] == "nick"
    # 3+5 is 8 at main 7: a chance, not a nick; the round would not have ended there.
    what = answer["what_if"]
    assert what["throw"] == v["nick"] and what["dice"] == [3, 5]
    assert what["result"] is None and what["chance"] == 8 and not what["correctable"]
    before = night.balances()
    resolved = resolve(night, opened["dispute_id"], {"resolution": "upheld", "reason": "I saw 3+4"})
    assert [e["type"] for e in resolved["events"]] == ["DisputeResolved"]
    assert night.balances() == before
    shown = night.auditor.ok("get", f"/tables/{TABLE}/disputes/{opened['dispute_id']}")
    assert shown["status"] == "upheld" and shown["resolved"]["reason"] == "I saw 3+4"
    assert shown["resolved"]["by"] == api.actor() and shown["adjustments"] == []


def test_a_round_voided_puts_everyone_back_where_the_round_found_them(api: Api) -> None:
    night, _ = two_rounds(api)
    opened = open_dispute(night, night.croupier, 1, {"claim": "the dice left the table"})
    assert opened["events"][0]["payload"]["role"] == "croupier"
    resolved = resolve(
        night, opened["dispute_id"], {"resolution": "voided", "reason": "a wild throw"}
    )
    assert [e["type"] for e in resolved["events"]] == [
        "DisputeResolved",
        "BetAdjusted",
        "BetAdjusted",
    ]
    # ann gives back the setter's 100 and bob's 60; round 2 stands.
    assert night.balances() == {"ann": 1000, "bob": 950, "cat": 1050, "setter": 10_000}
    transfers = [t for e in resolved["events"] for t in e["transfers"]]
    assert transfers == [
        {"source": "player:ann", "target": "setter", "amount": 100},
        {"source": "player:ann", "target": "player:bob", "amount": 60},
    ]
    # Nothing is edited: the round reads as played, then the dispute, in order.
    events = night.auditor.ok("get", f"/tables/{TABLE}/rounds/1")["events"]
    kinds = [e["type"] for e in events]
    assert kinds[:6] == [
        "CasterChosen",  # the round begins as ann takes the dice
        "CasterStaked",
        "StakeLaid",
        "StakeCovered",
        "MainCalled",
        "DiceThrown",
    ]
    assert kinds[-4:] == ["DisputeOpened", "DisputeResolved", "BetAdjusted", "BetAdjusted"]
    assert "BetSettled" in kinds
    assert events[-3]["actor"] == api.actor()
    assert events[-3]["payload"]["reason"] == "a wild throw"
    # Each settlement of round 1 lists its reversal beside it; round 2's none.
    settled = {s["bet_id"]: s for s in night.settlements()}
    reversed_ = {b: s["adjustments"] for b, s in settled.items() if s["round"] == 1}
    assert sorted(
        (a["adjustment"], a["transfers"][0]["amount"]) for adj in reversed_.values() for a in adj
    ) == [("reversal", 60), ("reversal", 100)]
    assert all(s["adjustments"] == [] for s in settled.values() if s["round"] == 2)
    # ann's statement shows the stakes, the winnings and the reversal, which net to 0.
    statement = night.players["ann"].ok("get", "/players/ann/statement")
    assert sum(line["amount"] for line in statement["items"]) == 1000


def test_a_mis_entered_throw_corrected_pays_the_difference_per_bet(api: Api) -> None:
    night, v = two_rounds(api)
    opened = open_dispute(
        night, "bob", 2, {"claim": "it was 4+5, not 4+4", "throw": v["eight"], "dice": [4, 5]}
    )
    what = opened["answer"]["what_if"]
    assert what["correctable"] and what["result"] == "chance" and what["chance"] == 6
    # 9 is not 8: bob wins the side bet, so cat gives back bob's 50 and pays her 20.
    assert what["adjustments"] == [
        {
            "bet_id": what["adjustments"][0]["bet_id"],
            "transfers": [{"source": "player:cat", "target": "player:bob", "amount": 70}],
        }
    ]
    resolved = resolve(
        night,
        opened["dispute_id"],
        {"resolution": "corrected", "reason": "the camera", "throw": v["eight"], "dice": [4, 5]},
    )
    assert [e["payload"]["adjustment"] for e in resolved["events"][1:]] == ["correction"]
    assert night.balances() == {"ann": 1160, "bob": 960, "cat": 980, "setter": 9900}
    # The throw still reads 4+4: the correction is an event beside it.
    events = night.auditor.ok("get", f"/tables/{TABLE}/rounds/2?limit=500")["events"]
    thrown = next(e for e in events if e["version"] == v["eight"])
    assert thrown["payload"] == {"die1": 4, "die2": 4}


def test_a_correction_that_would_end_the_round_elsewhere_is_refused(api: Api) -> None:
    night, v = two_rounds(api)
    opened = open_dispute(night, "bob", 1, {"claim": "it was 1+2", "dice": [1, 2]})
    what = opened["answer"]["what_if"]
    assert what["result"] == "out" and not what["correctable"]
    before = night.balances(), night.state()["version"]
    response = night.bank.post(
        f"/tables/{TABLE}/disputes/{opened['dispute_id']}/resolution",
        json={"resolution": "corrected", "reason": "r", "throw": v["nick"], "dice": [1, 2]},
    )
    detail = refused(response, "correction-reaches-beyond-round")
    assert "void the round instead" in detail
    assert (night.balances(), night.state()["version"]) == before


def test_a_correction_that_decides_a_side_bet_a_throw_earlier_is_made(api: Api) -> None:
    """Issue 22: with 4+4 at the first throw the main is 8, 4+1 sets the chance 5 and
    decides the side bet there, for bob, a throw earlier than 1+4 did; 1+4 throws the
    chance. The round ends at the same throw, the caster wins it, the table goes on the
    same: the correction stays inside the round (it was refused,
    correction-reaches-beyond-round, for the settlement's place in the round)."""
    night, side, first = french_side_bet_round(api)
    opened = open_dispute(
        night, "bob", 1, {"claim": "the first throw was 4+4", "throw": first, "dice": [4, 4]}
    )
    what = opened["answer"]["what_if"]
    assert what["correctable"] is True and what["refused"] is None, what
    assert (what["result"], what["main"], what["chance"]) == ("chance", 8, 5)
    assert what["adjustments"] == [
        {
            "bet_id": side,
            "transfers": [{"source": "player:ann", "target": "player:bob", "amount": 320}],
        }
    ]
    resolved = resolve(
        night,
        opened["dispute_id"],
        {"resolution": "corrected", "reason": "the camera", "throw": first, "dice": [4, 4]},
    )
    assert [e["type"] for e in resolved["events"]] == ["DisputeResolved", "BetAdjusted"]
    assert night.balances() == {"ann": 850, "bob": 1150, "cat": 1000, "setter": 10_000}


def test_who_may_open_and_resolve_and_only_once(api: Api) -> None:
    night, _ = two_rounds(api)
    path = f"/tables/{TABLE}/rounds/1/disputes"
    # cat had no money in round 1.
    refused(night.players["cat"].post(path, json={"claim": "x"}), "not-in-round")
    # The round in play (3) has not ended; round 9 was never played.
    refused(
        night.bank.post(f"/tables/{TABLE}/rounds/3/disputes", json={"claim": "x"}),
        "round-not-ended",
    )
    refused(
        night.bank.post(f"/tables/{TABLE}/rounds/9/disputes", json={"claim": "x"}),
        "round-not-ended",
    )
    opened = open_dispute(night, "bob", 1, {"claim": "x"})
    resolution = f"/tables/{TABLE}/disputes/{opened['dispute_id']}/resolution"
    # Only the setter resolves.
    assert (
        night.croupier.post(resolution, json={"resolution": "upheld", "reason": "r"}).status_code
        == 403
    )
    resolve(night, opened["dispute_id"], {"resolution": "voided", "reason": "r"})
    detail = refused(
        night.bank.post(resolution, json={"resolution": "upheld", "reason": "again"}),
        "dispute-resolved",
    )
    assert "resolved already" in detail
    # A player reads their own disputes, not another's.
    mine = night.players["bob"].ok("get", f"/tables/{TABLE}/disputes")["items"]
    assert [d["dispute_id"] for d in mine] == [opened["dispute_id"]]
    assert night.players["cat"].ok("get", f"/tables/{TABLE}/disputes")["items"] == []
    assert (
        night.players["cat"].get(f"/tables/{TABLE}/disputes/{opened['dispute_id']}").status_code
        == 403
    )
    # An id that could name no dispute is not looked up: 404, or the rule, not a 500.
    assert night.bank.get(f"/tables/{TABLE}/disputes/d%00").status_code == 404
    assert night.bank.get(f"/tables/{TABLE}/disputes/{'9' * 30}").status_code == 404
    refused(
        night.bank.post(
            f"/tables/{TABLE}/disputes/d%00/resolution",
            json={"resolution": "upheld", "reason": "r"},
        ),
        "no-such-dispute",
    )
    queue = night.bank.ok("get", "/disputes?status=open")["items"]
    assert queue == []


def test_an_adjustment_past_the_credit_limit_is_posted_and_shown_as_owed(api: Api) -> None:
    night, _ = two_rounds(api)
    # ann takes out all she has, then round 1 is voided: she owes the 160 she won.
    night.bank.ok("post", "/players/ann/withdrawals", {"amount": 1160})
    night.deposited -= 1160
    opened = open_dispute(night, night.bank, 1, {"claim": "the caster was not seated"})
    resolve(night, opened["dispute_id"], {"resolution": "voided", "reason": "r"})
    shown = night.auditor.ok("get", "/players/ann/balance")
    assert shown == {"player": "ann", "balance": -160, "credit_limit": 0, "owed": 160}
    # She can stake nothing until it is paid.
    night.bank.ok("post", "/players/ann/deposits", {"amount": 200})
    night.deposited += 200
    assert night.auditor.ok("get", "/players/ann/balance")["owed"] == 0


def test_a_repeat_of_an_opening_under_its_key_writes_nothing_more(api: Api) -> None:
    night, _ = two_rounds(api)
    client = night.players["bob"]
    path = f"/tables/{TABLE}/rounds/1/disputes"
    headers = {"Idempotency-Key": "k1"}
    first = client.post(path, json={"claim": "x", "dice": [1, 2]}, headers=headers)
    again = client.post(path, json={"claim": "x", "dice": [1, 2]}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.get_json() == again.get_json()
    assert len(night.bank.ok("get", f"/tables/{TABLE}/disputes")["items"]) == 1


def not_correctable(answer: dict[str, Any], rule: str) -> str:
    """The answer's what-if says a correction would be refused, under `rule` (the
    problem type the resolution would be refused with); its reason."""
    what = answer["what_if"]
    assert what["correctable"] is False, what
    assert what["refused_rule"] == rule, what
    assert what["adjustments"] == [], what
    reason: str = what["refused"]
    return reason


def test_a_server_dice_round_is_voided_never_corrected(api: Api) -> None:
    """The server drew the dice and anyone can draw them again from the revealed seed:
    there is no mis-entered throw, so a correction is refused, and the dispute's answer
    says so at once (it said `correctable: true`); voiding still works."""
    night = Evening(api, "s1", deposits={"ann": 5000, "bob": 5000, "setter": 100_000})
    night.table = "s1"
    night.croupier.ok("post", "/tables", {"id": "s1", "ruleset": "club", "dice": "server"})
    for name in ("ann", "bob"):
        night.do(night.croupier, "seats", {"player": name})
    night.do(night.croupier, "casts", {"player": "ann", "die": 1})
    night.do(night.croupier, "casts", {"player": "bob", "die": 5})
    night.do("ann", "stakes", {"amount": 100})
    n = 0
    while night.state()["round"] == 1:  # the club's main is thrown, then the round
        answer = night.do("ann", "throws", {"client_seed": f"seed {n}"})
        n += 1
    thrown = next(e for e in answer["events"] if e["type"] == "DiceThrown")
    before = night.balances()
    path = "/tables/s1/rounds/1/disputes"
    # The same total (the round would go as it did), other dice: a croupier's table
    # would correct it.
    die1, die2 = thrown["payload"]["die1"], thrown["payload"]["die2"]
    if die1 != die2:
        other = [die2, die1]
    elif 1 < die1 < 6:
        other = [die1 - 1, die2 + 1]
    else:
        other = [1, 2] if die1 == 1 else [5, 6]
    claim = {"claim": "the server cheated", "throw": thrown["version"], "dice": other}
    opened = night.players["ann"].ok("post", path, claim)
    assert opened["answer"]["matches"] is True
    assert "void the round instead" in not_correctable(opened["answer"], "server-dice")
    shown = night.auditor.ok("get", f"/tables/s1/disputes/{opened['dispute_id']}")
    not_correctable(shown["answer"], "server-dice")
    resolution = f"/tables/s1/disputes/{opened['dispute_id']}/resolution"
    body = {"resolution": "corrected", "reason": "r", "throw": thrown["version"], "dice": other}
    refused(night.bank.post(resolution, json=body), "server-dice")
    assert night.balances() == before
    night.bank.ok("post", resolution, {"resolution": "voided", "reason": "by agreement"})
    after = night.balances()
    # ann's stake against the setter is reversed: each back where round 1 found them.
    assert after["ann"] == 5000 and after["setter"] == 100_000


def test_the_answer_says_correctable_only_when_a_correction_would_be_made(api: Api) -> None:
    """A correction the resolution would refuse is never answered `correctable: true`:
    not over a round corrected already (round-adjusted), nor for the dice recorded
    (invalid-resolution: uphold instead), nor, once a dispute is resolved, in its own
    answer (dispute-resolved). Each answer names the rule the resolution is then
    refused with."""
    night, v = two_rounds(api)
    claim = {"claim": "4+5", "throw": v["eight"], "dice": [4, 5]}
    first = open_dispute(night, "bob", 2, claim)
    assert first["answer"]["what_if"]["correctable"] is True
    assert first["answer"]["what_if"]["refused_rule"] is None
    body = {"resolution": "corrected", "reason": "r", "throw": v["eight"], "dice": [4, 5]}
    resolve(night, first["dispute_id"], body)

    shown = night.auditor.ok("get", f"/tables/{TABLE}/disputes/{first['dispute_id']}")
    assert "resolved already" in not_correctable(shown["answer"], "dispute-resolved")
    again = open_dispute(night, "bob", 2, {**claim, "dice": [4, 6]})
    assert "corrected already" in not_correctable(again["answer"], "round-adjusted")
    shown = night.auditor.ok("get", f"/tables/{TABLE}/disputes/{again['dispute_id']}")
    not_correctable(shown["answer"], "round-adjusted")
    resolution = f"/tables/{TABLE}/disputes/{again['dispute_id']}/resolution"
    refused(night.bank.post(resolution, json={**body, "dice": [4, 6]}), "round-adjusted")

    claim = {"claim": "3+4", "throw": v["nick"], "dice": [3, 4]}
    as_recorded = open_dispute(night, "bob", 1, claim)
    assert "uphold instead" in not_correctable(as_recorded["answer"], "invalid-resolution")
    resolution = f"/tables/{TABLE}/disputes/{as_recorded['dispute_id']}/resolution"
    body = {"resolution": "corrected", "reason": "r", "throw": v["nick"], "dice": [3, 4]}
    refused(night.bank.post(resolution, json=body), "invalid-resolution")


def test_the_read_models_rebuilt_from_the_events_are_the_same(api: Api) -> None:
    """Disputes, adjustments and the settlements they mark are read models: thrown away
    and written again from the events, they come out the same."""
    from ledger.books import projections

    night, v = two_rounds(api)
    d1 = open_dispute(night, "bob", 2, {"claim": "4+5", "throw": v["eight"], "dice": [4, 5]})
    resolve(
        night,
        d1["dispute_id"],
        {"resolution": "corrected", "reason": "r", "throw": v["eight"], "dice": [4, 5]},
    )
    d2 = open_dispute(night, "bob", 1, {"claim": "x"})
    resolve(night, d2["dispute_id"], {"resolution": "voided", "reason": "r"})
    open_dispute(night, night.bank, 2, {"claim": "still open"})

    def reads() -> Any:
        return (
            night.settlements(),
            night.bank.ok("get", f"/tables/{TABLE}/disputes"),
            night.bank.ok("get", f"/tables/{TABLE}/rounds/1?limit=500"),
            night.balances(),
        )

    before = reads()
    projections.rebuild(api.book.store)
    assert reads() == before
    assert sum(len(s["adjustments"]) for s in before[0]) == 3


def test_a_dispute_over_a_round_that_had_another_rounds_dispute_inside_it(api: Api) -> None:
    """Found by the stateful model (test_service_model.py): round 1 disputed and voided
    while round 2 was in play, then a dispute over round 2 answered 500 (reading round
    2 back stumbled on the dispute's events between its commands). Now it is answered,
    and a correction within round 2 pays as if round 1's dispute were not there."""
    night = seated(api)
    croupier = night.croupier
    night.do("ann", "stakes", {"amount": 100})
    night.do(croupier, "main", {"main": 7})
    night.do(croupier, "throws", {"die1": 3, "die2": 4})  # round 1: a nick
    night.do(croupier, "main", {"main": 7})
    night.do(croupier, "throws", {"die1": 2, "die2": 4})  # round 2: the chance is 6
    first = open_dispute(night, night.croupier, 1, {"claim": "the dice left the table"})
    resolve(night, first["dispute_id"], {"resolution": "voided", "reason": "they did"})
    offer = {
        "player": "cat",
        "proposition": {"kind": "next-total", "totals": [8]},
        "backs": True,
        "stake": 20,
        "asks": 50,
        "to": "bob",
    }
    side = bet_id(night.do("cat", "side-bets", offer), "SideBetOffered")
    night.do("bob", "side-bets/accept", {"player": "bob", "bet": side})
    eight = night.do(croupier, "throws", {"die1": 4, "die2": 4})["events"][0]["version"]
    night.do(croupier, "throws", {"die1": 3, "die2": 3})  # the chance: round 2 ends
    before = night.balances()

    opened = open_dispute(
        night, "bob", 2, {"claim": "the second 4 was a 5", "throw": eight, "dice": [4, 5]}
    )
    assert opened["answer"]["matches"] is True
    assert opened["answer"]["what_if"]["correctable"] is True
    resolved = resolve(
        night,
        opened["dispute_id"],
        {"resolution": "corrected", "reason": "it was", "throw": eight, "dice": [4, 5]},
    )
    assert [e["type"] for e in resolved["events"]] == ["DisputeResolved", "BetAdjusted"]
    # 4+5 is not 8: bob, not cat, wins the side bet: cat gives back 50 and pays 20.
    after = night.balances()
    assert (after["cat"] - before["cat"], after["bob"] - before["bob"]) == (-70, 70)
