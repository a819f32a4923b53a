"""Words that name amounts, keeping the amounts as data: what a what-if and an event's
description say ("ann's odds of 25 ... payout 30", "would pay 75/2 minor units").

The engine knows no currency, so it writes an amount in minor units, and those are the
API's words. A `Phrase` is that text, a str, so every reader of the engine's words (the
API's JSON, the referee's, the tests) reads it unchanged; it also keeps its parts, the
text between the amounts and each amount itself, so that `said(money)` writes the same
words with the amounts in any other money, as the console writes them in the club's.
It is to a what-if what `RuleBroken.amounts` is to a refusal, and converts both ways.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from string import Formatter

from engine.errors import Amount, Between, Rule, RuleBroken, minor_units

Part = str | Amount
"""A piece of a phrase: words, or an amount in minor units (int, or Between them)."""


class Phrase(str):
    """Text whose amounts are kept as data (`parts`); the text itself says them in minor
    units. Build one from parts: `Phrase("ann is paid ", 40)`; a Phrase among the parts
    brings its own parts, and a plain str is words (an int that is not money, such as
    a die, is written into the words, never passed as a part)."""

    parts: tuple[Part, ...]

    def __new__(cls, *parts: Part) -> Phrase:
        flat: list[Part] = []
        for part in parts:
            pieces = part.parts if isinstance(part, Phrase) else (part,)
            for piece in pieces:
                if isinstance(piece, str) and flat and isinstance(flat[-1], str):
                    flat[-1] += piece  # words next to words are one piece
                elif piece != "" or not isinstance(piece, str):
                    flat.append(str(piece) if isinstance(piece, str) else piece)
        self = super().__new__(cls, _said(flat, minor_units))
        self.parts = tuple(flat)
        return self

    def said(self, money: Callable[[Amount], str] = minor_units) -> str:
        """The words with each amount written by `money` (by default, in minor units: the
        text itself)."""
        return _said(self.parts, money)

    def refusal(self, rule: Rule) -> RuleBroken:
        """A refusal under `rule` in these words, its amounts kept as the refusal's
        (RuleBroken.amounts), so that its `said` writes them in any money."""
        template: list[str] = []
        amounts: dict[str, Amount] = {}
        for part in self.parts:
            if isinstance(part, str):
                template.append(part.replace("{", "{{").replace("}", "}}"))
            else:
                name = f"amount{len(amounts)}"
                amounts[name] = part
                template.append("{" + name + "}")
        return RuleBroken(rule, "".join(template), amounts)


def _said(parts: tuple[Part, ...] | list[Part], money: Callable[[Amount], str]) -> str:
    return "".join(p if isinstance(p, str) else money(p) for p in parts)


def of_refusal(broken: RuleBroken) -> Phrase:
    """A refusal's words as a Phrase, its amounts (RuleBroken.amounts) kept as parts."""
    if not broken.amounts:
        return Phrase(broken.template)
    parts: list[Part] = []
    for words, name, _spec, _conversion in Formatter().parse(broken.template):
        parts.append(words)
        if name is not None:
            parts.append(broken.amounts[name])
    return Phrase(*parts)


def fraction_of_unit(value: Fraction) -> Amount:
    """Part of a minor unit (what rounding an odds payout takes off, the breakage), as an
    amount written in minor units as the bare fraction: 1/2, or 0."""
    if value.denominator == 1:
        return int(value)
    return Between(value, unit="")
