"""A statement for a period (ledger.books.periodstatement) is read from read models the
deep check recomputes from the events (postings, settlements, settlement_parties,
disputes, adjustments): an insider's edit of one behind the ledger's back is named by
`hazard verify --deep` at the row edited, and the statement's own check says its
figures no longer add up. On SQLite and PostgreSQL; and the two readings of the money
add up for every player on every evening of a played club."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest
import sqlalchemy as sa

from ledger.books import deep, periods, periodstatement
from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import settlements
from tests.ledger.exportkit import play, play_disputes, ticking
from tests.signing import SIGNER

DAY = date(2026, 11, 23)  # exportkit's clock


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    yield store
    store.close()


def statement(store: EventStore, name: str) -> periodstatement.Statement:
    with store.engine.connect() as conn:
        period = periods.of_evening(conn, "UTC", DAY)
        return periodstatement.of(conn, name, period)


def test_every_players_evening_adds_up(played: EventStore) -> None:
    for name in ("ann", "bob", "cat"):
        found = statement(played, name)
        assert found.check() == [], name
        assert found.opening == 0 and found.closing == played_balance(played, name)
    ann = statement(played, "ann")
    # ann's round 1 at t3 was voided by a dispute: what it moved for her went back.
    assert [(d.table, d.round, d.resolution) for d in ann.disputes][:1] == [("t3", 1, "voided")]
    assert ann.adjusted < 0


def played_balance(store: EventStore, name: str) -> int:
    return Book(store).balances().get(f"player:{name}", 0)


def test_a_settlement_given_to_another_winner_is_named_by_both_checks(
    played: EventStore,
) -> None:
    s = settlements.c
    with played.engine.begin() as conn:
        position = conn.execute(
            sa.select(s.position)
            .where(s.winner == "ann", s.outcome == "settled")
            .order_by(s.position)
            .limit(1)
        ).scalar_one()
        conn.execute(settlements.update().where(s.position == position).values(winner="setter"))
    [said] = statement(played, "ann").check()
    assert "net deposits, wins and losses" in said
    first = next(deep.differences(played))
    assert (first.table, first.column) == ("settlements", "winner")
    assert str(position) in str(first)
