"""The double-entry book on SQLite and PostgreSQL: postings, balances, overdrafts."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

import engine as hz
from engine.money import balances as engine_balances
from engine.money import postings as engine_postings
from ledger.books import projections
from ledger.books.accounts import CASH
from ledger.books.book import Book
from ledger.books.projections import CreditInUse, Overdraft
from ledger.service import Club, InvalidAmount
from ledger.store.eventstore import EventStore
from ledger.store.schema import accounts, postings
from ledger.store.vocabulary import CreditLimitSet, Deposited, Withdrawn
from ledger.unit_of_work import UnitOfWork

STREAM = "table:1"


@pytest.fixture
def book(store: EventStore) -> Book:
    return Book(store)


def play(book: Book, commands: list) -> tuple[hz.TableState, list[hz.Event]]:  # type: ignore[type-arg]
    """Run table commands through the book, each in its own unit of work."""
    state, log = hz.INITIAL, []
    for command in commands:
        events = command(state)
        after = hz.fold(events, state)
        with UnitOfWork(book.store) as uow:
            uow.play(STREAM, state, events, actor="croupier")
            uow.commit()
        state = after
        log.extend(events)
    return state, log


def _account(book: Book, kind: type, account: str, amount: int) -> None:
    """The setter's command on `account` through the club, opening a player's first."""
    club = Club(book)
    name = account.removeprefix("player:")
    if not club.player_exists(name):
        club.create_player(name, "setter")
    club.account_command(name, kind, amount, "setter")


def deposit(book: Book, account: str, amount: int) -> None:
    _account(book, Deposited, account, amount)


def withdraw(book: Book, account: str, amount: int) -> None:
    _account(book, Withdrawn, account, amount)


def set_credit_limit(book: Book, account: str, limit: int) -> None:
    _account(book, CreditLimitSet, account, limit)


def test_deposits_and_withdrawals_move_money_to_and_from_cash(book: Book) -> None:
    deposit(book, "player:ann", 5000)
    withdraw(book, "player:ann", 1200)
    assert book.balances() == {"player:ann": 3800, CASH: -3800}


def test_an_overdraft_is_refused_and_writes_nothing(book: Book) -> None:
    deposit(book, "player:ann", 100)
    before = book.store.read_all()
    with pytest.raises(Overdraft, match="player:ann would stand at -1"):
        withdraw(book, "player:ann", 101)
    assert book.store.read_all() == before
    assert book.balances() == {"player:ann": 100, CASH: -100}


def test_credit_granted_by_the_setter_allows_a_negative_balance(book: Book) -> None:
    set_credit_limit(book, "player:ann", 500)
    withdraw(book, "player:ann", 500)
    with pytest.raises(Overdraft, match="credit limit of 500"):
        withdraw(book, "player:ann", 1)
    assert book.balances()["player:ann"] == -500


def test_credit_in_use_cannot_be_taken_away_and_the_refusal_writes_nothing(book: Book) -> None:
    # The case: credit 1,000, withdraw to -800, then a credit limit of 0.
    set_credit_limit(book, "player:ann", 1000)
    withdraw(book, "player:ann", 800)
    before = book.store.read_all()
    for limit in (0, 799):
        with pytest.raises(CreditInUse, match="player:ann has drawn 800") as refused:
            set_credit_limit(book, "player:ann", limit)
        assert (refused.value.account, refused.value.drawn) == ("player:ann", 800)
    assert book.store.read_all() == before
    with book.store.engine.connect() as conn:
        row = conn.execute(
            sa.select(accounts.c.balance, accounts.c.credit_limit).where(
                accounts.c.account == "player:ann"
            )
        ).one()
    assert tuple(row) == (-800, 1000)
    set_credit_limit(book, "player:ann", 800)  # down to what is drawn: fine
    deposit(book, "player:ann", 800)
    set_credit_limit(book, "player:ann", 0)  # repaid: it may go
    assert book.balances()["player:ann"] == 0


@pytest.mark.parametrize("amount", [0, -5, 1.5, True])
def test_amounts_are_whole_positive_minor_units(book: Book, amount: object) -> None:
    with pytest.raises(InvalidAmount):
        Club(book).account_command("ann", Deposited, amount, "setter")  # type: ignore[arg-type]
    assert book.store.read_all() == []


def _round_with_money() -> list:  # type: ignore[type-arg]
    return [
        lambda s: hz.open_table(hz.BUILTIN["english"]),
        lambda s: hz.seat(s, "ann"),
        lambda s: hz.seat(s, "bob"),
        lambda s: hz.cast_for_caster(s, "ann", 1),
        lambda s: hz.cast_for_caster(s, "bob", 6),
        lambda s: hz.call_main(s, 7),
        lambda s: hz.stake(s, 1000),  # ann against the setter
        lambda s: hz.lay(s, "bob", 400),
        lambda s: hz.cover(s, 4000),
        lambda s: hz.throw(s, 2, 2),  # chance 4
        lambda s: hz.lay_odds(s, "ann", "chance", 500),  # pays 6/3: 1000
        lambda s: hz.throw(s, 1, 3),  # the chance: ann wins
    ]


def _fund(book: Book) -> None:
    deposit(book, "player:ann", 5000)
    deposit(book, "player:bob", 5000)
    deposit(book, "setter", 100_000)


def test_a_round_posts_what_the_engine_says_and_balances_sum_to_zero(book: Book) -> None:
    _fund(book)
    _, log = play(book, _round_with_money())
    # By hand: ann wins 1000 from the setter, 400 from bob and 1000 on the odds.
    live = book.balances()
    assert live["player:ann"] == 5000 + 1000 + 400 + 1000
    assert live["player:bob"] == 5000 - 400
    assert live["setter"] == 100_000 - 1000 - 1000
    assert sum(live.values()) == 0
    assert not any(k.startswith("escrow:") for k in live)  # every escrow is back to zero
    engine_net = engine_balances(engine_postings(log))
    assert engine_net["ann"] == live["player:ann"] - 5000


def test_postings_come_in_balanced_pairs_naming_their_event(book: Book, engine: sa.Engine) -> None:
    _fund(book)
    play(book, _round_with_money())
    with engine.connect() as conn:
        rows = conn.execute(sa.select(postings)).all()
        by_position: dict[int, int] = {}
        for row in rows:
            by_position[row.position] = by_position.get(row.position, 0) + row.amount
    assert rows
    assert set(by_position.values()) == {0}


def test_a_bet_the_player_cannot_fund_is_refused_with_no_event(book: Book) -> None:
    deposit(book, "setter", 100_000)
    deposit(book, "player:ann", 300)
    commands = _round_with_money()[:6]
    state, _ = play(book, commands)
    before = len(book.store.read_all())
    with pytest.raises(Overdraft, match="player:ann"), UnitOfWork(book.store) as uow:
        events = hz.stake(state, 1000)
        uow.play(STREAM, state, events, actor="croupier")
    assert len(book.store.read_all()) == before
    assert book.balances()["player:ann"] == 300


def test_two_concurrent_bets_cannot_overdraw_one_account(book: Book) -> None:
    deposit(book, "player:ann", 1000)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def attempt() -> None:
        barrier.wait()
        try:
            withdraw(book, "player:ann", 700)
            outcomes.append("ok")
        except Overdraft:
            outcomes.append("overdraft")

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Writers queue for the append lock, so the second sees the first's withdrawal.
    assert sorted(outcomes) == ["ok", "overdraft"]
    assert book.balances()["player:ann"] == 300


def test_rebuilding_the_read_models_gives_the_live_ones(book: Book, engine: sa.Engine) -> None:
    _fund(book)
    set_credit_limit(book, "player:bob", 250)
    play(book, _round_with_money())

    def snapshot() -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
        with engine.connect() as conn:
            accts = conn.execute(sa.select(accounts).order_by(accounts.c.account)).all()
            posts = conn.execute(
                sa.select(
                    postings.c.position,
                    postings.c.account,
                    postings.c.amount,
                    postings.c.counterparty,
                ).order_by(postings.c.position, postings.c.account, postings.c.amount)
            ).all()
        return [tuple(r) for r in accts], [tuple(r) for r in posts]

    live = snapshot()
    read = projections.rebuild(book.store)
    assert read == len(book.store.read_all(limit=10_000))
    assert snapshot() == live
