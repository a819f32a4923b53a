"""The receipts the console hands a player's browser (ledger.store.log.receipts): each
event's bytes, whose leaf is the tree's, and the checkpoint the write that recorded it
signed, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.store.eventstore import EventStore
from ledger.store.log import merkle, receipts, tree
from ledger.store.log.checkpoint import open_checkpoint
from tests.ledger.tamperkit import Log, play, unguarded
from tests.signing import VERIFIER


def test_each_receipt_is_the_events_leaf_and_the_checkpoint_its_write_signed(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    play(store)
    monkeypatch.setattr(receipts, "CHUNK", 4)  # several queries' worth, as 200 lines are
    with store.engine.connect() as conn:
        sizes = list(conn.execute(sa.text("SELECT size FROM checkpoints ORDER BY size")).scalars())
        last = sizes[-1]
        asked = [last + 5, 1, *range(2, last, 3), 7, last]  # out of order, twice, past the end
        found = receipts.written(conn, asked)
        rows = {row.position: row for row in store.read_all(0, limit=10_000)}
        assert [r.position for r in found] == sorted(set(asked) - {last + 5})
        for receipt in found:
            # The browser hashes the leaf from these bytes: the tree's own leaf.
            assert merkle.leaf_hash(receipt.frame) == tree.leaf(rows[receipt.position])
            # The write's checkpoint: the first whose tree holds the event.
            assert receipt.size == min(s for s in sizes if s >= receipt.position)
            assert receipt.note is not None
            assert open_checkpoint(receipt.note, [VERIFIER]).size == receipt.size


def test_an_event_no_checkpoint_holds_has_a_receipt_without_one(
    store: EventStore, tmp_path: Path
) -> None:
    """Every write signs a checkpoint; one taken out of the database behind the ledger's
    back leaves its events with none, which the receipt says (and the browser fails)."""
    play(store)
    with store.engine.connect() as conn:
        last = conn.execute(sa.text("SELECT max(size) FROM checkpoints")).scalar_one()
    log = Log(store.engine, last, "", tmp_path)
    with unguarded(log) as conn:
        conn.execute(sa.text("DELETE FROM checkpoints WHERE size = :s"), {"s": last})
    with store.engine.connect() as conn:
        found = receipts.written(conn, [1, last])
    assert found[0].size is not None and found[0].size < last
    assert (found[1].position, found[1].size, found[1].note) == (last, None, None)
