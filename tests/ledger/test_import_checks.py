"""What the database guarantees holds of a restored log as of a log written by the
service, on SQLite and PostgreSQL, though on PostgreSQL a restore has the server check
its rows once at the end (ledger.store.restoring.checked_once): the foreign keys and the
triggers are the migration's, and an event recorded before the one before it is still
refused, with nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.store.eventstore import EventStore
from ledger.store.schema import events
from tests.ledger.restorekit import export, lines, played_store
from tests.signing import SIGNER

offline = pytest.importorskip("ledger.exports.offline")
restore = pytest.importorskip("ledger.exports.restore")


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    yield from played_store(engine)


def _guarantees(engine: sa.Engine) -> list[tuple[Any, ...]]:
    """The database's foreign keys, triggers (with whether each is on) and indexes."""
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            query = "SELECT type, name, sql FROM sqlite_master WHERE type IN ('trigger', 'index')"
            found = [tuple(r) for r in conn.exec_driver_sql(query)]
            tables = "SELECT name FROM sqlite_master WHERE type = 'table'"
            for (table,) in conn.exec_driver_sql(tables):
                keys = conn.exec_driver_sql(f"PRAGMA foreign_key_list({table})")
                found += [(table, *r) for r in keys]
            return sorted(found, key=repr)
        keys = conn.exec_driver_sql(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE connamespace = current_schema()::regnamespace"
        )
        triggers = conn.exec_driver_sql(
            "SELECT tgrelid::regclass::text, tgname, tgenabled FROM pg_trigger"
            " WHERE NOT tgisinternal"
        )
        indexes = conn.exec_driver_sql(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        )
        return sorted([*map(tuple, keys), *map(tuple, triggers), *map(tuple, indexes)], key=repr)


def test_a_restored_database_keeps_every_key_and_trigger_a_new_one_has(
    played: EventStore, target: sa.Engine
) -> None:
    before = _guarantees(target)
    restore.restore(target, lines(export(played.engine)), key=SIGNER.verifier)
    assert _guarantees(target) == before
    with target.connect() as conn:  # the events' refusals are on
        for statement in ("UPDATE events SET actor = 'x'", "DELETE FROM events"):
            with pytest.raises(sa.exc.DatabaseError), conn.begin():
                conn.exec_driver_sql(statement)


@pytest.mark.parametrize(
    "recorded_at", ["2000-01-01T00:00:00.000000Z", "2999-01-01 00:00:00"], ids=["earlier", "form"]
)
def test_an_event_the_time_trigger_refuses_is_refused_by_a_restore_with_nothing_written(
    played: EventStore, target: sa.Engine, monkeypatch: pytest.MonkeyPatch, recorded_at: str
) -> None:
    """The verifier refuses such a file first (offline/times.py); handed one past it, the
    restore still does not keep it: the database refuses it, as it would a write."""
    monkeypatch.setattr(restore, "BATCH", 7)
    data = export(played.engine)
    items = list(offline.read(lines(data), SIGNER.verifier))
    at = [i for i, item in enumerate(items) if isinstance(item, offline.EventLine)][20]
    item = items[at]
    items[at] = item._replace(row=item.row._replace(recorded_at=recorded_at))
    monkeypatch.setattr(restore, "_checked", lambda *_args: iter(items))

    with pytest.raises(Exception, match=r"YYYY-MM-DDTHH:MM:SS\.ffffffZ|time only goes forward"):
        restore.restore(target, lines(data), key=SIGNER.verifier)

    with target.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one() == 0


def test_a_restore_that_may_not_alter_the_tables_has_every_row_checked_as_written(
    played: EventStore, target: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the checks cannot be left to the end (here: a trigger the server does not
    know, as it refuses a role that does not own the tables), nothing of them is
    changed, and the restore writes the same rows with the server checking each."""
    from ledger.store import restoring
    from tests.ledger.restorekit import TABLES, rows

    monkeypatch.setattr(restoring, "TIME_TRIGGER", "no_such_trigger")
    before = _guarantees(target)
    restore.restore(target, lines(export(played.engine)), key=SIGNER.verifier)
    assert _guarantees(target) == before
    for table in TABLES:
        assert rows(target, table) == rows(played.engine, table), table.name
