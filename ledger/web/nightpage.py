"""The night report as people read it: the console's page (ledger.console.evenings)
and the PDF (ledger.printing), from the same template part (_night.html) and the same
charts, so the paper says what the screen says. The API's PDF and the CLI's call `pdf`
here; the figures are ledger.books.nightreport's.

The PDF is rendered outside any request (the CLI has none): a Jinja environment of its
own over the console's templates, with the club's money filters. It sits below the
console and the API (ledger.web), which both serve it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from ledger import printing
from ledger.house import House
from ledger.web import charts

TEMPLATES = Path(__file__).parents[1] / "console" / "templates"
"""The console's templates: the page and the paper are drawn from the same parts."""


def charts_of(night: dict[str, Any], house: House) -> dict[str, charts.Chart]:
    """The report's charts: takings per table and per player, and the cash-up."""
    money = charts.money_ticks(house)
    unit = house.currency
    return {
        "tables_chart": charts.rows(
            [(t["table"], [t["net"]]) for t in night["takings"]["tables"]],
            title="The setter's takings per table",
            unit=unit,
            series=["takings"],
            labels=money,
        ),
        "players_chart": charts.rows(
            [(p["player"] or "no taker yet", [p["net"]]) for p in night["takings"]["players"]],
            title="The setter's takings per player",
            unit=unit,
            series=["takings"],
            labels=money,
        ),
        "cash_chart": charts.rows(
            [(line["place"], [line["expected"], line["counted"]]) for line in night["cash_up"]],
            title="The cash-up: expected and counted per place",
            unit=unit,
            series=["expected", "counted"],
            labels=money,
        ),
    }


PAPER_ROWS = 10
"""The most tables, players or places the paper lists one by one: the rest are one
line, "N others", with their sum, so a busy evening still prints on two pages (the
screen and the API list every one)."""


def pdf(night: dict[str, Any], house: House) -> bytes:
    """The night report on A4, one or two pages, the covering checkpoint printed."""
    return printing.pdf_of(html(for_paper(night), house))


def for_paper(night: dict[str, Any]) -> dict[str, Any]:
    """`night` with each list cut to the PAPER_ROWS that matter most and one line summing
    the others: takings per table and per player by how much the setter won or lost,
    the cash-up by its difference (the cage always shown), the play by rounds."""
    takings = dict(night["takings"])
    takings["tables"] = _cut(takings["tables"], "table", lambda r: abs(r["net"]))
    takings["players"] = _cut(takings["players"], "player", lambda r: abs(r["net"]))
    cage = [line for line in night["cash_up"] if line["table"] is None]
    tables = [line for line in night["cash_up"] if line["table"] is not None]
    cash_up = _cut(tables, "place", lambda r: abs(r["difference"]), PAPER_ROWS - len(cage))
    play = {**night["play"], "tables": _cut(night["play"]["tables"], "table", _rounds)}
    return {**night, "takings": takings, "cash_up": [*cash_up, *cage], "play": play}


def _rounds(row: dict[str, Any]) -> int:
    return int(row["rounds"])


def _cut(rows: list[dict[str, Any]], name: str, weight: Any, most: int = PAPER_ROWS) -> list[Any]:
    """The `most` rows of the greatest `weight`, the last of them "N others": every
    figure of theirs summed (a place's or a table's id is said, not summed)."""
    if len(rows) <= most:
        return rows
    ranked = sorted(rows, key=lambda r: -weight(r))
    rest = ranked[most - 1 :]
    other = {
        key: sum(r[key] for r in rest)
        for key, value in rest[0].items()
        if isinstance(value, int) and not isinstance(value, bool)
    }
    other.update({name: f"{len(rest)} others", "table": other.get("table", f"{len(rest)} others")})
    return [*ranked[: most - 1], other]


def html(night: dict[str, Any], house: House) -> str:
    """The page the PDF is printed from: every style inline, nothing fetched."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["money"] = lambda minor: house.money(minor)
    env.filters["signed"] = lambda minor: house.money(minor, signed=True)
    template = env.get_template("night_print.html")
    return template.render(
        night=night, currency=house.currency, printed=True, **charts_of(night, house)
    )
