"""`hazard evening`: the setter opens an evening with its floats, cashes it up, lists
the evenings and prints a night report (as lines, as the API's JSON, or as the PDF),
through the same commands and books the API and the console call
(ledger.commands.evenings, ledger.books.nightreport). Counts are in minor units, as
the API takes them; the report speaks the club's money (HAZARD_CURRENCY)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ledger import house
from ledger.books import nightreport
from ledger.cli import _club, database_option
from ledger.commands import Caller, Role
from ledger.commands import evenings as commands

CLI_SETTER = Caller(Role.SETTER, "cli")
"""The setter at the command line: recorded as `setter:cli` (no token, no tag)."""


def _counts(pairs: tuple[str, ...], option: str) -> dict[str, Any]:
    """TABLE=MINOR pairs, as the command takes them; the command checks the rest."""
    found: dict[str, Any] = {}
    for pair in pairs:
        table, sep, amount = pair.partition("=")
        if not sep or not amount.isascii() or not amount.isdigit() or len(amount) > 20:
            raise click.BadParameter(
                f"{pair!r}: give TABLE=AMOUNT, the amount in minor units (0 to 10^12)",
                param_hint=option,
            )
        if table in found:
            raise click.BadParameter(f"table {table!r} is counted twice", param_hint=option)
        found[table] = int(amount)
    return found


@click.group()
def evening() -> None:
    """The club's evenings: opened with a float per table and at the cage, closed with
    the cash-up (count, expected, difference per place). A refused command writes
    nothing and exits 1, naming the rule."""


@evening.command("open")
@click.option("--float", "floats", multiple=True, metavar="TABLE=AMOUNT", help="a table's float")
@click.option("--cage", type=click.IntRange(0), default=0, show_default=True, help="the cage's")
@database_option
def evening_open(floats: tuple[str, ...], cage: int, database_url: str | None) -> None:
    """Open the next evening: `--float t1=5000 --float t2=5000 --cage 20000`."""
    counted = _counts(floats, "--float")
    with _club(database_url) as club:
        try:
            answer = commands.open_evening(club, CLI_SETTER, counted, cage)
        except commands.EveningRefused as exc:
            click.echo(f"refused ({exc.rule}): {exc.detail}; nothing was written", err=True)
            raise SystemExit(1) from None
    click.echo(f"opened evening {answer['evening']}")


@evening.command("cash-up")
@click.option("--count", "counts", multiple=True, metavar="TABLE=AMOUNT", help="a table's count")
@click.option("--cage", type=click.IntRange(0), required=True, help="the cash at the cage")
@database_option
def evening_cash_up(counts: tuple[str, ...], cage: int, database_url: str | None) -> None:
    """Close the evening open now with the cash counted at each of its tables and at the
    cage; prints each place's count, expected and difference."""
    counted = _counts(counts, "--count")
    with _club(database_url) as club:
        try:
            answer = commands.close_evening(club, CLI_SETTER, counted, cage)
        except commands.EveningRefused as exc:
            click.echo(f"refused ({exc.rule}): {exc.detail}; nothing was written", err=True)
            raise SystemExit(1) from None
    click.echo(f"closed evening {answer['evening']}")
    for line in answer["cash_up"]:
        click.echo(
            f"  {line['place']}: counted {line['counted']}, expected {line['expected']}, "
            f"difference {line['difference']:+d}"
        )


@evening.command("list")
@database_option
def evening_list(database_url: str | None) -> None:
    """Every evening, in the order opened."""
    with _club(database_url, writing=False) as club:
        found = nightreport.listing(club.store)
    for e in found:
        closed = (
            f"closed {e['closed_at']}, difference {e['difference']:+d}" if not e["open"] else "open"
        )
        click.echo(f"evening {e['evening']}: opened {e['opened_at']} by {e['opened_by']}; {closed}")


@evening.command("report")
@click.argument("number", type=click.IntRange(1))
@click.option("--json", "as_json", is_flag=True, help="print the API's JSON")
@click.option("--pdf", type=click.Path(dir_okay=False, path_type=Path), help="write the PDF here")
@database_option
def evening_report(number: int, as_json: bool, pdf: Path | None, database_url: str | None) -> None:
    """The night report of evening NUMBER."""
    club_house = house.from_settings()
    with _club(database_url, writing=False) as club:
        night = nightreport.of_evening(club.store, number)
    if night is None:
        raise click.ClickException(f"there is no evening {number}")
    if pdf is not None:
        from ledger.web import nightpage  # WeasyPrint, only when a PDF is asked for

        pdf.write_bytes(nightpage.pdf(night, club_house))
        click.echo(f"wrote {pdf}")
        return
    if as_json:
        click.echo(json.dumps(night, indent=2))
        return
    for line in lines(night, club_house):
        click.echo(line)


def lines(night: dict[str, Any], club_house: house.House) -> list[str]:
    """The night report as lines of text, in the club's money."""
    money = club_house.money
    state = "open" if night["open"] else f"closed {night['closed_at']} by {night['closed_by']}"
    out = [
        f"evening {night['evening']}: opened {night['opened_at']} by {night['opened_by']}; {state}",
        f"takings: {money(night['takings']['total'], signed=True)} to the setter",
    ]
    out += [
        f"  table {t['table']}: {money(t['net'], signed=True)}" for t in night["takings"]["tables"]
    ]
    out += [
        f"  player {p['player'] or '(no taker yet)'}: {money(p['net'], signed=True)}"
        for p in night["takings"]["players"]
    ]
    cage = night["cage"]
    out.append(
        f"cage: deposits {money(cage['deposits'])}, withdrawals {money(cage['withdrawals'])}"
    )
    for line in night["cash_up"]:
        out.append(
            f"cash-up {line['place']}: float {money(line['float'])}, expected "
            f"{money(line['expected'])}, counted {money(line['counted'])}, difference "
            f"{money(line['difference'], signed=True)}"
        )
    out.append(f"largest exposure: {money(night['exposure']['largest'])}")
    play = night["play"]["totals"]
    out.append(
        f"play: {play['rounds']} rounds, {play['throws']} throws, {play['throws_voided']} throws "
        f"voided, {play['bets_voided']} bets voided, {play['disputes_opened']} disputes opened, "
        f"{play['disputes_resolved']} resolved, {play['adjustments']} adjustments"
    )
    checkpoint = night["checkpoint"]
    if checkpoint is not None:
        out.append(
            f"checkpoint covering it: size {checkpoint['size']}, issued {checkpoint['issued_at']}"
        )
        out += ["  " + text for text in checkpoint["note"].splitlines()]
    return out
