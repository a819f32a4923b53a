"""`hazard token`: the API's bearer tokens (ledger.web.tokens)."""

from __future__ import annotations

import click

from ledger.cli import _book, _engine, database_option
from ledger.commands import Role
from ledger.store.eventstore import EventStore, NoSigningKey
from ledger.web.tokens import UnknownToken, create, holder, listing, revoke

UNSIGNED = (
    "{}: a token made or revoked is recorded in the signed log (the log of significant "
    "events), so nothing was done; make a key with `hazard key create`, or point HAZARD_KEY "
    "at the log's"
)


@click.group()
def token() -> None:
    """API bearer tokens. Only a hash is stored: a token is shown once, when made."""


@token.command("create")
@click.option("--role", type=click.Choice([r.value for r in Role]), required=True)
@click.option(
    "--name",
    help="who holds it, one live token to a role and name; events name `role:name#tag` "
    "as actor, the tag being the start of the token's id [default: the role's name; "
    "a player's token names a player who exists]",
)
@database_option
def token_create(role: str, name: str | None, database_url: str | None) -> None:
    """Make a token and print it, the one time it is shown.

    The token alone goes to stdout, so that `TOKEN=$(hazard token create ...)` works;
    its id and what to do with it go to stderr.
    """
    if name is None:
        if Role(role) is Role.PLAYER:
            raise click.UsageError("a player's token needs --name: the player it acts for")
        name = role

    store = _book(database_url).store
    try:
        secret = create(store, Role(role), name)
        made = holder(store.engine, secret)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--name") from None
    except NoSigningKey as exc:
        raise click.ClickException(UNSIGNED.format(exc)) from None
    finally:
        _closed(store)
    assert made is not None
    note = f"token {made.id} for {made.actor}: shown this once; only its hash is kept"
    click.echo(note, err=True)
    click.echo(secret)


@token.command("list")
@database_option
def token_list(database_url: str | None) -> None:
    """Every token: id, name, role, when made, when revoked. Never a secret."""
    rows = listing(_engine(database_url))
    click.echo(f"{'id':<16}  {'role':<8}  {'created':<26}  {'revoked':<26}  name")
    for row in rows:
        click.echo(
            f"{row.id:<16}  {row.role:<8}  {row.created_at:<26}  {row.revoked_at or '-':<26}"
            f"  {row.name}"
        )


@token.command("revoke")
@click.argument("token_id", metavar="ID")
@database_option
def token_revoke(token_id: str, database_url: str | None) -> None:
    """Revoke token ID (from `hazard token list`): refused (401) from its next request."""
    store = _book(database_url).store
    try:
        done = revoke(store, token_id)
    except UnknownToken:
        raise click.ClickException(f"no token {token_id}") from None
    except NoSigningKey as exc:
        raise click.ClickException(UNSIGNED.format(exc)) from None
    finally:
        _closed(store)
    click.echo(f"token {token_id} {'revoked' if done else 'was already revoked'}")


def _closed(store: EventStore) -> None:
    """No connection outlives the command: the store's kept writers, then the pool."""
    store.close()
    store.engine.dispose()
