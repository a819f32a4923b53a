"""A disputed table exported and verified offline (docs/export-format.md): the referee
judges each resolution again, the money it recomputes includes the adjustments, an
adjustment changed in the file is named, and a dispute over a round the file does not
hold whole is said to be taken on trust, never verified.

The table is tests/api/test_disputes.py's two rounds (its docstring works out every
balance). A table's export holds no deposits: an account's net there is what it won
or lost at the table, adjustments included.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ledger.books import deep
from ledger.cli import main
from ledger.exports import jsonl, offline, sheets
from ledger.exports.scope import scope_of
from ledger.store.schema import adjustments
from tests.api.conftest import Api
from tests.api.disputekit import (
    TABLE,
    french_side_bet_round,
    open_dispute,
    resolve,
    two_rounds,
)
from tests.ledger.offlinekit import encoded, fails, line_of, records, rehash
from tests.signing import VERIFIER

RESOLUTIONS: dict[str, tuple[int, dict[str, Any]]] = {
    # (the round disputed, the resolution; a correction's throw is filled in)
    "upheld": (1, {"resolution": "upheld", "reason": "I saw 3+4"}),
    "voided": (1, {"resolution": "voided", "reason": "a wild throw"}),
    "corrected": (2, {"resolution": "corrected", "reason": "the camera", "dice": [4, 5]}),
}
ADJUSTED = {
    "upheld": {},
    # ann hands back the setter's 100 and bob's 60.
    "voided": {"player:ann": -160, "player:bob": 60, "setter": 100},
    # 4+5, not 4+4: bob wins the side bet, so cat gives back his 50 and pays him 20.
    "corrected": {"player:bob": 70, "player:cat": -70},
}
PLAYED = {"player:ann": 160, "player:bob": -110, "player:cat": 50, "setter": -100}
"""Each account's net over the two rounds as played (test_disputes' balances less the
deposits)."""


def _disputed(api: Api, how: str) -> Any:
    night, v = two_rounds(api)
    round_, body = RESOLUTIONS[how]
    claim: dict[str, Any] = {"claim": "not what I saw"}
    if how == "corrected":
        claim |= {"throw": v["eight"], "dice": [4, 5]}
        body = body | {"throw": v["eight"]}
    opened = open_dispute(night, "bob", round_, claim)
    resolve(night, opened["dispute_id"], body)
    return night


def _export(api: Api, **scope: Any) -> bytes:
    prepared = jsonl.prepare(api.book.store.engine, scope_of(table=TABLE, **scope), key=VERIFIER)
    return b"".join(prepared.chunks())


@pytest.mark.parametrize("how", sorted(RESOLUTIONS))
def test_a_disputed_table_verifies_with_its_adjustments(api: Api, how: str, tmp_path: Any) -> None:
    _disputed(api, how)
    data = _export(api)
    verified = offline.verify(data.splitlines(), VERIFIER)
    adjusted = {a: m.adjusted for a, m in verified.money.items() if m.adjusted}
    assert adjusted == ADJUSTED[how]
    nets = {a: m.net for a, m in verified.money.items()}
    assert nets == {a: PLAYED[a] + ADJUSTED[how].get(a, 0) for a in PLAYED}
    assert not any("dispute" in sentence for sentence in verified.trusted)
    closing = json.loads(data.splitlines()[-1])
    assert {a: f.get("adjusted", 0) for a, f in closing["money"].items() if "adjusted" in f} == (
        ADJUSTED[how]
    )
    # hazard verify prints the adjusted column.
    path = tmp_path / "t1.jsonl"
    path.write_bytes(data)
    printed = CliRunner().invoke(main, ["verify", str(path), "--key", VERIFIER.text()])
    assert printed.exit_code == 0, printed.output
    assert "adjusted" in printed.output and "dispute" not in printed.output


def test_a_correction_that_moves_a_settlement_within_its_round_verifies(api: Api) -> None:
    """test_disputes' french round corrected (4+4 at the first throw decides the side bet
    a throw earlier, for bob): the file's referee judges the correction again and makes
    the same, so the export verifies with ann's 320 moved to bob."""
    night, _, first = french_side_bet_round(api)
    claim = {"claim": "4+4", "throw": first, "dice": [4, 4]}
    opened = open_dispute(night, "bob", 1, claim)
    body = {"resolution": "corrected", "reason": "the camera", "throw": first, "dice": [4, 4]}
    resolve(night, opened["dispute_id"], body)
    verified = offline.verify(_export(api).splitlines(), VERIFIER)
    adjusted = {a: m.adjusted for a, m in verified.money.items() if m.adjusted}
    assert adjusted == {"player:ann": -320, "player:bob": 320}
    assert {a: m.net for a, m in verified.money.items() if m.net} == {
        "player:ann": -150,
        "player:bob": 150,
    }
    assert not any("dispute" in sentence for sentence in verified.trusted)


def test_an_adjustment_changed_in_the_file_is_named(api: Api) -> None:
    _disputed(api, "voided")
    recs = records(_export(api))
    number = line_of(recs, type="BetAdjusted")
    adjusted = recs[number - 1]
    assert adjusted["payload"]["transfers"][0]["amount"] == 100
    adjusted["payload"]["transfers"][0]["amount"] = 10  # ann hands back 10, not 100
    rehash(recs, number)  # as a forger who knows the format would
    caught = fails(encoded(recs))
    assert caught.line == number, caught
    assert f"version {adjusted['version']}" in caught.reason and "at table t1" in caught.reason


def test_a_dispute_over_a_round_before_the_file_is_taken_on_trust(api: Api) -> None:
    night = _disputed(api, "voided")
    second = night.auditor.ok("get", f"/tables/{TABLE}/rounds/2")
    # The file starts with round 2: round 1, and all that the referee would need to
    # judge its dispute, are before it.
    data = _export(api, since=second["started_at"])
    verified = offline.verify(data.splitlines(), VERIFIER)
    events = [r for r in records(data) if r["record"] == "event"]
    disputed = [
        e["version"]
        for e in events
        if e["type"] in ("DisputeOpened", "DisputeResolved", "BetAdjusted")
    ]
    assert len(disputed) == 4
    [said] = [s for s in verified.trusted if "dispute" in s]
    assert f"versions {', '.join(map(str, disputed))}" in said and "not verified" in said
    # Taken on trust, the void's money is still counted, as the file gives it.
    assert verified.money["player:ann"].adjusted == -160


def test_the_deep_check_recomputes_the_disputes_and_adjustments(api: Api) -> None:
    _disputed(api, "voided")
    store = api.book.store
    assert list(deep.differences(store)) == []
    with store.engine.begin() as conn:  # an adjustment's read model edited behind the log
        first = conn.execute(sa.select(sa.func.min(adjustments.c.position))).scalar_one()
        conn.execute(
            adjustments.update().where(adjustments.c.position == first).values(adjustment="x")
        )
    [found] = list(deep.differences(store))
    assert (found.table, found.row, found.column) == (
        "adjustments",
        f"position {first}",
        "adjustment",
    )


def _sheet(api: Api, sheet: str, **scope: Any) -> list[dict[str, str]]:
    prepared = sheets.prepare(api.book.store.engine, scope_of(**scope), sheet)
    text = b"".join(prepared.chunks()).decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_the_adjustments_sheet_has_a_row_per_bet_adjusted(api: Api) -> None:
    _disputed(api, "voided")
    rows = _sheet(api, "adjustments", table=TABLE)
    assert [(r["round"], r["adjustment"], r["amount"], r["amount_decimal"]) for r in rows] == [
        ("1", "reversal", "100", "1.00"),
        ("1", "reversal", "60", "0.60"),
    ]
    assert rows[0]["transfers"] == "player:ann → setter 100"
    assert len({r["dispute"] for r in rows}) == 1  # both of the one dispute
    # A player's: the adjustments that moved their money (bob's: his 60 back).
    assert [r["transfers"] for r in _sheet(api, "adjustments", player="bob")] == [
        "player:ann → player:bob 60"
    ]
    assert _sheet(api, "adjustments", player="cat") == []
    # The statement has the adjustment as a line of its own, with the running balance.
    statement = _sheet(api, "statement", player="ann")
    assert [r["event"] for r in statement][-2:] == ["BetAdjusted", "BetAdjusted"]
    assert statement[-1]["balance"] == "1000"


def test_a_second_open_dispute_of_one_claimant_over_a_round_is_named(api: Api) -> None:
    """The verifier re-runs each opening under the rules of issue 22: one open dispute
    per claimant and round. bob's and the setter's disputes over round 1 are both open;
    the setter's, rewritten in the file as bob's second, is refused where it stands."""
    night, _ = two_rounds(api)
    open_dispute(night, "bob", 1, {"claim": "not what I saw"})
    open_dispute(night, night.bank, 1, {"claim": "the setter reviews it"})
    data = _export(api)
    offline.verify(data.splitlines(), VERIFIER)  # as written, it verifies
    recs = records(data)
    number = next(
        i + 1
        for i, r in enumerate(recs)
        if r.get("type") == "DisputeOpened" and r["payload"]["claimant"] == "setter"
    )
    recs[number - 1]["payload"] |= {"claimant": "bob", "role": "player"}
    rehash(recs, number)
    caught = fails(encoded(recs))
    assert caught.line == number, caught
    assert "one open dispute per claimant and round" in caught.reason
