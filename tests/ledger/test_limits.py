"""A player's limits and breaks, set through the commands every surface calls and
enforced in the write that would pass them, on both databases."""

from __future__ import annotations

import threading

import pytest

from ledger.books.limits import LimitReached, OnBreak
from ledger.commands import NotPermitted, limits, tables
from ledger.commands.limits import InvalidLimit
from ledger.service import InvalidAmount, NotFound
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Withdrawn
from tests.ledger.limitkit import ANN, BOB, SETTER, Timed


@pytest.fixture
def timed(store: EventStore) -> Timed:
    return Timed(store)


def test_a_deposit_past_the_24_hour_limit_is_refused_and_writes_nothing(timed: Timed) -> None:
    timed.later(hours=25)  # the 1,000 each was paid in a day ago
    limits.set_limit(timed.club, BOB, "bob", "deposit_24h", 500)
    timed.deposit("bob", 300)
    before = timed.count()
    with pytest.raises(LimitReached, match="deposits over 24 hours: 500, of which 300"):
        timed.deposit("bob", 201)
    assert timed.count() == before
    timed.deposit("bob", 200)  # exactly the limit
    timed.later(hours=24, seconds=1)
    timed.deposit("bob", 500)  # the first two are more than 24 hours old


def test_the_7_day_limit_counts_a_week_of_deposits(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "deposit_7d", 1500)  # 1,000 already in
    timed.later(days=3)
    timed.deposit("bob", 500)
    with pytest.raises(LimitReached, match="7 days"):
        timed.deposit("bob", 1)
    timed.later(days=4, seconds=1)
    timed.deposit("bob", 1000)  # the first 1,000 is more than 7 days old


def test_lowering_binds_at_once_and_raising_after_the_cooling_off(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "stake", 100)
    raised = limits.set_limit(timed.club, BOB, "bob", "stake", 500)
    assert raised["effective_at"] > raised["events"][0]["recorded_at"]
    with pytest.raises(LimitReached, match="largest stake: 100, and this stake is 200"):
        tables.lay(timed.club, "t1", BOB, "bob", 200)
    timed.later(hours=23)
    with pytest.raises(LimitReached):
        tables.lay(timed.club, "t1", BOB, "bob", 200)
    timed.later(hours=1, seconds=1)
    tables.lay(timed.club, "t1", BOB, "bob", 200)


def test_a_raise_then_a_lower_one_keeps_the_lower(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "stake", 100)
    limits.set_limit(timed.club, BOB, "bob", "stake", 500)
    lowered = limits.set_limit(timed.club, BOB, "bob", "stake", 50)
    assert lowered["effective_at"] == lowered["events"][0]["recorded_at"]
    timed.later(days=2)
    with pytest.raises(LimitReached, match="largest stake: 50"):
        tables.lay(timed.club, "t1", BOB, "bob", 60)


def test_removing_a_limit_waits_like_a_raise(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "stake", 100)
    limits.set_limit(timed.club, BOB, "bob", "stake", None)
    with pytest.raises(LimitReached):
        tables.lay(timed.club, "t1", BOB, "bob", 101)
    timed.later(hours=25)
    tables.lay(timed.club, "t1", BOB, "bob", 101)


def test_losses_this_evening_count_open_stakes(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "loss_evening", 150)
    tables.lay(timed.club, "t1", BOB, "bob", 100)
    with pytest.raises(LimitReached, match="losses this evening: 150, and with this stake 160"):
        tables.lay(timed.club, "t1", BOB, "bob", 60)
    tables.lay(timed.club, "t1", BOB, "bob", 50)
    timed.later(days=1)  # tomorrow is another evening (the calendar day stands in)
    tables.lay(timed.club, "t1", BOB, "bob", 100)


def test_losses_over_a_week(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "loss_week", 150)
    tables.lay(timed.club, "t1", BOB, "bob", 100)
    timed.later(days=3)
    with pytest.raises(LimitReached, match="losses over 7 days"):
        tables.lay(timed.club, "t1", BOB, "bob", 60)


def test_a_caster_stake_counts_too(timed: Timed) -> None:
    limits.set_limit(timed.club, ANN, "ann", "stake", 50)
    with pytest.raises(LimitReached, match="player:ann's limit on largest stake"):
        tables.stake(timed.club, "t1", ANN, 100)


def test_a_time_out_refuses_stakes_and_deposits_but_not_withdrawals(timed: Timed) -> None:
    taken = limits.take_break(timed.club, BOB, "bob", "time-out", 48)
    before = timed.count()
    with pytest.raises(OnBreak, match=r"time-out until .*withdrawals and statements still work"):
        tables.lay(timed.club, "t1", BOB, "bob", 10)
    with pytest.raises(OnBreak):
        timed.deposit("bob", 10)
    assert timed.count() == before
    timed.club.account_command("bob", Withdrawn, 10, "setter:boss")
    assert taken["until"] > taken["since"]
    timed.later(hours=47)
    with pytest.raises(OnBreak):
        timed.deposit("bob", 10)
    timed.later(hours=1, seconds=1)
    timed.deposit("bob", 10)


def test_a_break_is_never_shortened(timed: Timed) -> None:
    limits.take_break(timed.club, BOB, "bob", "self-exclusion", 6)
    with pytest.raises(InvalidLimit, match="a break is never shortened"):
        limits.take_break(timed.club, BOB, "bob", "time-out", 24)
    longer = limits.take_break(timed.club, BOB, "bob", "self-exclusion", 12)
    timed.later(days=200)
    with pytest.raises(OnBreak, match=f"self-exclusion until {longer['until']}"):
        timed.deposit("bob", 10)


@pytest.mark.parametrize(
    ("kind", "length"),
    [("time-out", 23), ("time-out", 6 * 7 * 24 + 1), ("self-exclusion", 5), ("nap", 30),
     ("self-exclusion", 10**5000)],
    ids=["short time-out", "long time-out", "short exclusion", "no such break", "huge"],
)  # fmt: skip
def test_a_break_out_of_its_range_is_refused(timed: Timed, kind: str, length: int) -> None:
    before = timed.count()
    with pytest.raises(InvalidLimit):
        limits.take_break(timed.club, BOB, "bob", kind, length)
    assert timed.count() == before


@pytest.mark.parametrize(
    ("kind", "limit", "error"),
    [("stake", -1, InvalidAmount), ("stake", 10**5000, InvalidAmount),
     ("stake", True, InvalidAmount), ("bets", 10, InvalidLimit)],
    ids=["negative", "huge", "a bool", "no such kind"],
)  # fmt: skip
def test_a_bad_limit_is_refused(timed: Timed, kind: str, limit: int, error: type) -> None:
    before = timed.count()
    with pytest.raises(error):
        limits.set_limit(timed.club, BOB, "bob", kind, limit)
    assert timed.count() == before


def test_a_player_sets_their_own_and_the_setter_anyone_s(timed: Timed) -> None:
    with pytest.raises(NotPermitted):
        limits.set_limit(timed.club, ANN, "bob", "stake", 10)
    with pytest.raises(NotPermitted):
        limits.take_break(timed.club, ANN, "bob", "time-out", 24)
    answer = limits.set_limit(timed.club, SETTER, "bob", "stake", 10)
    assert answer["events"][0]["actor"] == "setter:boss"
    with pytest.raises(NotFound):
        limits.set_limit(timed.club, SETTER, "nobody", "stake", 10)


def test_two_deposits_at_once_cannot_both_pass_a_limit(timed: Timed) -> None:
    timed.later(days=8)
    limits.set_limit(timed.club, BOB, "bob", "deposit_24h", 1000)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def attempt() -> None:
        barrier.wait()
        try:
            timed.deposit("bob", 700)
            outcomes.append("ok")
        except LimitReached:
            outcomes.append("limit")

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["limit", "ok"]


def test_two_lays_at_once_cannot_both_pass_a_loss_limit(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "loss_evening", 100)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def attempt() -> None:
        barrier.wait()
        try:
            tables.lay(timed.club, "t1", BOB, "bob", 60)
            outcomes.append("ok")
        except LimitReached:
            outcomes.append("limit")

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["limit", "ok"]


def test_a_limit_binds_at_the_time_the_log_records_even_when_the_clock_is_behind(
    timed: Timed,
) -> None:
    timed.store.clock = lambda: "2020-01-01T00:00:00.000000Z"  # behind the log's last event
    lowered = limits.set_limit(timed.club, BOB, "bob", "stake", 10)
    [event] = lowered["events"]
    assert event["recorded_at"] > "2026"  # held to the last event's time, as every append
    assert lowered["effective_at"] == event["recorded_at"]
    with pytest.raises(LimitReached):
        tables.lay(timed.club, "t1", BOB, "bob", 11)


def test_a_receipt_of_a_limit_or_a_break_says_what_it_was() -> None:
    from ledger.books import wording
    from ledger.house import House

    house, at = House(), "account:player:bob"
    limit = {"kind": "stake", "limit": 1250, "effective_at": "2026-11-27T10:00:00.000000Z"}
    assert wording.event_words("LimitSet", limit, at, house) == (
        "your limit on largest stake set to £12.50, from 27 Nov 2026 10:00:00 UTC"
    )
    taken = {"kind": "time-out", "until": "2026-11-29T10:00:00.000000Z"}
    assert wording.event_words("BreakTaken", taken, at, house) == (
        "took a time-out until 29 Nov 2026 10:00:00 UTC"
    )


def test_a_week_of_many_deposits_counts_them_all(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "deposit_7d", 1000 + 250)
    for _ in range(250):
        timed.deposit("bob", 1)
    with pytest.raises(LimitReached, match="at most 0 more now"):
        timed.deposit("bob", 1)
