"""An export reads the log as it stood at the head fixed when it began, a page at a
time, each page in a short read of its own (ledger.exports.jsonl and .sheets).

A client that reads its file slowly then holds no transaction between pages: it
neither keeps SQLite's WAL from being checkpointed (the WAL grew to 445 MB behind one
export read at 64 KB every 5 s) nor holds PostgreSQL's xmin. And the file is still the
log at that head, byte for byte, however many writes land while it is read, and a
rebuild of the read models between two pages changes nothing in it. On SQLite and
PostgreSQL, for the verifiable file and the CSV sheets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books import projections
from ledger.books.book import Book
from ledger.exports import jsonl, offline, sheets
from ledger.exports.scope import Scope, scope_of
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Deposited
from tests.ledger.exportkit import all_events, evening, export, held
from tests.ledger.formatkit import check
from tests.signing import SIGNER, VERIFIER

WRITES = 60
"""Writes made while a file is being read."""


@pytest.fixture
def store(engine: sa.Engine) -> Iterator[EventStore]:
    yield from evening(engine)


@pytest.fixture
def other(store: EventStore) -> Iterator[Club]:
    """A club on connections of its own, writing while the exports are read."""
    engine = db.make_engine(store.engine.url.render_as_string(hide_password=False))
    writer = EventStore(engine, signer=SIGNER)
    yield Club(Book(writer))
    writer.close()
    engine.dispose()


def _write_meanwhile(club: Club) -> None:
    """Deposits, and a throw at t2, whose round was in play at the head: its row in
    `rounds` changes after the head (its chance, its last position)."""
    club.command("t2", "croupier", lambda state, _f: hz.cover(state, 100))  # bob's lay
    club.command("t2", "croupier", lambda state, _f: hz.throw(state, 1, 3))  # a chance
    for _ in range(WRITES):
        club.account_command("bob", Deposited, 1, "setter")


def _slowly(chunks: Iterator[bytes], meanwhile: Callable[[], Any]) -> tuple[bytes, Any]:
    """The file, read as a slow client does: a little, then a pause in which others
    write and what the export holds is looked at, then the rest."""
    got = [next(chunks)]
    found = meanwhile()
    got.extend(chunks)
    return b"".join(got), found


JSONL_SCOPES = [
    scope_of(everything=True),
    scope_of(player="bob"),
    scope_of(table="t2"),
    scope_of(since="2026-11-23T14:00:10Z"),
]


@pytest.mark.parametrize("asked", JSONL_SCOPES, ids=lambda s: s.kind)
def test_a_file_read_slowly_holds_nothing_between_pages_and_is_the_log_at_its_head(
    store: EventStore,
    other: Club,
    asked: Scope,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jsonl, "BATCH", 5)
    monkeypatch.setattr(jsonl, "CHUNK", 200)
    log, before = all_events(store), export(store.engine, asked)
    prepared = jsonl.prepare(store.engine, asked, key=VERIFIER)

    def meanwhile() -> list[str]:
        _write_meanwhile(other)
        return held(store.engine)

    data, found = _slowly(prepared.chunks(), meanwhile)
    assert found == []
    assert data == before  # the head fixed at its start: none of the writes since
    check(data, log)
    offline.verify(data.splitlines(), VERIFIER)
    assert export(store.engine, asked) != before  # and a new export has them


SHEETS = [
    (scope_of(everything=True), "rounds"),
    (scope_of(player="cat"), "rounds"),
    (scope_of(everything=True), "settlements"),
    (scope_of(player="bob"), "statement"),
    (scope_of(player="bob", since="2026-11-23T14:00:10Z"), "statement"),
    (scope_of(player="bob"), "settlements"),
]


def _sheet(engine: sa.Engine, asked: Scope, sheet: str) -> bytes:
    return b"".join(sheets.prepare(engine, asked, sheet).chunks())


@pytest.mark.parametrize(("asked", "sheet"), SHEETS, ids=lambda x: getattr(x, "kind", x))
def test_a_sheet_read_slowly_holds_nothing_between_pages_and_is_the_club_at_its_head(
    store: EventStore,
    other: Club,
    asked: Scope,
    sheet: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sheets, "BATCH", 2)
    monkeypatch.setattr(sheets, "CHUNK", 40)
    before = _sheet(store.engine, asked, sheet)
    prepared = sheets.prepare(store.engine, asked, sheet)
    total = prepared.total

    def meanwhile() -> list[str]:
        _write_meanwhile(other)
        return held(store.engine)

    data, found = _slowly(prepared.chunks(), meanwhile)
    assert found == []
    assert data == before
    assert total == len(data.splitlines()) - 1  # its count is of the same head


def test_a_rebuild_of_the_read_models_between_pages_changes_nothing_in_the_files(
    store: EventStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`hazard projections rebuild` empties the read models and writes them again in
    one transaction: a page read before it and the next after it read the same rows
    (on PostgreSQL under new posting ids)."""
    monkeypatch.setattr(jsonl, "BATCH", 5)
    monkeypatch.setattr(jsonl, "CHUNK", 200)
    monkeypatch.setattr(sheets, "BATCH", 2)
    monkeypatch.setattr(sheets, "CHUNK", 40)
    files: list[tuple[Callable[[], Any], bytes]] = []
    for asked in (scope_of(everything=True), scope_of(player="bob")):
        files.append((lambda a=asked: jsonl.prepare(store.engine, a, key=VERIFIER), b""))
    for asked, sheet in SHEETS:
        files.append((lambda a=asked, s=sheet: sheets.prepare(store.engine, a, s), b""))
    files = [(make, b"".join(make().chunks())) for make, _ in files]
    for make, before in files:
        data, _ = _slowly(make().chunks(), lambda: projections.rebuild(store))
        assert data == before
