"""A statement for a period (ledger.books.periodstatement) is read from read models the
deep check recomputes from the events (postings, settlements, settlement_parties,
disputes, adjustments): an insider's edit of one behind the ledger's back is named by
`hazard verify --deep` at the row edited, and the statement's own check says its
figures no longer add up. On SQLite and PostgreSQL; and the two readings of the money
add up for every player on every evening of a played club."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from itertools import count
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.books import deep, periods, periodstatement
from ledger.books.book import Book
from ledger.books.evenings import recorded as recorded_evenings
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import settlements
from ledger.store.vocabulary import Deposited
from tests.ledger import nightkit
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


def spread() -> Any:
    """A clock two hours on at each write from 20 November: the club's history runs over
    several evenings of the month, so that each evening cuts it somewhere."""
    writes = count()

    def now() -> str:
        at = datetime(2026, 11, 20, tzinfo=UTC) + timedelta(hours=2 * next(writes))
        return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    return now


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_evenings_chain_and_add_up_to_the_month(engine: sa.Engine, zone: str) -> None:
    """Each evening's end is the next's start, and the month's movements are the sum of
    its evenings', in any zone (New York's clocks go back on 1 November 2026)."""
    store = EventStore(engine, clock=spread(), signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    store.close()
    figures = ("deposited", "withdrawn", "staked", "paid", "adjusted", "winnings", "losses")
    with engine.connect() as conn:
        for name in ("ann", "bob", "cat"):
            month = periodstatement.of(conn, name, periods.asked(conn, zone, month="2026-11"))
            assert month.check() == []
            days = [
                periodstatement.of(conn, name, periods.of_evening(conn, zone, date(2026, 11, d)))
                for d in range(1, 31)
            ]
            assert days[0].opening == month.opening and days[-1].closing == month.closing
            for before, after in itertools.pairwise(days):
                assert before.closing == after.opening, (name, after.period.key)
                assert after.check() == [], after.period.key
            for figure in figures:
                assert sum(getattr(d, figure) for d in days) == getattr(month, figure), figure
            assert month.staked > 0 and month.closing == played_balance(store, name)
            assert sum(1 for d in days if d.staked or d.paid) > 1  # it was cut


def test_a_period_is_its_days_in_the_clubs_zone(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        month = periods.asked(conn, "America/New_York", month="2026-11")
        assert (month.since, month.until) == (
            "2026-11-01T04:00:00.000000Z", "2026-12-01T05:00:00.000000Z"
        )  # fmt: skip
        week = periods.asked(conn, "Europe/London", week="2026-W13")  # clocks go forward
        assert (week.first, week.last) == (date(2026, 3, 23), date(2026, 3, 29))
        assert (week.since, week.until) == (
            "2026-03-23T00:00:00.000000Z", "2026-03-29T23:00:00.000000Z"
        )  # fmt: skip
        ranged = periods.asked(conn, "UTC", start="2024-01-01", end="2024-12-31")  # leap: 366
        assert ranged.query() == {"from": "2024-01-01", "to": "2024-12-31"}
        with pytest.raises(periods.PeriodError, match="at most 366 days"):
            periods.asked(conn, "UTC", start="2025-01-01", end="2026-01-02")


def test_a_recorded_evening_is_its_span_from_opening_to_cash_up(engine: sa.Engine) -> None:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = nightkit.closed_evening(store)
    club.account_command("bob", Deposited, 50, nightkit.SETTER.actor)  # after the close
    with store.engine.connect() as conn:
        (evening,) = recorded_evenings(conn)
        period = periods.asked(conn, "UTC", evening="1")
        bob = periodstatement.of(conn, "bob", period)
        with pytest.raises(periods.PeriodError) as unknown:
            periods.asked(conn, "UTC", evening="2")
    store.close()
    assert (period.kind, period.key) == ("evening", "1")
    assert period.after == evening.opened_position - 1
    assert period.through == evening.closed_position
    assert bob.deposited == 300 and bob.check() == []
    assert unknown.value.field == "evening" and "no evening numbered 2" in unknown.value.message
