"""bench.pipeline, the standard-library baseline of issue 27's benchmarks, does the real
work: the root it builds from a whole-log export, and from the events table's rows, is
the log's own (the signed checkpoint's, the stored tree's). A baseline that hashed
anything else (another encoding, another leaf) would not be the work it stands for,
and these tests would fail. Both databases."""

from __future__ import annotations

import base64
import json

import pytest
import sqlalchemy as sa

from bench import pipeline
from ledger.books.book import Book
from ledger.exports import jsonl
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import merkle, tree
from tests.ledger.exportkit import play, play_disputes, ticking
from tests.signing import SIGNER, VERIFIER


@pytest.fixture
def exported(engine: sa.Engine) -> bytes:
    """A played log (two tables, deposits, a table of disputes), exported whole."""
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    store.close()
    return b"".join(jsonl.prepare(engine, scope_of(everything=True), key=VERIFIER).chunks())


def _signed_root(data: bytes) -> tuple[int, str]:
    """The size and root (hex) of the checkpoint the export's closing line carries."""
    checkpoint = json.loads(data.splitlines()[-1])["checkpoint"]
    size, root = checkpoint["note"].split("\n")[1:3]
    assert int(size) == checkpoint["size"]
    return checkpoint["size"], base64.b64decode(root).hex()


def test_the_pipelines_root_of_an_export_is_the_signed_checkpoints(exported: bytes) -> None:
    found = pipeline.from_export(exported.splitlines())
    assert (found.events, found.root) == _signed_root(exported)
    assert found.moved > 0  # the disputes' and settlements' transfers were summed


def test_the_pipelines_root_of_the_rows_is_the_stored_trees(
    engine: sa.Engine, exported: bytes
) -> None:
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            f"SELECT {', '.join(pipeline.COLUMNS)} FROM events ORDER BY position"
        ).all()
        stored = merkle.tree_hash(len(rows), tree.reader(conn)).hex()
    found = pipeline.from_rows(rows)
    assert (found.events, found.root) == (len(rows), stored) == _signed_root(exported)


def test_a_changed_event_does_not_pass_the_pipeline(exported: bytes) -> None:
    lines = exported.splitlines()
    at = next(i for i, line in enumerate(lines) if b'"type":"BetSettled"' in line)
    lines[at] = lines[at].replace(b'"actor":"', b'"actor":"x', 1)
    with pytest.raises(pipeline.Mismatch):
        pipeline.from_export(lines)
