"""A table under test, shared by test_commands.py and test_bets.py.

`Table` applies commands, folds what they return and keeps the whole stream; `refused`
checks that a command raises the named rule and changes nothing. `tables()` backs the
`table` fixture: every table it makes is checked on teardown to keep its books (postings
sum to zero, the escrow of every closed bet is empty, the escrow of every open bet holds
exactly its stakes) and to replay from its stream to the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import engine
from engine import events as ev
from engine.errors import Rule, RuleBroken
from engine.events import Limits, Proposition, PropositionKind
from engine.fold import INITIAL, fold
from engine.money import ESCROW, balances, postings
from engine.rulesets import BUILTIN
from engine.state import TableState

CASTER_WINS = Proposition(PropositionKind.CASTER_WINS)
CHANCE_FIRST = Proposition(PropositionKind.CHANCE_BEFORE_MAIN)
NICK_FIRST = Proposition(PropositionKind.NICK_FIRST_THROW)


def next_total(*totals: int) -> Proposition:
    return Proposition(PropositionKind.NEXT_TOTAL, frozenset(totals))


def kinds(events: list[ev.Event]) -> list[str]:
    return [type(e).__name__ for e in events]


class Table:
    """A table under test: applies commands, folds their events, keeps the stream."""

    def __init__(self, rules: Any, limits: Limits, players: tuple[str, ...], choose: bool) -> None:
        rules = BUILTIN[rules] if isinstance(rules, str) else rules
        self.events: list[ev.Event] = []
        self.state: TableState = INITIAL
        self.do(lambda _state: engine.open_table(rules, limits))
        for player in players:
            self.do(engine.seat, player)
        if choose:  # the first seat casts lowest and takes the dice
            for die, player in enumerate(players, start=1):
                self.do(engine.cast_for_caster, player, die)
            assert self.state.caster == players[0]

    def do(self, command: Callable[..., list[ev.Event]], *args: Any, **kw: Any) -> list[ev.Event]:
        new = command(self.state, *args, **kw)
        start = self.state.version + 1
        assert [e.version for e in new] == list(range(start, start + len(new)))
        self.events += new
        self.state = fold(new, self.state)
        return new

    def refused(self, rule: Rule, command: Callable[..., Any], *args: Any, **kw: Any) -> str:
        """The command raises `rule`, returns nothing and leaves the state alone."""
        before, count = self.state, len(self.events)
        with pytest.raises(RuleBroken) as info:
            command(self.state, *args, **kw)
        assert info.value.rule is rule, info.value.detail
        assert info.value.code == rule.value
        assert self.state is before and len(self.events) == count
        assert fold(self.events) == before
        return info.value.detail

    def bet(self, command: Callable[..., list[ev.Event]], *args: Any, **kw: Any) -> str:
        """Place a bet (one event) and return its id."""
        (placed,) = self.do(command, *args, **kw)
        return placed.bet_id  # type: ignore[union-attr]

    def players_net(self) -> dict[str, int]:
        """Net movement per participant, stakes still held in escrow included."""
        net = balances(postings(self.events))
        return {k: v for k, v in net.items() if v and not k.startswith(ESCROW)}

    def check_books(self) -> None:
        net = balances(postings(self.events))
        assert sum(net.values()) == 0
        for account, amount in net.items():
            if account.startswith(ESCROW):
                bet = self.state.bets.get(account[len(ESCROW) :])
                held = 0
                if bet is not None:  # an open bet holds the stakes of the sides taken
                    held = (bet.yes_stake if bet.yes else 0) + (bet.no_stake if bet.no else 0)
                assert amount == held, f"{account} holds {amount}, expected {held}"
        assert fold(self.events) == self.state


def tables() -> Iterator[Callable[..., Table]]:
    made: list[Table] = []

    def make(
        rules: Any = "english",
        limits: Limits = Limits(),
        players: tuple[str, ...] = ("ann", "bob", "cat"),
        choose: bool = True,
    ) -> Table:
        made.append(Table(rules, limits, players, choose))
        return made[-1]

    yield make
    for t in made:
        t.check_books()
