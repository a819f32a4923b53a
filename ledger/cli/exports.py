"""`hazard export` and `hazard import`: what leaves the building (ledger.exports.jsonl,
a verifiable file, or sheets, CSV) and a whole-log export restored as a backup
(ledger.exports.restore)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, TextIO, cast

import click

from ledger import house
from ledger.bootstrap import KEY_ENV, key_path, load_key
from ledger.cli import _engine, _Null, _opening, database_option
from ledger.cli.keys import reader_policy, trusted_key
from ledger.exports import jsonl, offline, restore
from ledger.exports.scope import NotFound, ScopeError, scope_of
from ledger.store import db as database
from ledger.store.log.keys import BadKey

EXPORT_KEY = (
    "an export needs no signing key, only the log's public key for its header (what "
    "`hazard key show` printed on the server, saved as club.pub)"
)
"""What `hazard export` says when it has no public key to put in the header."""


@click.command("export")
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
@click.option(
    "--decimals",
    type=click.IntRange(0, 18),
    help="csv only: the decimal columns' places [the club's minor units, HAZARD_MINOR_UNITS]",
)
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
@database_option
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
                # The club's minor units and time zone (HAZARD_*), as `hazard serve`'s.
                club = house.from_settings()
                prepared: Any = _sheets().prepare(engine, scope, sheet, decimals, club)
            else:
                # The header's public key, never the signing key: an export signs nothing.
                verifier = trusted_key(vkey, EXPORT_KEY)[0]
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
    # Imported here, not with the rest: a build may leave the CSV export out, and only
    # `--format csv` needs it.
    try:
        return importlib.import_module("ledger.exports.sheets")
    except ImportError:
        raise click.ClickException("CSV export is not available in this build") from None


def _write_export(prepared: Any, output: str | None) -> None:
    """Write `prepared` to `output` (through `output`.part, renamed once whole, so a
    failed export never leaves a file that looks complete) or to stdout, with a
    progress bar on stderr when it is a terminal."""
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


@click.command("import")
@click.argument("file", type=click.File("rb"))
@click.option(
    "--key",
    "vkey",
    metavar="VKEY",
    help="the public key (a verifier key, or a file holding one) the file's checkpoints "
    "must be signed by; default: the key the file names, which is then taken on trust",
)
@click.option(
    "--policy",
    "policy_path",
    type=click.Path(dir_okay=False, exists=True),
    metavar="FILE",
    help="your own witness policy (C2SP tlog-policy): the file's cosigned checkpoint "
    "must hold under it, before anything is kept, and its witnesses' cosignatures are "
    "restored",
)
@database_option
def import_(file: Any, vkey: str | None, policy_path: str | None, database_url: str | None) -> None:
    """Restore a whole-log export (`hazard export --all`) into an empty database,
    checking every line as `hazard verify FILE` does: a file that does not verify, or
    a database that is not empty, is refused and nothing is written.

    The export holds only the public key: to go on writing to the restored log, the
    service needs the signing key that signed it (HAZARD_KEY), so keep the key file
    with the export. API tokens are not exported: make new ones (`hazard token create`).

    With --policy, your own policy file (never one the file names), the cosigned
    checkpoint the file carries must hold under it, as `hazard verify FILE --policy`
    checks, or nothing is written; the cosignatures of its witnesses are restored."""
    policy, verifier = None, None
    if policy_path is not None:
        policy, verifier, _ = reader_policy(policy_path, vkey)
    elif vkey is not None:
        verifier = trusted_key(vkey)[0]
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
            restored = restore.restore(engine, file, key=verifier, progress=progress, policy=policy)
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
    _says_cosignatures(restored, policy is not None)
    _says_signing_key(restored.key)


def _says_cosignatures(restored: restore.Restored, under_policy: bool) -> None:
    """What became of the witnesses' cosignatures the file carried."""
    cosigned = restored.cosigned
    if cosigned is None:
        if under_policy:
            click.echo("cosignatures: none in the file (your policy asks for no witness)")
        return
    if not under_policy:
        click.echo(
            f"cosignatures: the file's {cosigned.lines} of the checkpoint of size "
            f"{cosigned.size} were not checked, nor kept: the file is taken on the bank's "
            "key alone (give --policy, your own policy file, to check and keep them)"
        )
        return
    if not restored.cosignatures:
        click.echo(
            f"cosignatures: the checkpoint of size {cosigned.size} is past the log restored: "
            "none kept"
        )
        return
    click.echo(
        f"cosignatures: {len(restored.cosignatures)} of the checkpoint of size "
        f"{cosigned.size} restored, checked under your policy: " + ", ".join(restored.cosignatures)
    )


def _says_signing_key(public: str) -> None:
    """Warn when the signing key here is not the one that signed the restored log: the
    service would refuse to write with it (ledger.bootstrap.ensure_key)."""
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
