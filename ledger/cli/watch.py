"""`hazard watch`: a client that remembers (ledger.watch). `hazard watch` checks the
ledger against what it holds, `hazard watch add` hands it receipts, and `hazard watch
check` checks one tlog-proof alone, offline.

Exit status: 0 consistent (or, for `check`, proven); 1 evidence: a fork proven, both
notes printed, or a size held that the ledger says it has no checkpoint of, the note
printed (for `check`: the file does not prove its event); 2 could not check (the
ledger out of reach, no quorum, a signature that does not verify, a state, policy or
receipt refused); 3 the ledger did not prove what an honest log always can.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import click

from ledger.cli import _book, database_option
from ledger.store.log.policy import Policy, PolicyError
from ledger.watch import receipts, state, verdicts
from ledger.watch.evidence import Outcome, Verdict
from ledger.watch.sources import HttpSource, LocalSource, SourceError

DEFAULT_STATE = "hazard-watch.json"
POLICY_HELP = (
    "your policy (C2SP tlog-policy): the log's key, the witnesses' keys and the quorum; "
    "yours, never one the ledger hands out"
)
STATE_HELP = f"where the watcher remembers [default: {DEFAULT_STATE} here]"


def _cannot(message: str) -> NoReturn:
    """Could not check: exit 2 (1 is evidence, and never a mere error)."""
    click.echo(f"could not check: {message}", err=True)
    raise SystemExit(int(Outcome.UNCHECKED))


def _policy(path: str | None) -> Policy:
    if path is None:
        _cannot("give --policy FILE: the keys and quorum you trust")
    try:
        return Policy.read_file(path)
    except PolicyError as e:
        _cannot(str(e))


def _state(path: Path) -> state.State:
    try:
        return state.load(path)
    except state.StateError as e:
        _cannot(str(e))


@click.group(invoke_without_command=True)
@click.option("--url", metavar="URL", help="the ledger's address, read without a token")
@database_option  # instead of --url: the log read from a database (a copy an auditor holds)
@click.option(
    "--policy", "policy_path", type=click.Path(dir_okay=False), metavar="FILE", help=POLICY_HELP
)
@click.option(
    "--state", "state_path", type=click.Path(dir_okay=False), metavar="FILE", help=STATE_HELP
)
@click.option(
    "--report",
    is_flag=True,
    help="also tell the ledger's gossip which checkpoint this watcher verified (anonymously)",
)
@click.pass_context
def watch(
    ctx: click.Context,
    url: str | None,
    database_url: str | None,
    policy_path: str | None,
    state_path: str | None,
    report: bool,
) -> None:
    """Check the ledger against the checkpoints this watcher holds: fetch the newest
    cosigned checkpoint, check the log's signature and the quorum under your policy,
    prove it consistent with what is held (the checkpoint verified before, every
    receipt) and with what others reported, and keep it. On a fork, stop and print the
    two signed notes that cannot both be true; when the ledger says it has no
    checkpoint of a size held, stop and print the note that proves it had one.

    Exit status: 0 consistent; 1 evidence (a fork, or a checkpoint denied); 2 could not
    check; 3 the ledger did not prove its newest checkpoint consistent with one it
    signed."""
    ctx.obj = {"policy": policy_path, "state": state_path}
    if ctx.invoked_subcommand is not None:
        return
    if (url is None) == (database_url is None):
        _cannot("give the ledger's --url (or a database's --database-url), one of them")
    policy = _policy(policy_path)
    where = Path(state_path or DEFAULT_STATE)
    held = _state(where)
    try:
        if url is not None:
            found = verdicts.watch(held, HttpSource(url), policy, report=report)
        else:
            found = _watch_database(database_url, held, policy, report)
    except SourceError as e:
        _cannot(str(e))
    for line in found.lines:
        click.echo(line)
    if found.state is None:
        kept = "still holds what it held" if where.exists() else "was not made"
        click.echo(f"nothing was saved: {where} {kept}")
        raise SystemExit(int(found.outcome))
    state.save(where, found.state)
    click.echo(f"saved: {where}")


def _watch_database(
    database_url: str | None, held: state.State, policy: Policy, report: bool
) -> Verdict:
    """The watch over the log in a database (an auditor's copy). SQLAlchemy is imported
    here, for this alone: over HTTP the command starts without it."""
    from sqlalchemy.exc import DatabaseError

    book = None
    try:
        book = _book(database_url)
        log = policy.logs[0].key if policy.logs else None
        return verdicts.watch(held, LocalSource(book.store.engine, log), policy, report=report)
    except click.ClickException as e:  # the database, which _book names
        _cannot(e.message)
    except DatabaseError as e:
        _cannot(f"the database: {e.orig}")
    finally:
        if book is not None:  # no connection outlives the command
            book.store.close()
            book.store.engine.dispose()


@watch.command("add")
@click.argument("files", nargs=-1, required=True, metavar="RECEIPT...")
@click.option(
    "--policy", "policy_path", type=click.Path(dir_okay=False), metavar="FILE", help=POLICY_HELP
)
@click.option(
    "--state", "state_path", type=click.Path(dir_okay=False), metavar="FILE", help=STATE_HELP
)
@click.pass_obj
def add(
    obj: dict[str, str | None],
    files: tuple[str, ...],
    policy_path: str | None,
    state_path: str | None,
) -> None:
    """Hand the watcher receipts to keep: a write's signed checkpoint, saved as it came
    (`jq -j .receipt.checkpoint`), or a tlog-proof file. Each is checked under your
    policy first; the next `hazard watch` proves the ledger still extends it."""
    policy = _policy(policy_path or obj["policy"])
    where = Path(state_path or obj["state"] or DEFAULT_STATE)
    held = _state(where)
    for name in files:
        try:
            with open(name, "rb") as file:
                data = file.read(receipts.MAX_RECEIPT + 1)
        except OSError as e:
            _cannot(f"cannot read {name}: {e.strerror}")
        if len(data) > receipts.MAX_RECEIPT:
            _cannot(f"{name} is larger than a receipt")
        try:
            admitted = receipts.admit(held, state.Receipt.read(name, data), policy)
        except (state.ReceiptError, receipts.Refused) as e:
            _cannot(str(e))
        if isinstance(admitted, Verdict):
            for line in admitted.lines:
                click.echo(line)
            click.echo(f"nothing was saved: {where} holds what it held")
            raise SystemExit(int(admitted.outcome))
        held = admitted.state
        click.echo(admitted.said)
    state.save(where, held)
    click.echo(f"saved: {where} holds {len(held.receipts)} receipt(s)")


@watch.command("check")
@click.argument("file", metavar="FILE")
@click.option(
    "--policy", "policy_path", type=click.Path(dir_okay=False), metavar="FILE", help=POLICY_HELP
)
@click.pass_obj
def check(obj: dict[str, str | None], file: str, policy_path: str | None) -> None:
    """Check one tlog-proof file alone, offline, under your policy: the log's signature,
    the quorum of cosignatures, the inclusion path from the event's leaf to the
    signed root; and print the event it proves.

    Exit status: 0 proven; 1 the file does not prove its event; 2 not witnessed by the
    quorum, or could not check."""
    policy = _policy(policy_path or obj["policy"])
    try:
        with open(file, "rb") as opened:
            data = opened.read(receipts.MAX_RECEIPT + 1)
    except OSError as e:
        _cannot(f"cannot read {file}: {e.strerror}")
    if len(data) > receipts.MAX_RECEIPT:
        _cannot(f"{file} is larger than a receipt")
    found, lines = receipts.check_file(file, data, policy)
    for line in lines:
        click.echo(line)
    raise SystemExit(int(found))
