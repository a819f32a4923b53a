"""`hazard odds` and `hazard simulate`: the game's arithmetic, exact and played out.
Neither opens a database."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import TextIO, cast

import click

from engine.dice import MAINS
from engine.errors import RuleSetError
from engine.odds import fraction_text, main_odds, random_main_p_win, table
from engine.rules import MainMethod, RuleSet
from engine.rulesets import BUILTIN, DEFAULT
from ledger.cli import _Null
from ledger.rulesource import load_ruleset
from ledger.simulate import expected, wilson
from ledger.simulate import simulate as run_simulation

RULESET_HELP = f"a built-in rule set ({', '.join(BUILTIN)}) or a .json/.toml file"


def _ruleset(name: str) -> RuleSet:
    try:
        return load_ruleset(name)
    except RuleSetError as exc:
        raise click.BadParameter(str(exc), param_hint="--ruleset") from None


def _pct(value: Fraction) -> str:
    return f"{float(value) * 100:.2f}%"


@click.command()
@click.option("--ruleset", default=DEFAULT, show_default=True, help=RULESET_HELP)
@click.option("--json", "as_json", is_flag=True, help="print JSON, fractions as n/d strings")
def odds(ruleset: str, as_json: bool) -> None:
    """Exact odds of the round for each main, and for a main set by preliminary roll."""
    rules = _ruleset(ruleset)
    if as_json:
        click.echo(json.dumps(table(rules), indent=2))
        return
    click.echo(f"Rule set {rules.name}: {rules.description}".rstrip(": "))
    click.echo()
    click.echo(f"{'main':>4}  {'P(nick)':>8}  {'P(out)':>8}  {'P(caster wins)':<26}  disadvantage")
    for m in MAINS:
        o = main_odds(rules, m)
        win = f"{fraction_text(o.p_win)} = {float(o.p_win):.4f}"
        click.echo(
            f"{m:>4}  {fraction_text(o.p_nick):>8}  {fraction_text(o.p_out):>8}  {win:<26}  "
            f"{fraction_text(o.disadvantage)} = {_pct(o.disadvantage)}"
        )
    p = random_main_p_win(rules)
    how = (
        "the first roll as the main (a roll outside 5..9 loses)"
        if rules.main_method is MainMethod.FIRST_ROLL
        else "a main set by preliminary roll, re-tossed until 5..9"
    )
    click.echo()
    click.echo(
        f"With {how}: P(caster wins) = {fraction_text(p)} = {float(p):.4f}, "
        f"disadvantage {fraction_text(1 - 2 * p)} = {_pct(1 - 2 * p)}"
    )


@click.command()
@click.option("--ruleset", default=DEFAULT, show_default=True, help=RULESET_HELP)
@click.option("--rounds", type=click.IntRange(min=1), default=100_000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the dice")
@click.option(
    "--main",
    "fixed_main",
    type=click.IntRange(5, 9),
    default=None,
    help="always call this main (called-main rule sets only); default: chosen by a "
    "preliminary roll",
)
@click.option("--progress/--no-progress", default=None, help="progress bar (default: on a tty)")
def simulate(
    ruleset: str, rounds: int, seed: int, fixed_main: int | None, progress: bool | None
) -> None:
    """Play ROUNDS rounds through the engine with seeded dice; compare with the exact odds."""
    rules = _ruleset(ruleset)
    if fixed_main is not None and rules.main_method is not MainMethod.CALLED:
        raise click.BadParameter(
            f"under {rules.name} rules the main is thrown", param_hint="--main"
        )
    show = sys.stderr.isatty() if progress is None else progress
    out: TextIO = sys.stderr if show else cast(TextIO, _Null())
    with click.progressbar(length=rounds, label="rounds", file=out) as bar:
        result = run_simulation(rules, rounds, seed, fixed_main, progress=bar.update)
    click.echo(f"{rounds} rounds of {rules.name}, seed {seed}; 99% Wilson intervals")
    click.echo(f"{'':<34} {'rounds':>8} {'observed':>9} {'99% interval':>17} {'exact':>8}")
    checked = outside = 0
    for label, tally, p_win, p_nick, p_out in expected(result):
        rows = [
            ("P(win)", tally.wins, p_win),
            ("P(nick)", tally.nicks, p_nick),
            ("P(out)", tally.outs, p_out),
        ]
        for what, count, exact in rows:
            if exact is None or tally.rounds == 0:
                continue
            lo, hi = wilson(count, tally.rounds)
            inside = lo <= float(exact) <= hi
            checked += 1
            outside += not inside
            click.echo(
                f"{what + ' ' + label:<34} {tally.rounds:>8} {count / tally.rounds:>9.4f} "
                f"[{lo:.4f}, {hi:.4f}] {float(exact):>8.4f}  {'ok' if inside else 'OUTSIDE'}"
            )
    click.echo(
        f"{outside} of {checked} exact figures fall outside their 99% interval "
        f"(about {checked / 100:.2f} would by chance alone)"
    )
