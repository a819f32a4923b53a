"""A player's statement for a period (ledger.books.periodstatement) on paper: CSV for a
spreadsheet, and HTML that the console shows and ledger.printing prints as a PDF, the
one page of both; and the export that proves it.

The CSV is a sheet of figures, a row each (what, count, minor units, the same amount as
a decimal in the club's minor units), then the disputes, written by the csv module with
the export sheets' rules (ledger.exports.sheets: a byte order mark, CRLF, text that a
spreadsheet would take for a formula quoted). Amounts are integers throughout.

The proof is the player's export for the same times (`proof`): its closing's money for
the player's account is the statement's movements, line for line, and `hazard verify
FILE` prints them as the statement's figures (ledger.exports.verdict). The balance at
the start is the history before it: the export up to the period's start (`history`),
whose money for the account comes to that balance.
"""

from __future__ import annotations

import csv
import io

import jinja2
from markupsafe import Markup

from ledger.books.periodstatement import Statement
from ledger.exports.sheets import BOM, decimal, escaped
from ledger.house import House

MEDIA_TYPE = "text/csv; charset=utf-8"


def lines(statement: Statement) -> list[tuple[str, int | None, int]]:
    """The statement's figures as it reads from top to bottom: what, how many (bets),
    and the amount it added to (+) or took from (-) the balance, in minor units; the
    lines between the start and the end add up to the end, exactly."""
    s = statement
    return [
        ("Balance at the start", None, s.opening),
        ("Deposited", None, s.deposited),
        ("Withdrawn", None, -s.withdrawn),
        ("Bets won: winnings over the stakes", s.won, s.winnings),
        ("Bets lost: the stakes", s.lost, -s.losses),
        ("Disputes' adjustments", None, s.adjusted),
        ("Stakes put in play, less stakes of bets closed", None, -s.in_play),
        ("Balance at the end", None, s.closing),
    ]


def totals(statement: Statement) -> list[tuple[str, int]]:
    """What the lines come to, and the movements as the export counts them."""
    s = statement
    return [
        ("Net deposits", s.net_deposits),
        ("Won less lost", s.net_play),
        ("Bets voided: stakes returned", s.returned),
        ("Staked (export: staked)", s.staked),
        ("Paid out of bets (export: paid)", s.paid),
        ("Change in balance", s.closing - s.opening),
    ]


def proof(statement: Statement) -> dict[str, str]:
    """The export's query (GET /export, `hazard export`) for the period's movements."""
    p = statement.period
    return {"player": statement.player, "since": p.since, "until": p.until}


def history(statement: Statement) -> dict[str, str]:
    """The export's query for the history before the period: its money for the account
    comes to the balance at the start."""
    return {"player": statement.player, "until": statement.period.since}


def filename(statement: Statement, suffix: str) -> str:
    """A file name that says whose and when: hazard-statement-ann-month-2026-11.csv (names
    are safe in a file name: accounts.NAME)."""
    p = statement.period
    return f"hazard-statement-{statement.player}-{p.kind}-{p.key.replace('..', '-to-')}.{suffix}"


def csv_of(statement: Statement, house: House) -> str:
    """The statement as a CSV sheet, with a byte order mark for Excel."""
    out = io.StringIO()
    out.write(BOM)
    write = csv.writer(out).writerow
    p = statement.period
    write(["player", escaped(statement.player)])
    write(["period", p.kind, p.key])
    write(["since", p.since])
    write(["until", p.until])
    write(["positions", p.after + 1, p.through])
    write([])
    write(["line", "bets", "amount_minor", "amount"])
    for what, count, amount in lines(statement):
        write([what, "" if count is None else count, amount, decimal(amount, house.minor_units)])
    for what, amount in totals(statement):
        write([what, "", amount, decimal(amount, house.minor_units)])
    write([])
    write(["dispute", "table", "round", "claimant", "claim", "opened_at", "outcome", "moved_minor"])
    for d in statement.disputes:
        write([
            escaped(d.dispute_id), escaped(d.table), d.round, escaped(d.claimant),
            escaped(d.claim), d.opened_at, d.resolution or "open", d.moved,
        ])  # fmt: skip
    return out.getvalue()


_PAGE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Statement: {{ s.player }}, {{ s.period.key }}</title>
<style>
@page { size: A4; margin: 18mm 16mm; }
body { font-family: "DejaVu Sans", sans-serif; font-size: 10pt; color: #111; }
h1 { font-size: 16pt; margin: 0 0 2mm; }
p.sub { margin: 0 0 6mm; color: #333; }
{{ css }}
</style></head>
<body>
<h1>Hazard: a player's statement</h1>
<p class="sub">{{ s.player }} &middot; {{ s.period.kind }} {{ s.period.key }} &middot;
printed from the ledger's positions {{ s.period.after + 1 }} to {{ s.period.through }}</p>
{{ body }}
</body></html>"""
)

CSS = """
.period-statement table { border-collapse: collapse; width: 100%; margin: 0 0 4mm; }
.period-statement th, .period-statement td { text-align: left; padding: 3px 6px;
  border-bottom: 1px solid #ccc; vertical-align: top; }
.period-statement td.words { overflow-wrap: anywhere; }
.period-statement td.n { text-align: right; white-space: nowrap;
  font-variant-numeric: tabular-nums; }
.period-statement tr.end td { font-weight: bold; border-top: 2px solid #111; }
.period-statement .proof { font-size: 0.9em; overflow-wrap: anywhere; }
"""
"""The statement's own styles, in the console's page and on paper."""

_BODY = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<div class="period-statement">
<p>From {{ when(s.period.since) }} up to (not including)
{{ when(s.period.until) }} (the club's time, {{ zone }}).</p>
<table aria-label="The statement's figures">
<thead><tr><th scope="col">Line</th><th scope="col">Bets</th>
<th scope="col" class="n">Amount</th></tr></thead>
<tbody>
{% for what, count, amount in lines %}
<tr{% if loop.last %} class="end"{% endif %}><td>{{ what }}</td>
<td>{{ '' if count is none else count }}</td>
<td class="n">{{ money(amount, signed=not (loop.first or loop.last)) }}</td></tr>
{% endfor %}
</tbody></table>
<table aria-label="What the figures come to">
<tbody>
{% for what, amount in totals %}
<tr><td>{{ what }}</td><td class="n">{{ money(amount) }}</td></tr>
{% endfor %}
</tbody></table>
<h2>Disputes</h2>
{% if s.disputes %}
<table aria-label="Disputes in the period">
<thead><tr><th scope="col">Round</th><th scope="col">Raised by</th>
<th scope="col">Claim</th><th scope="col">Outcome</th>
<th scope="col" class="n">Moved</th></tr></thead>
<tbody>
{% for d in s.disputes %}
<tr><td>{{ d.table }}, {{ d.round }}</td><td>{{ d.claimant }}</td>
<td class="words">{{ d.claim }}</td>
<td class="words">{{ d.resolution or 'open' }}{% if d.reason %}: {{ d.reason }}{% endif %}</td>
<td class="n">{{ money(d.moved, signed=True) }}</td></tr>
{% endfor %}
</tbody></table>
{% else %}
<p>None in this period.</p>
{% endif %}
<p class="proof">The proof: the player's export for the same times
(player={{ s.player }}, since={{ s.period.since }}, until={{ s.period.until }}).
<code>hazard verify FILE</code> checks it offline and prints these movements: deposited
{{ s.deposited }}, withdrawn {{ s.withdrawn }}, staked {{ s.staked }}, paid {{ s.paid }},
adjusted {{ s.adjusted }} (minor units), which come to the change in balance,
{{ s.closing - s.opening }}. The export up to {{ s.period.since }} proves the balance at
the start.</p>
</div>"""
)


def body_of(statement: Statement, house: House) -> str:
    """The statement as the console's page shows it, and the paper prints it."""
    return _BODY.render(
        s=statement,
        lines=lines(statement),
        totals=totals(statement),
        money=house.money,
        when=house.when,
        zone=house.zone,
    )


def html_of(statement: Statement, house: House) -> str:
    """A whole page to print (ledger.printing.pdf_of), on A4."""
    return _PAGE.render(s=statement, css=Markup(CSS), body=Markup(body_of(statement, house)))
