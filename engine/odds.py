"""Exact probabilities of the round, from a rule set's table.

Everything is a `Fraction`: these are the figures the bank quotes and the texts
print, so they must come out exactly (1396/2835, not 0.4924).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from engine.dice import MAINS, TOTALS, WAYS, p_total
from engine.rules import MainMethod, Outcome, RuleSet


@dataclass(frozen=True)
class MainOdds:
    main: int
    p_nick: Fraction
    p_out: Fraction
    p_win: Fraction

    @property
    def disadvantage(self) -> Fraction:
        """The caster's disadvantage on an even-money stake: 1 - 2P."""
        return 1 - 2 * self.p_win


def p_chance_first(main: int, chance: int) -> Fraction:
    """The probability that `chance` is thrown before `main`."""
    return Fraction(WAYS[chance], WAYS[chance] + WAYS[main])


def odds_ratio(main: int, chance: int, on_chance: bool = True) -> Fraction:
    """What an odds bet pays per unit staked: Hoyle's ways(main)/ways(chance) on the
    chance, the inverse on the main. Both are the fair price of the bet."""
    ratio = _RATIOS.get((main, chance, on_chance))
    if ratio is not None:
        return ratio
    ratio = Fraction(WAYS[main], WAYS[chance])
    return ratio if on_chance else 1 / ratio


_RATIOS = {
    (main, chance, on): Fraction(WAYS[main], WAYS[chance]) ** (1 if on else -1)
    for main in TOTALS
    for chance in TOTALS
    for on in (True, False)
}
"""`odds_ratio` of every pair of totals, worked out once: every odds bet laid, and every
one the referee lays again, asks for one."""


def main_odds(rules: RuleSet, main: int) -> MainOdds:
    row = rules.first_throw[main]
    p_nick = sum((p_total(t) for t in TOTALS if row[t] is Outcome.NICK), Fraction(0))
    p_out = sum((p_total(t) for t in TOTALS if row[t] is Outcome.OUT), Fraction(0))
    p_chance_wins = sum(
        (p_total(t) * p_chance_first(main, t) for t in TOTALS if row[t] is Outcome.CHANCE),
        Fraction(0),
    )
    return MainOdds(main, p_nick, p_out, p_nick + p_chance_wins)


def random_main_p_win(rules: RuleSet) -> Fraction:
    """P(caster wins) when the main is thrown rather than chosen.

    Called and rolled mains are priced as a preliminary roll re-tossed until it shows
    5 to 9 (the texts' 1.84% figure); under FIRST_ROLL a roll outside 5..9 is a loss.
    """
    weighted = sum((p_total(m) * main_odds(rules, m).p_win for m in MAINS), Fraction(0))
    if rules.main_method is MainMethod.FIRST_ROLL:
        return weighted
    return weighted / sum((p_total(m) for m in MAINS), Fraction(0))


def table(rules: RuleSet) -> dict[str, object]:
    """Everything `hazard odds --json` prints, fractions as "n/d" strings."""
    p = random_main_p_win(rules)
    return {
        "ruleset": rules.name,
        "mains": {
            str(m): {
                "p_nick": fraction_text(o.p_nick),
                "p_out": fraction_text(o.p_out),
                "p_win": fraction_text(o.p_win),
                "disadvantage": fraction_text(o.disadvantage),
            }
            for m in MAINS
            for o in (main_odds(rules, m),)
        },
        "random_main": {
            "method": "first-roll" if rules.main_method is MainMethod.FIRST_ROLL else "re-tossed",
            "p_win": fraction_text(p),
            "disadvantage": fraction_text(1 - 2 * p),
        },
    }


def fraction_text(value: Fraction) -> str:
    """`n/d` in lowest terms, always with a denominator ("0/1", "1/1")."""
    return f"{value.numerator}/{value.denominator}"
