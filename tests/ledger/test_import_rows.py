"""A restore writes what the service wrote, row for row, in every table it fills, on
SQLite and PostgreSQL, however the file is cut into batches: the events, the tree's
hashes, the checkpoints, the seals' heads and every read model (accounts, postings,
settlements and their parties, rounds, the dice counts, the disputes). The batches
are cut small as well as large, so that a bet's settlement, a round or a seal's heads
falling across two batches is written as it would be within one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from ledger.books import deep
from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import metadata
from tests.ledger.deepkit import play
from tests.ledger.exportkit import play_disputes
from tests.ledger.restorekit import export, lines, rows
from tests.signing import SIGNER

restore = pytest.importorskip("ledger.exports.restore")

NOT_RESTORED = {"tokens", "commands", "snapshots", "gossip", "witness_states", "clock_holds",
                "cosignatures", "server_seeds"}  # fmt: skip
"""Not in an export (docs/export-format.md), or a cache written anew (snapshots)."""

RESTORED = [t for name, t in sorted(metadata.tables.items()) if name not in NOT_RESTORED]


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    yield store
    store.close()


@pytest.mark.parametrize("batch", [1, 7, 64, 5000])
def test_every_table_restored_holds_the_rows_the_service_wrote(
    played: EventStore, target: sa.Engine, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(restore, "BATCH", batch)
    data = export(played.engine)
    restore.restore(target, lines(data), key=SIGNER.verifier)

    for table in RESTORED:
        assert rows(target, table) == rows(played.engine, table), table.name
    assert export(target) == data
    assert list(deep.differences(EventStore(target))) == []


def test_a_checkpoint_read_after_later_events_is_restored_with_the_root_of_its_size(
    played: EventStore, target: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The format puts each checkpoint line right after the event at its size, and the
    verifier holds a whole log's file to that; a reader that hands one over later (as
    a first-format file may place them) still gets it restored, its root taken from
    the tree's stored hashes and held to the one the line gives."""
    offline = pytest.importorskip("ledger.exports.offline")
    monkeypatch.setattr(restore, "BATCH", 7)
    data = export(played.engine)
    items = list(offline.read(lines(data), SIGNER.verifier))
    at = next(i for i, item in enumerate(items) if isinstance(item, offline.CheckpointLine))
    later = next(i for i in range(at + 20, len(items)) if isinstance(items[i], offline.EventLine))
    items.insert(later, items.pop(at))  # read after a dozen and more events, past a batch
    monkeypatch.setattr(restore, "_checked", lambda *_args: iter(items))

    restore.restore(target, lines(data), key=SIGNER.verifier)

    for table in RESTORED:
        assert rows(target, table) == rows(played.engine, table), table.name
