"""The `hazard` command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, TextIO, cast

import click

from engine.dice import MAINS
from engine.errors import RuleSetError
from engine.odds import fraction_text, main_odds, random_main_p_win, table
from engine.rules import MainMethod, RuleSet
from engine.rulesets import BUILTIN, DEFAULT
from ledger.api.tokens import Role
from ledger.books.book import Book
from ledger.rulesource import load_ruleset
from ledger.simulate import expected, wilson
from ledger.simulate import simulate as run_simulation

RULESET_HELP = f"a built-in rule set ({', '.join(BUILTIN)}) or a .json/.toml file"


def _ruleset(name: str) -> RuleSet:
    try:
        return load_ruleset(name)
    except RuleSetError as exc:
        raise click.BadParameter(str(exc), param_hint="--ruleset") from None


class _Hazard(click.Group):
    """The command group, which turns a lock wait the database gave up on (another
    writer held it past HAZARD_LOCK_TIMEOUT) into a plain error instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        from ledger.store.eventstore import is_busy

        try:
            return super().invoke(ctx)
        except Exception as exc:
            if is_busy(exc):
                raise click.ClickException(
                    "the database is busy: another writer held it past the lock timeout "
                    "(HAZARD_LOCK_TIMEOUT); nothing was written, try again"
                ) from None
            raise


@click.group(cls=_Hazard)
def main() -> None:
    """Hazard: an event-sourced betting ledger for the old English dice game."""


def _pct(value: Fraction) -> str:
    return f"{float(value) * 100:.2f}%"


@main.command()
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


@main.command()
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


class _Null:
    """Where the progress bar goes when it is not wanted."""

    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@main.group()
def db() -> None:
    """The database: DATABASE_URL, or hazard.sqlite3 here by default."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every migration the database has not had."""
    from ledger.store import db as database

    engine = database.make_engine()
    with _opening():
        database.upgrade(engine)
    current, _ = database.schema_status(engine)
    click.echo(f"database schema at {current}")


@contextmanager
def _opening() -> Iterator[None]:
    """Opening the database: one it cannot read (unreachable, or an SQLite file cut
    short or not a database at all) is a clear error naming why, not a traceback."""
    from sqlalchemy.exc import DatabaseError

    try:
        yield
    except DatabaseError as exc:
        from ledger.store.eventstore import is_busy

        if is_busy(exc):
            raise  # the group says so (_Hazard)
        raise click.ClickException(f"cannot open the database: {exc.orig}") from None


def _book(database_url: str | None = None) -> Book:
    """The book for `database_url` (default: DATABASE_URL), which must exist: SQLite is
    upgraded, others checked. A database that is not there, or behind, or unreachable,
    is a clear error, not a crash, and an SQLite file is never made here."""
    from ledger.bootstrap import open_book
    from ledger.store.db import NoDatabase, SchemaBehind
    from ledger.store.log.keys import BadKey

    try:
        with _opening():
            return open_book(database_url, must_exist=True)
    except (SchemaBehind, BadKey) as exc:
        raise click.ClickException(str(exc)) from None
    except NoDatabase as exc:
        raise click.ClickException(f"cannot open the database: {exc}") from None


SHOWN_PROBLEMS = 20
"""How many problems `hazard verify` lists; the rest are counted."""


@main.command()
@click.option(
    "--checkpoint",
    "receipt_path",
    type=click.Path(dir_okay=False, exists=True),
    metavar="FILE",
    help="also check the log against this signed checkpoint kept elsewhere (a receipt)",
)
@click.option(
    "--key",
    "vkey",
    metavar="VKEY",
    help="the log's public key (a verifier key, or a file holding one) to trust; "
    "default: the public half of the signing key (HAZARD_KEY, or hazard.key)",
)
@click.option(
    "--state",
    "state_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="verify incrementally: read only the events after those verified by the run "
    "that wrote FILE, and write it again when all verifies",
)
@click.option(
    "--deep",
    is_flag=True,
    help="also recompute every read model (balances, postings, settlements, rounds, "
    "disputes, snapshots) from the events and name the first row that differs in each",
)
@click.argument("file", required=False, metavar="[FILE]")
def verify(
    receipt_path: str | None,
    vkey: str | None,
    state_path: str | None,
    deep: bool,
    file: str | None,
) -> None:
    """Check the log: positions without a gap, every stream's hash chain, every leaf and
    stored hash of the Merkle tree, and every stored checkpoint's signature and root;
    with --deep, every read model against the events too.

    With FILE (an export, `hazard export --format jsonl`; `-` for stdin), check the file
    alone, touching no database: its hashes, its proofs up to the signed checkpoint, and
    every table replayed through the engine. Give --key, the key your club published,
    or the file's own key is used (and said to be)."""
    if file is not None:
        used = [
            name
            for name, value in (
                ("--checkpoint", receipt_path),
                ("--state", state_path),
                ("--deep", deep or None),
            )
            if value is not None
        ]
        if used:
            raise click.UsageError(
                f"{', '.join(used)} check the database; with FILE, only the file is checked "
                "(and only --key applies)"
            )
        _verify_file(file, vkey)
        return
    from pathlib import Path

    from ledger.store.log import check as logcheck
    from ledger.store.log import merkle
    from ledger.store.log.checkpoint import NoteError, open_checkpoint

    verifier, source = _trusted_key(vkey)
    receipt = None
    if receipt_path is not None:
        try:
            # A note ends with one newline; `jq -r` or an editor may have added more.
            note = Path(receipt_path).read_bytes().rstrip(b"\r\n") + b"\n"
            receipt = open_checkpoint(note, [verifier])
        except (NoteError, ValueError) as exc:
            raise click.ClickException(
                f"{receipt_path} is not a checkpoint signed by the trusted key: {exc}"
            ) from None
    state = None
    said: list[str] = []
    if state_path is not None and Path(state_path).exists():
        try:
            state = logcheck.State.parse(Path(state_path).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise click.ClickException(f"{state_path}: {exc}") from None
        if state.key != verifier.text():
            said.append(f"{state_path} was verified with another key: a full run")
            state = None
        elif receipt is not None and receipt.size <= state.size:
            said.append("the checkpoint is within what was verified before: a full run")
            state = None
    store = _book().store
    engine = store.engine  # a store that is not written to: nothing to close
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\rverifying: {done} of {total} events", err=True, nl=False)

    try:
        with engine.connect() as conn, conn.begin():
            logcheck.snapshot(conn)
            resume = None
            if state is not None:
                if logcheck.still_stored(conn, state):
                    resume = merkle.Frontier(state.size, state.frontier)
                else:
                    said.append(
                        f"the stored tree of the {state.size} events verified before is not the "
                        f"one verified then: a full run"
                    )
            watch = [receipt.size] if receipt is not None else []
            report = logcheck.check_log(
                conn, verifier, resume=resume, watch=watch, progress=progress,
                limit_findings=SHOWN_PROBLEMS,
            )  # fmt: skip
    finally:
        engine.dispose()  # no connection outlives the command
    if show:
        click.echo("", err=True)
    for line in said:
        click.echo(line)
    read = f"positions {report.start + 1}..{report.size}" if report.events else "none"
    click.echo(f"events: {report.size} in the log, {report.events} read ({read})")
    if report.start:
        click.echo(
            f"  (incremental: the first {report.start} were verified before, by the run "
            f"that wrote {state_path}; their stored tree still has the root verified then)"
        )
    click.echo(f"checkpoints: {report.checkpoints} stored checkpoints checked")
    click.echo(f"key: {verifier.text()} ({source})")
    click.echo(f"root: {report.root.hex()} (the tree of {report.size} events)")
    failed = bool(report.findings)
    if receipt is not None:
        parting = logcheck.against(receipt, report)
        click.echo(f"checkpoint {receipt_path} (size {receipt.size}): {parting}")
        failed = failed or not parting.agrees
    if report.findings:
        count = len(report.findings) + report.more
        click.echo(f"{count} problem(s), the first at position {report.findings[0].position}:")
        for finding in report.findings:
            click.echo(f"  {finding}")
        if report.more:
            click.echo(f"  ... and {report.more} more")
    if deep:
        failed = _deep(store) or failed
    if failed:
        raise SystemExit(1)
    click.echo(
        "every hash chain verifies, and so do the positions, the tree and every "
        "checkpoint, signed by the trusted key" + (", and every read model" if deep else "")
    )
    if state_path is not None:
        kept = logcheck.State(report.size, report.root, tuple(report.frontier), verifier.text())
        Path(state_path).write_text(kept.text() + "\n", encoding="utf-8")
        click.echo(f"state: {state_path} now holds the tree of {report.size} events verified")
        if report.start:
            click.echo(
                f"  (the first {report.start} events were not read again: only a run "
                f"without --state re-reads every event)"
            )


def _verify_file(file: str, vkey: str | None) -> None:
    """`hazard verify FILE`: the offline check of an export (ledger.exports.offline)."""
    from ledger.exports import offline

    verifier = _trusted_key(vkey)[0] if vkey is not None else None
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        click.echo(f"\rverifying: {done} of {total} positions", err=True, nl=False)

    try:
        stream = sys.stdin.buffer if file == "-" else open(file, "rb")  # noqa: SIM115
    except OSError as exc:
        raise click.ClickException(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        verified = offline.verify(stream, verifier, progress if show else None)
    except offline.Disagreement as exc:
        if show:
            click.echo("", err=True)
        click.echo(str(exc))
        raise SystemExit(1) from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if show:
        click.echo("", err=True)
    for line in verified.lines():
        click.echo(line)


def _deep(store: Any) -> bool:
    """Recompute the read models from the events (ledger.books.deep) and say what
    differs; True if anything does."""
    from ledger.books import deep

    show = sys.stderr.isatty()

    def progress(step: str, done: int, total: int | None) -> None:
        if show:
            of = f" of {total}" if total is not None else ""
            click.echo(f"\rdeep check, {step}: {done}{of}", err=True, nl=False)

    try:
        found = list(deep.differences(store, progress=progress))
    finally:
        if show:
            click.echo("", err=True)
        store.engine.dispose()
    if not found:
        click.echo("read models: every table equals the replay of the events")
        return False
    click.echo(f"read models: {len(found)} table(s) differ from the replay of the events:")
    for difference in found:
        click.echo(f"  {difference}")
    return True


EXPORT_KEY = (
    "an export needs no signing key, only the log's public key for its header (what "
    "`hazard key show` printed on the server, saved as club.pub)"
)
"""What `hazard export` says when it has no public key to put in the header."""


def _trusted_key(
    vkey: str | None, wanted: str = "no key to check the checkpoints with"
) -> tuple[Any, str]:
    """The key whose signatures are trusted, and where it came from: `--key` (a verifier
    key or a file holding one), else the public half of the signing key. Never a key
    read from the database, which is what is being checked. `wanted` says, when there
    is neither, what the key was for."""
    from pathlib import Path

    from ledger.bootstrap import KEY_ENV, key_path, load_key
    from ledger.store.log.keys import BadKey, Verifier

    if vkey is not None:
        source = "--key"
        text = vkey
        if Path(vkey).is_file():
            source = f"--key {vkey}"
            text = Path(vkey).read_text(encoding="utf-8")
        try:
            return Verifier.parse(text.strip()), source
        except BadKey as exc:
            if source == "--key" and vkey.count("+") != 2:  # not a key: a path mistyped?
                raise click.BadParameter(
                    f"no file {vkey!r}, and not a verifier key either ({exc})",
                    param_hint="--key",
                ) from None
            raise click.BadParameter(str(exc), param_hint="--key") from None
    path = key_path()
    try:
        signer = load_key(path)
    except BadKey as exc:
        raise click.ClickException(str(exc)) from None
    if signer is None:
        raise click.ClickException(
            f"{wanted}: no signing key at {path} ({KEY_ENV}); give the log's public key with --key"
        )
    return signer.verifier, f"the public half of the signing key at {path}"


@main.group()
def key() -> None:
    """The key that signs the log's checkpoints: HAZARD_KEY, or hazard.key here."""


@key.command("create")
@click.option(
    "--name",
    default=None,
    help="the log's name, in every checkpoint it signs [default: hazard.local/ledger]; "
    "a club that publishes its checkpoints should choose its own, such as "
    "club.example/hazard",
)
@click.option("--path", type=click.Path(dir_okay=False), help="default: HAZARD_KEY, or hazard.key")
def key_create(name: str | None, path: str | None) -> None:
    """Make the signing key (a file of mode 0600, never overwritten) and print its
    public key, the one line an auditor needs to check what the log signs."""
    from ledger.bootstrap import DEFAULT_ORIGIN, key_path
    from ledger.store.log.keys import BadKey, create_key

    where = path or str(key_path())
    try:
        public = create_key(where, name or DEFAULT_ORIGIN)
    except BadKey as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(public)
    click.echo(f"made the signing key at {where}; publish the line above", err=True)


@key.command("show")
@click.option("--path", type=click.Path(dir_okay=False), help="default: HAZARD_KEY, or hazard.key")
def key_show(path: str | None) -> None:
    """Print the signing key's public key (never the key itself)."""
    from pathlib import Path

    from ledger.bootstrap import key_path, load_key
    from ledger.store.log.keys import BadKey

    where = Path(path) if path else key_path()
    try:
        signer = load_key(where)
    except BadKey as exc:
        raise click.ClickException(str(exc)) from None
    if signer is None:
        raise click.ClickException(f"no key file at {where}: make one with `hazard key create`")
    click.echo(signer.verifier.text())


@main.group()
def projections() -> None:
    """The read models (postings, balances), derived from the events."""


@projections.command("rebuild")
def projections_rebuild() -> None:
    """Throw the read models away and rebuild them from every event."""
    from ledger.books import projections as models

    count = models.rebuild(_book().store)
    click.echo(f"rebuilt the read models from {count} events")


# The service and its tokens. ledger.api is imported inside the commands: it takes
# a second or two to import, which every other command would pay.

DATABASE_URL_HELP = "default: DATABASE_URL, or sqlite:///hazard.sqlite3 here"


@main.command()
@click.option("--table", metavar="T", help="only this table's throws and rounds")
@click.option(
    "--croupier", metavar="C", help="only what this croupier recorded (their token's name)"
)
@click.option("--since", metavar="ISO", help="from this time on (ISO 8601; UTC unless it says)")
@click.option("--until", metavar="ISO", help="up to (not including) this time")
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="flag every test whose p-value is below this",
)
@click.option("--json", "as_json", is_flag=True, help="print the report as GET /reports/dice does")
@click.option("--database-url", help=DATABASE_URL_HELP)
def fairness(
    table: str | None,
    croupier: str | None,
    since: str | None,
    until: str | None,
    alpha: float,
    as_json: bool,
    database_url: str | None,
) -> None:
    """The dice-fairness report: every total and ordered pair thrown against the exact
    2d6 odds (chi-square), and the caster's wins per main against the exact P(caster
    wins) of each rule set (exact binomial), for a table, a croupier or the whole club
    over a time range; a test whose p-value is below --alpha is flagged."""
    from ledger.audit import fairness as report
    from ledger.exports.scope import ScopeError, moment
    from ledger.service import NotFound
    from ledger.store.log import check as logcheck

    try:
        start = moment(since, "since") if since is not None else None
        end = moment(until, "until") if until is not None else None
    except ScopeError as exc:
        raise click.BadParameter(exc.message, param_hint=f"--{exc.field}") from None
    if start is not None and end is not None and not start < end:
        raise click.BadParameter(f"{end} is not after --since {start}", param_hint="--until")
    scope = report.Scope(table=table, croupier=croupier, since=start, until=end)
    engine = _engine(database_url)
    try:
        with engine.connect() as conn, conn.begin():
            logcheck.snapshot(conn)
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


@main.command("import")
@click.argument("file", type=click.File("rb"))
@click.option(
    "--key",
    "vkey",
    metavar="VKEY",
    help="the public key (a verifier key, or a file holding one) the file's checkpoints "
    "must be signed by; default: the key the file names, which is then taken on trust",
)
@click.option("--database-url", help=DATABASE_URL_HELP)
def import_(file: Any, vkey: str | None, database_url: str | None) -> None:
    """Restore a whole-log export (`hazard export --all`) into an empty database,
    checking every line as `hazard verify FILE` does: a file that does not verify, or
    a database that is not empty, is refused and nothing is written.

    The export holds only the public key: to go on writing to the restored log, the
    service needs the signing key that signed it (HAZARD_KEY), so keep the key file
    with the export. API tokens are not exported: make new ones (`hazard token create`)."""
    from ledger.exports import offline, restore
    from ledger.store import db as database

    verifier = _trusted_key(vkey)[0] if vkey is not None else None
    url = database_url or database.database_url()
    engine = database.make_engine(url)
    try:
        with _opening():
            try:
                restore.require_empty_database(engine)
            except restore.NotEmpty as exc:
                raise click.ClickException(f"{exc}; nothing was written") from None
            database.upgrade(engine)  # a new database is made and migrated, as `db upgrade` does
        bar: list[Any] = []

        def progress(done: int, total: int) -> None:
            if not sys.stderr.isatty():
                return
            if not bar:
                bar.append(click.progressbar(length=total, label="importing", file=sys.stderr))
                bar[0].__enter__()
            bar[0].update(done - bar[0].pos)

        try:
            restored = restore.restore(engine, file, key=verifier, progress=progress)
        except (offline.Disagreement, restore.RestoreError) as exc:
            raise click.ClickException(f"{file.name}: {exc}; nothing was written") from None
        finally:
            if bar:
                bar[0].__exit__(None, None, None)
    finally:
        engine.dispose()
    click.echo(
        f"restored {restored.events} events ({restored.tables} tables), "
        f"{restored.checkpoints} checkpoints, {restored.accounts} accounts, "
        f"{restored.snapshots} snapshots"
    )
    if restored.size:
        click.echo(f"checkpoint: size {restored.size}, root {restored.root}")
    click.echo(f"key: {restored.key}" + ("" if verifier else " (the file's own, taken on trust)"))
    _says_signing_key(restored.key)


def _says_signing_key(public: str) -> None:
    """Warn when the signing key here is not the one that signed the restored log: the
    service would refuse to write with it (ledger.bootstrap.ensure_key)."""
    from ledger.bootstrap import KEY_ENV, key_path, load_key
    from ledger.store.log.keys import BadKey

    path = key_path()
    try:
        signer = load_key(path)
    except BadKey as exc:
        here = f"the key file at {path} cannot be used ({exc})"
    else:
        if signer is not None and signer.verifier.text() == public:
            return
        here = (
            f"there is no signing key at {path}"
            if signer is None
            else f"the signing key at {path} is another key ({signer.verifier.text()})"
        )
    click.echo(
        f"note: {here}; to go on writing to this log, point {KEY_ENV} at the key that "
        f"signed it ({public}), kept with the backups",
        err=True,
    )


def _engine(database_url: str | None) -> Any:
    """The engine of `_book(database_url)`."""
    return _book(database_url).store.engine


@main.command("export")
@click.option("--table", metavar="T", help="a table's session, from its opening to its closing")
@click.option("--player", metavar="P", help="a player's statement: their account and tables")
@click.option("--all", "everything", is_flag=True, help="the whole log, as a backup")
@click.option("--since", metavar="ISO", help="from this time on (ISO 8601; UTC unless it says)")
@click.option("--until", metavar="ISO", help="up to (not including) this time")
@click.option(
    "--format",
    "form",
    type=click.Choice(["jsonl", "csv"]),
    default="jsonl",
    show_default=True,
    help="jsonl: the verifiable file (`hazard verify FILE`); csv: a spreadsheet",
)
@click.option(
    "--sheet",
    type=click.Choice(["rounds", "settlements", "statement", "adjustments"]),
    help="csv only [default: statement for a player, else settlements]",
)
@click.option("--decimals", type=click.IntRange(0, 18), help="csv only: minor units a major [2]")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="write to FILE (made whole or not at all) instead of stdout ('-': stdout)",
)
@click.option(
    "--key",
    "vkey",
    metavar="VKEY",
    help="jsonl only: the log's public key for the header (a verifier key, or a file "
    "holding one, as `hazard key show` prints it), which must have signed the newest "
    "checkpoint; default: the public half of the signing key (HAZARD_KEY, or hazard.key)",
)
@click.option("--database-url", help=DATABASE_URL_HELP)
def export(
    table: str | None,
    player: str | None,
    everything: bool,
    since: str | None,
    until: str | None,
    form: str,
    sheet: str | None,
    decimals: int | None,
    output: str | None,
    vkey: str | None,
    database_url: str | None,
) -> None:
    """Export a table's session, a player's statement, a time range of the club
    (--since/--until alone) or the whole log (--all), streamed: to stdout, or to FILE.

    JSON Lines carries the proofs that tie it to the log's signed checkpoint, so that an
    auditor can check it at home with `hazard verify FILE`; CSV opens in a spreadsheet.
    An export only reads: on a copy of the database, away from the signing key, give
    the log's public key with --key.
    """
    from ledger.exports.scope import NotFound, ScopeError, scope_of

    try:
        scope = scope_of(table, player, since, until, everything)
    except ScopeError as exc:
        if exc.field == "scope":
            raise click.UsageError(exc.message) from None
        raise click.BadParameter(exc.message, param_hint=f"--{exc.field}") from None
    if form == "jsonl" and (sheet is not None or decimals is not None):
        raise click.UsageError("--sheet and --decimals are for --format csv")
    if form == "csv" and vkey is not None:
        raise click.UsageError("--key is for --format jsonl: a spreadsheet carries no proof")
    engine = _engine(database_url)
    try:
        try:
            if form == "csv":
                places = 2 if decimals is None else decimals
                prepared: Any = _sheets().prepare(engine, scope, sheet, places)
            else:
                from ledger.exports import jsonl

                # The header's public key, never the signing key: an export signs nothing.
                verifier = _trusted_key(vkey, EXPORT_KEY)[0]
                prepared = jsonl.prepare(engine, scope, key=verifier)
        except ScopeError as exc:
            raise click.BadParameter(exc.message, param_hint=f"--{exc.field}") from None
        except (NotFound, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        try:
            _write_export(prepared, output)
        finally:
            prepared.close()
    finally:
        engine.dispose()  # no connection outlives the command
    if output is not None:
        click.echo(f"exported to {output}", err=True)


def _sheets() -> Any:
    """ledger.exports.sheets (the CSV export), or a clear error if this build has none."""
    import importlib

    try:
        return importlib.import_module("ledger.exports.sheets")
    except ImportError:
        raise click.ClickException("CSV export is not available in this build") from None


def _write_export(prepared: Any, output: str | None) -> None:
    """Write `prepared` to `output` (through `output`.part, renamed once whole, so a
    failed export never leaves a file that looks complete) or to stdout, with a
    progress bar on stderr when it is a terminal."""
    import os

    show = sys.stderr.isatty() and prepared.total is not None
    out: TextIO = sys.stderr if show else cast(TextIO, _Null())
    with click.progressbar(length=max(prepared.total or 0, 0), label="exporting", file=out) as bar:
        chunks = prepared.chunks(bar.update)
        if output is None or output == "-":  # "-" as `hazard verify -` reads it
            stdout = sys.stdout.buffer
            for chunk in chunks:
                stdout.write(chunk)
            stdout.flush()
            return
        part = output + ".part"
        try:
            file = open(part, "wb")  # noqa: SIM115 (closed by the with below)
        except OSError as exc:
            raise click.ClickException(f"cannot write {output}: {exc.strerror}") from None
        try:
            with file:
                for chunk in chunks:
                    file.write(chunk)
            os.replace(part, output)
        except BaseException:
            if os.path.exists(part):
                os.remove(part)
            raise


@main.group()
def token() -> None:
    """API bearer tokens. Only a hash is stored: a token is shown once, when made."""


@token.command("create")
@click.option("--role", type=click.Choice([r.value for r in Role]), required=True)
@click.option(
    "--name",
    help="who holds it; events name `role:name` as actor [default: the role's name; "
    "a player's token names the player]",
)
@click.option("--database-url", help=DATABASE_URL_HELP)
def token_create(role: str, name: str | None, database_url: str | None) -> None:
    """Make a token and print it, the one time it is shown.

    The token alone goes to stdout, so that `TOKEN=$(hazard token create ...)` works;
    its id and what to do with it go to stderr.
    """
    from ledger.api.tokens import create, holder

    if name is None:
        if Role(role) is Role.PLAYER:
            raise click.UsageError("a player's token needs --name: the player it acts for")
        name = role

    engine = _engine(database_url)
    try:
        secret = create(engine, Role(role), name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--name") from None
    made = holder(engine, secret)
    assert made is not None
    note = f"token {made.id} for {made.actor}: shown this once; only its hash is kept"
    click.echo(note, err=True)
    click.echo(secret)


@token.command("list")
@click.option("--database-url", help=DATABASE_URL_HELP)
def token_list(database_url: str | None) -> None:
    """Every token: id, name, role, when made, when revoked. Never a secret."""
    from ledger.api.tokens import listing

    rows = listing(_engine(database_url))
    click.echo(f"{'id':<16}  {'role':<8}  {'created':<26}  {'revoked':<26}  name")
    for row in rows:
        click.echo(
            f"{row.id:<16}  {row.role:<8}  {row.created_at:<26}  {row.revoked_at or '-':<26}"
            f"  {row.name}"
        )


@token.command("revoke")
@click.argument("token_id", metavar="ID")
@click.option("--database-url", help=DATABASE_URL_HELP)
def token_revoke(token_id: str, database_url: str | None) -> None:
    """Revoke token ID (from `hazard token list`): refused (401) from its next request."""
    from ledger.api.tokens import UnknownToken, revoke

    try:
        done = revoke(_engine(database_url), token_id)
    except UnknownToken:
        raise click.ClickException(f"no token {token_id}") from None
    click.echo(f"token {token_id} {'revoked' if done else 'was already revoked'}")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="0.0.0.0: every interface")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="0: any free port (the banner says which)",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="gunicorn worker processes",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="threads per worker: requests each worker serves at once, each once it has arrived "
    "(a slow client holds none); half of them at most run heavy reads (exports, replays, ...)",
)
@click.option(
    "--io-timeout",
    type=click.FloatRange(min=0.1, max=600),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="how long a request's head, then its body, may take to arrive, each whole however "
    "it trickles (a body cut short is answered 408); and how long a client may take nothing "
    "of an answer",
)
def serve(host: str, port: int, workers: int, threads: int, io_timeout: float) -> None:
    """Run the REST API under gunicorn, on DATABASE_URL (default: hazard.sqlite3 here).

    SQLite is created and upgraded; any other database must be upgraded first with
    `hazard db upgrade`. On a database with no tokens, a setter token is made and printed
    once, with the URL of the API docs.
    """
    from sqlalchemy.exc import OperationalError

    from ledger.api.server import serve as run
    from ledger.store.db import BadSetting, SchemaBehind
    from ledger.store.log.keys import BadKey

    try:
        run(host, port, workers, threads, io_timeout)
    except (SchemaBehind, BadSetting, BadKey) as exc:
        raise click.ClickException(str(exc)) from None
    except OperationalError as exc:
        raise click.ClickException(f"cannot open the database: {exc.orig}") from None


@main.command()
@click.option(
    "--write",
    "path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="write to FILE (openapi.yaml) instead of stdout",
)
def openapi(path: str | None) -> None:
    """Print the REST API's OpenAPI contract, as YAML made from the code.

    openapi.yaml at the top of the repository is this, checked in; a test fails when
    they differ. Regenerate it with `hazard openapi --write openapi.yaml`.
    """
    from ledger.api.contract import generate

    text = generate()
    if path is None:
        click.echo(text, nl=False)
        return
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)


@main.command()
@click.argument("file", required=False, metavar="[FILE]")
@click.option("--table", "table", required=True, metavar="T", help="the table")
@click.option("--round", "round_", type=click.IntRange(min=1), metavar="N", help="one round")
@click.option(
    "--key", "vkey", metavar="VKEY", help="with FILE: the key its checkpoints must be signed by"
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object a line, an event each")
@click.option("--database-url", help=DATABASE_URL_HELP)
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
    from ledger.api.replays import step_view
    from ledger.audit import replay as replays
    from ledger.exports.offline import Disagreement
    from ledger.service import is_name

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
        verifier = _trusted_key(vkey)[0] if vkey is not None else None
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
    from ledger.audit import replay as replays
    from ledger.books import tableviews
    from ledger.service import table_stream

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


@main.command()
@click.option("--player", metavar="P", help="the last ten rounds P had a bet in")
@click.option("--table", metavar="T", help="the table's last ten rounds")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
@click.option("--database-url", help=DATABASE_URL_HELP)
def recall(player: str | None, table: str | None, as_json: bool, database_url: str | None) -> None:
    """A regulator's game recall: the last ten rounds of a player or a table, newest
    first, each with its start and end, the balances before and after, the bets, the
    throws and what was won or lost."""
    from ledger.audit import recall as recalls
    from ledger.books.accounts import account_stream, player_account
    from ledger.service import is_name, table_stream

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


@main.group()
def dispute() -> None:
    """Disputed rounds: opened with the service's answer at once, and the setter's
    resolution (upheld, voided, corrected). A refused command writes nothing and
    exits 1, naming the rule."""


CLI_SETTER = "setter:cli"
"""The actor the setter's writes from the command line are recorded under."""


def _claimant(who: str) -> tuple[str, str, str]:
    """(actor, claimant, role) for `--as`: `setter` disputes as the bank, as the API's
    setter does; `croupier:NAME` and `player:NAME` as themselves."""
    from engine.state import SETTER
    from ledger.service import is_name

    if who == SETTER:
        return CLI_SETTER, SETTER, SETTER
    role, _, name = who.partition(":")
    if role not in ("croupier", "player") or not is_name(name):
        raise click.BadParameter(
            f"{who!r}: give setter, croupier:NAME or player:NAME", param_hint="--as"
        )
    return who, name, role


@contextmanager
def _club(database_url: str | None, writing: bool = True) -> Iterator[Any]:
    """The club on the database, for one command. A refusal of the engine's rules is
    printed with its code, and exits 1; so does the service's (no such table, ...).
    Either way nothing was written, and no connection outlives the command."""
    from engine.errors import RuleBroken
    from ledger.service import Club
    from ledger.store.eventstore import Refused

    book = _book(database_url)
    written = "; nothing was written" if writing else ""
    try:
        yield Club(book)
    except RuleBroken as exc:
        click.echo(f"refused ({exc.code}): {exc.detail}{written}", err=True)
        raise SystemExit(1) from None
    except Refused as exc:
        raise click.ClickException(f"{exc}{written}") from None
    finally:
        book.store.close()
        book.store.engine.dispose()


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
@click.option("--database-url", help=DATABASE_URL_HELP)
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
    from ledger.audit import disputes

    actor, claimant, role = _claimant(who)
    with _club(database_url) as club:
        found = disputes.open_dispute(
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
@click.option("--database-url", help=DATABASE_URL_HELP)
def dispute_list(
    table: str | None, status: str | None, as_json: bool, database_url: str | None
) -> None:
    """Disputes in the order they were opened (--status open: the setter's queue)."""
    from ledger.audit import disputes

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
@click.option("--database-url", help=DATABASE_URL_HELP)
def dispute_show(table: str, dispute_id: str, as_json: bool, database_url: str | None) -> None:
    """A dispute: the claim, the service's answer (derived again from the round's
    events), the resolution with its reason, and the adjustments it posted."""
    from ledger.audit import disputes

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
@click.option("--database-url", help=DATABASE_URL_HELP)
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
    from ledger.audit import disputes

    with _club(database_url) as club:
        found = disputes.resolve_dispute(
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
