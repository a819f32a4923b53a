"""Replay, state as of any moment, and recall (issue 13), over HTTP on both databases.

Two rounds at t1, every figure worked by hand: ann (1000) casts against the setter
(10,000). Round 1: ann stakes 100, calls 7 and throws 3+4, a nick: the escrow of 200
goes to ann (ann 1000 -> 900 -> 1100, the setter 10,000 -> 9900). Round 2: ann stakes
50, calls 7 and throws 1+1, which throws out under 7: the setter takes the 100 (ann
1100 -> 1050, the setter 9900 -> 9850 -> 9950).
"""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner

import engine as hz
from ledger.audit import replay as replays
from ledger.cli import main
from ledger.exports import jsonl
from ledger.exports.scope import scope_of
from ledger.store.log.heads import SEALS
from ledger.web.views import state_view, step_view
from tests.api.conftest import Api
from tests.api.gamekit import nick_then_out
from tests.signing import VERIFIER


def _steps(client: Any, path: str, limit: int = 500) -> list[dict[str, Any]]:
    """Every page of a replay, walked by next_after."""
    steps: list[dict[str, Any]] = []
    after = 0
    while True:
        page = client.ok("get", f"{path}?after={after}&limit={limit}")
        steps += page["steps"]
        if page["next_after"] is None:
            return steps
        after = page["next_after"]


def _but_bets(state: dict[str, Any]) -> dict[str, Any]:
    """A state without its page of open bets (how many are open stays)."""
    return {k: v for k, v in state.items() if k not in ("open_bets", "next_after")}


def _balance(step: dict[str, Any], account: str) -> tuple[int, int]:
    [line] = [b for b in step["balances"] if b["account"] == account]
    return line["before"], line["after"]


def test_a_round_replays_event_by_event_with_state_money_and_balances(api: Api) -> None:
    night = nick_then_out(api)
    replay = night.auditor.ok("get", "/tables/t1/rounds/1/replay")
    assert replay["round"]["round"] == 1 and replay["round"]["result"] == "nick"
    steps = replay["steps"]
    types = [s["type"] for s in steps]
    assert types == ["CasterChosen", "CasterStaked", "MainCalled", "DiceThrown", "BetSettled"]
    chosen, staked, called, thrown, settled = steps
    assert chosen["state"]["caster"] == "ann" and chosen["balances"] == []
    assert staked["state"]["phase"] == "awaiting-main"
    assert [b["yes_stake"] for b in staked["state"]["open_bets"]] == [100]
    assert _balance(staked, "player:ann") == (1000, 900)
    assert _balance(staked, "setter") == (10_000, 9900)
    assert called["state"]["main"] == 7 and called["transfers"] == []
    # The throw decided the bet: its settlement shows on the throw and on the closing.
    assert thrown["state"]["round"] == 2 and thrown["balances"] == []
    # A step names the open bets its event named; the rest are counted, and read as of it.
    assert thrown["state"]["open_bet_count"] == 1  # until its closing, next
    assert thrown["state"]["open_bets"] == [] and thrown["state"]["next_after"] == 0
    assert settled["state"]["open_bets"] == [] and settled["state"]["open_bet_count"] == 0
    assert settled["state"]["next_after"] is None
    assert thrown["settlement_count"] == len(thrown["settlements"]) == 1
    assert [s["winner"] for s in thrown["settlements"]] == ["ann"]
    assert thrown["settlements"] == settled["settlements"]
    bet = staked["payload"]["bet_id"]
    assert settled["transfers"] == [
        {"source": f"escrow:t1:{bet}", "target": "player:ann", "amount": 200}
    ]
    assert _balance(settled, "player:ann") == (900, 1100)
    assert staked["settlements"] == []  # it placed the bet: not its settlement

    second = night.auditor.ok("get", "/tables/t1/rounds/2/replay")["steps"]
    assert _balance(second[0], "player:ann") == (1100, 1050)
    assert _balance(second[-1], "setter") == (9850, 9950)
    assert second[-2]["state"]["consecutive_losses"] == 1


def test_pages_of_a_replay_join_up_to_the_whole_and_players_see_their_own_balance(
    api: Api,
) -> None:
    night = nick_then_out(api)
    whole = night.auditor.ok("get", "/tables/t1/replay?limit=500")
    assert whole["next_after"] is None and whole["round"] is None
    assert _steps(night.auditor, "/tables/t1/replay", limit=2) == whole["steps"]
    assert (
        _steps(night.auditor, "/tables/t1/rounds/1/replay", limit=1)
        == (night.auditor.ok("get", "/tables/t1/rounds/1/replay")["steps"])
    )
    versions = [s["version"] for s in whole["steps"]]
    assert versions == list(range(1, len(versions) + 1))
    bob = night.players["bob"].ok("get", "/tables/t1/replay?limit=500")["steps"]
    assert all(b["account"] == "player:bob" for s in bob for b in s["balances"])
    assert [s["transfers"] for s in bob] == [s["transfers"] for s in whole["steps"]]
    for path in ("/tables/t9/replay", "/tables/t1/rounds/3/replay"):
        assert night.auditor.get(path).status_code == 404


def test_as_of_a_position_or_a_time_is_the_fold_of_the_events_up_to_it(api: Api) -> None:
    night = nick_then_out(api)
    steps = night.auditor.ok("get", "/tables/t1/replay?limit=500")["steps"]
    events = api.book.store.load("table:t1")
    for step in steps:
        folded = state_view("t1", hz.fold(events[: step["version"]]))
        by_position = night.auditor.ok("get", f"/tables/t1?as_of={step['position']}")
        assert by_position.pop("as_of")["position"] == step["position"]
        assert by_position == folded
        # The step's own state is the same, but for its open bets: those its event named.
        named = step["payload"].get("bet_id")
        assert step["state"]["open_bets"] == [b for b in folded["open_bets"] if b["id"] == named]
        assert _but_bets(step["state"]) == _but_bets(folded)
    staked = steps[[s["type"] for s in steps].index("CasterStaked")]
    at = staked["recorded_at"]
    by_time = night.auditor.ok("get", f"/tables/t1?as_of={at.replace('Z', '%2B00:00')}")
    # A time takes in the whole write: the stake, and the seal that ends its write.
    after = api.book.store.read_all(staked["position"], limit=10_000)
    seal = next(e for e in after if e.stream == SEALS)
    assert seal.recorded_at == at and seal.position > staked["position"]
    assert all(e.recorded_at > at for e in after if e.position > seal.position)
    assert by_time.pop("as_of")["position"] == seal.position
    assert by_time["open_bets"] == staked["state"]["open_bets"]  # the one bet, staked
    assert _but_bets(by_time) == _but_bets(staked["state"])
    ann = night.players["ann"].ok("get", f"/players/ann/balance?as_of={staked['position']}")
    assert (ann["balance"], ann["credit_limit"]) == (900, 0)
    assert night.auditor.ok("get", f"/players/ann/balance?as_of={at}")["balance"] == 900
    assert night.auditor.ok("get", "/players/ann/balance?as_of=1")["balance"] == 0
    assert night.auditor.ok("get", "/players/ann/balance")["balance"] == 1050
    early = night.auditor.get("/tables/t1?as_of=2026-01-01T00:00:00Z")
    assert early.status_code == 404  # the table was not yet open
    for bad in ("yesterday", "99999999"):
        answer = night.auditor.get(f"/players/ann/balance?as_of={bad}")
        assert answer.status_code == 422 and "as_of" in answer.get_json()["errors"]


def test_recall_of_a_table_and_of_a_player(api: Api) -> None:
    night = nick_then_out(api)
    table = night.croupier.ok("get", "/tables/t1/recall")
    assert [r["round"] for r in table["rounds"]] == [2, 1]  # newest first
    out, nick = table["rounds"]
    assert [(t["die1"], t["die2"]) for t in nick["throws"]] == [(3, 4)]
    assert nick["won"] == [
        {"account": "player:ann", "amount": 100},
        {"account": "setter", "amount": -100},
    ]
    assert nick["balances"] == [
        {"account": "player:ann", "before": 1000, "after": 1100, "adjusted": None},
        {"account": "setter", "before": 10_000, "after": 9900, "adjusted": None},
    ]
    assert out["won"] == [
        {"account": "player:ann", "amount": -50},
        {"account": "setter", "amount": 50},
    ]
    assert [b["net"] for b in out["bets"]] == [{"player:ann": -50, "setter": 50}]
    ann = night.players["ann"].ok("get", "/players/ann/recall")
    assert [r["round"] for r in ann["rounds"]] == [2, 1]
    assert [r["balances"] for r in ann["rounds"]] == [
        [{"account": "player:ann", "before": 1100, "after": 1050, "adjusted": None}],
        [{"account": "player:ann", "before": 1000, "after": 1100, "adjusted": None}],
    ]
    assert night.auditor.ok("get", "/players/bob/recall")["rounds"] == []
    assert night.players["bob"].get("/players/ann/recall").status_code == 403


def _export(api: Api) -> list[bytes]:
    prepared = jsonl.prepare(api.book.store.engine, scope_of(table="t1"), key=VERIFIER)
    return b"".join(prepared.chunks()).splitlines()


def _deltas(step: dict[str, Any]) -> dict[str, int]:
    return {b["account"]: b["after"] - b["before"] for b in step.pop("balances")}


def test_offline_replay_of_an_export_is_the_database_replay(api: Api, tmp_path: Any) -> None:
    night = nick_then_out(api)
    lines = _export(api)
    for round_ in (None, 1, 2):
        path = "/tables/t1/replay" if round_ is None else f"/tables/t1/rounds/{round_}/replay"
        online = night.auditor.ok("get", f"{path}?limit=500")["steps"]
        offline = [step_view("t1", s) for s in replays.from_file(lines, "t1", round_, VERIFIER)]
        # The balances' bases differ (the file holds no deposits); what moved does not.
        assert [_deltas(s) for s in offline] == [_deltas(s) for s in online]
        assert offline == online
    file_steps = list(replays.from_file(lines, "t1", 1, VERIFIER))
    assert [(b["before"], b["after"]) for b in file_steps[1].balances] == [(0, -100), (0, -100)]

    exported = tmp_path / "t1.jsonl"
    exported.write_bytes(b"\n".join(lines) + b"\n")
    runner = CliRunner()
    printed = runner.invoke(main, ["replay", str(exported), "--table", "t1", "--round", "2"])
    assert printed.exit_code == 0, printed.output
    assert "round 2 of table t1" in printed.output and "DiceThrown" in printed.output
    assert "player:ann: 100 -> 50" in printed.output  # +100 from round 1, then a stake of 50
    missing = runner.invoke(main, ["replay", str(exported), "--table", "t1", "--round", "9"])
    assert missing.exit_code == 1 and "no round 9" in missing.output
    tampered = tmp_path / "bad.jsonl"
    tampered.write_bytes(exported.read_bytes().replace(b'"die1":3', b'"die1":4'))
    refused = runner.invoke(main, ["replay", str(tampered), "--table", "t1"])
    assert refused.exit_code == 1 and "does not verify" in refused.output


def test_the_cli_replays_and_recalls_from_the_database(api: Api) -> None:
    night = nick_then_out(api)
    url = api.book.store.engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    printed = runner.invoke(
        main, ["replay", "--table", "t1", "--json", "--database-url", url], catch_exceptions=False
    )
    assert printed.exit_code == 0, printed.output
    import json

    cli_steps = [json.loads(line) for line in printed.output.splitlines()]
    assert cli_steps == night.auditor.ok("get", "/tables/t1/replay?limit=500")["steps"]
    recalled = runner.invoke(main, ["recall", "--player", "ann", "--database-url", url])
    assert recalled.exit_code == 0, recalled.output
    assert "player:ann: 1100 before, 1050 after; won -50 in the round" in recalled.output
    table = runner.invoke(main, ["recall", "--table", "t1", "--json", "--database-url", url])
    assert json.loads(table.output) == night.auditor.ok("get", "/tables/t1/recall")
