"""A played log, a second empty database to restore it into, and what the restore
tests compare: shared by the restore tests and `hazard import`'s."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ledger.books.book import Book
from ledger.exports import jsonl
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import (
    accounts,
    checkpoints,
    events,
    postings,
    rounds,
    settlement_parties,
    settlements,
    snapshots,
    tree_hashes,
)
from tests.ledger.deepkit import play
from tests.signing import SIGNER

TABLES = (events, tree_hashes, checkpoints, accounts, postings, settlements,
          settlement_parties, rounds)  # fmt: skip
"""Every table a restore reproduces (snapshots are a cache: written anew)."""


_names = itertools.count()


def played_store(engine: sa.Engine) -> Iterator[EventStore]:
    """The `played` fixture: deepkit's history, signed by the session's key."""
    store = EventStore(engine, signer=SIGNER)
    play(Club(Book(store)))
    yield store
    store.close()


def empty_database(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A second new, empty database of the same kind as `database_url` (not migrated)."""
    if database_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'restored.sqlite3'}"
        return
    name = f"restored_{os.getpid()}_{next(_names)}"
    url = sa.engine.make_url(database_url)
    admin = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def export(engine: sa.Engine, **scope: Any) -> bytes:
    prepared = jsonl.prepare(engine, scope_of(**(scope or {"everything": True})), SIGNER.verifier)
    return b"".join(prepared.chunks())


def rows(engine: sa.Engine, table: sa.Table) -> list[tuple[Any, ...]]:
    """Every row in key order; postings without their ids (a surrogate key)."""
    columns = [c for c in table.c if not (table is postings and c.name == "id")]
    order = list(table.primary_key.columns) if table is not postings else columns
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(*columns).order_by(*order))]


def counts(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (*TABLES, snapshots)
        }


def lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def tamper_amount(data: bytes) -> tuple[bytes, int]:
    """The file with one amount changed (a stake laid, 400 made 500), naively: the line's
    leaf and hash left as they were. Returns it and the line's number."""
    out = lines(data)
    for number, line in enumerate(out, 1):
        doc = json.loads(line)
        if doc.get("type") == "StakeLaid" and doc["payload"]["amount"] == 400:
            out[number - 1] = line.replace(b'"amount":400', b'"amount":500')
            return b"".join(out), number
    raise AssertionError("no stake of 400 in the file")
