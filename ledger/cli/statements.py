"""`hazard statement`: a player's statement for a period (ledger.books.periodstatement),
as text, JSON, CSV or PDF (ledger.exports.periodpaper, ledger.printing), and the
commands that export the file proving it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from ledger import house, printing
from ledger.books import periods, periodstatement
from ledger.books.accounts import account_stream, player_account
from ledger.cli import _book, database_option
from ledger.exports import periodpaper
from ledger.service import is_name

FORMATS = ("text", "json", "csv", "pdf")


@click.command()
@click.option("--player", required=True, metavar="P", help="whose statement")
@click.option("--evening", metavar="N/YYYY-MM-DD", help="an evening: its number, or the club's day")
@click.option("--week", metavar="YYYY-Www", help="an ISO week, Monday to Sunday")
@click.option("--month", metavar="YYYY-MM", help="a month")
@click.option("--from", "start", metavar="YYYY-MM-DD", help="a range's first day (with --to)")
@click.option("--to", "end", metavar="YYYY-MM-DD", help="a range's last day, included")
@click.option("--format", "form", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output", metavar="FILE", help="write to FILE (a PDF needs one)")
@database_option
def statement(
    player: str,
    evening: str | None,
    week: str | None,
    month: str | None,
    start: str | None,
    end: str | None,
    form: str,
    output: str | None,
    database_url: str | None,
) -> None:
    """A player's statement for a period, in the club's time zone (HAZARD_TIMEZONE):
    the balance at the start and at the end, deposits and withdrawals, bets won and
    lost, disputes' adjustments and stakes in play, which add up to the end exactly;
    and the export that proves it (`hazard verify FILE` prints the same movements).
    Exits 1 if the figures do not add up."""
    if form == "pdf" and output is None:
        raise click.UsageError("a PDF goes to a file: give -o FILE")
    club = house.from_settings()
    found = _statement(player, club.zone, database_url, evening, week, month, start, end)
    if form == "json":
        text = json.dumps(_view(found), sort_keys=True, default=str, indent=2) + "\n"
    elif form == "csv":
        text = periodpaper.csv_of(found, club)
    elif form == "pdf":
        try:
            paper = printing.pdf_of(periodpaper.html_of(found, club))
        except printing.PrintingUnavailable as exc:
            raise click.ClickException(str(exc)) from None
        Path(str(output)).write_bytes(paper)
        text = ""
    else:
        text = "\n".join(_lines(found, club)) + "\n"
    if form != "pdf":
        if output is None:
            click.echo(text, nl=False)
        else:
            Path(output).write_text(text, encoding="utf-8", newline="")
    wrong = found.check()
    for said in wrong:
        click.echo(f"does not add up: {said}", err=True)
    if wrong:
        raise SystemExit(1)


def _statement(
    player: str,
    zone: str,
    database_url: str | None,
    evening: str | None,
    week: str | None,
    month: str | None,
    start: str | None,
    end: str | None,
) -> periodstatement.Statement:
    if not is_name(player):
        raise click.BadParameter(f"{player[:40]!r} is not a player's name", param_hint="--player")
    store = _book(database_url).store
    try:
        with store.engine.connect() as conn:
            if not store.stream_version(conn, account_stream(player_account(player))):
                raise click.ClickException(f"there is no player {player!r}")
            try:
                period = periods.asked(
                    conn, zone, evening=evening, week=week, month=month, start=start, end=end
                )
            except periods.PeriodError as exc:
                raise click.BadParameter(exc.message, param_hint=f"--{exc.field}") from None
            return periodstatement.of(conn, player, period)
    finally:
        store.engine.dispose()


def _view(s: periodstatement.Statement) -> dict[str, object]:
    return {
        "player": s.player,
        "period": s.period.__dict__,
        **{k: getattr(s, k) for k in ("opening", "closing", "deposited", "withdrawn",
                                      "staked", "paid", "adjusted", "won", "winnings", "lost",
                                      "losses", "voided", "returned", "in_play")},
        "net_deposits": s.net_deposits,
        "net_play": s.net_play,
        "disputes": [d.__dict__ for d in s.disputes],
        "proof": periodpaper.proof(s),
        "history": periodpaper.history(s),
    }  # fmt: skip


def _lines(s: periodstatement.Statement, club: house.House) -> list[str]:
    p = s.period
    out = [
        f"{s.player}'s statement, {p.kind} {p.key}: {club.when(p.since)} up to "
        f"{club.when(p.until)} (positions {p.after + 1}..{p.through})"
    ]
    rows = periodpaper.lines(s)
    for i, (what, count, amount) in enumerate(rows):
        bets = f"{count:>5}" if count is not None else " " * 5
        edge = i in (0, len(rows) - 1)
        out.append(f"  {what:<48} {bets}  {club.money(amount, signed=not edge):>14}")
    for what, amount in periodpaper.totals(s):
        out.append(f"  {what:<48} {'':5}  {club.money(amount):>14}")
    out.append(f"disputes: {len(s.disputes) or 'none'}")
    for d in s.disputes:
        outcome = d.resolution or "open"
        out.append(
            f"  {d.table} round {d.round} ({d.dispute_id}), raised by {d.claimant}: "
            f"{d.claim!r}; {outcome}; moved {club.money(d.moved, signed=True)}"
        )
    proof = periodpaper.proof(s)
    export = " ".join(f"--{k} {shlex.quote(v)}" for k, v in proof.items())
    out.append(f"prove it: hazard export {export} -o FILE && hazard verify FILE")
    history = " ".join(f"--{k} {shlex.quote(v)}" for k, v in periodpaper.history(s).items())
    out.append(f"the balance at the start: hazard export {history} -o FILE (its net)")
    return out
