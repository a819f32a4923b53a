"""The console's club-wide reads that must not grow with the log, on SQLite and
PostgreSQL: the tables a page at a time, newest first, along the index of their
openings (migration 0016); and the log's head as the audit page shows it, by seeks of
the position key and of the seals' stream. Each answers as the whole-log reads do, and
neither scans nor sorts the events."""

from __future__ import annotations

from typing import Any

import engine as hz
from ledger.books import queries
from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import chains
from ledger.store.vocabulary import Deposited
from tests.ledger.plankit import capture, full_scan_or_sort, plan


def _opened(club: Club, *tables: str) -> None:
    for table in tables:
        club.command(table, "croupier", lambda s, _: hz.open_table(hz.BUILTIN["english"]),
                     new_table=True)  # fmt: skip
        club.command(table, "croupier", lambda s, _: hz.seat(s, "ann"))


def _plans(store: EventStore, read: Any) -> list[str]:
    ran = capture(store.engine)
    with store.engine.connect() as conn:
        read(conn)
        asked = list(ran)
        return [plan(conn, statement, params) for statement, params in asked]


def test_the_tables_come_newest_first_a_page_at_a_time(store: EventStore) -> None:
    club = Club(Book(store))
    club.create_player("ann", "setter")
    _opened(club, "t1", "t2", "t3", "t4", "t5")
    with queries.reading(store) as read:
        first, older = read.tables(None, 2)
        assert first == ["t5", "t4"] and older is not None
        second, older = read.tables(older, 2)
        assert second == ["t3", "t2"] and older is not None
        assert read.tables(older, 2) == (["t1"], None)
        assert read.tables(None, 5) == (["t5", "t4", "t3", "t2", "t1"], None)
    with queries.reading(Club(Book(store)).book.store) as read:
        assert read.tables(None, 10) == (["t5", "t4", "t3", "t2", "t1"], None)


def test_no_table_yet_is_an_empty_page(store: EventStore) -> None:
    Club(Book(store)).create_player("ann", "setter")
    with queries.reading(store) as read:
        assert read.tables(None, 50) == ([], None)


def test_the_tables_are_read_along_the_index_of_their_openings(store: EventStore) -> None:
    club = Club(Book(store))
    club.create_player("ann", "setter")
    _opened(club, "t1", "t2", "t3")

    def read(conn: Any) -> None:
        reader = queries.Reader(store, conn)
        _, older = reader.tables(None, 1)
        reader.tables(older, 1)

    found = _plans(store, read)
    # The index holds the openings alone, walked newest first and stopped at the
    # page's end: SQLite calls the first page's walk a SCAN of it, which is no scan of
    # the events.
    assert found and all("ix_events_table_opened" in p for p in found), found
    bad = [line for p in found for line in full_scan_or_sort(p)]
    assert all("USING INDEX ix_events_table_opened" in line for line in bad), found


def test_the_newest_head_is_the_whole_logs(store: EventStore) -> None:
    club = Club(Book(store))
    club.create_player("ann", "setter")
    club.account_command("ann", Deposited, 500, "setter")
    _opened(club, "t1")
    whole = chains.head(store.engine)
    with store.engine.connect() as conn:
        newest = chains.newest(conn)
        seal = conn.exec_driver_sql(
            "SELECT position, payload FROM events WHERE type = 'LogSealed' "
            "ORDER BY position DESC LIMIT 1"
        ).one()
    for key in ("position", "events", "stream", "version", "hash", "recorded_at"):
        assert newest[key] == whole[key], key
    assert newest["sealed_at"] == seal.position and newest["root"] in seal.payload
    assert newest["heads"] is not None and newest["heads"] >= whole["streams"]


def test_an_empty_log_has_no_head(store: EventStore) -> None:
    with store.engine.connect() as conn:
        newest = chains.newest(conn)
    assert newest["position"] == newest["events"] == 0
    assert newest["root"] is None and newest["heads"] is None


def test_the_newest_head_is_two_seeks(store: EventStore) -> None:
    club = Club(Book(store))
    club.create_player("ann", "setter")
    _opened(club, "t1")
    found = _plans(store, chains.newest)
    assert len(found) == 2 and all(not full_scan_or_sort(p) for p in found), found
