"""`hazard verify`: the log checked from the database (ledger.store.log.check), its
tables replayed through the engine's referee (ledger.audit.refereed) and its read
models replayed (ledger.books.deep), or an export checked alone, offline
(ledger.exports.offline)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ledger.audit import refereed
from ledger.books import deep as read_models
from ledger.books import significant
from ledger.cli import _book
from ledger.cli.keys import reader_policy, trusted_key
from ledger.exports import offline
from ledger.exports.offline import shares
from ledger.store.eventstore import EventStore
from ledger.store.log import check, parting
from ledger.store.log.checkpoint import NoteError
from ledger.store.log.keys import Verifier

SHOWN_PROBLEMS = 20
"""How many problems `hazard verify` lists; the rest are counted."""

RESTARTS = {
    check.Restart.OTHER_KEY: "{state} was verified with another key: a full run",
    check.Restart.RECEIPT_WITHIN: (
        "a checkpoint given is within what was verified before: a full run"
    ),
    check.Restart.TREE_REWRITTEN: (
        "the stored tree of the {size} events verified before is not the one verified "
        "then: a full run"
    ),
}
"""What `hazard verify --state FILE` says when it reads the whole log again, and why."""


@click.command()
@click.option(
    "--checkpoint",
    "receipt_paths",
    type=click.Path(dir_okay=False, exists=True),
    metavar="FILE",
    multiple=True,
    help="also check the log against this signed checkpoint kept elsewhere (a receipt); "
    "give it once per checkpoint: together they narrow where the log parts from them",
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
    "--policy",
    "policy_path",
    type=click.Path(dir_okay=False, exists=True),
    metavar="FILE",
    help="your own witness policy (C2SP tlog-policy: the log's key, the witnesses' "
    "keys, the quorum): the newest checkpoint a quorum of them cosigned must be the "
    "events' tree (with FILE: the file's cosigned checkpoint must hold under it)",
)
@click.option(
    "--deep",
    is_flag=True,
    help="also replay every table through the engine's referee and name the first event "
    "the rules do not allow, and recompute every read model (balances, postings, "
    "settlements, rounds, disputes, snapshots) from the events and name the first row "
    "that differs in each, and check the tokens table against the token events",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1, max=shares.MOST_JOBS),
    metavar="N",
    help="with FILE: check it on N processes, with the same verdict (default: the cores "
    f"this process may run on, at most {shares.MOST_JOBS}; 1: one process; a FILE read "
    "from stdin is checked on one)",
)
@click.argument("file", required=False, metavar="[FILE]")
def verify(
    receipt_paths: tuple[str, ...],
    vkey: str | None,
    state_path: str | None,
    policy_path: str | None,
    deep: bool,
    jobs: int | None,
    file: str | None,
) -> None:
    """Check the log: positions without a gap, every stream's hash chain, every leaf and
    stored hash of the Merkle tree, and every stored checkpoint's signature and root;
    with --deep, every table's events against the rules (each command run again through
    the engine) and every read model against the events too.

    With FILE (an export, `hazard export --format jsonl`; `-` for stdin), check the file
    alone, touching no database: its hashes, its proofs up to the signed checkpoint, and
    every table replayed through the engine. Give --key, the key your club published,
    or the file's own key is used (and said to be).

    With --policy, your own policy file (never one the database or the file names):
    the checkpoint the witnesses cosigned must hold under it, a quorum of its witnesses,
    and be the events' tree; without it, the log is checked against the bank's key
    alone."""
    if file is not None:
        given = (
            ("--checkpoint", receipt_paths or None),
            ("--state", state_path),
            ("--deep", deep or None),
        )
        used = [name for name, value in given if value is not None]
        if used:
            raise click.UsageError(
                f"{', '.join(used)} check the database; with FILE, only the file is checked "
                "(and only --key and --policy apply)"
            )
        _verify_file(file, vkey, policy_path, jobs if jobs is not None else shares.cores())
        return
    if jobs is not None:
        raise click.UsageError("--jobs checks a FILE on several processes: give the FILE")
    policy = None
    if policy_path is not None:
        policy, verifier, source = reader_policy(policy_path, vkey)
    else:
        verifier, source = trusted_key(vkey)
    receipts = [_receipt(path, verifier) for path in receipt_paths]
    state = _state(state_path) if state_path is not None else None
    store = _book().store
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\rverifying: {done} of {total} events", err=True, nl=False)

    try:
        verified = check.verify(
            store.engine, verifier, receipts=receipts, state=state, policy=policy,
            progress=progress, limit_findings=SHOWN_PROBLEMS,
        )  # fmt: skip
    finally:
        store.engine.dispose()  # no connection outlives the command (nothing was written)
    if show:
        click.echo("", err=True)
    if verified.restart is not None:
        assert state is not None  # only a run given a state restarts
        click.echo(RESTARTS[verified.restart].format(state=state_path, size=state.size))
    report = verified.report
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
    if verified.parting is not None:
        for line in verified.parting.lines():
            click.echo(line)
    _echo_findings(report)
    if verified.witnessing is not None:
        for line in verified.witnessing.lines(str(policy_path)):
            click.echo(line)
    failed = not verified.ok
    if deep:
        failed = _deep(store) or failed
    if failed:
        raise SystemExit(1)
    click.echo(
        "every hash chain verifies, and so do the positions, the tree and every "
        "checkpoint, signed by the trusted key"
        + (", and the checkpoint your policy's witnesses cosigned" if policy else "")
        + (
            ", and every read model, and every table's events are what the rules derive, "
            "and every deposit and bet was within the player's limits"
            if deep
            else ""
        )
    )
    if state_path is not None:
        Path(state_path).write_text(verified.state.text() + "\n", encoding="utf-8")
        click.echo(f"state: {state_path} now holds the tree of {report.size} events verified")
        if report.start:
            click.echo(
                f"  (the first {report.start} events were not read again: only a run "
                f"without --state re-reads every event)"
            )


def _receipt(path: str, verifier: Verifier) -> parting.Kept:
    """`--checkpoint FILE`, opened with the trusted key."""
    try:
        return parting.Kept(path, check.open_receipt(Path(path).read_bytes(), verifier))
    except (NoteError, ValueError) as exc:
        raise click.ClickException(
            f"{path} is not a checkpoint signed by the trusted key: {exc}"
        ) from None


def _state(path: str) -> check.State | None:
    """`--state FILE` as an earlier run wrote it; None before the first run."""
    if not Path(path).exists():
        return None
    try:
        return check.State.parse(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise click.ClickException(f"{path}: {exc}") from None


def _echo_findings(report: check.Report) -> None:
    if not report.findings:
        return
    count = len(report.findings) + report.more
    click.echo(f"{count} problem(s), the first at position {report.findings[0].position}:")
    for finding in report.findings:
        click.echo(f"  {finding}")
    if report.more:
        click.echo(f"  ... and {report.more} more")


def _verify_file(file: str, vkey: str | None, policy_path: str | None, jobs: int) -> None:
    """`hazard verify FILE`: the offline check of an export (ledger.exports.offline),
    under the caller's policy when given (whose log is then the key expected), on
    `jobs` processes."""
    policy, verifier = None, None
    if policy_path is not None:
        policy, verifier, _ = reader_policy(policy_path, vkey)
    elif vkey is not None:
        verifier = trusted_key(vkey)[0]
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        click.echo(f"\rverifying: {done} of {total} positions", err=True, nl=False)

    try:
        stream = sys.stdin.buffer if file == "-" else open(file, "rb")  # noqa: SIM115
    except OSError as exc:
        raise click.ClickException(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        verified = offline.verify(stream, verifier, progress if show else None, policy, jobs)
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


def _deep(store: EventStore) -> bool:
    """Replay every table through the referee (ledger.audit.refereed) and recompute the
    read models from the events (ledger.books.deep), and say what is wrong; True if
    anything is."""
    show = sys.stderr.isatty()

    def progress(step: str, done: int, total: int | None) -> None:
        if show:
            of = f" of {total}" if total is not None else ""
            click.echo(f"\rdeep check, {step}: {done}{of}", err=True, nl=False)

    try:
        rules = refereed.replay(
            store.engine, progress=lambda done, total, _events: progress("rules", done, total)
        )
        if show:
            click.echo("", err=True)
        broken = _echo_rules(rules)
        found = list(read_models.differences(store, progress=progress))
        breached = _echo_limits(store)
        broken = _echo_tokens(store) or broken
    finally:
        if show:
            click.echo("", err=True)
        store.engine.dispose()
    if not found:
        click.echo("read models: every table equals the replay of the events")
        return broken or breached
    click.echo(f"read models: {len(found)} table(s) differ from the replay of the events:")
    for difference in found:
        click.echo(f"  {difference}")
    return True


def _echo_limits(store: EventStore) -> bool:
    """Every deposit and bet replayed against the players' limits and breaks in force
    when it was made (ledger.audit.limits); True if one passed them."""
    from ledger import house
    from ledger.audit import limits

    found = limits.check(store.engine, house.from_settings().zone)
    if not found:
        click.echo(
            "limits: every deposit and bet was within the player's limits in force, and "
            "none was made during a time-out or self-exclusion"
        )
        return False
    click.echo(f"limits: {len(found)} deposit(s), bet(s) or limit(s) the limits did not allow:")
    for breach in found[:SHOWN_PROBLEMS]:
        click.echo(f"  {breach}")
    if len(found) > SHOWN_PROBLEMS:
        click.echo(f"  ... and {len(found) - SHOWN_PROBLEMS} more")
    return True


def _echo_tokens(store: EventStore) -> bool:
    """The tokens table against the token events of the log of significant events
    (ledger.books.significant); True if a row or an event is not accounted for."""
    with store.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        found = list(significant.token_differences(conn))
    if not found:
        click.echo("tokens: every token's row is what the token events made and revoked")
        return False
    click.echo(f"tokens: {len(found)} problem(s) between the tokens table and its events:")
    for line in found[:SHOWN_PROBLEMS]:
        click.echo(f"  {line}")
    if len(found) > SHOWN_PROBLEMS:
        click.echo(f"  ... and {len(found) - SHOWN_PROBLEMS} more")
    return True


def _echo_rules(rules: refereed.Refereed) -> bool:
    """What the referee's replay found; True if an event breaks the rules."""
    if rules.breach is not None:
        click.echo(f"rules: the first event the rules do not allow: {rules.breach}")
        others = rules.breaches[1:]
        if others:
            click.echo(f"  {len(others)} more table(s) break them too, the first at each:")
            for breach in others[:SHOWN_PROBLEMS]:
                click.echo(f"  {breach}")
            if len(others) > SHOWN_PROBLEMS:
                click.echo(f"  ... and {len(others) - SHOWN_PROBLEMS} more")
        return True
    click.echo(
        f"rules: {rules.tables} table(s), {rules.events} events replayed through the engine's "
        "referee: each event is what the rules derive from the commands before it"
    )
    for line in rules.unjudged:
        click.echo(f"  not judged: {line}")
    return False
