"""The built-in rule sets: one for each reading of the rule texts.

`english` follows the majority: the outcome table shared by the how-to text, the
encyclopedia page, the club rules sheet and the rules excerpt, with the main called
by the caster and the dice passing after three consecutive losses.
"""

from __future__ import annotations

from engine.errors import RuleSetError
from engine.rules import CoverPolicy, DicePass, MainMethod, RuleSet

# The outcome table shared by the how-to, the encyclopedia, the club sheet and the excerpt.
MAJORITY_NICKS = {5: {5}, 6: {6, 12}, 7: {7, 11}, 8: {8, 12}, 9: {9}}
MAJORITY_OUTS = {5: {2, 3, 11, 12}, 6: {2, 3, 11}, 7: {2, 3, 12}, 8: {2, 3, 11}, 9: {2, 3, 11, 12}}

# The history page as written: a main of 6 also loses on 7.
HISTORY_NICKS = MAJORITY_NICKS
HISTORY_OUTS = {
    5: {2, 3, 11, 12},
    6: {2, 3, 7, 11},
    7: {2, 3, 12},
    8: {2, 3, 11},
    9: {2, 3, 11, 12},
}


def _table(rows: dict[int, set[int]]) -> dict[int, frozenset[int]]:
    return {main: frozenset(totals) for main, totals in rows.items()}


BUILTIN: dict[str, RuleSet] = {
    rs.name: rs
    for rs in (
        RuleSet(
            name="english",
            description="The majority reading: the caster calls the main; the dice "
            "pass after three consecutive losses.",
            nicks=_table(MAJORITY_NICKS),
            outs=_table(MAJORITY_OUTS),
        ),
        RuleSet(
            name="french",
            description="French rules (how-to text, encyclopedia): the main is set by "
            "a preliminary roll, re-tossed until it shows 5 to 9.",
            nicks=_table(MAJORITY_NICKS),
            outs=_table(MAJORITY_OUTS),
            main_method=MainMethod.ROLLED,
        ),
        RuleSet(
            name="history",
            description="The history page's table exactly as written (a main of 6 "
            "also throws out on 7); the first roll is the main and a roll outside "
            "5 to 9 loses; any loss passes the dice, and after a win the caster may "
            "keep or pass them.",
            nicks=_table(HISTORY_NICKS),
            outs=_table(HISTORY_OUTS),
            main_method=MainMethod.FIRST_ROLL,
            dice_pass=DicePass(after_losses=1, voluntary=True),
        ),
        RuleSet(
            name="club",
            description="The club rules sheet: the main is rolled, re-rolled until it "
            "shows 5 to 9; a loss passes the dice and a winner may pass them; the "
            "caster may refuse stakes they cannot cover.",
            nicks=_table(MAJORITY_NICKS),
            outs=_table(MAJORITY_OUTS),
            main_method=MainMethod.ROLLED,
            dice_pass=DicePass(after_losses=1, voluntary=True),
        ),
        RuleSet(
            name="hard-core",
            description="The club rules sheet's hard-core play: as club, but a "
            "caster who cannot cover every stake forfeits the dice; and a main "
            "roll outside 5 to 9 loses and passes the dice.",
            nicks=_table(MAJORITY_NICKS),
            outs=_table(MAJORITY_OUTS),
            main_method=MainMethod.FIRST_ROLL,
            dice_pass=DicePass(after_losses=1, voluntary=True),
            cover=CoverPolicy.FORFEIT,
        ),
        RuleSet(
            name="three-wins",
            description="The rules excerpt's reading: the caster keeps the dice "
            "while winning but must pass them after three successive wins; a loss "
            "passes them too.",
            nicks=_table(MAJORITY_NICKS),
            outs=_table(MAJORITY_OUTS),
            dice_pass=DicePass(after_losses=1, after_wins=3),
        ),
    )
}

DEFAULT = "english"


def get(name: str) -> RuleSet:
    """A built-in rule set by name."""
    try:
        return BUILTIN[name]
    except KeyError:
        known = ", ".join(sorted(BUILTIN))
        raise RuleSetError("name", f"no built-in rule set {name!r} (known: {known})") from None
