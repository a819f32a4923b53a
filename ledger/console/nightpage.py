"""The night report as people read it: the console's page (ledger.console.evenings)
and the PDF (ledger.printing), from the same template part (_night.html) and the same
charts, so the paper says what the screen says. The API's PDF and the CLI's call `pdf`
here; the figures are ledger.books.nightreport's.

The PDF is rendered outside any request (the CLI has none): a Jinja environment of its
own over the console's templates, with the club's money filters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from ledger import printing
from ledger.console import charts
from ledger.console.office import _money_ticks
from ledger.house import House

TEMPLATES = Path(__file__).parent / "templates"


def charts_of(night: dict[str, Any], house: House) -> dict[str, charts.Chart]:
    """The report's charts: takings per table and per player, and the cash-up."""
    money = _money_ticks(house)
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


def pdf(night: dict[str, Any], house: House) -> bytes:
    """The night report on A4, one or two pages, the covering checkpoint printed."""
    return printing.pdf_of(html(night, house))


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
