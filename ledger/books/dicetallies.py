"""The dice-fairness report's counts of the whole club, kept beside the events.

The report of the whole club (ledger.audit.fairness, every table, every croupier, all
time) counted every throw and every decided round the club had played, and read every
table's opening for its rule set: a page that grew with the log (bench.console). These
read models hold what that report counts, written by the same fold that writes the
rounds (ledger.books.tableviews.apply), in the append's transaction, and rebuilt with
the others (ledger.books.projections.rebuild; `hazard verify --deep` compares them):

- `dice_counts`: every valid throw by its ordered pair (die 1, die 2), as the dice
  showed it: a throw a dispute corrected counts as the dice the correction says
  (the throw stays in the log as recorded), as ledger.books.dicecounts counts it;
- `main_counts`: every round decided after a main was set, by the digest of its
  table's rule set (`rules_key`: two tables play the same set when every rule is the
  same, whatever it is called), its main, and whether the caster won;
- `main_tables`: each table with such a round, and its rule set's digest: the tables
  the report names under each rule set.

A row whose count falls to zero is deleted, so a row is there exactly when its count
is not (a migration's backfill writes the same rows). A report held to a table, a
croupier or a time range counts from the events and the rounds as before: it reads
what it covers (ledger.books.dicecounts).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from engine import events as ev
from engine.rules import RuleSet
from engine.state import RoundResult
from ledger.store import codec, db
from ledger.store.schema import dice_counts, main_counts, main_tables
from ledger.store.schema import events as events_table

Pair = tuple[int, int]
Main = tuple[str, int, bool]
"""(the rule set's digest, the main, whether the caster won)."""


def rules_key(rules: RuleSet) -> str:
    """The digest of a rule set's every rule: SHA-256 of its canonical mapping, in hex.
    Migration 0017 computes it the same way for the rounds played before it.

    Kept for the last rule sets asked about, by the object: every round a table
    decides asks for its table's, which is one object from the table's opening on
    (a table's states share it), and hashing it again was a thirtieth of a replay's
    writes. The object is kept with its digest, so that its id is not reused while
    the digest is held; a RuleSet is frozen, so its digest never changes."""
    held = _KEYS.get(id(rules))
    if held is not None and held[0] is rules:
        return held[1]
    key = digest_of(rules)
    if len(_KEYS) >= KEYS_HELD:
        _KEYS.clear()
    _KEYS[id(rules)] = (rules, key)
    return key


def digest_of(rules: RuleSet) -> str:
    """`rules_key` computed afresh, not kept."""
    return hashlib.sha256(codec.canonical(rules.to_mapping())).hexdigest()


KEYS_HELD = 256
"""Rule sets whose digests `rules_key` keeps: a replay's tables in play at once, or
more; past it, they are dropped and computed again."""
_KEYS: dict[int, tuple[RuleSet, str]] = {}


def decided(round_row: dict[str, Any] | None) -> tuple[int, bool] | None:
    """What a `rounds` row adds to the counts: (main, caster won) for a round decided
    after a main was set, None for any other (open, abandoned, or decided before a
    main, as a first-roll main's no-main is not)."""
    if round_row is None or round_row["main"] is None or round_row["result"] is None:
        return None
    won = RoundResult(round_row["result"]).caster_won
    return None if won is None else (int(round_row["main"]), won)


@dataclass
class Tally:
    """What some appends change: counts to add (or take away), and tables to list."""

    pairs: Counter[Pair] = field(default_factory=Counter)
    mains: Counter[Main] = field(default_factory=Counter)
    tables: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.tables) or any(self.pairs.values()) or any(self.mains.values())

    def add(self, other: Tally) -> None:
        self.pairs.update(other.pairs)
        self.mains.update(other.mains)
        for stream, rules in other.tables.items():
            self.tables.setdefault(stream, rules)


def throws(conn: sa.Connection, stream: str, steps: Sequence[Any], into: Tally) -> None:
    """Count the throws among `steps` (tableviews.Step) of the table `stream`, and move
    each throw a dispute's resolution corrects from the dice recorded to the dice shown."""
    for step in steps:
        event = step.event
        if isinstance(event, ev.DiceThrown):
            into.pairs[event.die1, event.die2] += 1
        elif (
            isinstance(event, ev.DisputeResolved)
            and event.resolution == "corrected"
            and event.throw is not None
            and event.die1 is not None
            and event.die2 is not None
        ):
            recorded = _recorded(conn, stream, event.throw, steps)
            if recorded is not None:
                into.pairs[recorded] -= 1
                into.pairs[event.die1, event.die2] += 1


def _recorded(conn: sa.Connection, stream: str, version: int, steps: Sequence[Any]) -> Pair | None:
    """The dice recorded by the table's event `version`, if it is a throw: among
    `steps`, or else in the log (one probe of the (stream, version) key)."""
    for step in steps:
        if step.row.version == version:
            event = step.event
            return (event.die1, event.die2) if isinstance(event, ev.DiceThrown) else None
    e = events_table.c
    row = conn.execute(
        sa.select(e.type, e.schema_version, e.payload).where(
            e.stream == stream, e.version == version
        )
    ).first()
    if row is None or row.type != "DiceThrown":
        return None
    thrown = codec.decode(row.type, row.schema_version, version, json.loads(row.payload))
    assert isinstance(thrown, ev.DiceThrown)
    return thrown.die1, thrown.die2


def rounds(
    stream: str,
    rules: RuleSet | None,
    changed: Sequence[tuple[tuple[int, bool] | None, tuple[int, bool] | None]],
    into: Tally,
) -> None:
    """Count the rounds of the table `stream`, playing `rules`, that the appends
    changed: each as it counted before them and as it counts after (`decided`)."""
    for was, now in changed:
        if was == now:
            continue
        assert rules is not None, f"{stream} has rounds and no rule set"
        key = rules_key(rules)
        if was is not None:
            into.mains[(key, *was)] -= 1
        if now is not None:
            into.mains[(key, *now)] += 1
            into.tables.setdefault(stream, key)


# -- writing ------------------------------------------------------------------------------

ADD_PAIR = (
    "INSERT INTO dice_counts (die1, die2, throws) VALUES (?, ?, ?) ON CONFLICT (die1, die2) "
    "DO UPDATE SET throws = dice_counts.throws + excluded.throws"
)
ADD_MAIN = (
    "INSERT INTO main_counts (rules, main, caster_won, rounds) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (rules, main, caster_won) DO UPDATE SET rounds = main_counts.rounds + "
    "excluded.rounds"
)
ADD_TABLE = "INSERT INTO main_tables (stream, rules) VALUES (?, ?) ON CONFLICT (stream) DO NOTHING"
"""An upsert each, the same text on SQLite and PostgreSQL: a count is moved on where it
stands, so two appends never read and write it apart (they are serialised anyway)."""


def write(conn: sa.Connection, tally: Tally) -> None:
    """Add `tally` to the stored counts, in `conn`'s transaction."""
    fewer = False
    for (die1, die2), n in sorted(tally.pairs.items()):
        if n:
            db.execute(conn, ADD_PAIR, (die1, die2, n))
            fewer = fewer or n < 0
    for (rules, main, won), n in sorted(tally.mains.items()):
        if n:
            db.execute(conn, ADD_MAIN, (rules, main, won, n))
            fewer = fewer or n < 0
    for stream, rules in sorted(tally.tables.items()):
        db.execute(conn, ADD_TABLE, (stream, rules))
    if fewer:  # a correction or a round changed after it was counted: rare
        conn.execute(dice_counts.delete().where(dice_counts.c.throws == 0))
        conn.execute(main_counts.delete().where(main_counts.c.rounds == 0))


def clear(conn: sa.Connection) -> None:
    """Empty the counts, before a rebuild."""
    for table in (dice_counts, main_counts, main_tables):
        conn.execute(table.delete())


# -- reading ------------------------------------------------------------------------------


def pairs(conn: sa.Connection) -> Counter[Pair]:
    """The club's valid throws by ordered pair, as the dice showed them (36 rows at most)."""
    d = dice_counts.c
    counts = Counter(
        {(r.die1, r.die2): int(r.throws) for r in conn.execute(sa.select(d.die1, d.die2, d.throws))}
    )
    return +counts


def mains(
    conn: sa.Connection, named: int | None = None
) -> list[tuple[str, list[str], int, Counter[tuple[int, bool]]]]:
    """The club's decided rounds per rule set: its digest, the streams of the tables
    that play it (those with such a round), how many they are, and the rounds by
    (main, caster won). With `named`, at most that many streams a rule set, the newest
    opened first, and the count by one aggregate: what grows with the club is counted
    in SQL, not read. Without, every stream, in order, read through the driver (a row
    each: GET /reports/dice names them all)."""
    m = main_counts.c
    counts: dict[str, Counter[tuple[int, bool]]] = {}
    for row in conn.execute(sa.select(m.rules, m.main, m.caster_won, m.rounds)):
        if row.rounds > 0:
            counts.setdefault(row.rules, Counter())[row.main, bool(row.caster_won)] = row.rounds
    if named is None:
        tables: dict[str, list[str]] = {}
        for stream, rules in db.fetch(conn, "SELECT stream, rules FROM main_tables"):
            tables.setdefault(rules, []).append(stream)
        return [
            (rules, sorted(tables.get(rules, [])), len(tables.get(rules, [])), n)
            for rules, n in counts.items()
        ]
    t = main_tables.c
    how_many: dict[str, int] = {
        rules: int(n)
        for rules, n in conn.execute(sa.select(t.rules, sa.func.count()).group_by(t.rules))
    }
    return [
        (rules, _newest(conn, rules, named), how_many.get(rules, 0), n)
        for rules, n in counts.items()
    ]


def _newest(conn: sa.Connection, rules: str, limit: int) -> list[str]:
    """The streams of the `limit` tables playing `rules` opened last: along the index of
    the tables' openings (ix_events_table_opened), newest first, each a probe of
    main_tables' key, until `limit` are found."""
    e, t = events_table.c, main_tables.c
    query = (
        sa.select(t.stream)
        .join(events_table, e.stream == t.stream)
        # Written out, not bound: SQLite uses a partial index only for its own clause.
        .where(sa.text("events.type = 'TableOpened'"), t.rules == rules)
        .order_by(e.position.desc())
        .limit(limit)
    )
    return list(conn.execute(query).scalars())
