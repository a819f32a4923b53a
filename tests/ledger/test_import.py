"""Import as a verified restore (ledger.exports.restore, `hazard import`), on SQLite and
PostgreSQL: a whole-log export restored into a new database is the same log (the same
bytes when exported again, the same rows in every table, a deep check that finds
nothing) and goes on taking writes; a file that does not verify, a database that is not
empty and a partial export are refused, with nothing written."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ledger import bootstrap
from ledger.books import deep
from ledger.books.book import Book
from ledger.cli import main
from ledger.exports import jsonl
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log import check
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
from ledger.store.vocabulary import Deposited
from tests.ledger.test_deep import play
from tests.signing import SIGNER

# The offline verifier (ledger.exports.offline, branch i12-verifier) is what a restore
# reads through; without it there is nothing to test.
offline = pytest.importorskip("ledger.exports.offline")
restore = pytest.importorskip("ledger.exports.restore")

TABLES = (events, tree_hashes, checkpoints, accounts, postings, settlements,
          settlement_parties, rounds)  # fmt: skip
"""Every table a restore reproduces (snapshots are a cache: written anew)."""

_names = itertools.count()


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, signer=SIGNER)
    play(Club(Book(store)))
    yield store
    store.close()


@pytest.fixture
def target_url(database_url: str, tmp_path: Path) -> Iterator[str]:
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


@pytest.fixture
def target(target_url: str) -> Iterator[sa.Engine]:
    engine = db.make_engine(target_url)
    db.upgrade(engine)
    yield engine
    engine.dispose()


def export(engine: sa.Engine, **scope: Any) -> bytes:
    prepared = jsonl.prepare(engine, scope_of(**(scope or {"everything": True})), SIGNER.verifier)
    return b"".join(prepared.chunks())


def lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


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


def test_a_whole_log_round_trips_byte_for_byte_with_every_table_the_same(
    played: EventStore, target: sa.Engine
) -> None:
    before = export(played.engine)
    restored = restore.restore(target, lines(before), key=SIGNER.verifier)

    assert export(target) == before
    for table in TABLES:
        assert rows(target, table) == rows(played.engine, table), table.name
    assert list(deep.differences(EventStore(target))) == []
    newest = rows(played.engine, checkpoints)[-1]
    assert (restored.size, restored.root, restored.note) == (newest[0], newest[1], newest[3])
    assert restored.events == len(rows(played.engine, events))
    assert restored.checkpoints == len(rows(played.engine, checkpoints))
    assert restored.accounts == 5  # ann, bob, cat, the setter and cash; escrows not counted
    assert restored.key == SIGNER.verifier.text()
    assert restored.tables == restored.snapshots == 1


def test_the_restored_log_verifies_and_takes_the_next_write_under_the_same_key(
    played: EventStore, target: sa.Engine
) -> None:
    waiting = EventStore(target, signer=SIGNER)  # made before the restore: nothing stale
    old = rows(played.engine, checkpoints)
    restore.restore(target, lines(export(played.engine)))
    bootstrap.ensure_key(waiting)  # the key that signed the log: accepted

    Club(Book(waiting)).account_command("ann", Deposited, 250, "setter")
    waiting.close()

    with target.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, SIGNER.verifier)
    assert report.ok, report.findings
    assert report.size == old[-1][0] + 1
    assert report.checkpoints == len(old) + 1
    assert list(deep.differences(EventStore(target))) == []
    with target.connect() as conn:
        ann = conn.execute(
            sa.select(accounts.c.balance).where(accounts.c.account == "player:ann")
        ).scalar_one()
    with played.engine.connect() as conn:
        was = conn.execute(
            sa.select(accounts.c.balance).where(accounts.c.account == "player:ann")
        ).scalar_one()
    assert ann == was + 250


def _tamper_amount(data: bytes) -> tuple[bytes, int]:
    """The file with one amount changed (a stake laid, 400 made 500), naively: the line's
    leaf and hash left as they were. Returns it and the line's number."""
    out = lines(data)
    for number, line in enumerate(out, 1):
        doc = json.loads(line)
        if doc.get("type") == "StakeLaid" and doc["payload"]["amount"] == 400:
            out[number - 1] = line.replace(b'"amount":400', b'"amount":500')
            return b"".join(out), number
    raise AssertionError("no stake of 400 in the file")


def test_a_tampered_file_is_refused_and_nothing_is_written(
    played: EventStore, target: sa.Engine
) -> None:
    bad, number = _tamper_amount(export(played.engine))
    with pytest.raises(offline.Disagreement) as refused:
        restore.restore(target, lines(bad))
    assert refused.value.line == number
    assert set(counts(target).values()) == {0}


def test_a_file_cut_short_is_refused_after_every_event_was_read_and_nothing_stays(
    played: EventStore, target: sa.Engine
) -> None:
    """The closing record is the last line and the only proof: everything before it
    was written in the transaction, and is rolled back."""
    cut = lines(export(played.engine))[:-1]
    with pytest.raises(offline.Disagreement):
        restore.restore(target, cut)
    assert set(counts(target).values()) == {0}


def test_a_database_that_holds_a_log_is_refused(played: EventStore) -> None:
    data = export(played.engine)
    before = counts(played.engine)
    with pytest.raises(restore.NotEmpty, match="already holds a log"):
        restore.restore(played.engine, lines(data))
    assert counts(played.engine) == before


def test_a_tables_export_is_refused_as_partial(played: EventStore, target: sa.Engine) -> None:
    data = export(played.engine, table="t1")
    with pytest.raises(restore.Partial, match="a table's export holds only part of the log"):
        restore.restore(target, lines(data))
    assert set(counts(target).values()) == {0}


def test_a_range_from_the_first_event_restores_the_log_up_to_its_end(
    played: EventStore, target: sa.Engine
) -> None:
    """A time range of the whole club that starts at the first event is a log of its
    own: every checkpoint inside it is in the file."""
    with played.engine.connect() as conn:
        query = sa.select(events.c.recorded_at).order_by(events.c.position)
        times = [r[0] for r in conn.execute(query)]
    until = times[len(times) // 2]
    data = export(played.engine, until=until)
    if json.loads(lines(data)[0])["first"] != 1:
        pytest.skip("the range does not start at the first event")
    restored = restore.restore(target, lines(data))
    with target.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, SIGNER.verifier)
    assert report.ok, report.findings
    assert restored.events == report.size


# -- the command ------------------------------------------------------------------------


def hazard(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env=env)


def test_hazard_import_migrates_a_new_database_restores_and_verifies_deep(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "hazard-all.jsonl"
    path.write_bytes(export(played.engine))

    key = SIGNER.verifier.text()
    done = hazard("import", str(path), "--key", key, "--database-url", target_url)
    assert done.exit_code == 0, done.output
    size, root = rows(played.engine, checkpoints)[-1][:2]
    assert f"restored {len(rows(played.engine, events))} events" in done.output
    assert f"checkpoint: size {size}, root {root}" in done.output

    checked = hazard("verify", "--deep", env={"DATABASE_URL": target_url})
    assert checked.exit_code == 0, checked.output
    assert "every read model" in checked.output

    again = hazard("import", str(path), "--database-url", target_url)
    assert again.exit_code == 1
    assert "already holds a log" in again.output


def test_hazard_import_names_the_line_of_a_bad_file_and_writes_nothing(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    bad, number = _tamper_amount(export(played.engine))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(bad)
    done = hazard("import", str(path), "--database-url", target_url)
    assert done.exit_code == 1
    assert f"line {number}" in done.output and "nothing was written" in done.output
    engine = db.make_engine(target_url)
    try:
        assert set(counts(engine).values()) == {0}
    finally:
        engine.dispose()


def test_hazard_import_refuses_a_file_signed_by_another_key(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    from ledger.store.log.keys import Signer

    other = Signer.generate("hazard.local/ledger")
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    done = hazard("import", str(path), "--key", other.verifier.text(), "--database-url", target_url)
    assert done.exit_code == 1
    assert "nothing was written" in done.output


def test_a_disputed_log_round_trips_with_its_disputes_and_adjustments(
    engine: sa.Engine, target: sa.Engine
) -> None:
    from ledger.store.schema import adjustments, disputes
    from tests.ledger.test_independent_export_check import play_disputes

    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    before = export(store.engine)
    restore.restore(target, lines(before), key=SIGNER.verifier)
    assert export(target) == before
    for table in (disputes, adjustments):
        assert len(rows(target, table)) == 3 and rows(target, table) == rows(engine, table)
    assert list(deep.differences(EventStore(target))) == []
    store.close()


def test_hazard_import_where_there_is_no_key_says_so(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    """Regression: in a folder with no key, `hazard import` said "the signing key at
    hazard.key is not that key". It says there is none, and what to do."""
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    missing = tmp_path / "hazard.key"
    done = hazard(
        "import", str(path), "--database-url", target_url, env={"HAZARD_KEY": str(missing)}
    )
    assert done.exit_code == 0, done.output
    assert f"there is no signing key at {missing}" in done.output
    assert "not that key" not in done.output
    assert SIGNER.verifier.text() in done.output and "HAZARD_KEY" in done.output


def test_hazard_import_where_another_key_is_names_it(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    from ledger.store.log.keys import create_key

    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    elsewhere = tmp_path / "other.key"
    other = create_key(elsewhere, "hazard.local/ledger")
    done = hazard(
        "import", str(path), "--database-url", target_url, env={"HAZARD_KEY": str(elsewhere)}
    )
    assert done.exit_code == 0, done.output
    assert f"the signing key at {elsewhere} is another key ({other})" in done.output


def test_hazard_import_with_another_key_names_the_files_header(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    """Regression: `--key` with a file whose header names another key blamed the
    checkpoints ("the checkpoints are signed by ..."), which were never read: it is the
    header that names the other key."""
    from ledger.store.log.keys import Signer

    other = Signer.generate("hazard.local/ledger").verifier.text()
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    done = hazard("import", str(path), "--key", other, "--database-url", target_url)
    assert done.exit_code == 1
    said = done.output
    assert f"line 1: the file's header names the key {SIGNER.verifier.text()}" in said, said
    assert f"not the key you gave ({other})" in said and "checkpoints are signed" not in said
