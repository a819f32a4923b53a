"""`hazard fairness`, through click's runner, on SQLite and PostgreSQL: the report as a
table for people, as JSON (the API's), filtered, and its errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

import engine as hz
from ledger.audit import fairness
from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store.eventstore import EventStore
from tests.signing import SIGNER


@pytest.fixture
def played(engine: sa.Engine, database_url: str) -> Iterator[str]:
    """t1, english, on March 1st: cecil throws 7 (a nick), 2 (out), 4 then 11 then 4 (a
    chance won), a cocked throw between. t2, french, on March 2nd: dora throws 6, which
    sets the main, then 6 again, which nicks."""
    day = [1]
    ticks = count()

    def clock() -> str:  # a second a write, on the day
        return f"2026-03-0{day[0]}T12:00:{next(ticks) % 60:02d}.000000Z"

    store = EventStore(engine, clock=clock, signer=SIGNER)
    club = Club(Book(store))
    for name in ("ann", "bob"):
        club.create_player(name, "setter")

    def do(table: str, actor: str, command: Any, new: bool = False) -> None:
        club.command(table, actor, lambda state, _f: command(state), new_table=new)

    for table, rules in (("t1", "english"), ("t2", "french")):
        do(table, "croupier:cecil", lambda s, r=rules: hz.open_table(hz.BUILTIN[r]), new=True)
        do(table, "croupier:cecil", lambda s: hz.seat(s, "ann"))
        do(table, "croupier:cecil", lambda s: hz.seat(s, "bob"))
        do(table, "croupier:cecil", lambda s: hz.cast_for_caster(s, "ann", 1))
        do(table, "croupier:cecil", lambda s: hz.cast_for_caster(s, "bob", 2))
    for dice in ((3, 4), (1, 1)):
        do("t1", "croupier:cecil", lambda s: hz.call_main(s, 7))
        do("t1", "croupier:cecil", lambda s, d=dice: hz.throw(s, *d))
    do("t1", "croupier:cecil", lambda s: hz.call_main(s, 7))
    do("t1", "croupier:cecil", lambda s: hz.void_throw(s, "cocked", 0))
    for dice in ((2, 2), (5, 6), (1, 3)):
        do("t1", "croupier:cecil", lambda s, d=dice: hz.throw(s, *d))
    day[0] = 2
    for dice in ((2, 4), (5, 1)):
        do("t2", "croupier:dora", lambda s, d=dice: hz.throw(s, *d))
    store.close()
    yield database_url


def hazard(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["fairness", *args, "--database-url", url])


def test_the_report_as_a_table(played: str) -> None:
    result = hazard(played, "--table", "t1")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        "Dice-fairness report: table t1, every croupier, from the first event, until now"
    )
    assert lines[1] == "5 throws (void throws do not count); flagged below p = 0.01"
    assert lines[3] == "total  observed  expected  exact"
    assert lines[4] == "    2         1      0.14  1/36"  # 5/36 of a throw expected
    assert lines[6] == "    4         2      0.42  1/12"
    assert lines[9] == "    7         1      0.83  1/6"
    assert lines[13] == "   11         1      0.28  1/18"
    assert lines[15].startswith("totals: chi-square ")
    assert lines[15].endswith(
        "too few throws to trust it (a cell expects 0.14, fewer than 5): not flagged"
    )
    assert lines[17] == "Ordered pairs, die 1 down and die 2 across (0.14 expected in each):"
    assert lines[18] == "          1     2     3     4     5     6"
    assert lines[19] == "    1     1     0     1     0     0     0"  # (1, 1) and (1, 3)
    assert lines[20] == "    2     0     1     0     0     0     0"  # (2, 2)
    assert lines[21] == "    3     0     0     0     1     0     0"  # (3, 4)
    assert lines[23] == "    5     0     0     0     0     0     1"  # (5, 6)
    assert lines[27] == (
        "Rule set english (tables t1): the caster's wins per main against the exact odds "
        "(exact binomial, two-sided)"
    )
    seven = next(line for line in lines if line.startswith("   7 "))
    assert seven.split()[:6] == ["7", "3", "2", "1", "244/495", "="]
    assert lines[-1] == "Flags: none"


def test_json_is_the_apis_report(played: str, engine: sa.Engine) -> None:
    result = hazard(played, "--json", "--croupier", "dora", "--alpha", "0.05")
    assert result.exit_code == 0, result.output
    with engine.connect() as conn:
        expected = fairness.report(conn, fairness.Scope(croupier="dora"), 0.05)
    assert json.loads(result.output) == expected
    assert expected["throws"] == 2 and expected["alpha"] == 0.05
    [french] = expected["rulesets"]
    assert french["ruleset"] == "french" and french["tables"] == ["t2"]
    assert [(m["main"], m["wins"]) for m in french["mains"] if m["rounds"]] == [(6, 1)]


def test_filters_by_time(played: str) -> None:
    first = json.loads(hazard(played, "--json", "--until", "2026-03-02").output)
    assert first["throws"] == 5 and first["scope"]["until"] == "2026-03-02T00:00:00.000000Z"
    second = json.loads(hazard(played, "--json", "--since", "2026-03-02T00:00+00:00").output)
    assert second["throws"] == 2
    assert [e["ruleset"] for e in second["rulesets"]] == ["french"]


def test_an_empty_range_says_so(played: str) -> None:
    result = hazard(played, "--since", "2027-01-01")
    assert result.exit_code == 0, result.output
    assert "0 throws (void throws do not count)" in result.output
    assert "No throws in this range: nothing to test." in result.output
    assert "No rounds decided after a main in this range." in result.output
    assert result.output.splitlines()[-1] == "Flags: none"


def test_the_clubs_level_is_the_default(played: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAZARD_FAIRNESS_LEVEL", "0.95")
    result = hazard(played, "--table", "t1")
    assert result.exit_code == 0, result.output
    assert "flagged below p = 0.05" in result.output
    assert "flagged below p = 0.2" in hazard(played, "--table", "t1", "--alpha", "0.2").output


def test_a_loaded_die_is_flagged(played: str, engine: sa.Engine) -> None:
    """Three hundred throws of (6, 6) on t3, by a croupier of their own."""
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))

    def do(command: Any, new: bool = False) -> None:
        club.command("t3", "croupier:mallory", lambda state, _f: command(state), new_table=new)

    do(lambda s: hz.open_table(hz.BUILTIN["french"]), new=True)
    for step in (
        lambda s: hz.seat(s, "ann"),
        lambda s: hz.seat(s, "bob"),
        lambda s: hz.cast_for_caster(s, "ann", 1),
        lambda s: hz.cast_for_caster(s, "bob", 2),
    ):
        do(step)
    for _ in range(200):  # 12 is no main to a roll: the roll is thrown again
        do(lambda s: hz.throw(s, 6, 6))
    store.close()
    result = hazard(played, "--croupier", "mallory")
    assert result.exit_code == 0, result.output
    assert "200 throws" in result.output
    assert "FLAGGED (below 0.01)" in result.output
    said = result.output.splitlines()
    # The chi-square tests of totals and pairs, and the serial test of t3's throws and of
    # mallory's (the same 200 twelves: each the one before, correlation 1); the runs
    # test has nothing below 7 to set against the twelves, so no p-value.
    assert said[said.index("Flags: 4") + 1].startswith("  totals: ")
    assert "  table t3: serial correlation 1.000, p = 0, Holm-adjusted 0 < 0.01" in said
    assert "  croupier mallory: serial correlation 1.000, p = 0, Holm-adjusted 0 < 0.01" in said
    assert any(
        line.startswith("Order of the throws: 2 tests, chance alone flags 0.02 of them at 0.01")
        for line in said
    )
    t3 = next(line for line in said if line.startswith("table t3: 200 throws"))
    assert "runs 200 above, 0 below: no test" in t3
    assert "serial r 1.000, p 0 (normal), Holm 0 FLAGGED" in t3


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--table", "nope"], "there is no table 'nope'"),
        (["--since", "last tuesday"], "is not an ISO 8601 date"),
        (["--since", "2026-03-02", "--until", "2026-03-01"], "is not after --since"),
        (["--alpha", "0"], "0<x<1"),
        (["--alpha", "1.5"], "0<x<1"),
    ],
)
def test_bad_options_are_clear_errors(played: str, args: list[str], says: str) -> None:
    result = hazard(played, *args)
    assert result.exit_code != 0
    assert says in result.output
    assert "Traceback" not in result.output
