"""A table's last throws, each with what it did: the dice, the result in the game's
words (a nick, thrown out, the chance set, the chance thrown, ...), every bet it
settled and who was paid what, the caster's losses in a row after it, and whether the
dice passed; and the stakes placed meanwhile, the table's usual sizes.

The engine decides all of it, not this module: the table's events are folded from the
newest snapshot before the first throw shown (ledger.store.snapshots), and each throw's
result is read off the state either side of it (`result_of`). What a throw decided is
what its command wrote after it: the closings a throw decides (tableviews.DECIDED_BY)
and the dice passing when the rule set says they must. So the read is bounded by the
snapshot interval and WINDOW, however long the table's history.

    with queries.reading(store) as read:
        recent = read.throws("table:t1", limit=20)
        recent.throws[0]["result"]  # "nick"
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

import engine as hz
from engine import events as ev
from ledger.books.tableviews import DECIDED_BY, span_events
from ledger.store import snapshots
from ledger.store.eventstore import decode_row
from ledger.store.schema import events as events_table

THROW = ev.DiceThrown.__name__
WINDOW = 2000
"""The most events after the first throw shown that are read: older throws than that are
left out of the strip, so that a round of a thousand bets costs one bounded read."""
STAKES = 20
"""The most recent stakes kept, newest first: the sizes the table usually plays at."""

RESULTS = {
    "nick": "Nick: the caster wins",
    "out": "Thrown out: the caster loses",
    "chance": "Chance thrown: the caster wins",
    "main": "The main came before the chance: the caster loses",
    "no-main": "No main: the caster loses",
    "main-set": "Main set",
    "no-main-yet": "No main: throw again for it",
    "chance-set": "Chance set",
    "no-decision": "Neither main nor chance: throw again",
}
"""Each result code `result_of` gives, in the game's words."""


@dataclass(frozen=True)
class Recent:
    """The table's last throws, newest first, and its recent stakes, newest first."""

    throws: list[dict[str, Any]] = field(default_factory=list)
    stakes: list[int] = field(default_factory=list)

    @property
    def usual(self) -> int | None:
        """The table's usual stake: the median of its recent stakes (None if none)."""
        return int(statistics.median_low(self.stakes)) if self.stakes else None


def result_of(before: hz.TableState, after: hz.TableState) -> str:
    """What a throw did, from the table's state before it and just after it (its
    `DiceThrown` folded): a round's result when it ended the round (engine.RoundResult's
    value), else what it set or that the caster throws again."""
    if after.round != before.round and after.last_result is not None:
        return after.last_result.value
    if before.phase is hz.Phase.AWAITING_MAIN:
        return "main-set" if after.main is not None else "no-main-yet"
    if before.phase is hz.Phase.FIRST_THROW and after.chance is not None:
        return "chance-set"
    return "no-decision"


def recent(conn: sa.Connection, stream: str, limit: int = 20) -> Recent:
    """The last `limit` throws of the table `stream` (within WINDOW events of its head)
    and the stakes placed since the first of them, on one connection."""
    head = _head(conn, stream)
    e = events_table.c
    versions = conn.execute(
        sa.select(e.version)
        .where(e.stream == stream, e.type == THROW, e.version > head - WINDOW)
        .order_by(e.version.desc())
        .limit(limit)
    ).scalars()
    first = min(list(versions), default=None)
    if first is None:
        return Recent(stakes=_stakes(conn, stream, head))
    state = snapshots.before(conn, stream, first)
    rows = span_events(conn, stream, state.version + 1, head, 0, head - state.version)
    steps = []
    for row in rows:
        event = decode_row(row)
        after = hz.fold([event], state)
        steps.append((row, event, state, after))
        state = after
    throws = [
        _throw(steps, i)
        for i, (row, _, _, _) in enumerate(steps)
        if row.type == THROW and row.version >= first
    ]
    return Recent(throws[::-1], _placed([event for _, event, _, _ in steps])[:STAKES])


def _head(conn: sa.Connection, stream: str) -> int:
    e = events_table.c
    found = conn.execute(sa.select(sa.func.max(e.version)).where(e.stream == stream)).scalar()
    return int(found or 0)


def _stakes(conn: sa.Connection, stream: str, head: int) -> list[int]:
    """A table with no throw yet: the stakes of its events so far (within WINDOW)."""
    rows = span_events(conn, stream, max(head - WINDOW, 1), head, 0, WINDOW)
    return _placed([decode_row(row) for row in rows])[:STAKES]


def _placed(events: Sequence[hz.Event]) -> list[int]:
    """The amounts staked by `events`, newest first: a caster's stake, a stake laid, odds,
    a side bet's offer."""
    found = []
    for event in reversed(events):
        match event:
            case ev.CasterStaked(amount=amount) | ev.StakeLaid(amount=amount):
                found.append(amount)
            case ev.OddsLaid(stake=amount) | ev.SideBetOffered(stake=amount):
                found.append(amount)
    return found


Step = tuple[Any, hz.Event, hz.TableState, hz.TableState]
"""A stored event's row, the event, and the table's state before and after it."""


def _throw(steps: Sequence[Step], i: int) -> dict[str, Any]:
    """The throw at `steps[i]`, with what its command decided after it."""
    row, event, before, after = steps[i]
    assert isinstance(event, ev.DiceThrown)
    settled = []
    passed: ev.DicePassed | None = None
    for _, later, state, _ in steps[i + 1 :]:
        if isinstance(later, ev.BetSettled | ev.BetVoided) and _decided_by_throw(later):
            settled.append(_settled(later, state.bets[later.bet_id]))
            continue
        if isinstance(later, ev.DicePassed) and later.reason not in PASSED_BY_ACT:
            passed = later
        break
    return {
        "version": row.version,
        "position": row.position,
        "recorded_at": row.recorded_at,
        "round": before.round,
        "caster": before.caster,
        "die1": event.die1,
        "die2": event.die2,
        "total": event.die1 + event.die2,
        "result": result_of(before, after),
        "main": after.main if after.round == before.round else before.main,
        "chance": after.chance if after.round == before.round else before.chance,
        "losses": after.consecutive_losses,
        "settled": settled,
        "passed_to": passed.caster if passed is not None else None,
        "pass_reason": passed.reason if passed is not None else None,
        "dice_pass": passed is not None,
    }


PASSED_BY_ACT = frozenset({"choice", "caster-left", "forfeit"})
"""Why dice pass by a command of their own (a pass by choice, a caster leaving or
forfeiting), not by the throw before it: every other reason is a rule set's must-pass."""


def _decided_by_throw(event: ev.BetSettled | ev.BetVoided) -> bool:
    return isinstance(event, ev.BetSettled) or DECIDED_BY.get(event.reason) is ev.DiceThrown


def _settled(event: ev.BetSettled | ev.BetVoided, bet: hz.Bet) -> dict[str, Any]:
    """A bet a throw closed: who won it and was paid what (their stake back and their
    winnings), or the stakes it returned."""
    common = {
        "bet_id": bet.id,
        "kind": bet.kind.value,
        "proposition": bet.proposition.kind.value,
        "yes": bet.yes,
        "no": bet.no,
    }
    if isinstance(event, ev.BetVoided):
        returned = [{"to": t.target, "amount": t.amount} for t in event.transfers]
        return {**common, "outcome": "voided", "reason": event.reason, "returned": returned}
    paid = sum(t.amount for t in event.transfers if t.target == event.winner)
    return {
        **common,
        "outcome": "settled",
        "winner": event.winner,
        "paid": paid,
        "won": paid - bet.held_by(event.winner),
    }
