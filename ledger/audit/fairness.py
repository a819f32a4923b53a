"""The dice-fairness report: are the dice, and the croupier recording them, fair?

For a table, a croupier or the whole club, over a time range:

- every throw that counted (DiceThrown; a void throw is a ThrowVoided and has no dice),
  with the dice a dispute's correction says it showed where there is one, by its
  total, 2 to 12, and by its ordered pair (die 1, die 2), against the exact 2d6
  distribution (engine.dice), each with Pearson's chi-square statistic, its degrees of
  freedom (10 for the totals, 35 for the pairs) and its p-value;
- the caster's result in every round decided after a main was set, by main and rule
  set, against the exact P(caster wins) for that main (engine.odds, what `hazard
  odds` prints), with the exact two-sided binomial test's p-value.

A test is flagged when its p-value falls below `alpha`. The chi-square approximation
needs about 5 expected throws in every cell (180 throws, for the 1/36 cells): with
fewer, a test says it has too few (`enough: false`) and is never flagged, whatever its
p-value. The binomial test is exact at any size and needs no such caution.

What is read: for the whole club (every table and croupier, all time), the counts the
books keep beside the events (ledger.books.dicetallies: a few rows, however long the
log), and one table's opening for each rule set in play. Held to a table, a croupier or
a time range, counted by the books (ledger.books.dicecounts): the throws from the event
log, counted in the database by payload (a throw's canonical payload is its two dice,
so there are at most 36 distinct texts); the rounds from the `rounds` read model
(ledger.books.tableviews), counted by table, main and result; each table's rule set
from the TableOpened that opened it. The time range is on `recorded_at`: a throw's
own, and a round's `ended_at`, the time of the throw that decided it; `since`
inclusive, `until` exclusive. A croupier is the actor who recorded the throws,
`croupier:<name>`: every token of that name (and the throws recorded before events
named their token), or `<name>#<tag>`, one token's alone; a round is theirs when they
recorded the throw that decided it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from engine.dice import MAINS, PAIRS, TOTALS, p_pair, p_total
from engine.odds import fraction_text, main_odds
from engine.rules import RuleSet
from ledger.audit.stats import (
    binomial_p,
    chance_flags,
    chi2_sf,
    chi_square,
    holm,
    runs_test,
    serial_test,
)
from ledger.books import dicecounts, dicetallies
from ledger.books.accounts import TABLE_PREFIX
from ledger.service import NotFound, is_name, table_stream
from ledger.store import codec
from ledger.store.actors import Actor

ALPHA = 0.01
"""The default threshold: a p-value below it is flagged. About one fair test in a
hundred is flagged at it by chance alone, and a report makes several tests."""
MIN_EXPECTED = 5.0
"""Fewer expected throws than this in any cell and the chi-square approximation is not
trusted: the test is shown but not flagged."""
CROUPIER = "croupier:"
"""A croupier's actor is this, the name on their token, and its tag (ledger.store.actors)."""

CHI_SQUARE = "chi-square"
BINOMIAL = "exact binomial, two-sided"
RUNS = "runs above and below 7, two-sided"
SERIAL = "serial correlation of consecutive totals, two-sided"
HOLM = "holm"
ORDER_MAX = 200_000
"""The most throws the order tests read, a row each, for one report: an evening's at a
busy club is a few thousand; a range over the whole history is refused with a note
(the counts above are still made)."""
WHOLE_CLUB_ORDER = (
    "not tested for the whole club: the order tests read every throw, one row each; "
    "hold the report to a table, a croupier or a time range"
)


@dataclass(frozen=True)
class Scope:
    """What the report covers: one table (a name) or all, one croupier (the name on
    their token, or `name#tag` for one token of that name) or all, and a time range as
    recorded_at is stored, since inclusive, until exclusive."""

    table: str | None = None
    croupier: str | None = None
    since: str | None = None
    until: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "croupier": self.croupier,
            "since": self.since,
            "until": self.until,
        }


def report(
    conn: sa.Connection, scope: Scope, alpha: float = ALPHA, named: int | None = None
) -> dict[str, Any]:
    """The report, as plain JSON-able data. NotFound if the scope names a table that
    does not exist; an empty range is an answer (no throws, no rounds), not an error.
    Each rule set names the tables that play it (`tables`) and counts them
    (`table_count`); with `named`, the whole club's names at most that many a rule
    set, the newest (a page for a person, where the API names every one)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha is a probability between 0 and 1, not {alpha}")
    if scope.table is not None and not (
        is_name(scope.table) and dicecounts.has_events(conn, table_stream(scope.table))
    ):
        raise NotFound(f"there is no table {scope.table!r}")
    within = _within(scope)
    whole = within == dicecounts.Within()  # the whole club: kept counts, a few rows
    pairs = dicetallies.pairs(conn) if whole else dicecounts.pair_counts(conn, within)
    throws = sum(pairs.values())
    totals: Counter[int] = Counter()
    for (die1, die2), n in pairs.items():
        totals[die1 + die2] += n
    by_total = _chi_square_test(
        [{"total": t, "observed": totals[t], "p": fraction_text(p_total(t))} for t in TOTALS],
        [float(p_total(t)) for t in TOTALS],
        throws,
        alpha,
    )
    by_pair = _chi_square_test(
        [
            {"die1": a, "die2": b, "observed": pairs[a, b], "p": fraction_text(p_pair(a, b))}
            for a, b in PAIRS
        ],
        [float(p_pair(a, b)) for a, b in PAIRS],
        throws,
        alpha,
    )
    mains = _mains(_club_groups(conn, named) if whole else _groups(conn, within), alpha)
    order: dict[str, Any] | None = None
    order_note: str | None = WHOLE_CLUB_ORDER
    if not whole and throws > ORDER_MAX:
        order_note = (
            f"not tested: {throws:,} throws in scope, more than {ORDER_MAX:,} to read one "
            "row each; hold the report to a table, a croupier or a shorter time range"
        )
    elif not whole:
        order, order_note = _order(dicecounts.throws_in_order(conn, within), alpha), None
    return {
        "scope": scope.view(),
        "alpha": alpha,
        "min_expected": MIN_EXPECTED,
        "throws": throws,
        "totals": by_total,
        "pairs": by_pair,
        "rulesets": mains,
        "order": order,
        "order_note": order_note,
        "flags": _flags(by_total, by_pair, mains, alpha) + _order_flags(order, alpha),
    }


# -- the throws ---------------------------------------------------------------------


def _within(scope: Scope) -> dicecounts.Within:
    """What the books count for `scope`: its table's stream, its croupier's actor."""
    return dicecounts.Within(
        stream=None if scope.table is None else table_stream(scope.table),
        actor=None if scope.croupier is None else CROUPIER + scope.croupier,
        since=scope.since,
        until=scope.until,
    )


def _chi_square_test(
    cells: list[dict[str, Any]], probabilities: Sequence[float], n: int, alpha: float
) -> dict[str, Any]:
    """Each cell with its expected count, and the test of observed against expected."""
    expected = [n * p for p in probabilities]
    for cell, e in zip(cells, expected, strict=True):
        cell["expected"] = e
    least = min(expected)
    enough = least >= MIN_EXPECTED
    statistic = p_value = None
    if n:
        statistic = chi_square([c["observed"] for c in cells], expected)
        p_value = chi2_sf(statistic, len(cells) - 1)
    return {
        "test": CHI_SQUARE,
        "cells": cells,
        "statistic": statistic,
        "df": len(cells) - 1,
        "p_value": p_value,
        "least_expected": least,
        "enough": enough,
        "flagged": enough and p_value is not None and p_value < alpha,
    }


# -- the order of the throws --------------------------------------------------------


def _order(throws: list[dicecounts.Throw], alpha: float) -> dict[str, Any]:
    """The runs and serial tests of the totals in the order thrown, per table (in the
    order of its stream) and per croupier (in the order they recorded them, across
    tables), and Holm's adjustment over every one of those tests together: a flag
    names a table or a croupier, so the chance of naming any wrongly is what is held
    at alpha (the family-wise rate), whatever the dependence between tests that share
    throws. The raw p-value and the adjusted are both shown; a test is flagged on the
    adjusted."""
    tables: dict[str, list[int]] = {}
    for throw in throws:  # already by stream and version
        tables.setdefault(throw.stream.removeprefix(TABLE_PREFIX), []).append(throw.total)
    croupiers: dict[str, list[int]] = {}
    for throw in sorted(throws, key=lambda t: (t.recorded_at, t.stream, t.version)):
        croupiers.setdefault(_croupier(throw.actor), []).append(throw.total)
    units = [{"table": name, **_order_tests(totals)} for name, totals in sorted(tables.items())]
    units += [
        {"croupier": name, **_order_tests(totals)} for name, totals in sorted(croupiers.items())
    ]
    tests = [test for unit in units for test in (unit["runs"], unit["serial"])]
    tested = [test for test in tests if test["p_value"] is not None]
    for test, adjusted in zip(tested, holm([t["p_value"] for t in tested]), strict=True):
        test["adjusted_p"] = adjusted
        test["flagged"] = adjusted < alpha
    return {
        "tables": [unit for unit in units if "table" in unit],
        "croupiers": [unit for unit in units if "croupier" in unit],
        "correction": HOLM,
        "tests": len(tested),
        "chance_flags": chance_flags(len(tested), alpha),
        "raw_below_alpha": sum(1 for t in tested if t["p_value"] < alpha),
        "flagged": sum(1 for t in tested if t["flagged"]),
    }


def _croupier(actor: str) -> str:
    """A croupier by their name, whichever token they used; anyone else by role:name."""
    who = Actor.read(actor)
    return who.name if who.role + ":" == CROUPIER else f"{who.role}:{who.name}"


def _order_tests(totals: list[int]) -> dict[str, Any]:
    runs, serial = runs_test(totals), serial_test(totals)
    return {
        "throws": len(totals),
        "runs": {
            "test": RUNS,
            "above": runs.above,
            "below": runs.below,
            "runs": runs.runs,
            "expected_runs": runs.expected_runs,
            "p_value": runs.p_value,
            "exact": runs.exact,
            "adjusted_p": None,
            "flagged": False,
        },
        "serial": {
            "test": SERIAL,
            "statistic": serial.statistic,
            "correlation": serial.correlation,
            "p_value": serial.p_value,
            "exact": serial.exact,
            "adjusted_p": None,
            "flagged": False,
        },
    }


def _order_flags(order: dict[str, Any] | None, alpha: float) -> list[str]:
    if order is None:
        return []
    flags = []
    for unit in order["tables"] + order["croupiers"]:
        who = f"table {unit['table']}" if "table" in unit else f"croupier {unit['croupier']}"
        runs, serial = unit["runs"], unit["serial"]
        if runs["flagged"]:
            flags.append(
                f"{who}: {runs['runs']} runs above and below 7 "
                f"(expected {runs['expected_runs']:.1f}), p = {runs['p_value']:.3g}, "
                f"Holm-adjusted {runs['adjusted_p']:.3g} < {alpha}"
            )
        if serial["flagged"]:
            flags.append(
                f"{who}: serial correlation {serial['correlation']:.3f}, "
                f"p = {serial['p_value']:.3g}, Holm-adjusted {serial['adjusted_p']:.3g} < {alpha}"
            )
    return flags


# -- the rounds ---------------------------------------------------------------------


Group = tuple[RuleSet, Sequence[str], int, Counter[tuple[int, bool]]]
"""A rule set in play, the tables that play it (all, or the newest named), how many
they are, and their rounds by (main, caster won)."""


def _mains(groups: list[Group], alpha: float) -> list[dict[str, Any]]:
    """The caster's wins and losses per main, one entry per rule set in play, each
    with the tables that play it."""
    entries = [
        {
            "ruleset": ruleset.name,
            "tables": list(tables),
            "table_count": count,
            "test": BINOMIAL,
            "mains": [_main_test(ruleset, m, counts, alpha) for m in MAINS],
        }
        for ruleset, tables, count, counts in groups
    ]
    return sorted(entries, key=lambda entry: (entry["ruleset"], entry["tables"]))


def _groups(conn: sa.Connection, within: dicecounts.Within) -> list[Group]:
    """The rounds `within`, counted from the rounds read model, by rule set."""
    tallies = dicecounts.round_counts(conn, within)
    rules = dicecounts.opening_rules(conn, sorted({stream for stream, _, _ in tallies}))
    groups: dict[bytes, tuple[RuleSet, set[str], Counter[tuple[int, bool]]]] = {}
    for (stream, main, won), n in tallies.items():
        ruleset = rules[stream]
        # Two tables play the same rule set when its every rule is the same, whatever
        # it is called: a custom set may share a built-in's name and not its table.
        key = codec.canonical(ruleset.to_mapping())
        _, tables, counts = groups.setdefault(key, (ruleset, set(), Counter()))
        tables.add(stream.removeprefix(TABLE_PREFIX))
        counts[main, won] += n
    return [(kept, sorted(tables), len(tables), counts) for kept, tables, counts in groups.values()]


def _club_groups(conn: sa.Connection, named: int | None) -> list[Group]:
    """Every round the club has decided, by rule set, as the books keep them counted
    (ledger.books.dicetallies): the rule set read from one table's opening; every
    table named, or the newest `named` (in that order)."""
    found = dicetallies.mains(conn, named)
    rules = dicecounts.opening_rules(conn, [streams[0] for _, streams, _, _ in found])
    cut = len(TABLE_PREFIX)
    return [
        (rules[streams[0]], [s[cut:] for s in streams], count, counts)
        for _, streams, count, counts in found
    ]


def _main_test(
    ruleset: RuleSet, main: int, counts: Counter[tuple[int, bool]], alpha: float
) -> dict[str, Any]:
    wins, losses = counts[main, True], counts[main, False]
    rounds = wins + losses
    p_win = main_odds(ruleset, main).p_win
    p_value = binomial_p(wins, rounds, float(p_win)) if rounds else None
    return {
        "main": main,
        "rounds": rounds,
        "wins": wins,
        "losses": losses,
        "p_win": fraction_text(p_win),
        "expected_wins": rounds * float(p_win),
        "p_value": p_value,
        "flagged": p_value is not None and p_value < alpha,
    }


# -- both ---------------------------------------------------------------------------


def _flags(
    totals: dict[str, Any], pairs: dict[str, Any], rulesets: list[dict[str, Any]], alpha: float
) -> list[str]:
    """Each flagged test, in words."""
    flags = [
        f"{what}: chi-square {test['statistic']:.2f} on {test['df']} df, "
        f"p = {test['p_value']:.3g} < {alpha}"
        for what, test in (("totals", totals), ("pairs", pairs))
        if test["flagged"]
    ]
    for entry in rulesets:
        for line in entry["mains"]:
            if line["flagged"]:
                flags.append(
                    f"{entry['ruleset']} main {line['main']}: the caster won {line['wins']} "
                    f"of {line['rounds']} (expected {line['expected_wins']:.1f}), "
                    f"p = {line['p_value']:.3g} < {alpha}"
                )
    return flags


# -- in words -----------------------------------------------------------------------


def lines(report: dict[str, Any]) -> list[str]:
    """The report as `hazard fairness` prints it: a table for people to read."""
    scope, alpha = report["scope"], report["alpha"]
    out = [
        "Dice-fairness report: "
        + ", ".join(
            [
                f"table {scope['table']}" if scope["table"] else "every table",
                f"croupier {scope['croupier']}" if scope["croupier"] else "every croupier",
                f"from {scope['since'] or 'the first event'}",
                f"until {scope['until'] or 'now'}",
            ]
        ),
        f"{report['throws']} throws (void throws do not count); flagged below p = {alpha}",
        "",
    ]
    if not report["throws"]:
        out += ["No throws in this range: nothing to test.", ""]
    else:
        totals, pairs = report["totals"], report["pairs"]
        out.append(f"{'total':>5}  {'observed':>8}  {'expected':>8}  exact")
        out += [
            f"{c['total']:>5}  {c['observed']:>8}  {c['expected']:>8.2f}  {c['p']}"
            for c in totals["cells"]
        ]
        out += [_verdict("totals", totals, alpha), ""]
        each = pairs["cells"][0]["expected"]
        out.append(f"Ordered pairs, die 1 down and die 2 across ({each:.2f} expected in each):")
        out.append("     " + "".join(f"{b:>6}" for b in range(1, 7)))
        for a in range(1, 7):
            row = [c["observed"] for c in pairs["cells"] if c["die1"] == a]
            out.append(f"{a:>5}" + "".join(f"{n:>6}" for n in row))
        out += [_verdict("pairs", pairs, alpha), ""]
    if not report["rulesets"]:
        out += ["No rounds decided after a main in this range.", ""]
    for entry in report["rulesets"]:
        out.append(
            f"Rule set {entry['ruleset']} ({_tables(entry)}): the caster's "
            f"wins per main against the exact odds ({entry['test']})"
        )
        out.append(
            f"{'main':>4}  {'rounds':>6}  {'wins':>6}  {'losses':>6}  {'P(caster wins)':<24}"
            f"  {'expected':>8}  {'p-value':>8}"
        )
        for m in entry["mains"]:
            exact = f"{m['p_win']} = {_fraction_value(m['p_win']):.4f}"
            p_value = "-" if m["p_value"] is None else f"{m['p_value']:.3g}"
            out.append(
                f"{m['main']:>4}  {m['rounds']:>6}  {m['wins']:>6}  {m['losses']:>6}  "
                f"{exact:<24}  {m['expected_wins']:>8.2f}  {p_value:>8}"
                + ("  FLAGGED" if m["flagged"] else "")
            )
        out.append("")
    out += _order_lines(report["order"], report["order_note"], alpha)
    flags = report["flags"]
    out.append(f"Flags: {len(flags)}" if flags else "Flags: none")
    out += [f"  {flag}" for flag in flags]
    return out


def _order_lines(order: dict[str, Any] | None, note: str | None, alpha: float) -> list[str]:
    """The runs and serial tests, a line a table or croupier."""
    if order is None:
        return [f"Order of the throws: {note}.", ""]
    out = [
        f"Order of the throws: {order['tests']} tests, chance alone flags "
        f"{order['chance_flags']:.2f} of them at {alpha}; p-values Holm-adjusted over all "
        f"{order['tests']} (raw below {alpha}: {order['raw_below_alpha']}, "
        f"flagged: {order['flagged']})"
    ]
    for unit in order["tables"] + order["croupiers"]:
        who = f"table {unit['table']}" if "table" in unit else f"croupier {unit['croupier']}"
        runs, serial = unit["runs"], unit["serial"]
        counted = "{} runs".format(runs["runs"])
        moved = "serial r {:.3f}".format(serial["correlation"])
        out.append(
            f"{who}: {unit['throws']} throws; runs {runs['above']} above, {runs['below']} "
            f"below: {_order_p(runs, counted)}; {_order_p(serial, moved)}"
        )
    return [*out, ""]


def _order_p(test: dict[str, Any], said: str) -> str:
    if test["p_value"] is None:
        return "no test"
    how = "exact" if test["exact"] else "normal"
    flag = " FLAGGED" if test["flagged"] else ""
    return f"{said}, p {test['p_value']:.3g} ({how}), Holm {test['adjusted_p']:.3g}{flag}"


def _verdict(what: str, test: dict[str, Any], alpha: float) -> str:
    said = (
        f"{what}: chi-square {test['statistic']:.2f} on {test['df']} df, p = {test['p_value']:.3g}"
    )
    if not test["enough"]:
        return (
            f"{said}; too few throws to trust it (a cell expects {test['least_expected']:.2f}, "
            f"fewer than {MIN_EXPECTED:g}): not flagged"
        )
    return f"{said}  FLAGGED (below {alpha})" if test["flagged"] else f"{said}  ok"


def _tables(entry: dict[str, Any]) -> str:
    """The tables a rule set's entry names: every one, or how many and the newest."""
    named, count = entry["tables"], entry["table_count"]
    if len(named) == count:
        return f"tables {', '.join(named)}"
    return f"{count:,} tables: the newest {', '.join(named)} and {count - len(named):,} more"


def _fraction_value(text: str) -> float:
    numerator, _, denominator = text.partition("/")
    return int(numerator) / int(denominator)
