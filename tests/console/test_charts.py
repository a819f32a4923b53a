"""The office's and the auditor's charts (ledger.web.charts, templates/_chart.html):
every chart has a scale, round ticks labelled in its unit, and stays readable with one
bar or a hundred."""

from __future__ import annotations

import re

from flask import render_template

from ledger.web import charts
from tests.api.conftest import Api


def pounds(ticks: list[int]) -> list[str]:
    return [f"£{t / 100:,.2f}".replace("£-", "-£") for t in ticks]


def test_the_scale_is_round_figures_that_hold_every_value() -> None:
    assert charts.scale(-100, 60) == [-100, -50, 0, 50, 100]
    assert charts.scale(0, 2) == [0, 1, 2]  # whole numbers: never a tick at 0.5
    assert charts.scale(0, 0) == [0, 1]
    assert charts.scale(3, 7) == [0, 2, 4, 6, 8]  # from zero, so that bars compare
    assert charts.scale(0, 98_765) == [0, 20_000, 40_000, 60_000, 80_000, 100_000]


def test_one_column_is_a_bar_of_modest_width_on_a_labelled_scale() -> None:
    chart = charts.columns([("2 Jul", 6000)], "Takings", "GBP", labels=pounds)
    [bar] = chart.bars
    assert bar.width <= charts.MAX_BAR
    assert chart.ticks[0].label == "£0.00" and chart.ticks[-1].value >= 6000
    assert abs(bar.y + bar.height - chart.zero) < 0.01  # standing on the zero line
    assert [n.text for n in chart.names] == ["2 Jul"]


def test_a_hundred_columns_fit_with_their_labels_thinned() -> None:
    items = [(f"{d} Jul", (-1) ** d * d * 100) for d in range(100)]
    chart = charts.columns(items, "Takings", "GBP", labels=pounds)
    assert len(chart.bars) == 100
    assert all(chart.left <= b.x and b.x + b.width <= chart.right + 0.01 for b in chart.bars)
    assert all(b.width > 1 for b in chart.bars)
    # Names far enough apart not to overlap, the newest always among them.
    assert chart.names[-1].text == "99 Jul"
    gaps = [b.x - a.x for a, b in zip(chart.names, chart.names[1:], strict=False)]
    assert min(gaps) >= charts.CHAR * len("99 Jul")
    assert len(chart.ticks) >= 3 and all(t.label for t in chart.ticks)
    assert any(b.negative and b.y >= chart.zero - 0.01 for b in chart.bars)


def test_rows_grow_downwards_with_the_names() -> None:
    two = charts.rows([("t1", [-50, 0]), ("t2", [10, 30])], "Per table", "GBP", ["a", "b"])
    hundred = charts.rows(
        [(f"player-{i}", [i, 0]) for i in range(100)], "Per player", "GBP", ["a", "b"]
    )
    assert hundred.height > 10 * two.height / 2
    assert hundred.bars[1].height == two.bars[1].height  # a row is as tall either way
    negative = two.bars[0]
    assert negative.negative and abs(negative.x + negative.width - two.zero) < 0.01
    assert hundred.names[0].text == "player-0"
    long = charts.rows([("a" * 60, [1])], "Per player", "GBP", ["takings"])
    assert long.names[0].text.endswith("…") and long.names[0].full == "a" * 60


def test_the_chart_is_drawn_with_its_ticks_labelled(sqlite_api: Api) -> None:
    chart = charts.columns([("1 Jul", -10_000), ("2 Jul", 6000)], "Takings", "GBP", pounds)
    with sqlite_api.app.test_request_context():
        svg = render_template("_chart.html", chart=chart, chart_id="c")
    ticks = re.findall(r'class="tick">([^<]+)<', svg)
    assert ticks == ["-£100.00", "-£50.00", "£0.00", "£50.00", "£100.00"]
    assert svg.count("<rect ") == 2 and 'class="grid axis"' in svg
    assert "<title>2 Jul: £60.00</title>" in svg
    assert re.search(r'<title id="c-title">Takings \(GBP\)</title>', svg)
