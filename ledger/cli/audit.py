"""`hazard replay`, `hazard recall` and `hazard fairness`: an auditor's and a regulator's
reads of the rounds (ledger.audit: replay, recall, fairness), from the database or,
for a replay, from an export alone."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import click

from ledger import house
from ledger.audit import fairness as report
from ledger.audit import recall as recalls
from ledger.audit import replay as replays
from ledger.books import tableviews
from ledger.books.accounts import account_stream, player_account
from ledger.cli import _book, _engine, database_option
from ledger.cli.keys import trusted_key
from ledger.exports.offline import Disagreement
from ledger.exports.scope import ScopeError, moment
from ledger.service import NotFound, is_name, table_stream
from ledger.store.log import check


@click.command()
@click.argument("file", required=False, metavar="[FILE]")
@click.option("--table", "table", required=True, metavar="T", help="the table")
@click.option("--round", "round_", type=click.IntRange(min=1), metavar="N", help="one round")
@click.option(
    "--key", "vkey", metavar="VKEY", help="with FILE: the key its checkpoints must be signed by"
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object a line, an event each")
@database_option
def replay(
    file: str | None,
    table: str,
    round_: int | None,
    vkey: str | None,
    as_json: bool,
    database_url: str | None,
) -> None:
    """Replay a table's round (--round N) or whole session, event by event: each event
    with the table after it, the money it moved, its settlements and the balances of
    the parties it moved.

    From the database; or, with FILE (an export, `hazard export`; `-` for stdin), from
    the file alone, offline, checked as `hazard verify FILE` checks it. A table's export
    holds no deposits: offline, a balance is the party's net over the file's events."""
    # Imported here, not at the top: the web layer's view of a step comes with its
    # schemas (marshmallow, flask), and `hazard --help`, which imports every command's
    # module, would pay for them.
    from ledger.web.views import step_view

    if not is_name(table):
        raise click.BadParameter(f"{table!r} is not a table's name", param_hint="--table")
    source: Any = None
    if file is None:
        if vkey is not None:
            raise click.UsageError("--key is for FILE: the database's log is `hazard verify`'s")
        steps = _replayed(table, round_, database_url)
        basis = replays.BASIS["ledger"]
    else:
        if database_url is not None:
            raise click.UsageError("with FILE, only the file is read: no --database-url")
        verifier = trusted_key(vkey)[0] if vkey is not None else None
        try:
            source = sys.stdin.buffer if file == "-" else open(file, "rb")  # noqa: SIM115
        except OSError as exc:
            raise click.ClickException(f"cannot read {file}: {exc.strerror or exc}") from None
        steps = replays.from_file(source, table, round_, verifier)
        basis = replays.BASIS["file"]
    if not as_json:
        what = f"round {round_} of table {table}" if round_ else f"table {table}'s session"
        click.echo(f"{what}; balances: {basis}")
    try:
        for step in steps:
            view = step_view(table, step)
            if as_json:
                click.echo(json.dumps(view, sort_keys=True))
            else:
                _echo_step(view)
    except (replays.NotInFile, _NoRound) as exc:
        raise click.ClickException(str(exc)) from None
    except Disagreement as exc:
        raise click.ClickException(f"{file} does not verify: {exc}") from None
    finally:
        if source is not None and source is not sys.stdin.buffer:
            source.close()


class _NoRound(LookupError):
    """No such table or round in the database."""


def _replayed(table: str, round_: int | None, database_url: str | None) -> Iterator[Any]:
    """Every step of the table's round or session from the database, a page at a time."""
    store = _book(database_url).store
    stream = table_stream(table)
    try:
        with store.engine.connect() as conn:
            if not store.stream_version(conn, stream):
                raise _NoRound(f"there is no table {table!r}")
            row = None
            if round_ is not None:
                row = tableviews.round_row(conn, stream, round_)
                if row is None:
                    raise _NoRound(f"table {table!r} has no round {round_}")
        after: int | None = 0
        while after is not None:
            with store.engine.connect() as conn:
                if row is None:
                    steps, after = replays.page(conn, store, stream, 1, None, after, 500)
                else:
                    steps, after = replays.round_page(conn, store, row, after, 500)
            yield from steps
    finally:
        store.engine.dispose()


def _echo_step(view: dict[str, Any]) -> None:
    state = view["state"]
    click.echo(
        f"{view['position']:>8}  v{view['version']:<6} {view['type']:<16} {view['actor']}  "
        f"{view['recorded_at']}"
    )
    click.echo(f"          payload {json.dumps(view['payload'], sort_keys=True)}")
    click.echo(
        f"          table: {state['phase']}, round {state['round']}, caster "
        f"{state['caster'] or '-'}, main {state['main'] or '-'}, chance "
        f"{state['chance'] or '-'}, losses in a row {state['consecutive_losses']}, "
        f"open bets {len(state['open_bets'])}"
    )
    for t in view["transfers"]:
        click.echo(f"          moves {t['amount']} from {t['source']} to {t['target']}")
    for s in view["settlements"]:
        how = (
            f"settled to {s['winner']}" if s["outcome"] == "settled" else f"voided ({s['reason']})"
        )
        click.echo(f"          settlement {s['bet_id']} ({s['kind']}) {how} at {s['position']}")
    for b in view["balances"]:
        click.echo(f"          {b['account']}: {b['before']} -> {b['after']}")


@click.command()
@click.option("--player", metavar="P", help="the last ten rounds P had a bet in")
@click.option("--table", metavar="T", help="the table's last ten rounds")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
@database_option
def recall(player: str | None, table: str | None, as_json: bool, database_url: str | None) -> None:
    """A regulator's game recall: the last ten rounds of a player or a table, newest
    first, each with its start and end, the balances before and after, the bets, the
    throws and what was won or lost."""
    if (player is None) == (table is None):
        raise click.UsageError("give one of --player P or --table T")
    name = player if player is not None else table
    assert name is not None
    if not is_name(name):
        raise click.BadParameter(f"{name!r} is not a name", param_hint="--player/--table")
    store = _book(database_url).store
    try:
        with store.engine.connect() as conn:
            if player is not None:
                account = player_account(player)
                if player != "setter" and not store.stream_version(conn, account_stream(account)):
                    raise click.ClickException(f"there is no player {player!r}")
                found: dict[str, Any] = {
                    "player": player,
                    "rounds": recalls.of_player(conn, account),
                }
            else:
                assert table is not None
                stream = table_stream(table)
                if not store.stream_version(conn, stream):
                    raise click.ClickException(f"there is no table {table!r}")
                found = {"table": table, "rounds": recalls.of_table(conn, stream)}
    finally:
        store.engine.dispose()
    if as_json:
        click.echo(json.dumps(found, indent=2, sort_keys=True))
        return
    whose = f"player {player}" if player is not None else f"table {table}"
    click.echo(f"recall of {whose}: the last {len(found['rounds'])} rounds, newest first")
    for r in found["rounds"]:
        click.echo(
            f"table {r['table']} round {r['round']}: caster {r['caster']}, main "
            f"{r['main'] or '-'}, chance {r['chance'] or '-'}, {r['result'] or 'in play'}; "
            f"{r['started_at']} to {r['ended_at'] or '-'} (positions {r['first_position']}.."
            f"{r['last_position']})"
        )
        throws = ", ".join(f"{t['die1']}+{t['die2']}" for t in r["throws"])
        if r["earlier_throws"] is not None:  # a round of many throws: its last ones
            left = r["throw_count"] - len(r["throws"])
            throws = (
                f"{left} earlier (`hazard replay --table {r['table']} --round {r['round']}`), "
                f"then {throws}"
            )
        click.echo(f"  throws: {throws or 'none'}")
        if r["earlier_bets"] is not None:
            left = r["bet_count"] - len(r["bets"])
            click.echo(f"  {left} earlier bets (their settlements: {r['earlier_bets']}), then:")
        for bet in r["bets"]:
            how = bet["winner"] or f"voided ({bet['reason']})"
            nets = ", ".join(f"{a} {n:+d}" for a, n in bet["net"].items())
            moved = ", ".join(f"{a} {n:+d}" for a, n in bet["adjusted"].items())
            click.echo(
                f"  bet {bet['bet_id']} ({bet['kind']}): {how}; {nets}"
                + (f" (adjusted: {moved})" if moved else "")
            )
        for d in r["disputes"]:
            click.echo(f"  dispute {d['dispute_id']}: {d['status']}")
        for b, w in zip(r["balances"], r["won"], strict=True):
            click.echo(
                f"  {b['account']}: {b['before']} before, {b['after']} after"
                + (f", {b['adjusted']} after its adjustment" if b["adjusted"] is not None else "")
                + f"; won {w['amount']:+d} in the round"
            )


@click.command()
@click.option("--table", metavar="T", help="only this table's throws and rounds")
@click.option(
    "--croupier",
    metavar="C",
    help="only what this croupier recorded: their token's name (every token of it), or "
    "NAME#TAG for one token",
)
@click.option("--since", metavar="ISO", help="from this time on (ISO 8601; UTC unless it says)")
@click.option("--until", metavar="ISO", help="up to (not including) this time")
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="flag every test whose p-value is below this  [default: 1 - the club's "
    "HAZARD_FAIRNESS_LEVEL, 0.01 at the default 0.99]",
)
@click.option("--json", "as_json", is_flag=True, help="print the report as GET /reports/dice does")
@database_option
def fairness(
    table: str | None,
    croupier: str | None,
    since: str | None,
    until: str | None,
    alpha: float | None,
    as_json: bool,
    database_url: str | None,
) -> None:
    """The dice-fairness report: every total and ordered pair thrown against the exact
    2d6 odds (chi-square), and the caster's wins per main against the exact P(caster
    wins) of each rule set (exact binomial), for a table, a croupier or the whole club
    over a time range; a test whose p-value is below --alpha is flagged."""
    try:
        start = moment(since, "since") if since is not None else None
        end = moment(until, "until") if until is not None else None
    except ScopeError as exc:
        raise click.BadParameter(exc.message, param_hint=f"--{exc.field}") from None
    if start is not None and end is not None and not start < end:
        raise click.BadParameter(f"{end} is not after --since {start}", param_hint="--until")
    scope = report.Scope(table=table, croupier=croupier, since=start, until=end)
    if alpha is None:
        alpha = house.from_settings().fairness_alpha
    engine = _engine(database_url)
    try:
        with engine.connect() as conn, conn.begin():
            check.snapshot(conn)
            found = report.report(conn, scope, alpha)
    except NotFound as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        engine.dispose()
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    for line in report.lines(found):
        click.echo(line)
