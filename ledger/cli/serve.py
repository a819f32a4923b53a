"""`hazard serve` and `hazard openapi`: the REST API run under gunicorn
(ledger.api.server), and its contract."""

from __future__ import annotations

import click
from sqlalchemy.exc import OperationalError

from ledger.api import generate
from ledger.store.db import BadSetting, SchemaBehind
from ledger.store.log.keys import BadKey
from ledger.store.log.policy import PolicyError


@click.command()
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
    # Imported here, not at the top: gunicorn and the server's modules are for this
    # command alone, and `hazard --help`, which imports every command's module, would
    # pay for them (about 20 ms of CPU).
    from ledger.api.server import serve as run

    try:
        run(host, port, workers, threads, io_timeout)
    except (SchemaBehind, BadSetting, BadKey, PolicyError) as exc:
        raise click.ClickException(str(exc)) from None
    except OperationalError as exc:
        raise click.ClickException(f"cannot open the database: {exc.orig}") from None


@click.command()
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
    text = generate()
    if path is None:
        click.echo(text, nl=False)
        return
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
