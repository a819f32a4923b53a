"""No history of deposits, withdrawals, credit changes and bets leaves a balance below
minus its credit limit, or balances that do not sum to zero.

Every step goes through the service's one write path (`Club.command` and
`Club.account_command`), on SQLite and PostgreSQL, and every step the ledger refuses
must write nothing. The database is the test's; each example plays on its own players
and table, so the whole book is checked after every step of every example.
"""

from __future__ import annotations

import itertools
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import engine as hz
from engine.errors import HazardError
from ledger.books.accounts import CASH
from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore, Refused
from ledger.store.schema import accounts
from ledger.store.vocabulary import CreditLimitSet, Deposited, Withdrawn

WHO = st.sampled_from(["a", "b", hz.SETTER])
AMOUNT = st.sampled_from([1, 100, 250, 500, 1000, 3000])  # round sums collide more
STEP = st.one_of(
    st.tuples(st.just("deposit"), WHO, AMOUNT),
    st.tuples(st.just("withdraw"), WHO, AMOUNT),
    st.tuples(st.just("credit"), WHO, st.sampled_from([0, 100, 500, 1000, 3000])),
    st.tuples(st.just("stake"), AMOUNT),
    st.tuples(st.just("lay"), st.sampled_from(["a", "b"]), AMOUNT),
    st.tuples(st.just("cover")),
    st.tuples(st.just("main"), st.integers(min_value=5, max_value=9)),
    st.tuples(st.just("throw"), st.integers(1, 6), st.integers(1, 6)),
)
KINDS: dict[str, type[Deposited | Withdrawn | CreditLimitSet]] = {
    "deposit": Deposited,
    "withdraw": Withdrawn,
    "credit": CreditLimitSet,
}


def check_the_book(store: EventStore) -> None:
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(accounts.c.account, accounts.c.balance, accounts.c.credit_limit)
        ).all()
    assert sum(r.balance for r in rows) == 0
    for r in rows:
        if r.account != CASH:
            assert r.balance >= -r.credit_limit, (r.account, r.balance, r.credit_limit)


def test_no_history_leaves_a_balance_below_its_credit(store: EventStore) -> None:
    club = Club(Book(store))
    examples = itertools.count()

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(STEP, max_size=25))
    @example([("credit", "a", 1000), ("withdraw", "a", 800), ("credit", "a", 0)])  # the issue's
    def history(steps: list[tuple[Any, ...]]) -> None:
        n = next(examples)
        table = f"t{n}"
        names = {"a": f"p{n}a", "b": f"p{n}b", hz.SETTER: hz.SETTER}
        for who in ("a", "b"):
            club.create_player(names[who], "setter:bank")
        setup = [
            lambda s, _: hz.open_table(hz.BUILTIN["english"], hz.Limits(min_stake=1)),
            lambda s, _: hz.seat(s, names["a"]),
            lambda s, _: hz.seat(s, names["b"]),
            lambda s, _: hz.cast_for_caster(s, names["a"], 1),
            lambda s, _: hz.cast_for_caster(s, names["b"], 6),
        ]
        for i, decide in enumerate(setup):
            club.command(table, "croupier:c", decide, new_table=i == 0)
        for step in steps:
            before = len(store.read_all(limit=1_000_000))
            try:
                run(club, table, names, step)
            except (Refused, HazardError):
                assert len(store.read_all(limit=1_000_000)) == before, step
            check_the_book(store)

    history()


def run(club: Club, table: str, names: dict[str, str], step: tuple[Any, ...]) -> None:
    kind, *args = step
    if kind in KINDS:
        who, amount = args
        club.account_command(names[who], KINDS[kind], amount, "setter:bank")
        return
    decisions = {
        "stake": lambda s, _: hz.stake(s, args[0]),
        "lay": lambda s, _: hz.lay(s, names[args[0]], args[1]),
        "cover": lambda s, funds: hz.cover(s, funds(s.caster) if s.caster else 0),
        "main": lambda s, _: hz.call_main(s, args[0]),
        "throw": lambda s, _: hz.throw(s, args[0], args[1]),
    }
    club.command(table, "croupier:c", decisions[kind])
