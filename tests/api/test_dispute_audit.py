"""A disputed round in the audit views, over HTTP on both databases: the recall nets
each bet's adjustments, the fairness report counts corrected dice, and the replay
steps through the dispute's events with the balances they move.

The table is tests/api/test_disputes.py's two rounds (its docstring works out every
balance): after them ann 1160, bob 890, cat 1050, the setter 9900.
"""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api
from tests.api.test_disputes import TABLE, open_dispute, resolve, two_rounds


def _voided(api: Api) -> Any:
    night, _ = two_rounds(api)
    opened = open_dispute(night, "bob", 1, {"claim": "the dice left the table"})
    resolve(night, opened["dispute_id"], {"resolution": "voided", "reason": "a wild throw"})
    return night, opened["dispute_id"]


def _statement_balance(night: Any, player: str, position: int) -> int:
    items = night.players[player].ok("get", f"/players/{player}/statement?limit=500")["items"]
    return sum(line["amount"] for line in items if line["position"] <= position)


def test_the_recall_of_a_voided_round_nets_each_bet_to_nothing(api: Api) -> None:
    night, dispute = _voided(api)
    rounds = night.auditor.ok("get", f"/tables/{TABLE}/recall")["rounds"]
    [first] = [r for r in rounds if r["round"] == 1]
    assert first["disputes"] == [
        {"dispute_id": dispute, "status": "voided", "version": first["disputes"][0]["version"]}
    ]
    # As played, ann won the setter's 100 (her stake) and bob's 60 (his lay she covered);
    # the void hands both back, so each bet nets to 0 for everyone.
    played = [{p: n - b["adjusted"].get(p, 0) for p, n in b["net"].items()} for b in first["bets"]]
    assert sorted(played, key=len) == [
        {"player:ann": 100, "setter": -100},
        {"player:ann": 60, "player:bob": -60},
    ]
    assert [sorted(b["net"].values()) for b in first["bets"]] == [[0, 0], [0, 0]]
    assert first["won"] == [
        {"account": "player:ann", "amount": 0},
        {"account": "player:bob", "amount": 0},
        {"account": "setter", "amount": 0},
    ]
    assert [a["adjustment"] for a in first["adjustments"]] == ["reversal", "reversal"]
    # Before the round, after it as played, and after the void: bob had lost 50 to cat
    # in round 2 by the time his 60 came back (1000 - 50 = 950).
    assert first["balances"] == [
        {"account": "player:ann", "before": 1000, "after": 1160, "adjusted": 1000},
        {"account": "player:bob", "before": 1000, "after": 940, "adjusted": 950},
        {"account": "setter", "before": 10_000, "after": 9900, "adjusted": 10_000},
    ]
    [second] = [r for r in rounds if r["round"] == 2]
    assert second["disputes"] == [] and second["adjustments"] == []

    # A player's recall: their own money, and the same balances their statement shows.
    ann = night.players["ann"].ok("get", "/players/ann/recall")["rounds"]
    assert [r["round"] for r in ann] == [1]
    [mine] = ann
    assert mine["won"] == [{"account": "player:ann", "amount": 0}]
    [balance] = mine["balances"]
    last_adjustment = max(a["position"] for a in mine["adjustments"])
    assert balance["adjusted"] == _statement_balance(night, "ann", last_adjustment) == 1000
    assert balance["after"] == _statement_balance(night, "ann", mine["last_position"]) == 1160
    assert balance["before"] == _statement_balance(night, "ann", mine["first_position"] - 1)


def test_the_fairness_report_counts_the_dice_a_correction_says_were_thrown(api: Api) -> None:
    night, v = two_rounds(api)
    path = f"/reports/dice?table={TABLE}"
    before = night.auditor.ok("get", path)
    opened = open_dispute(
        night, "bob", 2, {"claim": "it was 4+5, not 4+4", "throw": v["eight"], "dice": [4, 5]}
    )
    resolve(
        night,
        opened["dispute_id"],
        {"resolution": "corrected", "reason": "the camera", "throw": v["eight"], "dice": [4, 5]},
    )
    after = night.auditor.ok("get", path)

    def pairs(report: dict[str, Any]) -> dict[tuple[int, int], int]:
        return {(c["die1"], c["die2"]): c["observed"] for c in report["pairs"]["cells"]}

    def totals(report: dict[str, Any]) -> dict[int, int]:
        return {c["total"]: c["observed"] for c in report["totals"]["cells"] if c["observed"]}

    # Thrown: 3+4 (round 1), then 2+4, 4+4 (corrected to 4+5) and 3+3 (round 2).
    assert before["throws"] == after["throws"] == 4
    assert totals(before) == {6: 2, 7: 1, 8: 1}
    assert totals(after) == {6: 2, 7: 1, 9: 1}
    assert pairs(before)[4, 4] == 1 and pairs(before)[4, 5] == 0
    assert pairs(after)[4, 4] == 0 and pairs(after)[4, 5] == 1
    # Only the dice are corrected: the log still holds the throw as 4+4.
    thrown = night.auditor.ok("get", f"/tables/{TABLE}/rounds/2?limit=500")["events"]
    assert next(e for e in thrown if e["version"] == v["eight"])["payload"] == {
        "die1": 4,
        "die2": 4,
    }
