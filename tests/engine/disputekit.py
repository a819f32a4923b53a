"""A table that records its stream, with disputes (the engine's dispute tests, the
words a dispute's answer says them in, and the console's pages of them): the game, a
nick round, random play, and a nick round whose settlement was tampered with."""

from __future__ import annotations

import contextlib
import dataclasses
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import engine
from engine import disputes
from engine import events as ev
from engine.errors import RuleBroken
from engine.fold import INITIAL
from engine.money import balances, postings
from engine.referee import read_round
from engine.state import SETTER
from tests.engine.streamkit import Game as Played
from tests.engine.tablekit import CASTER_WINS, CHANCE_FIRST, NICK_FIRST, next_total


class Game(Played):
    """test_referee's table, that records its stream, with disputes."""

    def record(self, number: int) -> disputes.RoundRecord:
        return read_round(number, INITIAL, self.events, self.state)

    def open(self, number: int, claimant: str, role: str = "player", **kw: Any) -> str:
        record = self.record(number)
        claim = kw.pop("claim", "the dice were read wrong")
        (opened,) = self.do(
            disputes.open_dispute,
            record,
            number,
            claimant,
            role,
            claim,
            kw.get("throw"),
            kw.get("die1"),
            kw.get("die2"),
        )
        assert isinstance(opened, ev.DisputeOpened)
        return opened.dispute_id

    def resolve(self, dispute_id: str, resolution: str, *args: Any) -> list[ev.Event]:
        record = self.record(self.state.disputes[dispute_id])
        return self.do(
            disputes.resolve, record, dispute_id, resolution, "the setter's reason", *args
        )

    def balance(self) -> Counter[str]:
        return balances(postings(self.events))

    def throw_version(self, die1: int, die2: int, nth: int = 0) -> int:
        found = [
            e.version
            for e in self.events
            if isinstance(e, ev.DiceThrown) and (e.die1, e.die2) == (die1, die2)
        ]
        return found[nth]


def nick_round(g: Game) -> None:
    """Round 1: ann (caster) stakes 10 against the setter, bob lays 5 and ann covers it;
    main 7, thrown 3+4: a nick. ann wins 10 from the setter and 5 from bob."""
    g.do(engine.stake, 10)
    g.do(engine.lay, "bob", 5)
    g.do(engine.cover, 100)
    g.do(engine.call_main, 7)
    g.do(engine.throw, 3, 4)


def play_randomly(g: Game, rng: random.Random, rounds: int) -> None:
    """Play `rounds` rounds of random stakes, lays, odds, side bets (on each kind of
    proposition) and throws."""
    players = ("ann", "bob", "cat")
    while g.state.round <= rounds:
        s = g.state
        choices: list[Callable[[], list[ev.Event]]] = [
            lambda: g.do(engine.stake, rng.randint(1, 20)),
            lambda: g.do(engine.lay, rng.choice(players), rng.randint(1, 20)),
            lambda: g.do(engine.cover, 10_000),
            lambda: g.do(
                engine.lay_odds,
                rng.choice(players),
                rng.choice(("chance", "main")),
                rng.choice((6, 12, 30)),
            ),
            lambda: g.do(
                engine.offer_side_bet,
                rng.choice((*players, SETTER)),
                rng.choice((next_total(rng.randint(2, 12)), NICK_FIRST, CASTER_WINS, CHANCE_FIRST)),
                rng.random() < 0.5,
                rng.randint(1, 9),
                rng.randint(1, 30),
                None,
            ),
            lambda: g.do(engine.call_main, rng.randint(5, 9)),
        ]
        for b in s.bets.values():
            if b.pending and b.kind is engine.BetKind.SIDE:
                taker = rng.choice([p for p in (*players, SETTER) if p not in b.parties])
                choices.append(lambda b=b, taker=taker: g.do(engine.accept_side_bet, b.id, taker))
        choices += [lambda: g.do(engine.throw, rng.randint(1, 6), rng.randint(1, 6))] * 3
        with contextlib.suppress(RuleBroken):
            rng.choice(choices)()
        if any(b.pending and b.kind is engine.BetKind.LAID for b in g.state.bets.values()):
            g.do(engine.cover, 10_000)


def tampered_nick() -> tuple[Game, disputes.RoundRecord]:
    """test_disputes' nick round, its settlement of ann's stake read back paying her 21
    where the engine pays 20."""
    g = Game()
    nick_round(g)
    events = list(g.events)
    i = next(k for k, e in enumerate(events) if isinstance(e, ev.BetSettled))
    settled = events[i]
    assert isinstance(settled, ev.BetSettled)
    more = dataclasses.replace(settled.transfers[0], amount=settled.transfers[0].amount + 1)
    events[i] = dataclasses.replace(settled, transfers=(more, *settled.transfers[1:]))
    return g, read_round(1, INITIAL, events, g.state)
