"""The dice-fairness report's counts of the whole club, kept beside the events
(ledger.books.dicetallies, migration 0017), on SQLite and PostgreSQL: the club's report
from them is the report counted from the events and the rounds, after any play
(corrections and voids included), after a rebuild and after the migration's backfill;
and `hazard verify --deep` names a count edited behind the ledger's back."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from itertools import count
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine as hz
from engine.rules import MainMethod
from engine.state import Phase
from ledger.audit import fairness
from ledger.books import deep, dicecounts, dicetallies, projections
from ledger.books.book import Book
from ledger.service import AlreadyExists, Club, table_stream
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.schema import dice_counts, main_counts, main_tables
from ledger.store.schema import events as events_table
from ledger.store.vocabulary import Deposited
from tests.ledger.exportkit import play_disputes
from tests.signing import SIGNER

EARLIEST = "0000-01-01T00:00:00.000000Z"
"""Before any time stored: a report `since` it covers the whole club, counted from the
events and the rounds as a report held to a time range is."""

Dice = tuple[int, int]


@pytest.fixture
def club(engine: sa.Engine) -> Iterator[Club]:
    store = EventStore(engine, signer=SIGNER)
    yield Club(Book(store))
    store.close()


def _do(club: Club, table: str, command: Any, *args: Any, new: bool = False) -> None:
    club.command(table, "croupier:cecil", lambda state, _f: command(state, *args), new_table=new)


def _open(club: Club, table: str, ruleset: str) -> None:
    _do(club, table, lambda s: hz.open_table(hz.BUILTIN[ruleset]), new=True)
    _do(club, table, hz.seat, "ann")
    _do(club, table, hz.seat, "bob")
    _do(club, table, hz.cast_for_caster, "ann", 1)
    _do(club, table, hz.cast_for_caster, "bob", 2)


def _throw(club: Club, table: str, dice: Sequence[Dice], main: int = 7) -> None:
    """Throw `dice` at `table`, calling `main` whenever the rule set has a main called
    and a round waits for it."""
    for die1, die2 in dice:
        state = club.state(table)
        if state.phase is Phase.AWAITING_MAIN and state.rules.main_method is MainMethod.CALLED:
            _do(club, table, hz.call_main, main)
        _do(club, table, hz.throw, die1, die2)


def _players(club: Club) -> None:
    """ann, bob and cat, and the setter, funded."""
    club.account_command(hz.SETTER, Deposited, 100_000, "setter")
    for name in ("ann", "bob", "cat"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")


def _evening(club: Club) -> None:
    """Three rule sets at four tables: rounds won, lost and abandoned, a throw voided as
    cocked, a round voided by a dispute and a throw corrected by one (t3)."""
    _players(club)
    play_disputes(club)  # t3, english: a round voided, a throw corrected from 4+4 to 4+5
    _open(club, "t1", "english")
    _throw(club, "t1", [(3, 4), (1, 1), (2, 2), (5, 6), (1, 3), (6, 6)])
    _do(club, "t1", hz.call_main, 7)
    _do(club, "t1", hz.void_throw, "cocked", 0)
    _throw(club, "t1", [(2, 3), (4, 3)])
    _open(club, "t2", "french")
    _throw(club, "t2", [(3, 3), (1, 2), (4, 4), (2, 4), (5, 5), (6, 5)])
    _do(club, "t2", hz.leave, club.state("t2").caster)  # the caster's round: abandoned
    _open(club, "t4", "history")
    _throw(club, "t4", [(6, 6), (2, 3), (3, 2), (5, 4)])  # no main; main 5, nicked


def _reports(engine: sa.Engine) -> tuple[dict[str, Any], dict[str, Any]]:
    """The club's report from the kept counts, and the same counted from the events and
    the rounds (a range from before the first event), the scopes left out."""
    with engine.connect() as conn:
        kept = fairness.report(conn, fairness.Scope())
        counted = fairness.report(conn, fairness.Scope(since=EARLIEST))
    kept.pop("scope"), counted.pop("scope")
    # The order of the throws is tested only when the report is held to something (it
    # reads a row a throw): left out of the comparison, with its flags.
    for report in (kept, counted):
        report.pop("order"), report.pop("order_note")
        report["flags"] = [f for f in report["flags"] if not f.startswith(("table ", "croupier "))]
    return kept, counted


def _counted(engine: sa.Engine) -> dict[str, Any]:
    """What the kept counts must hold, counted from the events and the rounds."""
    everything = dicecounts.Within()
    with engine.connect() as conn:
        pairs = dicecounts.pair_counts(conn, everything)
        rounds = dicecounts.round_counts(conn, everything)
        rules = dicecounts.opening_rules(conn, sorted({s for s, _, _ in rounds}))
    mains: dict[tuple[str, int, bool], int] = {}
    for (stream, main, won), n in rounds.items():
        key = (dicetallies.rules_key(rules[stream]), main, won)
        mains[key] = mains.get(key, 0) + n
    tables = {stream: dicetallies.rules_key(rules[stream]) for stream, _, _ in rounds}
    return {"pairs": dict(pairs), "mains": mains, "tables": tables}


def _kept(engine: sa.Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        pairs = {(r.die1, r.die2): r.throws for r in conn.execute(sa.select(dice_counts))}
        mains = {
            (r.rules, r.main, bool(r.caster_won)): r.rounds
            for r in conn.execute(sa.select(main_counts))
        }
        tables = {r.stream: r.rules for r in conn.execute(sa.select(main_tables))}
    return {"pairs": pairs, "mains": mains, "tables": tables}


def test_the_clubs_report_from_the_kept_counts_is_the_report_counted(club: Club) -> None:
    _evening(club)
    engine = club.store.engine
    kept, counted = _reports(engine)
    assert kept == counted
    assert _kept(engine) == _counted(engine)
    # What the evening played is in it: t1's eight throws, t2's six, t4's four and t3's
    # four, of which the 4+4 counts as the 4+5 the correction says; three rule sets.
    assert kept["throws"] == 8 + 6 + 4 + 4
    pairs = {(c["die1"], c["die2"]): c["observed"] for c in kept["pairs"]["cells"]}
    assert (pairs[4, 4], pairs[4, 5]) == (1, 1)  # t2's 4+4 stays; t3's is moved
    assert [r["ruleset"] for r in kept["rulesets"]] == ["english", "french", "history"]
    english = kept["rulesets"][0]
    assert english["tables"] == ["t1", "t3"]


def test_a_rebuild_writes_the_counts_the_appends_wrote(club: Club) -> None:
    _evening(club)
    engine = club.store.engine
    before = _kept(engine)
    projections.rebuild(club.store)
    assert _kept(engine) == before
    assert list(deep.differences(club.store)) == []


def test_the_migration_counts_what_the_appends_counted(club: Club) -> None:
    """A database played before migration 0017 is counted by it as the write path
    counts: downgraded (the counts dropped) and upgraded again, the same rows."""
    _evening(club)
    engine = club.store.engine
    before = _kept(engine)
    assert before["pairs"] and before["mains"] and before["tables"]
    with db.serialised(engine, db.UPGRADE_LOCK) as conn:
        from alembic import command

        command.downgrade(db._alembic_config(conn), "0016")
    db.upgrade(engine)
    assert _kept(engine) == before
    kept, counted = _reports(engine)
    assert kept == counted


def test_a_throw_count_edited_is_named_by_the_deep_check(club: Club) -> None:
    _evening(club)
    d = dice_counts.c
    with club.store.engine.begin() as conn:
        edit = dice_counts.update().where(d.die1 == 3, d.die2 == 4).values(throws=d.throws + 5)
        assert conn.execute(edit).rowcount == 1
    [difference] = list(deep.differences(club.store))
    assert (difference.table, difference.key, difference.column) == (
        "dice_counts",
        (3, 4),
        "throws",
    )
    assert difference.stored == difference.expected + 5
    assert str(difference).startswith("dice_counts: dice 3 and 4: throws: stored ")


def test_a_table_taken_off_the_list_is_named_by_the_deep_check(club: Club) -> None:
    _evening(club)
    with club.store.engine.begin() as conn:
        gone = main_tables.delete().where(main_tables.c.stream == "table:t2")
        assert conn.execute(gone).rowcount == 1
    [difference] = list(deep.differences(club.store))
    assert (difference.table, difference.key, difference.stored) == (
        "main_tables",
        ("table:t2",),
        None,
    )


def test_a_main_count_edited_is_named_by_the_deep_check(club: Club) -> None:
    _evening(club)
    engine = club.store.engine
    with engine.begin() as conn:
        conn.execute(main_counts.update().values(rounds=main_counts.c.rounds * 2))
    differences = list(deep.differences(club.store))
    assert [d.table for d in differences] == ["main_counts"]
    assert differences[0].column == "rounds"
    assert differences[0].rows == len(_kept(engine)["mains"])
    assert differences[0].stored == 2 * differences[0].expected


_tables = count(1)
RULESETS = ["english", "french", "history", "three-wins"]
a_die = st.integers(1, 6)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    played=st.lists(
        st.tuples(st.sampled_from(RULESETS), st.lists(st.tuples(a_die, a_die), max_size=12)),
        min_size=1,
        max_size=3,
    ),
    leave=st.booleans(),
)
def test_after_any_play_the_kept_counts_are_what_the_events_count(
    engine: sa.Engine, played: list[tuple[str, list[Dice]]], leave: bool
) -> None:
    """Whatever is thrown at tables of whatever rule set (each example adds its tables
    to the same club), and whether the last caster leaves mid-round: the counts kept
    are the counts of the events and the rounds, and the club's report is the same."""
    store = EventStore(engine, signer=SIGNER)
    try:
        club = Club(Book(store))
        with contextlib.suppress(AlreadyExists):  # an earlier example's
            _players(club)
        for ruleset, dice in played:
            table = f"h{next(_tables)}"
            _open(club, table, ruleset)
            _throw(club, table, dice, main=5 + len(dice) % 5)
        if leave and club.state(table).caster is not None:
            _do(club, table, hz.leave, club.state(table).caster)
        assert _kept(engine) == _counted(engine)
        kept, counted = _reports(engine)
        assert kept == counted
    finally:
        store.close()


def test_a_rule_set_s_digest_kept_is_the_digest_computed_afresh() -> None:
    """`rules_key` keeps the digests of the rule sets it was asked about: each answer,
    the first and every later, is the digest computed afresh, for every built-in rule
    set, an equal copy of one (a different object), and a rule set changed from one;
    and past the digests it keeps, it computes them again."""
    from dataclasses import replace

    from engine import rulesets

    sets = [*rulesets.BUILTIN.values()]
    sets += [replace(sets[0]), replace(sets[0], odds_multiple=sets[0].odds_multiple + 1)]
    for _ in range(3):
        for rules in sets:
            assert dicetallies.rules_key(rules) == dicetallies.digest_of(rules)
    assert dicetallies.rules_key(sets[-1]) != dicetallies.rules_key(sets[0])
    many = [replace(sets[0], name=f"set {n}") for n in range(dicetallies.KEYS_HELD + 3)]
    for rules in many + many:
        assert dicetallies.rules_key(rules) == dicetallies.digest_of(rules)


def test_the_order_tests_read_a_corrected_throw_as_the_dice_showed(club: Club) -> None:
    _evening(club)
    e = events_table
    with club.store.engine.connect() as conn:
        ordered = dicecounts.throws_in_order(conn, dicecounts.Within(stream=table_stream("t3")))
        rows = conn.execute(
            sa.select(e.c.version, e.c.payload)
            .where(e.c.stream == table_stream("t3"), e.c.type == "DiceThrown")
            .order_by(e.c.version)
        )
        recorded = [(version, sum(json.loads(payload).values())) for version, payload in rows]
    assert [t.version for t in ordered] == [version for version, _ in recorded]
    # Every throw as recorded but one: the 4+4 the dispute corrected to 4+5.
    changed = [(r, t.total) for (_, r), t in zip(recorded, ordered, strict=True) if r != t.total]
    assert changed == [(8, 9)]
    assert {t.actor for t in ordered} == {"croupier:cecil"}
