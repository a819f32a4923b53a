"""What a restore holds while it runs does not grow with the log, on SQLite and
PostgreSQL: the rows it has written are let go, batch after batch, however far apart
the seals are, so a log of millions restores in the memory of a few batches."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.store.eventstore import Known

restore = pytest.importorskip("ledger.exports.restore")

DATA = Path(__file__).parent / "data"


def _live_rows() -> int:
    """The event rows a restore made (Known) that are still alive."""
    return sum(1 for o in gc.get_objects() if isinstance(o, Known))


def test_a_log_without_seals_is_restored_without_holding_every_event(
    target: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log from before seals (format 1: this file was written by the exporter of
    then) has no seal to end its heads' fold at: its rows were kept until the end, the
    whole log in memory. Counted after each batch, the rows alive at the end of the
    file are no more than half way through."""
    batch = 3
    monkeypatch.setattr(restore, "BATCH", batch)
    alive: list[tuple[int, int]] = []

    def progress(done: int, _total: int) -> None:
        alive.append((done, _live_rows()))

    data = (DATA / "format1-all.jsonl").read_bytes().splitlines(keepends=True)
    restored = restore.restore(target, data, progress=progress)

    assert restored.events > 10 * batch
    half = next(count for done, count in alive if done >= restored.events // 2)
    assert alive[-1][1] <= half, alive


def test_the_accounts_a_restore_looks_up_are_not_kept_once_their_batch_is_written(
    target: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch reads the standing of the accounts it posts to (a bet's escrow among
    them: thousands a batch). SQLAlchemy's cache of compiled statements kept the first
    list of names each statement was run with, hundreds of names a statement, for as
    long as the engine lives: the statement now takes the names as a parameter."""
    monkeypatch.setattr(restore, "BATCH", 3)
    data = (DATA / "format1-all.jsonl").read_bytes().splitlines(keepends=True)
    # What other tests in this process left alive (their engines' caches) is not this
    # restore's: only lists of names made during it count.
    # (held meanwhile, so that no list of the restore's can take one of their ids).
    before = _lists_of_names()
    seen = {id(names) for names in before}
    restore.restore(target, data)
    gc.collect()
    assert [names for names in _lists_of_names() if id(names) not in seen] == []


def _lists_of_names() -> list[list[str]]:
    """The account names SQLAlchemy's bound parameters hold alive, as lists."""
    from sqlalchemy.sql.elements import BindParameter

    return [
        o.value
        for o in gc.get_objects()
        if isinstance(o, BindParameter)
        and isinstance(o.value, list)
        and any(isinstance(v, str) and v.startswith(("player:", "escrow:")) for v in o.value)
    ]


@pytest.mark.parametrize("batch", [10, 20])
def test_a_restore_holds_one_batch_of_rows_at_a_time(
    target: sa.Engine, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """Each batch is let go before the next is read: the read models' replay held the
    batch it had written while the next was read and checked, two batches of rows
    (with their events and the tables' states) where one is written."""
    monkeypatch.setattr(restore, "BATCH", batch)
    monkeypatch.setattr(restore, "READ_AHEAD", 1)  # PostgreSQL's: a few lines ahead
    alive: list[int] = []

    def progress(_done: int, _total: int) -> None:
        alive.append(_live_rows())

    data = (DATA / "format1-all.jsonl").read_bytes().splitlines(keepends=True)
    restore.restore(target, data, progress=progress)

    assert max(alive) <= batch + 9, alive
