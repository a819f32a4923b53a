"""A disputed round in the audit views, over HTTP on both databases: the recall nets
each bet's adjustments, the fairness report counts corrected dice, and the replay
steps through the dispute's events with the balances they move.

The table is tests/api/test_disputes.py's two rounds (its docstring works out every
balance): after them ann 1160, bob 890, cat 1050, the setter 9900.
"""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from ledger.audit import replay as replays
from ledger.cli import main
from ledger.exports import jsonl
from ledger.exports.scope import scope_of
from ledger.web.views import step_view
from tests.api.conftest import Api
from tests.api.disputekit import TABLE, open_dispute, resolve, seated, two_rounds
from tests.signing import VERIFIER


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


def _export(api: Api) -> list[bytes]:
    prepared = jsonl.prepare(api.book.store.engine, scope_of(table=TABLE), key=VERIFIER)
    return b"".join(prepared.chunks()).splitlines()


def _moved(step: dict[str, Any]) -> dict[str, int]:
    return {b["account"]: b["after"] - b["before"] for b in step["balances"]}


def test_a_voided_round_replays_with_its_dispute_after_it(api: Api) -> None:
    night, dispute = _voided(api)
    session = night.auditor.ok("get", f"/tables/{TABLE}/replay?limit=500")["steps"]
    kinds = [s["type"] for s in session]
    assert kinds[-4:] == ["DisputeOpened", "DisputeResolved", "BetAdjusted", "BetAdjusted"]
    opened, resolved, first, second = session[-4:]
    assert opened["payload"]["dispute_id"] == dispute and opened["balances"] == []
    assert resolved["payload"]["resolution"] == "voided" and resolved["transfers"] == []
    # The ledger's balances either side of each adjustment: ann hands back the setter's
    # 100, then bob's 60 (bob stands at 890 after round 2).
    assert first["balances"] == [
        {"account": "player:ann", "before": 1160, "after": 1060},
        {"account": "setter", "before": 9900, "after": 10_000},
    ]
    assert second["balances"] == [
        {"account": "player:ann", "before": 1060, "after": 1000},
        {"account": "player:bob", "before": 890, "after": 950},
    ]

    # Round 1's replay: the round as played, then its dispute, which came after round 2.
    round_one = night.auditor.ok("get", f"/tables/{TABLE}/rounds/1/replay?limit=500")["steps"]
    assert [s["type"] for s in round_one][-4:] == kinds[-4:]
    assert "BetSettled" in [s["type"] for s in round_one]
    assert not {s["version"] for s in round_one} & {
        s["version"] for s in night.auditor.ok("get", f"/tables/{TABLE}/rounds/2/replay")["steps"]
    }
    # Paged one step at a time, the same steps.
    paged, after = [], 0
    while after is not None:
        page = night.auditor.ok("get", f"/tables/{TABLE}/rounds/1/replay?after={after}&limit=1")
        paged += page["steps"]
        after = page["next_after"]
    assert paged == round_one

    # From the export file, offline: the same steps, the table's state after each.
    lines = _export(api)
    for path, round_ in (
        (f"/tables/{TABLE}/replay", None),
        (f"/tables/{TABLE}/rounds/1/replay", 1),
    ):
        online = night.auditor.ok("get", f"{path}?limit=500")["steps"]
        steps = list(replays.from_file(lines, TABLE, round_, VERIFIER))
        offline = [step_view(TABLE, s) for s in steps]
        # The file holds no deposits: the balances' bases differ, what moved does not.
        assert [_moved(s) for s in offline] == [_moved(s) for s in online]
        for s in online + offline:
            s.pop("balances")
        assert offline == online
    states = {s.type: s.state for s in steps}
    assert states["DisputeOpened"].disputes == {dispute: 1}
    assert states["DisputeResolved"].disputes == {} and 1 in states["DisputeResolved"].adjusted


def test_a_rounds_replay_leaves_out_another_rounds_dispute_opened_during_it(api: Api) -> None:
    """Regression: a round's replay read its events with a query of its own, which left
    out the disputes of other rounds opened while it was played only when the round had
    disputes of its own. Round 2, with none, replayed round 1's DisputeOpened as one of
    its steps; GET /tables/{t}/rounds/2 did not list it. One query reads both now."""
    night = seated(api)
    croupier = night.croupier
    night.do(croupier, "main", {"main": 7})
    night.do(croupier, "throws", {"die1": 3, "die2": 4})  # round 1: a nick
    night.do(croupier, "main", {"main": 7})
    night.do(croupier, "throws", {"die1": 2, "die2": 4})  # round 2: a chance of 6
    opened = open_dispute(night, croupier, 1, {"claim": "the 4 was a 5"})
    night.do(croupier, "throws", {"die1": 3, "die2": 3})  # round 2: the chance thrown
    disputed = opened["events"][0]["version"]
    detail = night.auditor.ok("get", f"/tables/{TABLE}/rounds/2?limit=500")
    replayed = night.auditor.ok("get", f"/tables/{TABLE}/rounds/2/replay?limit=500")["steps"]
    assert disputed not in [e["version"] for e in detail["events"]]
    assert [s["version"] for s in replayed] == [e["version"] for e in detail["events"]]
    round_one = night.auditor.ok("get", f"/tables/{TABLE}/rounds/1/replay?limit=500")["steps"]
    assert round_one[-1]["version"] == disputed


def test_the_cli_recalls_and_replays_a_voided_round(api: Api) -> None:
    night, dispute = _voided(api)
    url = api.book.store.engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    recalled = runner.invoke(main, ["recall", "--table", TABLE, "--database-url", url])
    assert recalled.exit_code == 0, recalled.output
    assert f"dispute {dispute}: voided" in recalled.output
    assert "player:ann: 1000 before, 1160 after, 1000 after its adjustment; won +0" in (
        recalled.output
    )
    printed = runner.invoke(
        main, ["replay", "--table", TABLE, "--round", "1", "--json", "--database-url", url]
    )
    assert printed.exit_code == 0, printed.output
    steps = [json.loads(line) for line in printed.output.splitlines()]
    assert steps == night.auditor.ok("get", f"/tables/{TABLE}/rounds/1/replay?limit=500")["steps"]
    assert steps[-1]["type"] == "BetAdjusted"
