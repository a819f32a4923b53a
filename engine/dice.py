"""Two six-sided dice: totals and the number of ways each can be thrown."""

from __future__ import annotations

from fractions import Fraction

from engine.errors import Rule, RuleBroken

FACES = range(1, 7)
TOTALS = range(2, 13)
MAINS = range(5, 10)

#: WAYS[t] is how many of the 36 ordered pairs of dice show total t.
WAYS: tuple[int, ...] = tuple(sum(1 for a in FACES for b in FACES if a + b == t) for t in range(13))


def p_total(total: int) -> Fraction:
    """The probability that one throw of two dice shows `total`."""
    return Fraction(WAYS[total], 36)


#: The 36 ordered pairs (die 1, die 2), each thrown with probability 1/36.
PAIRS: tuple[tuple[int, int], ...] = tuple((a, b) for a in FACES for b in FACES)


def p_pair(die1: int, die2: int) -> Fraction:
    """The probability that one throw shows `die1` on die 1 and `die2` on die 2."""
    return Fraction(1, 36) if is_die(die1) and is_die(die2) else Fraction(0)


def is_die(value: object) -> bool:
    return type(value) is int and 1 <= value <= 6


def require_dice(*dice: object) -> None:
    """Refuse any of `dice` that is not a die's face (rule invalid-die)."""
    for die in dice:
        if not is_die(die):
            raise RuleBroken(Rule.INVALID_DIE, f"a die shows 1 to 6, not {die!r}")
