"""A restore takes what the offline check folded rather than folding it again, on
SQLite and PostgreSQL: each table's state at the end of every command (the referee's),
for the tables' read models, and the heads each seal commits, for `heads_log`; and the
check's referees keep rounds to judge a dispute only at the tables a dispute comes on.
What is written is the same row for row (tests/ledger/test_import_rows.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from engine import referee
from engine.referee import Referee
from engine.rounds import RoundBook
from ledger.books import tableviews
from ledger.books.book import Book
from ledger.service import Club
from ledger.store import restoring
from ledger.store.eventstore import EventStore
from ledger.store.log import sealing
from ledger.store.schema import heads_log
from tests.ledger.deepkit import play
from tests.ledger.exportkit import play_disputes
from tests.ledger.restorekit import export, lines, rows
from tests.signing import SIGNER

restore = pytest.importorskip("ledger.exports.restore")
offline = pytest.importorskip("ledger.exports.offline")


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    play(club)  # table t1, no dispute
    play_disputes(club)  # table t3, disputed
    yield store
    store.close()


def _inside_commands(data: bytes) -> int:
    """The table events of the file that are not the last of their command: the only
    ones whose state the referee does not hand on."""
    referees: dict[str, Referee] = {}
    inside = 0

    def group(due: Any, _before: Any, _after: Any) -> None:
        nonlocal inside
        inside += len(due) - 1

    for item in offline.read(lines(data), SIGNER.verifier):
        if isinstance(item, offline.EventLine) and item.row.stream.startswith("table:"):
            referee = referees.setdefault(item.row.stream, Referee(on_group=group))
            referee.check(item.event)
    return inside


@pytest.mark.parametrize("batch", [1, 7, 5000])
def test_the_tables_read_models_fold_only_what_the_referee_did_not_hand_on(
    played: EventStore, target: sa.Engine, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(restore, "BATCH", batch)
    data = export(played.engine)
    folds = 0

    class Counted(tableviews.Folding):  # type: ignore[misc]
        def fold(self, events: Any) -> Any:
            nonlocal folds
            folds += 1
            return super().fold(events)

    monkeypatch.setattr(tableviews, "Folding", Counted)
    restore.restore(target, lines(data), key=SIGNER.verifier)

    inside = _inside_commands(data)
    assert inside > 0
    assert folds == inside


@pytest.mark.parametrize("batch", [1, 7, 5000])
def test_the_seals_heads_are_taken_from_the_check_not_folded_again(
    played: EventStore, target: sa.Engine, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(restore, "BATCH", batch)
    data = export(played.engine)
    folded: list[int] = []
    moved = sealing._moved

    def counted(heads: Any, rows: Any) -> Any:
        folded.append(len(rows))
        return moved(heads, rows)

    monkeypatch.setattr(sealing, "_moved", counted)
    restore.restore(target, lines(data), key=SIGNER.verifier)

    seals = [json.loads(line) for line in data.splitlines() if b'"stream":"log"' in line]
    assert len(seals) > 1  # the file has seals, and ends with one
    # Only the batches written whole before the first seal are folded: no seal had
    # come with its heads yet (a log from before seals is folded so, batch by batch).
    assert sum(folded) == (seals[0]["position"] - 1) // batch * batch


def test_only_the_tables_a_dispute_comes_on_keep_rounds_to_judge_one(
    played: EventStore, target: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A referee keeps its table's last rounds to judge a dispute over one: at 10^6
    events, most of a restore's memory. Read ahead, the file's dispute lines say which
    tables need them: here t3, not t1."""
    monkeypatch.setattr(restore, "BATCH", 7)
    data = export(played.engine)
    books: list[RoundBook] = []

    class Counted(RoundBook):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            books.append(self)

    monkeypatch.setattr(referee, "RoundBook", Counted)
    restore.restore(target, lines(data), key=SIGNER.verifier)

    assert data.count(b'"stream":"table:') > data.count(b'"stream":"table:t3"') > 0
    assert len(books) == 1


@pytest.mark.parametrize("loose", [1, 3])
def test_events_folded_while_they_wait_for_their_seal_end_as_the_seal_has_them(
    played: EventStore, target: sa.Engine, loose: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `LOOSE` events with no seal (a log from before seals), they are folded as
    they come; the seal after them still stands for them all, at the same indexes."""
    monkeypatch.setattr(restore, "BATCH", 7)
    monkeypatch.setattr(restoring, "LOOSE", loose)
    data = export(played.engine)
    restore.restore(target, lines(data), key=SIGNER.verifier)

    assert rows(target, heads_log) == rows(played.engine, heads_log)
    assert export(target) == data
