"""`hazard key`: the key that signs the log's checkpoints; and the key a command that
checks signatures trusts (`--key`), which is never one read from the database."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ledger.bootstrap import DEFAULT_ORIGIN, KEY_ENV, key_path, load_key
from ledger.store.log.keys import BadKey, Verifier, create_key
from ledger.store.log.policy import Log, Policy, PolicyError


def trusted_key(
    vkey: str | None, wanted: str = "no key to check the checkpoints with"
) -> tuple[Verifier, str]:
    """The key whose signatures are trusted, and where it came from: `--key` (a verifier
    key or a file holding one), else the public half of the signing key. Never a key
    read from the database, which is what is being checked. `wanted` says, when there
    is neither, what the key was for."""
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


def reader_policy(path: str, vkey: str | None) -> tuple[Policy, Verifier, str]:
    """`--policy FILE`: the caller's own policy (never one the database, a file or the
    service names), the log key it trusts and where that came from. The key is the
    policy's `log` (`--key` chooses among several, and must be one of them); a policy
    that lists no log (tlog-policy allows it) trusts the key `trusted_key` gives."""
    try:
        policy = Policy.read_file(path)
    except PolicyError as exc:
        raise click.BadParameter(str(exc), param_hint="--policy") from None
    if not policy.logs:
        verifier, source = trusted_key(vkey)
        return dataclasses.replace(policy, logs=(Log(verifier),)), verifier, source
    listed = [log.key for log in policy.logs]
    if vkey is not None:
        verifier, source = trusted_key(vkey)
        if verifier.public_key not in {k.public_key for k in listed}:
            raise click.BadParameter(
                f"{verifier.text()} is not a log the policy {path} lists", param_hint="--key"
            )
        return policy, verifier, source
    if len(listed) > 1:
        raise click.UsageError(f"the policy {path} lists {len(listed)} logs: say which with --key")
    return policy, listed[0], f"the log of the policy {path}"


@click.group()
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
    where = Path(path) if path else key_path()
    try:
        signer = load_key(where)
    except BadKey as exc:
        raise click.ClickException(str(exc)) from None
    if signer is None:
        raise click.ClickException(f"no key file at {where}: make one with `hazard key create`")
    click.echo(signer.verifier.text())
