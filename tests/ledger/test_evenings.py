"""The setter's evenings (ledger.commands.evenings, ledger.books.evenings), called as
every surface calls them, on SQLite and PostgreSQL: an evening opened with its floats and
closed with a cash-up that keeps count, expected and difference; every refusal names
its rule and writes nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.books import evenings as book
from ledger.commands import Caller, NotPermitted, Role, evenings, tables
from ledger.commands.evenings import EveningRefused
from ledger.store.eventstore import EventStore
from ledger.store.schema import commands, events, postings
from ledger.store.vocabulary import Deposited, Withdrawn
from tests.ledger.clubkit import CROUPIER, a_club

SETTER = Caller(Role.SETTER, "boss")
ANN = Caller(Role.PLAYER, "ann")
AUDITOR = Caller(Role.AUDITOR, "al")
ZONE = "Europe/London"


def _written(store: EventStore) -> tuple[int, ...]:
    with store.engine.connect() as conn:
        return tuple(
            conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in (events, postings, commands)
        )


def _nick(club: Any) -> None:
    """ann stakes 100 against the setter, calls 7 and throws it: the setter loses 100."""
    tables.stake(club, "t1", ANN, 100)
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.throw(club, "t1", CROUPIER, 3, 4)


def test_the_cash_up_keeps_count_expected_and_difference(store: EventStore) -> None:
    club = a_club(store)
    opened = evenings.open_evening(club, SETTER, {"t1": 5000}, 2000)
    assert opened["evening"] == 1
    _nick(club)
    club.account_command("bob", Deposited, 300, SETTER.actor)
    club.account_command("ann", Withdrawn, 50, SETTER.actor)
    closed = evenings.close_evening(club, SETTER, {"t1": 4890}, 2250)
    lines = {line["place"]: line for line in closed["cash_up"]}
    assert lines["t1"] == {
        "place": "t1",
        "table": "t1",
        "float": 5000,
        "counted": 4890,
        "expected": 4900,
        "difference": -10,
    }
    assert lines["cage"] == {
        "place": "cage",
        "table": None,
        "float": 2000,
        "counted": 2250,
        "expected": 2250,
        "difference": 0,
    }
    assert [e["type"] for e in closed["events"]] == ["CashCounted", "CashCounted", "EveningClosed"]
    assert all(e["actor"] == SETTER.actor for e in opened["events"] + closed["events"])
    with store.engine.connect() as conn:
        [evening] = book.recorded(conn)
        span = evening.span(conn)
    assert not evening.is_open and evening.floats == {"t1": 5000, None: 2000}
    assert [line.difference for line in evening.cash_up] == [-10, 0]
    assert span.key == "1" and span.after == opened["receipt"]["positions"][0] - 1
    assert span.through == closed["receipt"]["positions"][-1]  # the EveningClosed


def test_a_table_that_took_money_unfloated_is_counted_from_nothing(store: EventStore) -> None:
    club = a_club(store)
    evenings.open_evening(club, SETTER, {}, 0)
    _nick(club)
    with pytest.raises(EveningRefused, match="t1 not counted") as refused:
        evenings.close_evening(club, SETTER, {}, 0)
    assert refused.value.rule == "place-not-counted"
    closed = evenings.close_evening(club, SETTER, {"t1": 0}, 0)
    assert closed["cash_up"][0]["expected"] == -100
    assert closed["cash_up"][0]["difference"] == 100


def test_current_is_the_open_evening_or_none_and_the_day_only_before_any(
    store: EventStore,
) -> None:
    club = a_club(store)
    with store.engine.connect() as conn:
        stand_in = book.current(conn, ZONE)
    assert stand_in is not None and len(stand_in.key) == 10  # the calendar day, 2026-11-27
    evenings.open_evening(club, SETTER, {"t1": 10}, 0)
    _nick(club)
    with store.engine.connect() as conn:
        now = book.current(conn, ZONE)
        last = conn.execute(sa.select(sa.func.max(events.c.position))).scalar_one()
        [recorded] = book.recorded(conn)
        assert now == recorded.span(conn)  # the one row read says what the stream says
    assert now is not None and now.key == "1" and now.through == last
    evenings.close_evening(club, SETTER, {"t1": 0}, 0)
    with store.engine.connect() as conn:
        assert book.current(conn, ZONE) is None


@pytest.mark.parametrize(
    ("floats", "cage", "rule"),
    [
        ({"t1": -1}, 0, "bad-count"),
        ({"t1": 10**5000}, 0, "bad-count"),
        ({"t1": 10**12 + 1}, 0, "bad-count"),
        ({"t1": 1.5}, 0, "bad-count"),
        ({"t1": True}, 0, "bad-count"),
        ({"t1": "100"}, 0, "bad-count"),
        ({}, -5, "bad-count"),
        ({}, None, "bad-count"),
        ({"nowhere": 10}, 0, "no-such-table"),
        ({"bad name!": 10}, 0, "no-such-table"),
        ({f"t{n}": 1 for n in range(501)}, 0, "too-many-tables"),
    ],
)
def test_a_bad_float_is_refused_by_its_rule_and_writes_nothing(
    store: EventStore, floats: dict[str, Any], cage: Any, rule: str
) -> None:
    club = a_club(store)
    before = _written(store)
    with pytest.raises(EveningRefused) as refused:
        evenings.open_evening(club, SETTER, floats, cage)
    assert refused.value.rule == rule and refused.value.status == 422
    assert _written(store) == before


def test_the_evenings_own_rules_refuse_and_write_nothing(store: EventStore) -> None:
    club = a_club(store)
    tables.open_table(club, "t2", CROUPIER)
    before = _written(store)
    with pytest.raises(EveningRefused) as refused:
        evenings.close_evening(club, SETTER, {}, 0)
    assert (refused.value.rule, refused.value.status) == ("no-evening-open", 409)
    for caller in (ANN, AUDITOR, CROUPIER):
        with pytest.raises(NotPermitted):
            evenings.open_evening(club, caller, {"t1": 10}, 0)
    assert _written(store) == before
    evenings.open_evening(club, SETTER, {"t1": 10}, 0)
    before = _written(store)
    with pytest.raises(EveningRefused) as refused:
        evenings.open_evening(club, SETTER, {"t1": 10}, 0)
    assert (refused.value.rule, refused.value.status) == ("evening-open", 409)
    with pytest.raises(EveningRefused, match="table t2 is not in evening 1") as refused:
        evenings.close_evening(club, SETTER, {"t1": 10, "t2": 5}, 0)
    assert refused.value.rule == "table-not-in-evening"
    with pytest.raises(EveningRefused) as refused:
        evenings.close_evening(club, SETTER, {"t1": -10}, 0)
    assert refused.value.rule == "bad-count"
    with pytest.raises(NotPermitted):
        evenings.close_evening(club, ANN, {"t1": 10}, 0)
    assert _written(store) == before


def test_a_repeat_under_its_key_is_answered_not_run_again(store: EventStore) -> None:
    club = a_club(store)
    first = evenings.open_evening(club, SETTER, {"t1": 10}, 0, key="k1")
    written = _written(store)
    assert evenings.open_evening(club, SETTER, {"t1": 10}, 0, key="k1") == first
    assert _written(store) == written


def test_two_openings_at_once_open_one_evening(store: EventStore) -> None:
    """Two setters press "open" together: the write lock orders them, the second reads
    the first's evening open and is refused; one evening, one opening."""
    club = a_club(store)
    start = threading.Barrier(2)
    answers: list[Any] = []

    def opening() -> None:
        start.wait()
        try:
            answers.append(evenings.open_evening(club, SETTER, {"t1": 10}, 0))
        except EveningRefused as exc:
            answers.append(exc.rule)

    both = [threading.Thread(target=opening) for _ in range(2)]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join()
    assert sorted(map(str, [a if isinstance(a, str) else a["evening"] for a in answers])) == [
        "1",
        "evening-open",
    ]
    with store.engine.connect() as conn:
        assert len(book.recorded(conn)) == 1


def test_an_evening_is_named_by_its_number_or_by_its_day(store: EventStore) -> None:
    """What a statement's address gives: "1" is evening 1's span, a date the calendar
    day's (the stand-in), anything else nothing."""
    club = a_club(store)
    evenings.open_evening(club, SETTER, {"t1": 10}, 0)
    _nick(club)
    evenings.close_evening(club, SETTER, {"t1": 0}, 0)
    with store.engine.connect() as conn:
        [first] = book.recorded(conn)
        assert book.named(conn, ZONE, "1") == first.span(conn)
        day = book.named(conn, ZONE, "2026-11-26")
        assert day is not None and day.key == "2026-11-26"
        for key in ("2", "0", "9" * 5000, "-1", "\uff11", "2026-02-30", "", "evening"):
            assert book.named(conn, ZONE, key) is None, key[:10]
