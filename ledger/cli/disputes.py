"""`hazard dispute`: disputed rounds opened, listed, shown and resolved, through the
same commands the API's /disputes call (ledger.audit.disputes)."""

from __future__ import annotations

import json
from typing import Any

import click

from engine.state import SETTER
from ledger.audit import disputes
from ledger.cli import _club, database_option
from ledger.commands import disputes as commands
from ledger.service import is_name
from ledger.store.actors import Actor


@click.group()
def dispute() -> None:
    """Disputed rounds: opened with the service's answer at once, and the setter's
    resolution (upheld, voided, corrected). A refused command writes nothing and
    exits 1, naming the rule."""


CLI_SETTER = "setter:cli"
"""The actor the setter's writes from the command line are recorded under: no token
writes them, so no token's tag is in it (ledger.store.actors)."""


def _claimant(who: str) -> tuple[str, str, str]:
    """(actor, claimant, role) for `--as`: `setter` disputes as the bank, as the API's
    setter does; `croupier:NAME` and `player:NAME` as themselves, recorded as that,
    with no token's tag: the command line holds none."""
    if who == SETTER:
        return CLI_SETTER, SETTER, SETTER
    if Actor.read(who).tag is not None:
        raise click.BadParameter(
            f"{who!r}: the command line holds no token, so it writes under a name and never "
            "a token's tag: give croupier:NAME or player:NAME",
            param_hint="--as",
        )
    role, _, name = who.partition(":")
    if role not in ("croupier", "player") or not is_name(name):
        raise click.BadParameter(
            f"{who!r}: give setter, croupier:NAME or player:NAME", param_hint="--as"
        )
    return who, name, role


@dispute.command("open")
@click.option("--table", required=True, metavar="T", help="the table")
@click.option("--round", "round_", type=int, required=True, metavar="N", help="the round")
@click.option("--claim", required=True, metavar="TEXT", help="what went wrong, in words")
@click.option(
    "--throw",
    type=int,
    metavar="V",
    help="the version of the throw disputed (default, with --dice: the round's last throw)",
)
@click.option("--dice", type=(int, int), metavar="D1 D2", help="the dice the throw showed")
@click.option(
    "--as",
    "who",
    default="setter",
    show_default=True,
    metavar="WHO",
    help="who opens it: setter, croupier:NAME, or player:NAME (who had money in the round)",
)
@click.option("--json", "as_json", is_flag=True, help="print the API's answer")
@database_option
def dispute_open(
    table: str,
    round_: int,
    claim: str,
    throw: int | None,
    dice: tuple[int, int] | None,
    who: str,
    as_json: bool,
    database_url: str | None,
) -> None:
    """Dispute a round that has ended, and print the service's answer: whether the
    recorded settlements match the round derived again from its events, and with
    --dice, what the round would have been and whether it could be corrected."""
    actor, claimant, role = _claimant(who)
    with _club(database_url) as club:
        found = commands.open_dispute(
            club, table, actor, role, claimant, round_, claim, throw, dice
        )
    if as_json:
        click.echo(json.dumps(found, indent=2, sort_keys=True))
        return
    click.echo(
        f"dispute {found['dispute_id']} opened over round {round_} of table {table} by {actor}"
    )
    _echo_answer(found["answer"])


def _echo_answer(answer: dict[str, Any] | None) -> None:
    """The service's answer (ledger.audit.disputes.answer_view) in lines."""
    if answer is None:
        return
    if answer["matches"]:
        click.echo(
            f"answer: the recorded settlements match the round's events ({answer['result']})"
        )
    else:
        click.echo(f"answer: the recorded settlements do NOT match: {answer['mismatch']}")
    _echo_paid(answer["bets"])
    what = answer["what_if"]
    if what is None:
        return
    d1, d2 = what["dice"]
    click.echo(
        f"what if throw v{what['throw']} was {d1}+{d2}: {what['result'] or 'in play'}, "
        f"main {what['main'] or '-'}, chance {what['chance'] or '-'}"
        + (f" (stopped: {what['stopped']})" if what["stopped"] else "")
    )
    _echo_paid(what["bets"])
    if not what["correctable"]:
        click.echo(f"  not correctable ({what['refused_rule']}): {what['refused']}")
        return
    click.echo("  correctable; a correction would post:")
    if not what["adjustments"]:
        click.echo("    nothing: every bet paid as it would have")
    for adjustment in what["adjustments"]:
        for t in adjustment["transfers"]:
            click.echo(
                f"    bet {adjustment['bet_id']}: {t['amount']} from {t['source']} to {t['target']}"
            )


def _echo_paid(bets: list[dict[str, Any]]) -> None:
    for bet in bets:
        nets = ", ".join(f"{a} {n:+d}" for a, n in bet["net"].items())
        how = f"to {bet['winner']}" if bet["winner"] else bet["outcome"]
        if bet["outcome"] == "open":  # the stakes are still held: each party's is out
            how = "open, its stakes held"
        click.echo(f"  bet {bet['bet_id']} {how}: {nets or 'nothing moved'}")


@dispute.command("list")
@click.option("--table", metavar="T", help="one table's (default: every table's)")
@click.option("--status", type=click.Choice(["open", "resolved"]), help="default: both")
@click.option("--json", "as_json", is_flag=True, help="print the API's page")
@database_option
def dispute_list(
    table: str | None, status: str | None, as_json: bool, database_url: str | None
) -> None:
    """Disputes in the order they were opened (--status open: the setter's queue)."""
    items: list[dict[str, Any]] = []
    after = 0
    with _club(database_url, writing=False) as club:
        while True:
            page = disputes.listing(club, table, status, after, 500)
            items += page["items"]
            if page["next_after"] is None:
                break
            after = page["next_after"]
    if as_json:
        click.echo(json.dumps(items, indent=2, sort_keys=True))
        return
    click.echo(f"{len(items)} dispute(s)")
    for d in items:
        click.echo(
            f"{d['table']} {d['dispute_id']}: round {d['round']}, {d['status']}, by "
            f"{d['opened']['by']} at {d['opened']['at']}: {d['claim']}"
        )


@dispute.command("show")
@click.option("--table", required=True, metavar="T", help="the table")
@click.argument("dispute_id", metavar="DISPUTE_ID")
@click.option("--json", "as_json", is_flag=True, help="print the API's view")
@database_option
def dispute_show(table: str, dispute_id: str, as_json: bool, database_url: str | None) -> None:
    """A dispute: the claim, the service's answer (derived again from the round's
    events), the resolution with its reason, and the adjustments it posted."""
    with _club(database_url, writing=False) as club:
        view = disputes.dispute(club, table, dispute_id)
    if as_json:
        click.echo(json.dumps(view, indent=2, sort_keys=True))
        return
    opened = view["opened"]
    click.echo(
        f"dispute {view['dispute_id']} over round {view['round']} of table {view['table']}: "
        f"{view['status']}"
    )
    click.echo(
        f"claim by {view['claimant']} ({view['role']}; {opened['by']}, v{opened['version']}, "
        f"{opened['at']}): {view['claim']}"
    )
    if view["dice"] is not None:
        click.echo(
            f"  the dice claimed: {view['dice'][0]}+{view['dice'][1]}, throw v{view['throw']}"
        )
    _echo_answer(view["answer"])
    resolved = view["resolved"]
    if resolved is None:
        click.echo("resolution: none yet")
        return
    dice = resolved["dice"]
    corrected = f" (throw v{resolved['throw']} as {dice[0]}+{dice[1]})" if dice else ""
    click.echo(
        f"resolution: {resolved['resolution']}{corrected} by {resolved['by']}, "
        f"v{resolved['version']}, {resolved['at']}: {resolved['reason']}"
    )
    for adjustment in view["adjustments"]:
        for t in adjustment["transfers"]:
            click.echo(
                f"  {adjustment['adjustment']} of bet {adjustment['bet_id']} "
                f"(v{adjustment['version']}): {t['amount']} from {t['source']} to {t['target']}"
            )


@dispute.command("resolve")
@click.option("--table", required=True, metavar="T", help="the table")
@click.argument("dispute_id", metavar="DISPUTE_ID")
@click.option("--resolution", type=click.Choice(["upheld", "voided", "corrected"]), required=True)
@click.option("--reason", required=True, metavar="TEXT", help="the setter's reason")
@click.option("--throw", type=int, metavar="V", help="corrected: the version of the throw")
@click.option("--dice", type=(int, int), metavar="D1 D2", help="corrected: the dice it showed")
@click.option("--json", "as_json", is_flag=True, help="print the API's answer")
@database_option
def dispute_resolve(
    table: str,
    dispute_id: str,
    resolution: str,
    reason: str,
    throw: int | None,
    dice: tuple[int, int] | None,
    as_json: bool,
    database_url: str | None,
) -> None:
    """Resolve a dispute, as the setter: upheld (nothing moves), voided (every bet of
    the round reversed, party to party) or corrected (with --throw and --dice: the
    difference each bet should have paid, posted)."""
    with _club(database_url) as club:
        found = commands.resolve_dispute(
            club, table, CLI_SETTER, dispute_id, resolution, reason, throw, dice
        )
    if as_json:
        click.echo(json.dumps(found, indent=2, sort_keys=True))
        return
    click.echo(
        f"dispute {dispute_id} {resolution} by {CLI_SETTER}, at version "
        f"{found['events'][0]['version']}"
    )
    for event in found["events"][1:]:
        for t in event["transfers"]:
            click.echo(
                f"  {event['payload']['adjustment']} of bet {event['payload']['bet_id']}: "
                f"{t['amount']} from {t['source']} to {t['target']}"
            )
