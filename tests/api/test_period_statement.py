"""A player's statement for a period over HTTP: an evening, a week, a month and a range,
each figure worked by hand; CSV and PDF; who may read whose; what is refused.

The club's clock is set for each evening, so the periods are known (UTC, the default
zone). ann's November at t1 (disputekit.two_rounds, then two evenings more):

  2 Nov  deposits 1000; round 1: she stakes 100 against the setter and covers bob's 60,
         a nick: paid 200 + 120, won 160 over her stakes. ann 1160.
  10 Nov the setter pays her out 100; round 3: she stakes 50, main 7, 1+1: out, lost 50;
         she stakes 30, left open. ann 980.
  20 Nov bob disputes round 1, the setter voids it: her 160 goes back (100 to the
         setter, 60 to bob). ann 820.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.api.conftest import Api
from tests.api.gamekit import Evening
from tests.api.periodkit import november
from tests.pdfkit import ink, ink_at_edges, page_texts, save_pngs

SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def statement(night: Evening, who: Any = "ann", name: str = "ann", **query: str) -> Any:
    client = night.players[who] if isinstance(who, str) else who
    return client.ok("get", f"/players/{name}/period-statement", query_string=query)


FIGURES = (
    "opening", "deposited", "withdrawn", "staked", "paid", "adjusted", "won", "winnings",
    "lost", "losses", "voided", "in_play", "closing",
)  # fmt: skip


def figures(found: dict[str, Any]) -> tuple[int, ...]:
    return tuple(found[k] for k in FIGURES)


def exact(found: dict[str, Any]) -> None:
    """Both readings of the money come to the balance at the end, and GET /balance
    agrees with the balances as of the period's ends."""
    moved = found["deposited"] + found["paid"] - found["staked"] - found["withdrawn"]
    assert found["opening"] + moved + found["adjusted"] == found["closing"]
    reckoned = found["net_deposits"] + found["net_play"] + found["adjusted"] - found["in_play"]
    assert found["opening"] + reckoned == found["closing"]


def test_each_period_worked_by_hand(api: Api) -> None:
    night = november(api)
    evening = statement(night, evening="2026-11-10")
    #                          open  dep  wd  stk paid adj won  w  lost  l  void play close
    assert figures(evening) == (1160, 0, 100, 80, 0, 0, 0, 0, 1, 50, 0, 30, 980)
    assert evening["period"]["kind"] == "evening" and evening["disputes"] == []
    assert evening["period"]["since"] == "2026-11-10T00:00:00.000000Z"
    assert evening["period"]["until"] == "2026-11-11T00:00:00.000000Z"
    month = statement(night, month="2026-11")
    assert figures(month) == (0, 1000, 100, 240, 320, -160, 2, 160, 1, 50, 0, 30, 820)
    [dispute] = month["disputes"]
    assert (dispute["table"], dispute["round"], dispute["claimant"]) == ("t1", 1, "bob")
    assert (dispute["resolution"], dispute["moved"]) == ("voided", -160)
    # ISO week 47 is 16 to 22 November: the dispute alone.
    week = statement(night, week="2026-W47")
    assert figures(week) == (980, 0, 0, 0, 0, -160, 0, 0, 0, 0, 0, 0, 820)
    assert [d["moved"] for d in week["disputes"]] == [-160]
    # A range from the 3rd to the 19th: the 10th's evening alone.
    ranged = statement(night, **{"from": "2026-11-03", "to": "2026-11-19"})
    assert figures(ranged) == figures(evening)
    # A day with nothing: the balance stands.
    quiet = statement(night, evening="2026-11-05")
    assert figures(quiet) == (1160, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1160)
    for found in (evening, month, week, ranged, quiet):
        exact(found)
    # bob's month: his lay lost (60), his side bet lost (50), the reversal gave 60 back.
    bob = statement(night, "bob", "bob", month="2026-11")
    assert figures(bob) == (0, 1000, 0, 110, 0, 60, 0, 0, 2, 110, 0, 0, 950)
    exact(bob)


def test_the_proof_is_the_export_for_the_same_times(api: Api) -> None:
    night = november(api)
    month = statement(night, month="2026-11")
    assert month["proof"] == {
        "player": "ann", "since": "2026-11-01T00:00:00.000000Z",
        "until": "2026-12-01T00:00:00.000000Z",
    }  # fmt: skip
    assert month["history"] == {"player": "ann", "until": "2026-11-01T00:00:00.000000Z"}


def test_a_player_reads_their_own_only(api: Api) -> None:
    night = november(api)
    for path in ("", ".csv", ".pdf"):
        answer = night.players["ann"].get(
            f"/players/bob/period-statement{path}", query_string={"month": "2026-11"}
        )
        assert answer.status_code == 403, path
    answer = night.players["ann"].get(
        "/players/setter/period-statement", query_string={"month": "2026-11"}
    )
    assert answer.status_code == 403
    # The setter and an auditor read anyone's; a croupier nobody's.
    assert statement(night, night.bank, month="2026-11")["closing"] == 820
    assert statement(night, night.auditor, "bob", month="2026-11")["closing"] == 950
    answer = night.croupier.get("/players/ann/period-statement", query_string={"month": "2026-11"})
    assert answer.status_code == 403
    answer = night.bank.get("/players/nobody/period-statement", query_string={"month": "2026-11"})
    assert answer.status_code == 404
    for path in ("", ".csv", ".pdf"):  # no token
        answer = night.api.client(None).get(
            f"/players/ann/period-statement{path}", query_string={"month": "2026-11"}
        )
        assert answer.status_code == 401, path


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({}, "period"),
        ({"month": "2026-11", "week": "2026-W47"}, "month"),
        ({"month": "2026-13"}, "month"),
        ({"month": "11-2026"}, "month"),
        ({"week": "2026-W54"}, "week"),
        ({"evening": "2026-02-30"}, "evening"),
        ({"evening": "9999-12-31"}, "evening"),
        ({"evening": "0001-01-01"}, "evening"),
        ({"evening": "2" * 40}, "evening"),
        ({"evening": "2" * 5000}, "evening"),
        ({"from": "2026-11-03"}, "to"),
        ({"from": "2026-11-03", "to": "2026-11-02"}, "to"),
        ({"from": "2025-01-01", "to": "2026-11-02"}, "to"),
        ({"from": "2026-11-01", "to": "2026-11-02", "month": "2026-11"}, "from"),
    ],
)
def test_a_bad_period_is_refused_and_named(api: Api, query: dict[str, str], field: str) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    for path in ("", ".csv", ".pdf"):
        answer = bank.get(f"/players/ann/period-statement{path}", query_string=query)
        assert answer.status_code == 422, (path, query, answer.get_json())
        assert field in answer.get_json()["errors"], (path, answer.get_json())


def test_csv_has_the_figures_and_the_disputes(api: Api) -> None:
    night = november(api)
    answer = night.players["ann"].get(
        "/players/ann/period-statement.csv", query_string={"month": "2026-11"}
    )
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/csv")
    assert (
        'filename="hazard-statement-ann-month-2026-11.csv"' in answer.headers["Content-Disposition"]
    )
    text = answer.get_data(as_text=True)
    assert text.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    amounts = {r[0]: int(r[2]) for r in rows if len(r) == 4 and r[2].lstrip("-").isdigit()}
    assert amounts["Balance at the start"] == 0
    assert amounts["Balance at the end"] == 820
    between = [int(r[2]) for r in rows if len(r) == 4 and r[0] and r[2].lstrip("-").isdigit()]
    # The lines from the start to the end add up: start + each line == end.
    assert sum(between[1:7]) + between[0] == between[7] == 820
    assert amounts["Won less lost"] == 110 and amounts["Net deposits"] == 900
    [dispute] = [r for r in rows if len(r) == 8 and r[1] == "t1"]
    assert dispute[6:] == ["voided", "-160"]


def test_pdf_prints_the_statement_on_one_page(api: Api) -> None:
    night = november(api)
    answer = night.players["ann"].get(
        "/players/ann/period-statement.pdf", query_string={"month": "2026-11"}
    )
    assert answer.status_code == 200, answer.get_json()
    assert answer.headers["Content-Type"] == "application/pdf"
    pdf = answer.get_data()
    SHOTS.mkdir(parents=True, exist_ok=True)
    [png] = save_pngs(pdf, SHOTS, f"period-statement-{api.book.store.engine.dialect.name}")
    [text] = page_texts(pdf)
    for said in ("ann", "2026-11", "Balance at the start", "£0.00", "Balance at the end",
                 "£8.20", "voided", "hazard verify FILE", "+£1.60", "-£0.50"):  # fmt: skip
        assert said in text, said
    with Image.open(png) as image:
        assert ink(image) > 0.01
        assert ink_at_edges(image, 20) == 0
