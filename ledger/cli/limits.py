"""`hazard limits`: a player's limits and breaks, read and set from the command line
by the setter at the player's request, through the same commands the API's
/players/{name}/limits and /breaks call (ledger.commands.limits)."""

from __future__ import annotations

import json
from typing import Any

import click

from ledger.cli import _club, database_option
from ledger.commands import Caller, Role
from ledger.commands import limits as commands
from ledger.store.limits_events import LIMIT_KINDS

CLI_SETTER = Caller(Role.SETTER, "cli")
"""Who the command line's writes are recorded as: the setter, no token (setter:cli)."""


@click.group()
def limits() -> None:
    """A player's limits (deposits per 24 hours and 7 days, losses this evening and
    over 7 days, the largest stake) and breaks (a time-out, a self-exclusion). Amounts
    are minor units. Lowering binds at once; raising or removing waits for the club's
    cooling-off (HAZARD_LIMIT_COOLING_OFF hours, 24 by default). A refusal writes
    nothing and exits 1, naming the rule."""


@limits.command("show")
@click.argument("player")
@click.option("--json", "as_json", is_flag=True, help="print the API's view")
@database_option
def show(player: str, as_json: bool, database_url: str | None) -> None:
    """PLAYER's limits in force, what counts against each, a raise waiting, their break."""
    with _club(database_url, writing=False) as club:
        view = commands.standing(club, CLI_SETTER, player)
    if as_json:
        click.echo(json.dumps(view, indent=2, sort_keys=True))
        return
    click.echo(f"{player}'s limits at {view['at']}:")
    for limit in view["limits"]:
        click.echo(f"  {_line(limit)}")
    taken = view["break"]
    click.echo(f"break: a {taken['kind']} until {taken['until']}" if taken else "break: none")
    reality = view["reality"]
    click.echo(f"this evening: at the tables {reality['minutes']} minutes, net {reality['net']:+d}")


def _line(limit: dict[str, Any]) -> str:
    amount = "none" if limit["limit"] is None else str(limit["limit"])
    used = "" if limit["used"] is None else f" (so far {limit['used']})"
    waiting = limit["waiting"]
    later = ""
    if waiting is not None:
        to = "none" if waiting["limit"] is None else waiting["limit"]
        later = f"; {to} from {waiting['from']}"
    return f"{limit['words']}: {amount}{used}{later}"


@limits.command("set")
@click.argument("player")
@click.argument("kind", type=click.Choice(LIMIT_KINDS))
@click.argument("amount", metavar="AMOUNT|none")
@database_option
def set_(player: str, kind: str, amount: str, database_url: str | None) -> None:
    """Set PLAYER's limit of KIND to AMOUNT minor units (`none` removes it), at their
    request."""
    limit = _amount(amount)
    with _club(database_url) as club:
        done = commands.set_limit(club, CLI_SETTER, player, kind, limit)
    to = "none" if limit is None else str(limit)
    click.echo(f"{player}'s limit on {kind} is {to} from {done['effective_at']}")


def _amount(typed: str) -> int | None:
    if typed == "none":
        return None
    if not (typed.isascii() and typed.isdigit() and len(typed) <= 16):
        raise click.BadParameter(
            f"{typed[:20]!r} is not a whole number of minor units (or none)", param_hint="AMOUNT"
        )
    return int(typed)


@limits.command("break")
@click.argument("player")
@click.option("--time-out", "hours", type=click.IntRange(1, 10_000), help="hours, 24 to 1008")
@click.option("--self-exclusion", "months", type=click.IntRange(1, 10_000), help="months, 6 to 120")
@database_option
def take_break(
    player: str, hours: int | None, months: int | None, database_url: str | None
) -> None:
    """Start PLAYER's time-out or self-exclusion, at their request. It cannot be lifted
    or shortened."""
    if (hours is None) == (months is None):
        raise click.UsageError("give one of --time-out HOURS or --self-exclusion MONTHS")
    kind, length = ("time-out", hours) if hours is not None else ("self-exclusion", months)
    assert length is not None
    with _club(database_url) as club:
        done = commands.take_break(club, CLI_SETTER, player, kind, length)
    click.echo(f"{player} is on a {kind} until {done['until']}")
