"""GET /reports/dice's tests of the throws' order (issue 28): the runs test above and
below 7 and the serial test of consecutive totals, per table and per croupier, with
Holm's adjustment over all of them, on SQLite and PostgreSQL. The counts are worked by
hand; the p-values come from ledger.audit.stats, held on its own against enumerations
(tests/ledger/test_dice_order_stats.py)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from ledger.audit import fairness
from ledger.audit.stats import holm, runs_test, serial_test
from ledger.house import House
from tests.api.conftest import Api
from tests.api.fairnesskit import clock as _clock
from tests.api.fairnesskit import club as _club
from tests.api.fairnesskit import open_table as _open
from tests.api.fairnesskit import report as _report
from tests.api.fairnesskit import throw as _throw

# cecil at t1, then dora at t2, then cecil at t1 again:
T1_FIRST = [(3, 4), (1, 1), (2, 2), (5, 6), (1, 3)]  # 7 2 4 11 4
T2 = [(6, 6), (1, 2), (6, 6), (1, 1)]  # 12 3 12 2 (the french rolls its main)
T1_LATER = [(4, 4), (1, 2)]  # 8 3


def _units(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    order = report["order"]
    found = {f"table {u['table']}": u for u in order["tables"]}
    found.update({f"croupier {u['croupier']}": u for u in order["croupiers"]})
    return found


def test_runs_and_serial_per_table_and_croupier_with_holm(api: Api) -> None:
    at = _clock(api)
    clients = _club(api, ("cecil", "dora"))
    bank, cecil, dora = clients["bank"], clients["cecil"], clients["dora"]
    at("2026-01-01T10:00:00.000000Z")
    _open(cecil, "t1")
    _open(cecil, "t2", ruleset="french")
    _throw(cecil, "t1", T1_FIRST)
    at("2026-01-01T11:00:00.000000Z")
    _throw(dora, "t2", T2)
    at("2026-01-01T12:00:00.000000Z")
    _throw(cecil, "t1", T1_LATER)
    report = _report(bank, since="2026-01-01T00:00:00.000000Z")
    units = _units(report)
    assert set(units) == {"table t1", "table t2", "croupier cecil", "croupier dora"}
    t1 = [7, 2, 4, 11, 4, 8, 3]
    by_hand = {
        "table t1": t1,
        "table t2": [12, 3, 12, 2],
        "croupier cecil": t1,  # cecil recorded t1's throws, in time order
        "croupier dora": [12, 3, 12, 2],
    }
    # t1 without its 7: - - + - + - : 5 runs of 2 above and 4 below.
    assert (units["table t1"]["runs"]["runs"], units["table t1"]["runs"]["above"]) == (5, 2)
    assert units["table t1"]["runs"]["below"] == 4
    # t2: 5 -4 5 -5 about 7: S = -20 - 20 - 25 = -65.
    assert units["table t2"]["serial"]["statistic"] == -65
    raw = []
    for name, totals in by_hand.items():
        unit = units[name]
        assert unit["throws"] == len(totals)
        runs, serial = runs_test(totals), serial_test(totals)
        assert unit["runs"]["p_value"] == pytest.approx(runs.p_value)
        assert unit["serial"]["p_value"] == pytest.approx(serial.p_value)
        assert unit["runs"]["exact"] and unit["serial"]["exact"]
        raw += [unit["runs"]["p_value"], unit["serial"]["p_value"]]
    order = report["order"]
    assert order["correction"] == "holm" and order["tests"] == 8
    assert order["chance_flags"] == pytest.approx(8 * report["alpha"])
    adjusted = [units[name][test]["adjusted_p"] for name in by_hand for test in ("runs", "serial")]
    assert adjusted == pytest.approx(holm(raw))
    assert report["order_note"] is None
    # Held to a table, only that table and the croupiers who threw there.
    held = _units(_report(bank, table="t2"))
    assert set(held) == {"table t2", "croupier dora"}


def test_alternating_throws_are_flagged_after_holm(api: Api) -> None:
    clients = _club(api)
    bank, cecil = clients["bank"], clients["cecil"]
    _open(cecil, "t1")
    _open(cecil, "t2")
    _throw(cecil, "t1", [(6, 6), (1, 1)] * 15)  # 12 2 12 2 ...: every throw a run
    _throw(cecil, "t2", [(6, 6), (1, 1), (3, 4), (2, 5)])
    report = _report(bank, table="t1")
    t1 = _units(report)["table t1"]
    assert t1["runs"]["runs"] == 30 and t1["runs"]["flagged"]
    assert t1["serial"]["correlation"] < -0.9 and t1["serial"]["flagged"]
    assert not t1["serial"]["exact"]  # 30 throws: past the exact bound
    assert any("table t1: 30 runs" in flag for flag in report["flags"])
    assert t1["runs"]["adjusted_p"] >= t1["runs"]["p_value"]


def test_the_whole_club_is_not_read_throw_by_throw(api: Api) -> None:
    clients = _club(api)
    _open(clients["cecil"], "t1")
    _throw(clients["cecil"], "t1", [(6, 6), (1, 1)])
    report = _report(clients["bank"])
    assert report["order"] is None
    assert "time range" in report["order_note"]


def test_the_clubs_level_is_the_default_alpha(api: Api) -> None:
    api.app.extensions["hazard.house"] = House(fairness_level=Fraction(95, 100))
    clients = _club(api)
    _open(clients["cecil"], "t1")
    _throw(clients["cecil"], "t1", [(6, 6), (1, 1)])
    report = _report(clients["bank"], table="t1")
    assert report["alpha"] == 0.05
    # Two tests each of the table and of its croupier: 4 tests, 0.2 flags by chance.
    assert report["order"]["chance_flags"] == pytest.approx(4 * 0.05)
    assert _report(clients["bank"], table="t1", alpha=0.2)["alpha"] == 0.2  # asked: as asked


def test_a_scope_of_too_many_throws_is_not_read_throw_by_throw(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fairness, "ORDER_MAX", 3)
    clients = _club(api)
    _open(clients["cecil"], "t1")
    _throw(clients["cecil"], "t1", [(6, 6), (1, 1), (6, 6)])
    assert _report(clients["bank"], table="t1")["order"]["tests"] == 4  # 3: read
    _throw(clients["cecil"], "t1", [(1, 1)])
    report = _report(clients["bank"], table="t1")
    assert report["order"] is None
    assert report["order_note"].startswith("not tested: 4 throws in scope, more than 3")


def test_a_croupiers_throws_are_in_the_order_recorded_across_tables(api: Api) -> None:
    at = _clock(api)
    clients = _club(api)
    bank, cecil = clients["bank"], clients["cecil"]
    at("2026-01-01T10:00:00.000000Z")
    _open(cecil, "t1")
    _open(cecil, "t2")
    _throw(cecil, "t1", [(6, 6)])  # 12
    at("2026-01-01T10:01:00.000000Z")
    _throw(cecil, "t2", [(1, 1)])  # 2
    at("2026-01-01T10:02:00.000000Z")
    _throw(cecil, "t1", [(6, 5)])  # 11
    report = _report(bank, croupier="cecil")
    cecil_unit = _units(report)["croupier cecil"]
    # 12 2 11 in time: 5 x -5 + -5 x 4 = -45, three runs. By table it would be 12 11 2.
    assert cecil_unit["serial"]["statistic"] == -45
    assert cecil_unit["runs"]["runs"] == 3
    assert _units(report)["table t1"]["serial"]["statistic"] == 20
