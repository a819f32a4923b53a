"""Tampering with a played log behind the database's back, as its administrator could,
on SQLite and PostgreSQL: every change is found by the log check and named at the
position where the log parts from what was signed, both from the database alone and
against a receipt (a signed checkpoint) taken before the change; where what is left
cannot prove the position, within the range it can (ledger.store.log.parting)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.books.book import Book
from ledger.service import Club
from ledger.store import codec
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log import check, merkle, parting, tree
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.vocabulary import Deposited
from tests.ledger.cosignkit import sizes
from tests.ledger.tamperkit import (
    OTHER,
    Log,
    a_deposit,
    hazard_verify,
    multiplied,
    played_log,
    receipt_file,
    rehash_stream,
    set_row,
    unguarded,
    whole_log_rehashed_and_resigned,
)
from tests.signing import VERIFIER


@pytest.fixture
def log(store: EventStore, tmp_path: Path) -> Iterator[Log]:
    yield from played_log(store, tmp_path)


# Each tampering changes the log and returns the position where it now parts from
# what was signed, and where that receipt check names it: an exact position, or the
# (first, last) range when the data can only bound it.


def forged_deposit_at_the_end_of_a_stream(log: Log, conn: sa.Connection) -> int:
    head = log.rows("stream = 'account:player:ann'")[-1]
    name, schema, text = codec.payload_text(
        Deposited(version=head.version + 1, account="player:ann", amount=1_000_000)
    )
    row = Recorded(
        log.size + 1, head.stream, head.version + 1, name, schema, text, "setter", None,
        head.recorded_at, head.hash, "",
    )  # fmt: skip
    row = row._replace(hash=codec.chain_hash(head.hash, row.hashed()))
    conn.execute(
        sa.text(
            "INSERT INTO events VALUES (:position, :stream, :version, :type, :schema_version,"
            " :payload, :actor, :idempotency_key, :recorded_at, :prev_hash, :hash)"
        ),
        row._asdict(),
    )
    return log.size + 1


def amount_changed_and_stream_rehashed(log: Log, conn: sa.Connection) -> int:
    row = a_deposit(log)
    set_row(conn, row.position, payload=multiplied(row.payload))
    rehash_stream(conn, row.stream, row.version)
    return row.position


def last_50_truncated(log: Log, conn: sa.Connection) -> tuple[int, int]:
    keep = log.size - 50
    conn.execute(sa.text("DELETE FROM events WHERE position > :k"), {"k": keep})
    conn.execute(
        sa.text("DELETE FROM tree_hashes WHERE idx >= :i"), {"i": merkle.stored_hash_count(keep)}
    )
    # The tree's hashes went with the events: nothing left proves the first `keep`
    # events the receipt's, so the receipt alone bounds the change by the log's end.
    return (1, keep + 1)


def whole_stream_deleted(log: Log, conn: sa.Connection) -> int:
    first = log.rows("stream = 'account:player:bob'")[0].position
    conn.execute(sa.text("DELETE FROM events WHERE stream = 'account:player:bob'"))
    return first


def payload_changed(log: Log, conn: sa.Connection) -> int:
    row = a_deposit(log, "cat")
    set_row(conn, row.position, payload=multiplied(row.payload, 10))
    return row.position


def hash_changed(log: Log, conn: sa.Connection) -> int:
    row = a_deposit(log, "bob")
    set_row(conn, row.position, hash="f" * 64)
    return row.position


def actor_changed(log: Log, conn: sa.Connection) -> int:
    row = a_deposit(log, "ann", 3)
    set_row(conn, row.position, actor="setter:eve")
    return row.position


def two_rows_swapped(log: Log, conn: sa.Connection) -> int:
    first, second = a_deposit(log, "ann", 2).position, a_deposit(log, "bob", 3).position
    set_row(conn, first, position=-1)
    set_row(conn, second, position=first)
    set_row(conn, -1, position=second)
    return min(first, second)


def row_deleted_mid_stream(log: Log, conn: sa.Connection) -> int:
    row = a_deposit(log, "cat", 2)
    conn.execute(sa.text("DELETE FROM events WHERE position = :p"), {"p": row.position})
    return row.position


def forged_row_with_its_own_hash(log: Log, conn: sa.Connection) -> int:
    row = a_deposit(log, "bob", 2)
    forged = row._replace(payload=multiplied(row.payload, 10))
    set_row(conn, row.position, payload=forged.payload,
         hash=codec.chain_hash(row.prev_hash, forged.hashed()))  # fmt: skip
    return row.position


TAMPERINGS = [
    forged_deposit_at_the_end_of_a_stream,
    amount_changed_and_stream_rehashed,
    last_50_truncated,
    whole_stream_deleted,
    payload_changed,
    hash_changed,
    actor_changed,
    two_rows_swapped,
    row_deleted_mid_stream,
    forged_row_with_its_own_hash,
    whole_log_rehashed_and_resigned,
]


def _check(log: Log) -> check.Report:
    with log.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        return check.check_log(conn, VERIFIER, watch=[log.size], batch=7)


def test_the_played_log_verifies(log: Log) -> None:
    report = _check(log)
    assert report.findings == []
    assert report.size == log.size and report.complete
    receipt = open_checkpoint(log.receipt, [VERIFIER])
    assert report.root == receipt.root
    assert report.checkpoints > 40
    verified = check.verify(log.engine, VERIFIER, receipts=[parting.Kept("kept", receipt)])
    assert verified.ok and verified.parting is not None and verified.parting.agrees


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=lambda f: f.__name__)
def test_a_tampering_is_found_and_named(
    log: Log, tamper: Callable[[Log, sa.Connection], int | tuple[int, int]]
) -> None:
    first_size = sizes(log.engine)[0]  # the first write's checkpoint, at its seal
    with unguarded(log) as conn:
        where = tamper(log, conn)
    report = _check(log)
    assert report.findings, "not detected"
    kept = parting.Kept("receipt", open_checkpoint(log.receipt, [VERIFIER]))
    parted = check.verify(log.engine, VERIFIER, receipts=[kept]).parting
    assert parted is not None
    cli = hazard_verify(log, "--checkpoint", receipt_file(log))
    assert cli.exit_code == 1, cli.output
    if isinstance(where, tuple):
        first, last = where
        named = last if tamper is last_50_truncated else first
    else:
        first = last = named = where
    if tamper is whole_log_rehashed_and_resigned:
        named = first_size  # every stored checkpoint refused, from the first write's
    assert report.findings[0].position == named, report.findings
    assert f"the first at position {named}:" in cli.output, cli.output
    if tamper is whole_log_rehashed_and_resigned:
        # Re-signed by another key: every stored checkpoint is refused.
        (finding,) = report.findings
        assert finding.position == first_size
        assert f"the stored checkpoint of size {first_size} is not signed by the trusted key" in (
            finding.what
        )
        assert (
            f"{report.checkpoints - 1} later stored checkpoints are not signed by it"
            in finding.what
        )
    if tamper in (forged_deposit_at_the_end_of_a_stream, hash_changed):
        # What the receipt signed is untouched: a later event, or the chain hash, which
        # the tree does not cover; the database check alone names it.
        assert parted.agrees
        assert "the log agrees with the checkpoint" in cli.output
        return
    assert (parted.agrees, parted.first, parted.last) == (False, first, last), parted
    if first == last:
        assert f"the log parts from the checkpoint at position {where}:" in cli.output
        return
    # Nothing kept proves where: the range, and no bound claimed that nothing holds.
    assert f"the log parts from the checkpoint somewhere in positions {first}..{last}:" in (
        cli.output
    )
    assert "nothing bounds it from below" in cli.output
    assert "bounded by" not in cli.output


def test_a_pass_in_pages_finds_what_a_whole_pass_finds(log: Log) -> None:
    with unguarded(log) as conn:
        where = actor_changed(log, conn)
    found: list[check.Finding] = []
    resume = None
    with log.engine.connect() as conn, conn.begin():
        while True:
            page = check.check_log(conn, VERIFIER, resume=resume, limit=9)
            found += page.findings
            if page.complete:
                break
            resume = tree.load_frontier(conn, page.size)
    assert page.size == log.size
    assert [f.position for f in found] == [where] * len(found) and found


def test_a_changed_stored_hash_of_the_tree_is_named_where_it_was_stored(log: Log) -> None:
    """An interior hash of the tree is stored by the event that completes its subtree:
    level 2, number 3 covers records 12..15, so the event at position 16."""
    with unguarded(log) as conn:
        conn.execute(
            sa.text("UPDATE tree_hashes SET hash = :h WHERE idx = :i"),
            {"h": b"\x07" * 32, "i": merkle.stored_hash_index(2, 3)},
        )
    report = _check(log)
    assert [f.position for f in report.findings] == [16]
    assert "a stored hash of a subtree it completes is not the tree's" in report.findings[0].what
    assert report.first_leaf_differs is None


def test_events_cut_but_their_tree_and_checkpoints_kept_are_named(log: Log) -> None:
    with unguarded(log) as conn:
        conn.execute(sa.text("DELETE FROM events WHERE position > :k"), {"k": log.size - 5})
    report = _check(log)
    assert report.findings[0].position == log.size - 4
    assert "beyond the" in report.findings[0].what
    assert "the log was cut here" in report.findings[0].what


def test_the_pass_reports_its_progress_a_batch_at_a_time(log: Log) -> None:
    seen: list[tuple[int, int]] = []
    with log.engine.connect() as conn, conn.begin():
        check.check_log(conn, VERIFIER, batch=20, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(d, log.size) for d in [*range(20, log.size, 20), log.size]]


def test_a_pass_reads_one_state_of_the_log_while_writes_go_on(log: Log, store: EventStore) -> None:
    """A write committed during a pass is seen whole or not at all: on PostgreSQL each
    statement would otherwise read afresh, and a checkpoint committed between reading
    the last event and the checkpoints beyond it would look like a cut log."""
    club = Club(Book(store))

    def write(done: int, total: int) -> None:
        if done <= 30:  # three writes, during the pass
            club.account_command("ann", Deposited, done, "setter")

    with log.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, VERIFIER, batch=10, progress=write)
    assert report.findings == []
    assert report.size == log.size


# -- a whole check, as `hazard verify` runs it (check.verify) ------------------------


def test_a_check_keeps_a_state_and_resumes_from_it_where_the_tree_stands(
    log: Log, store: EventStore
) -> None:
    first = check.verify(log.engine, VERIFIER)
    assert first.ok and first.restart is None and first.parting is None
    assert first.report.start == 0 and first.report.size == log.size
    assert first.state == check.State(
        log.size, first.report.root, tuple(first.report.frontier), VERIFIER.text()
    )
    club = Club(Book(store))
    for amount in (1, 2, 3):
        club.account_command("ann", Deposited, amount, "setter")
    again = check.verify(log.engine, VERIFIER, state=first.state)
    assert again.ok and again.restart is None
    # Three writes, each a deposit and its seal.
    assert (again.report.start, again.report.size) == (log.size, log.size + 3 * 2)
    whole = check.verify(log.engine, VERIFIER)
    assert again.state == whole.state  # resumed or read whole, the same tree


def test_a_check_reads_the_whole_log_when_the_state_cannot_be_resumed(log: Log) -> None:
    state = check.verify(log.engine, VERIFIER).state
    receipt = check.open_receipt(log.receipt.encode(), VERIFIER)
    other = dataclasses.replace(state, key=OTHER.verifier.text())
    cases = [
        (other, [], check.Restart.OTHER_KEY),
        (state, [parting.Kept("kept", receipt)], check.Restart.RECEIPT_WITHIN),  # of log.size
    ]
    for given, kept, why in cases:
        verified = check.verify(log.engine, VERIFIER, receipts=kept, state=given)
        assert verified.restart is why and verified.report.start == 0
        assert verified.ok and verified.state == state
    with unguarded(log) as conn:
        whole_log_rehashed_and_resigned(log, conn)
    rewritten = check.verify(log.engine, VERIFIER, state=state)
    assert rewritten.restart is check.Restart.TREE_REWRITTEN
    assert rewritten.report.start == 0 and not rewritten.ok


def test_a_check_holds_the_log_to_a_receipt_kept_with_trailing_newlines(log: Log) -> None:
    """A receipt as `jq -r` or an editor saves it, with more than the note's one
    newline at the end, opens as the checkpoint it is."""
    receipt = check.open_receipt((log.receipt + "\n\r\n").encode(), VERIFIER)
    assert receipt == open_checkpoint(log.receipt, [VERIFIER])
    kept = [parting.Kept("kept", receipt)]
    verified = check.verify(log.engine, VERIFIER, receipts=kept)
    assert verified.ok and verified.parting is not None and verified.parting.agrees
    with unguarded(log) as conn:
        where = actor_changed(log, conn)
    parted = check.verify(log.engine, VERIFIER, receipts=kept)
    assert not parted.ok and parted.parting is not None and not parted.parting.agrees
    assert parted.parting.first == where
