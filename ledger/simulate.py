"""Playing many rounds through the engine with real random dice.

The randomness lives here, outside the engine: a seeded `random.Random` throws each
die on its own, so all 36 ordered pairs come up (a total is never drawn directly,
which would make 7 as likely as 2). The rounds are played by the engine's own
commands and fold, so the simulation tests the same code the table runs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction

import engine
from engine.dice import MAINS
from engine.odds import main_odds, random_main_p_win
from engine.rules import MainMethod, RuleSet

Z99 = 2.5758293035489004  # two-sided 99% normal quantile


class Dice:
    """Two fair dice from a seeded source."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def throw(self) -> tuple[int, int]:
        randint = self._random.randint
        return randint(1, 6), randint(1, 6)


@dataclass
class Tally:
    rounds: int = 0
    wins: int = 0
    nicks: int = 0
    outs: int = 0


@dataclass
class Result:
    rules: RuleSet
    rounds: int
    seed: int
    by_main: dict[int, Tally] = field(default_factory=lambda: {m: Tally() for m in MAINS})
    overall: Tally = field(default_factory=Tally)
    fixed_main: int | None = None


def wilson(successes: int, n: int, z: float = Z99) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _new_table(rules: RuleSet, dice: Dice) -> engine.TableState:
    state = engine.fold(engine.open_table(rules))
    state = engine.fold(engine.seat(state, "caster"), state)
    return engine.fold(engine.cast_for_caster(state, "caster", dice.throw()[0]), state)


def _called_main(dice: Dice, fixed: int | None) -> int:
    """The caster's call: fixed, or chosen like a preliminary roll re-tossed to 5..9."""
    if fixed is not None:
        return fixed
    while True:
        a, b = dice.throw()
        if 5 <= a + b <= 9:
            return a + b


def simulate(
    rules: RuleSet,
    rounds: int,
    seed: int,
    main: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Result:
    """Play `rounds` rounds of `rules` and tally how the caster fared, per main."""
    dice = Dice(seed)
    result = Result(rules, rounds, seed, fixed_main=main)
    state = _new_table(rules, dice)
    for done, outcome in enumerate(_rounds(rules, state, dice, main, rounds), start=1):
        round_main, res = outcome
        for tally in (result.overall, result.by_main.get(round_main)):
            if tally is None:
                continue
            tally.rounds += 1
            tally.wins += res.caster_won is True
            tally.nicks += res is engine.RoundResult.NICK
            tally.outs += res is engine.RoundResult.OUT
        if progress is not None and done % 1000 == 0:
            progress(1000)
    if progress is not None and rounds % 1000:
        progress(rounds % 1000)
    return result


def _rounds(
    rules: RuleSet, state: engine.TableState, dice: Dice, main: int | None, count: int
) -> Iterator[tuple[int, engine.RoundResult]]:
    called = rules.main_method is MainMethod.CALLED
    for _ in range(count):
        if called:
            state = engine.fold(engine.call_main(state, _called_main(dice, main)), state)
        start = state.round
        round_main = 0
        while state.round == start:
            before_main = state.main
            state = engine.fold(engine.throw(state, *dice.throw()), state)
            round_main = state.main or before_main or round_main
        assert state.last_result is not None
        yield round_main, state.last_result


def expected(result: Result) -> list[tuple[str, Tally, Fraction, Fraction | None, Fraction | None]]:
    """(label, tally, exact P(win), exact P(nick), exact P(out)) for each line of the report."""
    rules = result.rules
    lines: list[tuple[str, Tally, Fraction, Fraction | None, Fraction | None]] = []
    for m in MAINS:
        odds = main_odds(rules, m)
        lines.append((f"main {m}", result.by_main[m], odds.p_win, odds.p_nick, odds.p_out))
    if result.fixed_main is None:
        label = (
            "first roll as main"
            if rules.main_method is MainMethod.FIRST_ROLL
            else "main by preliminary roll"
        )
        lines.append((label, result.overall, random_main_p_win(rules), None, None))
    return lines
