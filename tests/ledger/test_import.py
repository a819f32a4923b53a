"""Import as a verified restore (ledger.exports.restore), on SQLite and PostgreSQL: a
whole-log export restored into a new database is the same log (the same bytes when
exported again, the same rows in every table, a deep check that finds nothing) and goes
on taking writes; a file that does not verify, a database that is not empty and a
partial export are refused, with nothing written. The command, `hazard import`:
tests/cli/test_import.py."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from ledger import bootstrap
from ledger.books import deep
from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import check
from ledger.store.schema import (
    accounts,
    checkpoints,
    events,
)
from ledger.store.vocabulary import Deposited
from tests.ledger.deepkit import play
from tests.ledger.restorekit import (
    TABLES,
    counts,
    export,
    lines,
    played_store,
    rows,
    tamper_amount,
)
from tests.signing import SIGNER

# The offline verifier (ledger.exports.offline, branch i12-verifier) is what a restore
# reads through; without it there is nothing to test.
offline = pytest.importorskip("ledger.exports.offline")
restore = pytest.importorskip("ledger.exports.restore")


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    yield from played_store(engine)


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
    assert report.size == old[-1][0] + 2  # the deposit and its seal
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


def test_a_tampered_file_is_refused_and_nothing_is_written(
    played: EventStore, target: sa.Engine
) -> None:
    bad, number = tamper_amount(export(played.engine))
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


def test_a_disputed_log_round_trips_with_its_disputes_and_adjustments(
    engine: sa.Engine, target: sa.Engine
) -> None:
    from ledger.store.schema import adjustments, disputes
    from tests.ledger.exportkit import play_disputes

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
