"""The offline verify reads the file ahead for the tables a dispute comes on
(ledger.exports.offline.disputed), so that only their referees keep the last rounds to
judge one: the verdict, clean or tampered, is the one every referee keeping its rounds
gives, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.books.book import Book
from ledger.exports import offline
from ledger.exports.offline import disputed, shares
from ledger.exports.offline.lines import Check
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore
from tests.ledger.exportkit import export, play, play_disputes, ticking
from tests.ledger.offlinekit import encoded, line_of, records, rehash
from tests.signing import SIGNER, VERIFIER


@pytest.fixture
def data(engine: sa.Engine) -> bytes:
    """The export tests' evening (tables t1 and t2) with t3's disputes beside it."""
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    store.close()
    return export(engine, scope_of(everything=True))


def checked(lines: list[bytes], tables: Collection[str] | None) -> offline.Verified:
    check = Check(VERIFIER, disputed=tables)
    for _ in check.run(lines):
        pass
    return check.verified()


def test_the_tables_a_dispute_comes_on_are_found_in_a_file_and_in_lines(
    data: bytes, tmp_path: Path
) -> None:
    path = tmp_path / "evening.jsonl"
    path.write_bytes(data)
    with path.open("rb") as f:
        assert disputed.tables(f) == {"table:t3"}
        assert f.tell() == 0  # the check reads the file from its start after
    assert disputed.tables(data.splitlines(keepends=True)) == {"table:t3"}
    assert disputed.tables(iter(data.splitlines())) is None  # read once: a pipe


def test_a_line_that_may_be_a_dispute_and_names_no_stream_leaves_every_table_its_rounds() -> None:
    assert disputed.tables([b'{"record":"event","type":"DisputeOpened"}\n']) is None
    assert disputed.tables([b'{"type":"DisputeOpened", cut off']) is None


def test_the_verdict_is_the_one_every_referee_keeping_its_rounds_gives(data: bytes) -> None:
    lines = data.splitlines(keepends=True)
    ahead = disputed.tables(lines)
    assert ahead == {"table:t3"}
    assert checked(lines, ahead) == checked(lines, None) == offline.verify(lines, VERIFIER)


def test_a_tampered_dispute_is_found_at_the_same_line_in_the_same_words(data: bytes) -> None:
    recs = records(data)
    number = line_of(recs, type="BetAdjusted")
    recs[number - 1]["payload"]["transfers"][0]["amount"] += 1
    rehash(recs, number)
    lines = encoded(recs)
    with pytest.raises(offline.Disagreement) as every:
        checked(lines, None)
    with pytest.raises(offline.Disagreement) as ahead:
        offline.verify(lines, VERIFIER)
    assert (ahead.value.line, str(ahead.value)) == (every.value.line, str(every.value))
    assert "t3" in str(ahead.value)


def test_a_referee_told_no_dispute_comes_stops_at_one_rather_than_judge_it_blind(
    data: bytes,
) -> None:
    with pytest.raises(RuntimeError, match="none was to come"):
        checked(data.splitlines(keepends=True), frozenset())


def test_on_two_processes_each_keeps_rounds_only_where_a_dispute_comes(data: bytes) -> None:
    # shares.shared raises Unshared rather than fall back to one process, and a process
    # whose referee met a dispute it was told would not come could not share the check.
    lines = data.splitlines(keepends=True)
    assert shares.shared(lines, VERIFIER, None, None, 2) == checked(lines, None)
