"""A statement for a period on paper (ledger.exports.periodpaper), from a statement made
by hand: its lines add up from the balance at the start to the one at the end, and a
CSV cell a spreadsheet would take for a formula (a claim, a player called "-ann") is
quoted, while amounts stay numbers."""

from __future__ import annotations

import csv
import io
from datetime import date

from ledger.books.periods import Period
from ledger.books.periodstatement import Dispute, Statement
from ledger.exports import periodpaper
from ledger.house import House

PERIOD = Period(
    "evening", "2026-11-26", date(2026, 11, 26), date(2026, 11, 26),
    "2026-11-26T00:00:00.000000Z", "2026-11-27T00:00:00.000000Z", 10, 90,
)  # fmt: skip
HOSTILE = Dispute(
    table="t1", dispute_id="d7", round=3, claimant="-ann", claim="=HYPERLINK(\"x\")",
    opened_at="2026-11-26T21:00:00.000000Z", resolution="corrected", reason="@sum",
    resolved_at="2026-11-26T22:00:00.000000Z", moved=-150,
)  # fmt: skip
STATEMENT = Statement(
    player="-ann", account="player:-ann", period=PERIOD, opening=5000, closing=5450,
    deposited=1000, withdrawn=300, staked=900, paid=800, adjusted=-150, won=2,
    winnings=500, lost=1, losses=200, voided=1, returned=100, in_play=400,
    disputes=[HOSTILE],
)  # fmt: skip


def test_the_lines_add_up_from_start_to_end() -> None:
    assert STATEMENT.check() == []
    amounts = [amount for _, _, amount in periodpaper.lines(STATEMENT)]
    assert amounts[0] + sum(amounts[1:-1]) == amounts[-1] == 5450


def test_a_formula_is_quoted_and_amounts_are_numbers() -> None:
    text = periodpaper.csv_of(STATEMENT, House())
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))
    assert rows[0] == ["player", "'-ann"]
    [dispute] = [r for r in rows if r and r[0] == "d7"]
    assert dispute[3:5] == ["'-ann", '\'=HYPERLINK("x")']
    assert dispute[-1] == "-150"  # a number, not quoted
    assert ["Balance at the end", "", "5450", "54.50"] in rows
    assert ["Withdrawn", "", "-300", "-3.00"] in rows


def test_the_page_escapes_what_a_player_typed() -> None:
    html = periodpaper.html_of(
        Statement(**{**STATEMENT.__dict__, "disputes": [
            Dispute(**{**HOSTILE.__dict__, "claim": "<script>alert(1)</script>"})
        ]})
    , House())  # fmt: skip
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "-£1.50" in html and "£54.50" in html
