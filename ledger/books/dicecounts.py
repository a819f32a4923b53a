"""What the dice-fairness report (ledger.audit.fairness) counts, counted by the database:
the throws by their dice, the throws a dispute corrected, the rounds decided after a
main by who won them, and the rule set each table opened under.

Every count is of one table or all (`stream`), one croupier's or anyone's (`actor`, who
recorded the throws: one token's, or with no tag every token's of that role and name,
ledger.store.actors), over a time range of `recorded_at` as stored: `since` inclusive,
`until` exclusive. A throw's time is its own; a round's is its `ended_at`, the time of
the throw that decided it, and its croupier is whoever recorded that throw.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import sqlalchemy as sa

from engine import events as ev
from engine.rules import RuleSet
from engine.state import RoundResult
from ledger.store import codec
from ledger.store.actors import recorded_by
from ledger.store.schema import disputes as disputes_table
from ledger.store.schema import events as events_table
from ledger.store.schema import rounds as rounds_table

DECIDED = tuple(r.value for r in RoundResult if r.caster_won is not None)
"""The results of a round that say who won it: a win or a loss for the caster."""


@dataclass(frozen=True)
class Within:
    """What is counted: one table's stream or all, one actor's throws or anyone's, and
    a time range as recorded_at is stored (since inclusive, until exclusive)."""

    stream: str | None = None
    actor: str | None = None
    since: str | None = None
    until: str | None = None


def pair_counts(conn: sa.Connection, within: Within) -> Counter[tuple[int, int]]:
    """How many valid throws `within` showed each ordered pair (die 1, die 2).

    Counted by the database, grouped by payload: a DiceThrown's payload is its two dice
    in canonical JSON (its version is a column), so one scan answers with at most 36
    rows, however many throws there were."""
    e = events_table
    query = (
        sa.select(e.c.type, e.c.schema_version, e.c.payload, sa.func.count())
        .where(e.c.type == "DiceThrown")
        .group_by(e.c.type, e.c.schema_version, e.c.payload)
    )
    query = _thrown(query, within)
    counts: Counter[tuple[int, int]] = Counter()
    for kind, schema, payload, n in conn.execute(query):
        thrown = codec.decode(kind, schema, 1, json.loads(payload))
        assert isinstance(thrown, ev.DiceThrown)
        counts[thrown.die1, thrown.die2] += n
    for recorded, corrected in corrections(conn, within):
        counts[recorded] -= 1
        counts[corrected] += 1
    return +counts


def corrections(
    conn: sa.Connection, within: Within
) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The throws `within` that a dispute corrected: (dice recorded, dice shown). The
    throw stays as recorded in the log (nothing is edited), but the setter has ruled
    that the dice showed otherwise, and the report is about what the dice showed. A
    throw is counted as it was recorded (its table, croupier and time), whenever it was
    corrected."""
    e, d = events_table, disputes_table
    query = (
        sa.select(e.c.type, e.c.schema_version, e.c.payload, d.c.resolved_die1, d.c.resolved_die2)
        .join(d, sa.and_(d.c.stream == e.c.stream, d.c.resolved_throw == e.c.version))
        .where(d.c.resolution == "corrected", e.c.type == "DiceThrown")
    )
    query = _thrown(query, within)
    found: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for row in conn.execute(query):
        thrown = codec.decode(row.type, row.schema_version, 1, json.loads(row.payload))
        assert isinstance(thrown, ev.DiceThrown)
        found.append(((thrown.die1, thrown.die2), (int(row.resolved_die1), int(row.resolved_die2))))
    return found


class Throw(NamedTuple):
    """One valid throw, where and by whom it was recorded, and the total the dice
    showed (a dispute's correction where there is one)."""

    stream: str
    version: int
    recorded_at: str
    actor: str
    total: int


def throws_in_order(conn: sa.Connection, within: Within) -> list[Throw]:
    """Every valid throw `within`, one row each, in the order recorded: by table
    (stream) and version, which is the order they were thrown there. Reads a row a
    throw, so it is for a table, a croupier or a range (an evening), not the whole
    club's history; the payloads are decoded once each (at most 36 distinct texts)."""
    e, d = events_table, disputes_table
    query = (
        sa.select(
            e.c.stream,
            e.c.version,
            e.c.recorded_at,
            e.c.actor,
            e.c.type,
            e.c.schema_version,
            e.c.payload,
            d.c.resolved_die1,
            d.c.resolved_die2,
        )
        .outerjoin(
            d,
            sa.and_(
                d.c.stream == e.c.stream,
                d.c.resolved_throw == e.c.version,
                d.c.resolution == "corrected",
            ),
        )
        .where(e.c.type == "DiceThrown")
        .order_by(e.c.stream, e.c.version)
    )
    totals: dict[tuple[str, int, str], int] = {}
    found: list[Throw] = []
    for row in conn.execute(_thrown(query, within)):
        if row.resolved_die1 is not None:
            total = int(row.resolved_die1) + int(row.resolved_die2)
        else:
            key = (row.type, row.schema_version, row.payload)
            if key not in totals:
                thrown = codec.decode(row.type, row.schema_version, 1, json.loads(row.payload))
                assert isinstance(thrown, ev.DiceThrown)
                totals[key] = thrown.die1 + thrown.die2
            total = totals[key]
        found.append(Throw(row.stream, row.version, str(row.recorded_at), row.actor, total))
    return found


def _thrown(query: sa.Select[Any], within: Within) -> sa.Select[Any]:
    """`query` of the events, held to the throws `within`."""
    e = events_table
    if within.stream is not None:
        query = query.where(e.c.stream == within.stream)
    if within.actor is not None:
        query = query.where(recorded_by(e.c.actor, within.actor))
    return _between(query, e.c.recorded_at, within)


def round_counts(conn: sa.Connection, within: Within) -> Counter[tuple[str, int, bool]]:
    """How many rounds `within`, decided after a main was set, each table's caster won
    and lost with each main: (stream, main, caster won) -> rounds."""
    r = rounds_table
    query = (
        sa.select(r.c.stream, r.c.main, r.c.result, sa.func.count())
        .where(r.c.main.is_not(None), r.c.result.in_(DECIDED))
        .group_by(r.c.stream, r.c.main, r.c.result)
    )
    if within.stream is not None:
        query = query.where(r.c.stream == within.stream)
    if within.actor is not None:
        # Who recorded the throw that decided the round: its last throw. Not whoever
        # recorded its last event, which may come later (a settlement of that throw's,
        # but also whatever a round's history gains after it, such as a dispute).
        e = events_table
        decider = (
            sa.select(e.c.actor)
            .where(
                e.c.stream == r.c.stream,
                e.c.version.between(r.c.first_version, r.c.last_version),
                e.c.type == "DiceThrown",
            )
            .order_by(e.c.version.desc())
            .limit(1)
            .scalar_subquery()
        )
        query = query.where(recorded_by(decider, within.actor))
    query = _between(query, r.c.ended_at, within)
    counts: Counter[tuple[str, int, bool]] = Counter()
    for stream, main, result, n in conn.execute(query):
        counts[stream, main, bool(RoundResult(result).caster_won)] += n
    return counts


def _between(query: sa.Select[Any], column: Any, within: Within) -> sa.Select[Any]:
    if within.since is not None:
        query = query.where(column >= within.since)
    if within.until is not None:
        query = query.where(column < within.until)
    return query


def opening_rules(conn: sa.Connection, streams: Sequence[str]) -> dict[str, RuleSet]:
    """Each table's rule set, from the TableOpened at the head of its stream."""
    e = events_table
    found: dict[str, RuleSet] = {}
    for chunk in _chunks(streams, 500):
        rows = conn.execute(
            sa.select(e.c.stream, e.c.type, e.c.schema_version, e.c.payload).where(
                e.c.stream.in_(chunk), e.c.version == 1
            )
        )
        for stream, kind, schema, payload in rows:
            opened = codec.decode(kind, schema, 1, json.loads(payload))
            assert isinstance(opened, ev.TableOpened), stream
            found[stream] = opened.rules
    return found


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def has_events(conn: sa.Connection, stream: str) -> bool:
    """Whether `stream` has any event (a table the report may name)."""
    e = events_table
    found = conn.execute(sa.select(e.c.version).where(e.c.stream == stream).limit(1)).first()
    return found is not None
