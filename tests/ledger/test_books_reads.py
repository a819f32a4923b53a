"""The club's reports read along indexes of their own events, on SQLite and PostgreSQL:
the exceptions report, the authentication report and the log of significant events,
a page each, never a scan or a sort of the whole log (migration 0018's indexes, 0016's
of the tables' openings, the streams' key). They answer as they did: the significant
events of three sources merged in position order, a page at a time."""

from __future__ import annotations

from typing import Any

from ledger.books import significant as book
from ledger.commands import limits, tables
from ledger.commands import significant as command
from ledger.commands.tables import void_throw
from ledger.store import schema
from ledger.store.eventstore import EventStore
from tests.ledger.clubkit import CROUPIER
from tests.ledger.limitkit import ANN, Timed
from tests.ledger.plankit import capture, full_scan_or_sort, plan


def _club(store: EventStore) -> Timed:
    """ann's stake limit twice and a time-out, a table opened, a cocked throw voided,
    and the club's settings recorded."""
    timed = Timed(store)
    limits.set_limit(timed.club, ANN, "ann", "stake", 500)
    tables.stake(timed.club, "t1", ANN, 100)
    tables.call_main(timed.club, "t1", CROUPIER, 7)
    void_throw(timed.club, "t1", CROUPIER, "cocked", 0)
    limits.set_limit(timed.club, ANN, "ann", "stake", 200)
    command.record_settings(store, {"HAZARD_CURRENCY": "GBP"}, "setter:boss")
    limits.take_break(timed.club, ANN, "ann", "time-out", 24)
    return timed


def _plans(store: EventStore, read: Any) -> list[str]:
    ran = capture(store.engine)
    with store.engine.connect() as conn:
        read(conn)
        asked = [(s, p) for s, p in ran if "FROM events" in s]
        return [plan(conn, statement, params) for statement, params in asked]


def test_the_reports_read_no_event_but_their_own(store: EventStore) -> None:
    _club(store)

    def read(conn: Any) -> None:
        book.exceptions(conn, book.Period())
        book.authentication(conn, book.Period())
        book.significant(conn, book.Period(), 0, limit=2)

    found = _plans(store, read)
    assert len(found) >= 5, found
    bad = [line for p in found for line in full_scan_or_sort(p)]
    assert bad == [], found
    # SQLite: each read is a search of its own events' index, not the position's key
    assert not any("sqlite_autoindex_events_1 (position>?)" in p for p in found), found


def test_the_reports_say_their_types_as_their_indexes_do() -> None:
    for said, types in ((schema.EXCEPTIONS, book.EXCEPTIONS),
                        (schema.PLAYER_LIMITS, book.PLAYER_LIMITS)):  # fmt: skip
        assert said == "type IN (" + ", ".join(f"'{t}'" for t in types) + ")"


def test_the_log_of_significant_events_merges_its_sources_by_position(store: EventStore) -> None:
    _club(store)
    with store.engine.connect() as conn:
        whole = book.significant(conn, book.Period())
        pages, after = [], 0
        while True:
            page = book.significant(conn, book.Period(), after, limit=2)
            pages.extend(page.rows)
            if page.next_after is None:
                break
            after = page.next_after
    positions = [r["position"] for r in whole.rows]
    assert positions == sorted(positions) and pages == whole.rows
    assert [r["what"] for r in whole.rows] == [
        "table opened", "limit set", "limit set", "setting changed", "break taken",
    ]  # fmt: skip
