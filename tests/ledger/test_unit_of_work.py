"""The unit of work on SQLite and PostgreSQL: the one way to write, which rolls back
unless committed; the refusals it may meet, which keep the write connection; and the
state cache, which learns only what was committed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import engine as hz
from ledger.books import deep
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
from ledger.store import eventstore
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
    # The write's event, then the seal that ends every write, in the log's own stream.
    assert [(r.stream, r.type) for r in store.read_all()] == [
        (SETTER, "Deposited"),
        ("log", "LogSealed"),
    ]
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


def test_a_write_neither_decodes_its_events_nor_folds_them_again(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One decision per write: the rows an append makes carry the engine's events, and
    the tables' views take the state the engine folded them to. Its postings, its
    rounds and its answer decoded each event again (three times), and the views folded
    the throw a second time."""
    club = Club(Book(store))
    for name in ("ann", "bob"):
        club.create_player(name, "setter:s")
    club.command(
        "t1", "croupier:c", lambda s, _: hz.open_table(hz.BUILTIN["english"]), new_table=True
    )
    for name in ("ann", "bob"):
        club.command("t1", "croupier:c", lambda s, _, n=name: hz.seat(s, n))
    club.command("t1", "croupier:c", lambda s, _: hz.cast_for_caster(s, "ann", 1))
    club.command("t1", "croupier:c", lambda s, _: hz.cast_for_caster(s, "bob", 2))
    if club.state("t1").phase is hz.Phase.AWAITING_MAIN:
        club.command("t1", "croupier:c", lambda s, _: hz.call_main(s, 7))
    decoded: list[int] = []
    folded: list[int] = []
    real_decode, real_fold = eventstore.decode_row, hz.fold
    monkeypatch.setattr(eventstore, "decode_row", lambda row: decoded.append(1) or real_decode(row))
    monkeypatch.setattr(hz, "fold", lambda *a: folded.append(1) or real_fold(*a))
    answer = club.command("t1", "croupier:c", lambda s, _: hz.throw(s, 2, 2))
    assert [e["type"] for e in answer["events"]] == ["DiceThrown"]
    assert (decoded, folded) == ([], [])
    monkeypatch.undo()
    # What they made is what decoding and folding every event makes.
    assert list(deep.differences(store)) == []
    assert club.state("t1") == hz.fold(store.load("table:t1"))
