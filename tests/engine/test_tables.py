"""Table-driven tests: the rule texts' tables, transcribed literally, against the engine.

Every table below is copied from one of the five accounts of the game that docs/rules.md
describes (000 the how-to, 001 the encyclopedia, 002 the history, 003 the club sheet,
004 the excerpt: the account is named in a comment next to it) and parsed here, so a
disagreement between the texts and the engine shows up as one failing cell.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from engine import odds
from engine.rules import Outcome
from engine.rulesets import BUILTIN

MAINS = range(5, 10)
TOTALS = range(2, 13)

# -- 000_617a15e86eb806e8.txt: the how-to text's first-throw rules, in its words --------
# "If the caster rolled the called main, the caster wins (nicks).
#  If the caster rolled a 2 or 3, the caster loses (throws out).
#  If the caster called a main of 5 or 9, but rolled an 11 or 12, the caster throws out.
#  If the caster called a main of 6 or 8, but rolled a 12, the caster nicks.
#  If the caster called a main of 6 or 8, but rolled an 11, the caster throws out.
#  If the caster called a main of 7, but rolled an 11, the caster nicks.
#  If the caster called a main of 7, but rolled a 12, the caster throws out."
TEXT_000 = {
    main: {
        "nicks": {main} | ({12} if main in (6, 8) else {11} if main == 7 else set()),
        "outs": {2, 3} | ({11, 12} if main in (5, 9) else {11} if main in (6, 8) else {12}),
    }
    for main in MAINS
}

# -- 001_18108fb90e123eaf.txt: the encyclopedia's "Outcomes" wikitable, rows as written --
WIKI_001_ROWS = [
    '! 5 | style="background:#faa;" | o || style="background:#faa;" | o | C || '
    'style="background:#afa;" | N || C || C || C || C || C | style="background:#faa;" | o || '
    'style="background:#faa;" | o',
    '! 6 | style="background:#faa;" | o || style="background:#faa;" | o | C || C || '
    'style="background:#afa;" | N || C || C || C || C | style="background:#faa;" | o || '
    'style="background:#afa;" | N',
    '! 7 | style="background:#faa;" | o || style="background:#faa;" | o | C || C || C || '
    'style="background:#afa;" | N || C || C || C | style="background:#afa;" | N || '
    'style="background:#faa;" | o',
    '! 8 | style="background:#faa;" | o || style="background:#faa;" | o | C || C || C || C || '
    'style="background:#afa;" | N || C || C | style="background:#faa;" | o || '
    'style="background:#afa;" | N',
    '! 9 | style="background:#faa;" | o || style="background:#faa;" | o | C || C || C || C || '
    'C || style="background:#afa;" | N || C | style="background:#faa;" | o || '
    'style="background:#faa;" | o',
]
# The header row: "! 2 !! 3 !! 4 !! 5 !! 6 !! 7 !! 8 !! 9 !! 10 !! 11 !! 12"
WIKI_001_HEADER = "! 2 !! 3 !! 4 !! 5 !! 6 !! 7 !! 8 !! 9 !! 10 !! 11 !! 12"
WIKI_CELL = {"o": Outcome.OUT, "C": Outcome.CHANCE, "N": Outcome.NICK}


def parse_wiki_001() -> dict[int, dict[int, Outcome]]:
    columns = [int(c) for c in WIKI_001_HEADER.lstrip("!").split("!!")]
    table = {}
    for row in WIKI_001_ROWS:
        head, _, body = row.partition("|")
        body = re.sub(r'style="[^"]*"\s*\|', "", body)
        cells = [c.strip() for c in re.split(r"\|\|?", body) if c.strip()]
        assert len(cells) == len(columns), row
        table[int(head.lstrip("! ").strip())] = {
            t: WIKI_CELL[c] for t, c in zip(columns, cells, strict=True)
        }
    return table


# -- 003_dc22ab35b624c555.txt: the club rules sheet's table, rows as written -------------
TABLE_003 = """\
| If the Main roll is: | 5 | 6 | 7 | 8 | 9 |
| Wins if the Chance is : | 5 | 6,12 | 7,11 | 8,12 | 9 |
| Loses if the Chance is: | 2, 3, 11, 12 | 2, 3, 11 | 2, 3, 12 | 2, 3, 11 | 2, 3, 11, 12 |
| Rolls again if the Chance is: | 4, 6, 7, 8, 9, 10 | 4, 5, 7, 8, 9, 10 | 4, 5, 6, 8, 9, 10 \
| 4, 5, 6, 7, 9, 10 | 4, 5, 6, 7, 8, 10 |"""

# -- 004_2f159d56134b2317.txt: the rules excerpt's table, rows as written ---------------
TABLE_004 = """\
5 | 5 | 2,3,11,12 | Anything else |
6 | 6,12 | 2,3,11 | |
7 | 7,11 | 2,3,12 | |
8 | 8,12 | 2,3,11 | |
9 | 9 | 2,3,11,12 |"""

# -- 002_695245d1e200f779.txt: the history page's table, exactly as written --------------
# (Chance Point | wins by matching Main or bonus | Loses on) -- a main of 6 loses on 7.
TABLE_002 = """\
5  5 2, 3, 11, 12
6  6, 12 2, 3, 7, 11
7  7, 11 2, 3, 12
8 8, 12 2, 3, 11
9  9 2, 3, 11, 12"""


def _numbers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\d+", text)}


def parse_003() -> dict[int, dict[str, set[int]]]:
    lines = TABLE_003.split("\n")
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    mains = [int(m) for m in rows[0][1:]]
    return {
        m: {
            "nicks": _numbers(rows[1][i + 1]),
            "outs": _numbers(rows[2][i + 1]),
            "chances": _numbers(rows[3][i + 1]),
        }
        for i, m in enumerate(mains)
    }


def parse_004() -> dict[int, dict[str, set[int]]]:
    table = {}
    for line in TABLE_004.split("\n"):
        main, nicks, outs = (c.strip() for c in line.split("|")[:3])
        table[int(main)] = {"nicks": _numbers(nicks), "outs": _numbers(outs)}
    return table


def parse_002() -> dict[int, dict[str, set[int]]]:
    table = {}
    for line in TABLE_002.split("\n"):
        main, rest = line.split(maxsplit=1)
        # The winning numbers end where the losing list (always from 2, 3) begins.
        wins, _, loses = rest.partition(" 2, 3")
        table[int(main)] = {"nicks": _numbers(wins), "outs": _numbers("2, 3" + loses)}
    return table


def as_outcomes(rows: dict[int, dict[str, set[int]]]) -> dict[int, dict[int, Outcome]]:
    return {
        main: {
            t: Outcome.NICK
            if t in row["nicks"]
            else Outcome.OUT
            if t in row["outs"]
            else Outcome.CHANCE
            for t in TOTALS
        }
        for main, row in rows.items()
    }


MAJORITY = as_outcomes(parse_004())
HISTORY = as_outcomes(parse_002())

# Which text's table each built-in rule set plays. A new built-in must be added here.
EXPECTED_TABLE = {
    "english": MAJORITY,
    "french": MAJORITY,
    "club": MAJORITY,
    "hard-core": MAJORITY,
    "three-wins": MAJORITY,
    "history": HISTORY,
}


def test_every_builtin_has_an_expected_table() -> None:
    assert set(BUILTIN) == set(EXPECTED_TABLE)


def test_the_majority_texts_agree_with_each_other() -> None:
    assert parse_wiki_001() == MAJORITY
    assert as_outcomes(parse_003()) == MAJORITY
    assert as_outcomes(TEXT_000) == MAJORITY


def test_the_club_sheet_rows_partition_the_totals() -> None:
    for main, row in parse_003().items():
        assert row["nicks"] | row["outs"] | row["chances"] == set(TOTALS), main
        assert not (row["nicks"] & row["outs"]) and not (row["chances"] & row["outs"]), main
        assert {t for t, o in MAJORITY[main].items() if o is Outcome.CHANCE} == row["chances"]


def test_the_history_page_differs_from_the_majority_only_at_main_6_total_7() -> None:
    differ = [(m, t) for m in MAINS for t in TOTALS if HISTORY[m][t] != MAJORITY[m][t]]
    assert differ == [(6, 7)]
    assert HISTORY[6][7] is Outcome.OUT and MAJORITY[6][7] is Outcome.CHANCE


CELLS = [
    pytest.param(name, main, total, id=f"{name}-main{main}-total{total}")
    for name in sorted(EXPECTED_TABLE)
    for main in MAINS
    for total in TOTALS
]


@pytest.mark.parametrize(("name", "main", "total"), CELLS)
def test_outcome_cell(name: str, main: int, total: int) -> None:
    assert BUILTIN[name].outcome(main, total) is EXPECTED_TABLE[name][main][total]


# -- 001: Hoyle's 1790 "Relative odds for auxiliary bets" (rows main, columns chance) ----
HOYLE_COLUMNS = (4, 5, 6, 7, 8, 9, 10)
HOYLE_ROWS = {
    5: "4/3 |— |4/5 |2/3 |4/5 |1/1 |4/3",
    6: "5/3 |5/4 |— |5/6 |1/1 |5/4 |5/3",
    7: "2/1 |3/2 |6/5 |— |6/5 |3/2 |2/1",
    8: "5/3 |5/4 |1/1 |5/6 |— |5/4 |5/3",
    9: "4/3 |1/1 |4/5 |2/3 |4/5 |— |4/3",
}
HOYLE = {
    (main, chance): Fraction(cell.strip())
    for main, row in HOYLE_ROWS.items()
    for chance, cell in zip(HOYLE_COLUMNS, row.split("|"), strict=True)
    if cell.strip() != "—"
}


def test_hoyle_table_has_every_off_diagonal_cell() -> None:
    assert len(HOYLE) == 5 * 7 - 5
    assert all((m, m) not in HOYLE for m in MAINS)


@pytest.mark.parametrize(
    ("main", "chance"), [pytest.param(m, c, id=f"main{m}-chance{c}") for m, c in sorted(HOYLE)]
)
def test_hoyle_relative_odds(main: int, chance: int) -> None:
    assert odds.odds_ratio(main, chance) == HOYLE[main, chance]
    assert odds.odds_ratio(main, chance, on_chance=False) == 1 / HOYLE[main, chance]


def test_hoyle_worked_examples_from_001() -> None:
    # "a caster stands to win £15 (3/2 x £10) with a main of 7 and a chance of 5; with the
    # same stake, a main of 5 and a chance of 6, they could win £8 (4/5 x £10)."
    assert odds.odds_ratio(7, 5) * 10 == 15
    assert odds.odds_ratio(5, 6) * 10 == 8


# -- docs/rules.md: the exact figures ----------------------------------------------------
README_P_WIN = {
    5: Fraction(1396, 2835),
    6: Fraction(6961, 14256),
    7: Fraction(244, 495),
    8: Fraction(6961, 14256),
    9: Fraction(1396, 2835),
}
# Disadvantage 1 - 2P in hundredths of a percent: 1.52%, 2.34%, 1.41%.
README_DISADVANTAGE_BP = {5: 152, 6: 234, 7: 141, 8: 234, 9: 152}


@pytest.mark.parametrize("main", MAINS)
def test_readme_p_win_and_disadvantage(main: int) -> None:
    o = odds.main_odds(BUILTIN["english"], main)
    assert o.p_win == README_P_WIN[main]
    assert o.disadvantage == 1 - 2 * README_P_WIN[main]
    assert round(o.disadvantage * 10000) == README_DISADVANTAGE_BP[main]


@pytest.mark.parametrize("name", ["english", "french", "club", "three-wins"])
def test_readme_random_main(name: str) -> None:
    p = odds.random_main_p_win(BUILTIN[name])
    assert p == Fraction(1979, 4032)
    assert 1 - 2 * p == Fraction(37, 2016)
    assert round((1 - 2 * p) * 10000) == 184


def test_odds_table_json_for_english() -> None:
    five = {"p_nick": "1/9", "p_out": "1/6", "p_win": "1396/2835", "disadvantage": "43/2835"}
    six = {"p_nick": "1/6", "p_out": "5/36", "p_win": "6961/14256", "disadvantage": "167/7128"}
    seven = {"p_nick": "2/9", "p_out": "1/9", "p_win": "244/495", "disadvantage": "7/495"}
    assert odds.table(BUILTIN["english"]) == {
        "ruleset": "english",
        "mains": {"5": five, "6": six, "7": seven, "8": six, "9": five},
        "random_main": {"method": "re-tossed", "p_win": "1979/4032", "disadvantage": "37/2016"},
    }


def test_fraction_text_always_has_a_denominator() -> None:
    assert odds.fraction_text(Fraction(0)) == "0/1"
    assert odds.fraction_text(Fraction(1)) == "1/1"
    assert odds.fraction_text(Fraction(6, 4)) == "3/2"


# -- brute force: all 36 ordered pairs, computed here without the engine's odds --------
PAIRS = [(a, b) for a in range(1, 7) for b in range(1, 7)]


def ways(total: int) -> int:
    return sum(1 for a, b in PAIRS if a + b == total)


def brute_p_win(table: dict[int, Outcome], main: int) -> Fraction:
    p = Fraction(0)
    for a, b in PAIRS:
        total = a + b
        if table[total] is Outcome.NICK:
            p += Fraction(1, 36)
        elif table[total] is Outcome.CHANCE:
            # Throws that are neither chance nor main repeat; what counts is which of
            # the two comes first among the throws that decide.
            p += Fraction(1, 36) * Fraction(ways(total), ways(total) + ways(main))
    return p


@pytest.mark.parametrize(
    ("name", "main"), [pytest.param(n, m, id=f"{n}-{m}") for n in sorted(BUILTIN) for m in MAINS]
)
def test_main_odds_match_brute_force(name: str, main: int) -> None:
    table = EXPECTED_TABLE[name][main]
    o = odds.main_odds(BUILTIN[name], main)
    assert o.p_win == brute_p_win(table, main)
    assert o.p_nick == Fraction(sum(1 for a, b in PAIRS if table[a + b] is Outcome.NICK), 36)
    assert o.p_out == Fraction(sum(1 for a, b in PAIRS if table[a + b] is Outcome.OUT), 36)


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_random_main_matches_brute_force(name: str) -> None:
    rules = BUILTIN[name]
    fair = [(a, b) for a, b in PAIRS if 5 <= a + b <= 9]
    total_p = sum(brute_p_win(EXPECTED_TABLE[name][a + b], a + b) for a, b in fair)
    if rules.main_method.value == "first-roll":
        # A preliminary roll outside 5..9 is a loss: every pair counts.
        expected = total_p / len(PAIRS)
    else:
        # Re-tossed until 5..9: only the fair pairs count.
        expected = total_p / len(fair)
    assert odds.random_main_p_win(rules) == expected
