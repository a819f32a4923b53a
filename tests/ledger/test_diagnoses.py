"""Honest diagnoses from `hazard verify` on a database rewritten by whoever holds the
bank's key (tests.ledger.attackkit: each hash chain, the tree and every checkpoint made
again and signed with the real key, the read models rebuilt), on SQLite and
PostgreSQL: a dropped deposit is named where it was dropped, the checkpoints a reader
kept narrow where the log parts from them, and where nothing bounds it the range says
so, with no bound claimed that nothing holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import Result

from ledger.store.eventstore import EventStore, Recorded
from tests.ledger import attackkit
from tests.ledger.tamperkit import Log, hazard_verify, played_log


@pytest.fixture
def log(store: EventStore, tmp_path: Path) -> Iterator[Log]:
    yield from played_log(store, tmp_path)


class Receipts:
    """Every checkpoint the log signed, as its players and its auditor kept them before
    the attack: each write's receipt."""

    def __init__(self, log: Log) -> None:
        self.log = log
        with log.engine.connect() as conn:
            self.notes = dict(conn.execute(sa.text("SELECT size, note FROM checkpoints")).all())

    def file(self, size: int, name: str = "kept") -> str:
        path = self.log.tmp / f"{name}-{size}.txt"
        path.write_text(self.notes[size], encoding="utf-8")
        return str(path)

    def holding(self, position: int) -> int:
        """The size of the receipt of the write that recorded `position`."""
        return min(size for size in self.notes if size >= position)

    def before(self, position: int) -> int:
        """The size of the newest receipt before `position` was written."""
        return max(size for size in self.notes if size < position)

    @property
    def newest(self) -> int:
        return max(self.notes)


def verified(log: Log, kept: Receipts, *sizes: int) -> Result:
    args = [arg for size in sizes for arg in ("--checkpoint", kept.file(size))]
    return hazard_verify(log, *args)


def said_of(result: Result, path: str) -> str:
    """What `hazard verify` said of the checkpoint kept in `path`."""
    [line] = [line for line in result.output.splitlines() if line.startswith(f"checkpoint {path} ")]
    return line.split("): ", 1)[1]


GONE = 2
"""What taking out one of bob's deposits takes out of the log: the deposit was its
write's one event, and its write's seal goes with it (attackkit.dropped)."""


def a_deposit_of_bob_s_before_his_last(log: Log) -> tuple[Recorded, Recorded, Recorded]:
    """One of bob's deposits with events of his stream before and after it: (the one
    before, it, the one after)."""
    rows = log.rows("stream = 'account:player:bob'")
    at = max(i for i, r in enumerate(rows[:-1]) if r.type == "Deposited" and i > 0)
    return rows[at - 1], rows[at], rows[at + 1]


def test_a_deposit_dropped_is_named_where_it_was_dropped(log: Log) -> None:
    """The issue's case: a deposit taken out and the rest renumbered, each stream's chain
    and the tree made again and signed with the bank's key, the stream left skipping
    the deposit's version. It read as a log cut at the receipt's size."""
    kept = Receipts(log)
    before, dropped, after = a_deposit_of_bob_s_before_his_last(log)
    attackkit.dropped(log, dropped.position, versions=False)
    jump = after.position - GONE  # where bob's next event now stands
    alone = hazard_verify(log)
    assert alone.exit_code == 1
    assert (
        f"the first at position {jump}:\n  position {jump} (account:player:bob "
        f"v{after.version}): version {after.version} follows {before.version}: "
        f"v{dropped.version} is missing, dropped after position {before.position} (where "
        f"v{before.version} is) and before this event"
    ) in alone.output
    # The newest checkpoint alone: the chain bounds it, nothing from below; no cut.
    newest = verified(log, kept, kept.newest)
    assert (
        f"the log parts from the checkpoint somewhere in positions 1..{jump}: the event at "
        f"{jump} breaks its stream's hash chain"
    ) in newest.output
    assert "nothing bounds it from below" in newest.output
    assert "cut" not in newest.output
    # Two kept receipts, the one before the deposit and the deposit's own: exactly there.
    mine, earlier = kept.holding(dropped.position), kept.before(dropped.position)
    both = verified(log, kept, earlier, mine, kept.newest)
    assert both.exit_code == 1
    said = {size: said_of(both, kept.file(size)) for size in (earlier, mine, kept.newest)}
    assert said[earlier] == f"the log agrees with the checkpoint of size {earlier}"
    # The deposit's write, its deposit and its seal, is what the two receipts bound.
    assert mine == dropped.position + 1
    assert said[mine] == (
        f"the log parts from the checkpoint somewhere in positions {dropped.position}..{mine}: "
        "it agrees with "
        f"{kept.file(earlier)} (size {earlier}); the log's first {mine} events have another "
        "root"
    )
    assert said[kept.newest].startswith("the log does not agree with it either")
    assert f"the trusted key signed two trees of size {mine}" in both.output


def test_a_deposit_dropped_and_its_stream_renumbered_is_bounded_by_the_receipts_alone(
    log: Log,
) -> None:
    """The same, the stream's versions made again too: nothing in the database shows it,
    and the receipts alone say where."""
    kept = Receipts(log)
    _, dropped, _ = a_deposit_of_bob_s_before_his_last(log)
    attackkit.dropped(log, dropped.position, versions=True)
    assert hazard_verify(log).exit_code == 0
    newest = verified(log, kept, kept.newest)
    assert newest.exit_code == 1
    assert (
        f"the log parts from the checkpoint somewhere in positions 1..{kept.newest - GONE + 1}:"
        f" the log ends at {kept.newest - GONE} events; nothing bounds it from below"
    ) in newest.output
    assert "cut" not in newest.output
    mine, earlier = kept.holding(dropped.position), kept.before(dropped.position)
    both = verified(log, kept, mine, earlier)
    assert (
        f"the log parts from the checkpoint somewhere in positions {dropped.position}..{mine}: "
        in both.output
    )


def test_a_deposit_dropped_under_the_checkpoints_it_signed_is_not_read_as_a_cut(
    log: Log,
) -> None:
    """The deposit taken out, the rest renumbered and the tree rebuilt, but the stored
    checkpoints left as they were: the first that no longer agrees names where, and the
    one beyond the shorter log is no longer said to show a cut there."""
    kept = Receipts(log)
    _, dropped, _ = a_deposit_of_bob_s_before_his_last(log)
    attackkit.dropped(log, dropped.position, versions=True, resign=False)
    alone = hazard_verify(log)
    assert alone.exit_code == 1
    mine = kept.holding(dropped.position)
    assert f"the first at position {mine}:" in alone.output
    # Its line may first say the checkpoint is dated before the events it now covers
    # (the event after the dropped one, recorded in a later second than the checkpoint
    # was signed: how often depends on the machine's pace), then that it signs a root
    # the events do not give.
    (line,) = [ln for ln in alone.output.splitlines() if ln.startswith(f"  position {mine}:")]
    assert f"the checkpoint of size {mine} signs root" in line
    assert (
        f"position {kept.newest - GONE + 1}: 1 stored checkpoint(s) cover the log up to "
        f"{kept.newest} "
        f"events, but it has {kept.newest - GONE}: events were taken out, from its end or "
        "before it"
    ) in alone.output
    assert "cut" not in alone.output


def _ten_times(data: dict[str, Any]) -> None:
    data["amount"] *= 10


def test_two_kept_receipts_narrow_a_rewrite_and_none_claims_a_bound_nothing_holds(
    log: Log,
) -> None:
    """A deposit made ten times larger and everything signed again with the bank's
    key: every stored checkpoint agrees with the events, so none bounds anything; it
    read as bounded by them. One kept before and one after narrow it."""
    kept = Receipts(log)
    deposits = log.rows("type = 'Deposited'")
    changed = deposits[len(deposits) // 2].position
    attackkit.payload_rewritten(log, "Deposited", _ten_times, changed)
    newest = verified(log, kept, kept.newest)
    assert newest.exit_code == 1
    assert (
        f"the log parts from the checkpoint somewhere in positions 1..{kept.newest}: the "
        f"log's first {kept.newest} events have another root; nothing bounds it from below"
    ) in newest.output
    assert "bounded by" not in newest.output
    assert (
        f"the trusted key signed two trees of size {kept.newest}: {kept.file(kept.newest)} "
        "and the stored checkpoint of that size, which has another root"
    ) in newest.output
    low, high = kept.before(changed - 2), kept.holding(changed + 2)
    narrowed = verified(log, kept, high, low)
    assert (
        f"the log parts from the checkpoint somewhere in positions {low + 1}..{high}: it "
        f"agrees with {kept.file(low)} (size {low}); the log's first {high} events have "
        "another root"
    ) in narrowed.output
    assert "nothing bounds it" not in narrowed.output


def test_a_receipt_of_the_rewritten_history_beside_one_of_the_first_is_a_fork(log: Log) -> None:
    """A reader holding a checkpoint from before the rewrite and one the bank handed out
    after: the log agrees with the larger and not the smaller, which no log that only
    grows signs."""
    kept = Receipts(log)
    first = log.rows("stream = 'account:player:ann' AND type = 'Deposited'")[0].position
    old = kept.holding(first + 5)
    attackkit.amount_rewritten(log)  # ann's first deposit, before `old`
    after = Receipts(log)
    later = after.file(after.newest, "later")
    result = hazard_verify(log, "--checkpoint", kept.file(old), "--checkpoint", later)
    assert result.exit_code == 1
    assert (
        f"the log agrees with {later} (size {after.newest}) but not with "
        f"{kept.file(old)} (size {old}): the key signed both, and the smaller is not a "
        "prefix of the larger: two histories (a fork)"
    ) in result.output


def test_events_cut_with_their_tree_kept_are_named_by_the_stored_tree(log: Log) -> None:
    """The events after some position deleted, their tree and checkpoints left: the
    stored tree still proves the events before the cut are the receipt's, and the cut
    is named exactly."""
    kept = Receipts(log)
    keep = log.size - 5
    with attackkit.unguarded(log) as conn:
        conn.execute(sa.text("DELETE FROM events WHERE position > :k"), {"k": keep})
    result = verified(log, kept, kept.newest)
    assert (
        f"the log parts from the checkpoint at position {keep + 1}: the stored tree proves "
        f"its first {keep} events are the checkpoint's"
    ) in result.output
