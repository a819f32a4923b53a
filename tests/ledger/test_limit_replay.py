"""The deep check's replay of players' limits (ledger.audit.limits): what the club's
enforcing writes let through, it lets through; a bet, a deposit or a limit event an
insider wrote past the check, it names, on both databases."""

from __future__ import annotations

from datetime import timedelta

import pytest

import engine as hz
from ledger.audit import limits as deep
from ledger.books.accounts import account_stream
from ledger.books.limitrules import stored
from ledger.commands import evenings, limits, tables
from ledger.exports import offline
from ledger.exports.scope import scope_of
from ledger.store.eventstore import EventStore
from ledger.store.limits_events import BreakTaken, LimitSet
from ledger.unit_of_work import UnitOfWork
from tests.ledger.exportkit import export
from tests.ledger.limitkit import ANN, BOB, SETTER, Timed
from tests.signing import VERIFIER


@pytest.fixture
def timed(store: EventStore) -> Timed:
    return Timed(store)


def _an_evening_within_limits(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "loss_evening", 150)
    limits.set_limit(timed.club, BOB, "bob", "loss_week", 400)
    limits.set_limit(timed.club, BOB, "bob", "stake", 100)
    limits.set_limit(timed.club, ANN, "ann", "deposit_24h", 1500)
    limits.set_limit(timed.club, ANN, "ann", "stake", 1000)
    timed.deposit("ann", 500)
    tables.stake(timed.club, "t1", ANN, 100)
    tables.lay(timed.club, "t1", BOB, "bob", 100)
    tables.cover(timed.club, "t1", ANN)
    tables.lay(timed.club, "t1", BOB, "bob", 50)
    limits.set_limit(timed.club, BOB, "bob", "stake", 500)  # a raise: it waits
    timed.later(days=1)
    tables.lay(timed.club, "t1", BOB, "bob", 100)
    limits.take_break(timed.club, BOB, "bob", "time-out", 24)
    timed.later(hours=25)
    timed.deposit("bob", 100)


def _insider(timed: Timed, stream: str, events: list[object]) -> int:
    """Events written straight into a unit of work, past every check of the club."""
    with UnitOfWork(timed.store) as uow:
        if stream.startswith("table:"):
            before = timed.club.state(stream.removeprefix("table:"), uow.conn)
            rows, _ = uow.play(stream, before, events, "croupier:cecil")
        else:
            version = timed.store.stream_version(uow.conn, stream)
            rows = uow.record(stream, version, events, "setter:boss")
        uow.commit()
    return rows[0].position


def test_what_the_club_let_through_the_replay_lets_through(timed: Timed) -> None:
    _an_evening_within_limits(timed)
    assert deep.check(timed.store.engine, "UTC") == []


def test_a_lay_past_the_largest_stake_written_by_an_insider_is_named(timed: Timed) -> None:
    _an_evening_within_limits(timed)
    timed.later(days=2)
    state = timed.club.state("t1")
    position = _insider(timed, "table:t1", hz.lay(state, "bob", 600))  # the raise to 500 holds
    found = deep.check(timed.store.engine, "UTC")
    assert {(b.position, b.account) for b in found} == {(position, "player:bob")}
    assert [b.what for b in found] == [
        "a stake of 600 past the limit on the largest stake of 500",
        "a stake past the limit on losses over 7 days of 400 (850 lost with it, open stakes "
        "counted)",
        "a stake past the limit on losses this evening of 150 (600 lost with it, open stakes "
        "counted)",
    ]


def test_a_lay_during_a_break_and_past_the_evening_s_losses_is_named(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "loss_evening", 50)
    limits.take_break(timed.club, BOB, "bob", "time-out", 24)
    state = timed.club.state("t1")
    position = _insider(timed, "table:t1", hz.lay(state, "bob", 60))
    found = deep.check(timed.store.engine, "UTC")
    assert [b.position for b in found] == [position, position]
    assert "a stake of 60 during a time-out" in found[0].what
    assert found[1].what == (
        "a stake past the limit on losses this evening of 50 (60 lost with it, open stakes counted)"
    )


def test_a_raise_written_as_binding_at_once_is_named(timed: Timed) -> None:
    limits.set_limit(timed.club, BOB, "bob", "stake", 100)
    stamp = stored(timed.wall.now + timedelta(seconds=1))
    timed.store.clock = lambda: stamp
    stream = account_stream("player:bob")
    version = timed.store.version(stream)
    raised = LimitSet(version + 1, "player:bob", "stake", 900, stamp)
    position = _insider(timed, stream, [raised])
    ended = BreakTaken(version + 2, "player:bob", "time-out", "2020-01-01T00:00:00.000000Z")
    later = _insider(timed, stream, [ended])
    found = deep.check(timed.store.engine, "UTC")
    assert [(b.position, b.what) for b in found] == [
        (position, "a raise of the limit on largest stake (100 to 900) recorded as binding "
         "at once, with no cooling-off"),
        (later, "a time-out that ends before it begins"),
    ]  # fmt: skip


def _lines(timed: Timed) -> list[bytes]:
    """The whole log, exported as the club hands it out, split into its lines."""
    data = export(timed.store.engine, scope_of(everything=True))
    return data.splitlines(keepends=True)


def test_the_offline_check_passes_an_export_within_the_limits(timed: Timed) -> None:
    _an_evening_within_limits(timed)
    verified = offline.verify(_lines(timed), VERIFIER)
    assert verified.last == timed.count()


def test_the_offline_check_names_a_bet_past_a_limit_in_an_export(timed: Timed) -> None:
    _an_evening_within_limits(timed)
    timed.later(days=2)
    position = _insider(timed, "table:t1", hz.lay(timed.club.state("t1"), "bob", 600))
    with pytest.raises(offline.Disagreement) as refused:
        offline.verify(_lines(timed), VERIFIER)
    assert (
        "a deposit, bet or limit the players' limits in force did not allow: "
        f"position {position}: player:bob: a stake of 600 past the limit on the largest stake "
        "of 500 (and 1 more)"
    ) in str(refused.value)
    # A table's own export cannot see the deposits and stakes elsewhere: not judged.
    offline.verify(export(timed.store.engine, scope_of(table="t1")).splitlines(True), VERIFIER)


def test_losses_this_evening_count_from_the_evening_the_setter_opened(timed: Timed) -> None:
    # Two evenings on one calendar day: each starts bob's losses this evening afresh, for
    # the enforcing write and for both replays alike; a stake past them is still named.
    limits.set_limit(timed.club, BOB, "bob", "loss_evening", 150)
    evenings.open_evening(timed.club, SETTER, {"t1": 5000}, 1000)
    tables.stake(timed.club, "t1", ANN, 100)
    tables.lay(timed.club, "t1", BOB, "bob", 100)
    tables.cover(timed.club, "t1", ANN)
    tables.lay(timed.club, "t1", BOB, "bob", 50)
    evenings.close_evening(timed.club, SETTER, {"t1": 5000}, 1000)
    timed.later(hours=1)
    evenings.open_evening(timed.club, SETTER, {"t1": 5000}, 1000)
    tables.lay(timed.club, "t1", BOB, "bob", 100)  # 100 this evening: allowed
    assert deep.check(timed.store.engine, "UTC") == []
    offline.verify(_lines(timed), VERIFIER)
    position = _insider(timed, "table:t1", hz.lay(timed.club.state("t1"), "bob", 100))
    expected = (
        "a stake past the limit on losses this evening of 150 (200 lost with it, open "
        "stakes counted)"
    )
    assert [(b.position, b.what) for b in deep.check(timed.store.engine, "UTC")] == [
        (position, expected)
    ]
    with pytest.raises(offline.Disagreement) as refused:
        offline.verify(_lines(timed), VERIFIER)
    assert f"position {position}: player:bob: {expected}" in str(refused.value)
