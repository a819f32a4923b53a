"""A player's statement as the console shows it (ledger.books.statements), on SQLite and
PostgreSQL: newest first, an entry per event with the account's balance after it,
paged by keyset both ways, filtered by table and by evening (the club's day in its
zone), and every read along an index, whatever the size of the log."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date

import pytest
import sqlalchemy as sa

from ledger.books import evenings, statements, wording
from ledger.books.book import Book
from ledger.books.statements import Filter
from ledger.house import House
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import events, postings, settlement_parties, settlements
from ledger.store.vocabulary import Deposited, Withdrawn
from tests.ledger.deepkit import play
from tests.ledger.exportkit import play_disputes
from tests.ledger.plankit import capture, full_scan_or_sort, plan
from tests.signing import SIGNER

PLAYERS = ("ann", "bob", "cat")


@pytest.fixture
def played(store: EventStore) -> EventStore:
    """deepkit's four rounds at t1, exportkit's disputed rounds at t3 (a round voided,
    a throw corrected), and a withdrawal after."""
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    club.account_command("ann", Withdrawn, 123, "setter")
    return store


EVERYTHING = Filter()


def walk(conn: sa.Connection, name: str, shown: Filter = EVERYTHING, limit: int = 4) -> list:
    """Every page of `name`'s statement, from the newest back, by the `older` links."""
    pages = [statements.page(conn, f"player:{name}", name, shown, limit=limit)]
    while pages[-1].older is not None:
        pages.append(
            statements.page(
                conn, f"player:{name}", name, shown, before=pages[-1].older, limit=limit
            )
        )
    return pages


def expected(conn: sa.Connection, name: str, stream: str | None = None) -> list[int]:
    """The positions a statement should hold, newest first, read another way: each
    event that posted to the account, and each bet the player lost."""
    account = f"player:{name}"
    p, e, s, sp = postings.c, events.c, settlements.c, settlement_parties.c
    posted = (
        sa.select(p.position).join(events, e.position == p.position).where(p.account == account)
    )
    lost = (
        sa.select(s.position)
        .join(settlement_parties, sp.position == s.position)
        .where(sp.party == account, s.outcome == "settled", s.winner != name)
    )
    if stream is not None:
        posted, lost = posted.where(e.stream == stream), lost.where(s.stream == stream)
    found = set(conn.execute(posted).scalars()) | set(conn.execute(lost).scalars())
    return sorted(found, reverse=True)


def running(conn: sa.Connection, name: str, position: int) -> int:
    """The account's balance just after `position`: the sum of its postings to there."""
    p = postings.c
    return int(
        conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(p.amount), 0)).where(
                p.account == f"player:{name}", p.position <= position
            )
        ).scalar_one()
    )


@pytest.mark.parametrize("name", PLAYERS)
def test_newest_first_with_the_balance_after_each_entry(played: EventStore, name: str) -> None:
    with played.engine.connect() as conn:
        pages = walk(conn, name)
        entries = [entry for page in pages for entry in page.entries]
        assert [e.position for e in entries] == expected(conn, name)
        for entry in entries:
            assert entry.balance == running(conn, name, entry.position), entry
            moved = conn.execute(
                sa.select(sa.func.coalesce(sa.func.sum(postings.c.amount), 0)).where(
                    postings.c.account == f"player:{name}", postings.c.position == entry.position
                )
            ).scalar_one()
            assert entry.amount == moved
        balance = conn.execute(
            sa.text("SELECT balance FROM accounts WHERE account = :a"), {"a": f"player:{name}"}
        ).scalar_one()
    assert entries[0].balance == balance
    assert all(len(page.entries) <= 4 for page in pages)
    assert all(page.entries for page in pages)  # a walk never ends on an empty page


def test_a_bet_lost_is_an_entry_that_moves_nothing(played: EventStore) -> None:
    """bob laid 60 against ann at t3 and lost it on her nick: his stake left his account
    when he laid it, and the loss is an entry of its own at the balance that left."""
    with played.engine.connect() as conn:
        entries = [e for page in walk(conn, "bob") for e in page.entries]
    lost = [e for e in entries if e.type == "BetSettled" and e.table == "t3"]
    assert [(e.amount, wording.describe(e, House())) for e in lost] == [
        (0, "lost the side bet that the next throw does not total 8 at t3, round 2"),
        (0, "lost the laid stake at t3, round 1 (nicked)"),
    ]
    laid = next(e for e in entries if e.type == "StakeLaid" and e.table == "t3")
    assert lost[-1].balance == laid.balance


@pytest.mark.parametrize("name", PLAYERS)
def test_older_then_newer_pages_are_the_same_pages(played: EventStore, name: str) -> None:
    with played.engine.connect() as conn:
        pages = walk(conn, name, limit=3)
        assert pages[0].newer is None and pages[-1].older is None
        back = [pages[-1]]
        while back[-1].newer is not None:
            back.append(
                statements.page(conn, f"player:{name}", name, after=back[-1].newer, limit=3)
            )
    assert [[e.position for e in p.entries] for p in reversed(back)] == [
        [e.position for e in p.entries] for p in pages
    ]


def test_a_page_past_either_end_is_empty_and_links_back(played: EventStore) -> None:
    with played.engine.connect() as conn:
        newest = statements.page(conn, "player:ann", "ann", limit=3).entries[0].position
        beyond = statements.page(conn, "player:ann", "ann", after=newest, limit=3)
        assert (beyond.entries, beyond.newer) == ([], None)
        assert beyond.older == newest + 1  # the newest page, again
        before_all = statements.page(conn, "player:ann", "ann", before=1, limit=3)
        assert (before_all.entries, before_all.older, before_all.newer) == ([], None, 0)


@pytest.mark.parametrize(("name", "table"), [("ann", "t3"), ("ann", "t1"), ("cat", "t3")])
def test_a_table_s_entries_with_the_account_s_balance(
    played: EventStore, name: str, table: str
) -> None:
    shown = Filter(stream=f"table:{table}")
    with played.engine.connect() as conn:
        entries = [e for page in walk(conn, name, shown, limit=2) for e in page.entries]
        assert [e.position for e in entries] == expected(conn, name, f"table:{table}")
        assert entries and {e.table for e in entries} == {table}
        # The balance is still the account's, every table's and deposit's included.
        assert all(e.balance == running(conn, name, e.position) for e in entries)
        assert (
            statements.page(conn, f"player:{name}", name, Filter(stream="table:none")).entries == []
        )


class Clock:
    """A clock the test sets: each write is recorded at `now`."""

    def __init__(self) -> None:
        self.now = "2026-11-25T12:00:00.000000Z"

    def __call__(self) -> str:
        return self.now


@pytest.fixture
def across_midnight(engine: sa.Engine) -> Iterator[tuple[EventStore, Callable[[str, int], None]]]:
    clock = Clock()
    store = EventStore(engine, clock=clock, signer=SIGNER)
    club = Club(Book(store))
    club.create_player("ann", "setter")

    def pay(at: str, amount: int) -> None:
        clock.now = at
        club.account_command("ann", Deposited, amount, "setter")

    yield store, pay
    store.close()


def test_an_evening_is_the_club_s_day_in_its_zone(
    across_midnight: tuple[EventStore, Callable[[str, int], None]],
) -> None:
    """New York is five hours behind UTC in November: its 26th runs from 05:00 UTC on
    the 26th to 05:00 UTC on the 27th, both ends to the microsecond."""
    store, pay = across_midnight
    pay("2026-11-26T04:59:59.999999Z", 1)  # the 25th in New York
    pay("2026-11-26T05:00:00.000000Z", 10)  # the 26th, its first moment
    pay("2026-11-27T04:59:59.999999Z", 100)  # the 26th, its last
    pay("2026-11-27T05:00:00.000000Z", 1000)  # the 27th
    with store.engine.connect() as conn:
        day = evenings.of_day(conn, "America/New_York", date(2026, 11, 26))
        shown = statements.page(conn, "player:ann", "ann", Filter(evening=day)).entries
        # The balance runs on from the day before.
        assert [(e.amount, e.balance) for e in shown] == [(100, 111), (10, 11)]
        assert (day.since, day.until) == (
            "2026-11-26T05:00:00.000000Z",
            "2026-11-27T05:00:00.000000Z",
        )
        utc = evenings.of_day(conn, "UTC", date(2026, 11, 26))
        in_utc = statements.page(conn, "player:ann", "ann", Filter(evening=utc)).entries
        assert [e.amount for e in in_utc] == [10, 1]
        none = evenings.of_day(conn, "America/New_York", date(2026, 11, 20))
        assert statements.page(conn, "player:ann", "ann", Filter(evening=none)).entries == []


def test_a_table_and_an_evening_together(played: EventStore) -> None:
    with played.engine.connect() as conn:
        today = evenings.of_day(conn, "UTC", date.fromisoformat(_day_of_last_event(conn)))
        both = Filter(stream="table:t3", evening=today)
        entries = [e for page in walk(conn, "ann", both, limit=2) for e in page.entries]
        assert [e.position for e in entries] == expected(conn, "ann", "table:t3")


def _day_of_last_event(conn: sa.Connection) -> str:
    at = conn.execute(sa.select(sa.func.max(events.c.recorded_at))).scalar_one()
    return str(at)[:10]


@pytest.mark.parametrize(
    "shown",
    [Filter(), Filter(stream="table:t1")],
    ids=["all", "table"],
)
def test_every_read_of_a_page_is_along_an_index(played: EventStore, shown: Filter) -> None:
    """What keeps a page as quick at 10^6 events as at 10^4: no statement it runs scans
    a table or sorts, on either database (bench.console measures the time)."""
    ran = capture(played.engine)
    with played.engine.connect() as conn:
        first = statements.page(conn, "player:ann", "ann", shown, limit=3)
        assert first.older is not None
        statements.page(conn, "player:ann", "ann", shown, before=first.older, limit=3)
        statements.page(conn, "player:ann", "ann", shown, after=first.entries[-1].position, limit=3)
        asked = list(ran)
        assert asked
        for statement, params in asked:
            found = plan(conn, statement, params)
            assert not full_scan_or_sort(found), (statement, found)
            assert "SCAN postings" not in found, (statement, found)


def test_a_day_the_clocks_change_on_is_23_or_25_hours() -> None:
    assert evenings.day_bounds("Europe/London", date(2026, 3, 29)) == (
        "2026-03-29T00:00:00.000000Z",
        "2026-03-29T23:00:00.000000Z",
    )
    assert evenings.day_bounds("Europe/London", date(2026, 10, 25)) == (
        "2026-10-24T23:00:00.000000Z",
        "2026-10-26T00:00:00.000000Z",
    )
    assert evenings.day_of("2026-02-30") is None and evenings.day_of("26/11/2026") is None
    assert evenings.day_of("2026-11-26") == date(2026, 11, 26)
