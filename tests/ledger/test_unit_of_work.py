"""The unit of work on SQLite and PostgreSQL: the one way to write, which rolls back
unless committed; the refusals it may meet, which keep the write connection; and the
state cache, which learns only what was committed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import engine as hz
from ledger.books.accounts import account_stream
from ledger.books.book import Book
from ledger.books.projections import CreditInUse, OutOfRange, Overdraft
from ledger.service import (
    AlreadyExists,
    Club,
    Forbidden,
    InvalidAmount,
    InvalidName,
    NotFound,
    StaleVersion,
)
from ledger.store.eventstore import (
    Busy,
    ConcurrencyError,
    CorruptEvent,
    EventStore,
    Refused,
    StoreError,
)
from ledger.store.idempotency import IdempotencyConflict
from ledger.store.vocabulary import Deposited
from ledger.unit_of_work import UnitOfWork

SETTER = account_stream(hz.SETTER)


def test_a_unit_of_work_not_committed_writes_nothing(store: EventStore) -> None:
    with UnitOfWork(store) as uow:
        uow.record(SETTER, 0, [Deposited(version=1, account=hz.SETTER, amount=500)], "setter")
    assert not uow.committed
    assert store.read_all() == []
    assert Book(store).balances() == {}


def test_a_committed_unit_of_work_keeps_its_events_and_their_postings(store: EventStore) -> None:
    with UnitOfWork(store) as uow:
        uow.record(SETTER, 0, [Deposited(version=1, account=hz.SETTER, amount=500)], "setter")
        uow.commit()
    assert [r.type for r in store.read_all()] == ["Deposited"]
    assert Book(store).balances() == {hz.SETTER: 500, "cash": -500}


REFUSALS = [
    NotFound,
    Forbidden,
    AlreadyExists,
    InvalidName,
    InvalidAmount,
    StaleVersion,
    IdempotencyConflict,
    Overdraft,
    CreditInUse,
    OutOfRange,
    ConcurrencyError,
]


@pytest.mark.parametrize("error", REFUSALS)
def test_a_refusal_is_a_refusal_and_not_a_fault_of_the_store(error: type) -> None:
    assert issubclass(error, Refused)
    assert not issubclass(error, StoreError)


@pytest.mark.parametrize("error", [Busy, CorruptEvent])
def test_a_fault_of_the_store_is_no_refusal(error: type) -> None:
    assert issubclass(error, StoreError)
    assert not issubclass(error, Refused)


def _driver_connection(store: EventStore) -> object:
    with store.transaction() as conn:
        return conn.connection.dbapi_connection


def test_a_refusal_keeps_the_write_connection_and_a_fault_does_not(store: EventStore) -> None:
    first = _driver_connection(store)
    with pytest.raises(NotFound), store.transaction():
        raise NotFound("there is no table 't9'")
    assert _driver_connection(store) is first
    with pytest.raises(CorruptEvent), store.transaction():
        raise CorruptEvent(1, "payload is not JSON")
    assert _driver_connection(store) is not first


def test_the_loser_of_a_race_leaves_the_state_cache_as_the_winner_left_it(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two first attempts with one key: the loser's look-up finds no answer, then the
    winner commits before the loser's transaction begins. The loser decides again
    (another player), fails on the key, and answers with the winner's response; the
    state it folded was never committed, and must not be remembered as the table's."""
    club = Club(Book(store))
    club.command(
        "t1", "croupier:c", lambda s, _: hz.open_table(hz.BUILTIN["english"]), new_table=True
    )

    def seat_next(state: hz.TableState, _: object) -> list[hz.Event]:
        return hz.seat(state, f"p{state.version}")

    real = store.transaction
    raced = False

    @contextmanager
    def transaction() -> Iterator[object]:
        nonlocal raced
        if not raced:  # the loser is about to begin: the winner gets there first
            raced = True
            winner.append(club.command("t1", "croupier:c", seat_next, key="k"))
        with real() as conn:
            yield conn

    winner: list[dict[str, object]] = []
    monkeypatch.setattr(store, "transaction", transaction)
    loser = club.command("t1", "croupier:c", seat_next, key="k")
    assert loser == winner[0]
    club.command("t1", "croupier:c", lambda s, _: hz.seat(s, "zed"))
    assert club.state("t1").seats == ("p1", "zed")
