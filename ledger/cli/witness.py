"""`hazard witness`: a witness the club's treasurer or auditor runs, apart from the bank
(ledger.witness). `init` makes its key and state, `serve` runs it; `key` prints its
public key for the club's policy, `evidence` what it refused, `logs` what it follows;
`trust` and `retire` change which log keys it trusts."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ledger.store.log.keys import BadKey, Verifier
from ledger.witness.home import (
    DEFAULT_DIR,
    DEFAULT_PORT,
    DIR_ENV,
    NoWitness,
    directory,
    init,
    load_cosigner,
)
from ledger.witness.home import open_state as _open_state
from ledger.witness.state import State, StateError

Decorated = TypeVar("Decorated", bound=Callable[..., Any])

dir_option: Callable[[Decorated], Decorated] = click.option(
    "--dir",
    "where",
    type=click.Path(file_okay=False),
    help=f"the witness's directory [default: {DIR_ENV}, or {DEFAULT_DIR} here]",
)


def _log_key(text: str) -> Verifier:
    """`--log`: the log's public key (a vkey), or a file holding one."""
    path = Path(text)
    given = path.read_text(encoding="utf-8").strip() if path.is_file() else text
    try:
        return Verifier.parse(given)
    except BadKey as exc:
        where = f"{text}: " if path.is_file() else ""
        raise click.BadParameter(f"{where}{exc}", param_hint="--log") from None


def _state(where: str | None) -> State:
    try:
        return _open_state(directory(where))
    except NoWitness as exc:
        raise click.ClickException(str(exc)) from None


log_option = click.option(
    "--log",
    "log_key",
    required=True,
    metavar="VKEY",
    help="the log's public key (what `hazard key show` prints on the club's machine), "
    "or a file holding it",
)
origin_option = click.option(
    "--origin", help="the log's origin line [default: the key's name, as the ledger signs]"
)


@click.group()
def witness() -> None:
    """A witness: cosigns the club's checkpoints, refuses a fork or a rollback."""


@witness.command("init")
@click.option("--name", required=True, help="the witness's name, such as treasurer.example/witness")
@log_option
@origin_option
@dir_option
def witness_init(name: str, log_key: str, origin: str | None, where: str | None) -> None:
    """Make a witness: its key (a file of mode 0600, never overwritten) and its state,
    following the log whose key --log gives. Prints the witness's public key, for the
    club's policy."""
    home = directory(where)
    try:
        cosigner = init(home, name, _log_key(log_key), origin)
    except (NoWitness, BadKey, StateError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # the directory cannot be made: a file there, no permission
        raise click.ClickException(f"cannot make the witness in {home}: {exc.strerror}") from None
    click.echo(cosigner.key.text())
    click.echo(
        f"made the witness in {home}; give the club its key, the line above, for its policy:\n"
        f"  witness {name} {cosigner.key.text()} http://HOST:{DEFAULT_PORT}",
        err=True,
    )


@witness.command("serve")
@dir_option
@click.option("--host", default="127.0.0.1", show_default=True, help="0.0.0.0: every interface")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="0: any free port (the banner says which)")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="gunicorn worker processes")  # fmt: skip
@click.option("--threads", type=click.IntRange(min=1), default=4, show_default=True,
              help="threads per worker")  # fmt: skip
@click.option("--io-timeout", type=click.FloatRange(min=0.1, max=600), default=10.0,
              show_default=True, metavar="SECONDS",
              help="how long a request's head, then its body, may take to arrive")  # fmt: skip
def witness_serve(
    where: str | None, host: str, port: int, workers: int, threads: int, io_timeout: float
) -> None:
    """Serve the witness (C2SP tlog-witness) under gunicorn, until stopped."""
    from ledger.witness.server import serve

    try:
        serve(directory(where), host, port, workers, threads, io_timeout)
    except (NoWitness, BadKey) as exc:
        raise click.ClickException(str(exc)) from None


@witness.command("key")
@dir_option
def witness_key(where: str | None) -> None:
    """Print the witness's public key (never the key itself)."""
    try:
        click.echo(load_cosigner(directory(where)).key.text())
    except (NoWitness, BadKey) as exc:
        raise click.ClickException(str(exc)) from None


@witness.command("evidence")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="as JSON")
def witness_evidence(where: str | None, as_json: bool) -> None:
    """Print every checkpoint signed by a log that the witness refused: both signed
    notes in full, the reason in words, and when."""
    from ledger.witness import evidence

    refusals, not_kept = _state(where).refusals()
    if as_json:
        click.echo(json.dumps(evidence.as_json(refusals, not_kept), indent=2))
    else:
        click.echo(evidence.describe(refusals, not_kept), nl=False)


@witness.command("logs")
@dir_option
def witness_logs(where: str | None) -> None:
    """The logs the witness follows: the keys it trusts, and the tree it last cosigned."""
    from ledger.witness.evidence import when

    for log in _state(where).followed():
        cosigned = log.cosigned
        click.echo(log.origin)
        if cosigned.note is None:
            click.echo("  nothing cosigned yet")
        else:
            click.echo(f"  cosigned size {cosigned.size} at {when(cosigned.at)}")
        for key in log.keys:
            click.echo(f"  trusts {key}")


@witness.command("trust")
@log_option
@origin_option
@dir_option
def witness_trust(log_key: str, origin: str | None, where: str | None) -> None:
    """Trust a log's key: another log to follow, or a new key of a log followed (the
    old key stays trusted until `hazard witness retire`)."""
    key = _log_key(log_key)
    state = _state(where)
    followed = origin or key.name
    new_log = state.trusted(followed) is None
    try:
        added = state.follow(followed, key.text(), int(time.time()))
    except StateError as exc:
        raise click.ClickException(str(exc)) from None
    if not added:
        click.echo(f"already trusted for {followed}")
        return
    click.echo(f"{'now follows' if new_log else 'trusts a new key for'} {followed}: {key.text()}")


@witness.command("retire")
@log_option
@origin_option
@dir_option
def witness_retire(log_key: str, origin: str | None, where: str | None) -> None:
    """Trust a log's key no more; what the witness cosigned under it stays."""
    key = _log_key(log_key)
    state = _state(where)
    followed = origin or key.name
    keys = state.trusted(followed)
    if keys is None or key.text() not in keys:
        raise click.ClickException(f"{key.text()} is not trusted for {followed}")
    if len(keys) == 1:
        raise click.ClickException(
            f"it is the only key trusted for {followed}: trust its new key first "
            "(`hazard witness trust --log NEWKEY`)"
        )
    state.retire(followed, key.text())
    click.echo(f"no longer trusts {key.text()} for {followed}")
