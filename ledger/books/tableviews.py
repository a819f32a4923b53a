"""Read models of the tables: every settlement and every round, beside the events.

`apply` runs in the append's transaction, given the table's state before the rows just
appended, and folds them one event at a time: each BetSettled or BetVoided becomes a
`settlements` row (with its parties in `settlement_parties`), and each event extends
the `rounds` row of the round it belongs to; the throws and the rounds decided move the
dice-fairness report's counts of the whole club (ledger.books.dicetallies). `Replay`
feeds every table's events through the same `apply` when the read models are rebuilt,
and must arrive at the same rows. So nothing here depends on where one append ends and
the next begins, only on the events' order: `apply` may be given one append or
several, as long as no append is cut next to a settlement (see `Replay`).

Which round an event belongs to: the round in play when it happened (the state's
`round` before it; the CasterChosen that begins round 1 belongs to round 1), except
that what a throw decides belongs with the throw. So the throw that ends round 3 and
the settlements it makes are round 3's last events, and a DicePassed that follows them
is round 4's first: the round of the caster it hands the dice to. An event while no
round is in play, neither before it nor after (`TableState.in_play`: the table seating,
before the first caster or after the dice passed to nobody, or closing then), belongs
to no round: a round is listed only once a caster holds the dice for it.

But for a server-dice turn's `SeedRevealed`, which the command that ends the turn
derives last: it goes with that command's round. When the dice pass to a caster, that
is the round they pass into, as for the DicePassed before it. When the table closes or
its last caster leaves alone, no round is in play after the command, which abandoned
the turn's last round: the reveal is that round's last event (before, it belonged to no
round, and a player reading the rounds found no seed to draw that turn's throws from).

The queries return plain JSON-able dicts, money in integer minor units and times as the
ISO strings stored. Every listing pages by keyset (after a position or round, never by
OFFSET) along an index that ends in the paging column.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa

import engine as hz
from engine import events as ev
from engine.fold import Folding
from ledger.books import dicetallies, disputeviews
from ledger.books.accounts import TABLE_PREFIX, book_account, transfer_views, transfers_of
from ledger.store import codec, db
from ledger.store.eventstore import EventStore, Recorded, decode_row
from ledger.store.schema import events as events_table
from ledger.store.schema import rounds as rounds_table
from ledger.store.schema import settlement_parties
from ledger.store.schema import settlements as settlements_table

Closing = ev.BetSettled | ev.BetVoided
ABANDONED = hz.RoundResult.ABANDONED
CLOSING_TYPES = frozenset({"BetSettled", "BetVoided"})

DECIDED_BY: dict[str, type] = {
    "never-accepted": ev.DiceThrown,
    "undecidable": ev.DiceThrown,
    "dice-passed": ev.DicePassed,
    "caster-left": ev.PlayerLeft,
    "offeree-left": ev.PlayerLeft,
    "forfeit": ev.CasterForfeited,
    "table-closed": ev.TableClosed,
}
"""The act that voids a bet, by the void's reason. A bet is refused or withdrawn by the
void itself. Every settlement is decided by a throw."""

END_OF_TIME = "9999-12-31T23:59:59.999999Z"
"""Later than any time stored: the default end of a time range."""

BET_TAKEN = (
    ev.CasterStaked,
    ev.StakeLaid,
    ev.OddsLaid,
    ev.SideBetOffered,
    ev.StakeCovered,
    ev.SideBetAccepted,
)
"""Events that place a bet or take its other side: where a settlement's money came from."""
_BET_TAKEN_TYPES = tuple(cls.__name__ for cls in BET_TAKEN)


class Step(NamedTuple):
    """One event of a table as stored, with the table's state either side of it."""

    row: Recorded
    event: hz.Event
    before: hz.TableState
    after: hz.TableState


# -- writing ------------------------------------------------------------------------


def apply(
    conn: sa.Connection,
    stream: str,
    before: hz.TableState,
    rows: Sequence[Recorded],
    views: Stored | None = None,
    folded: tuple[int, hz.TableState] | None = None,
) -> hz.TableState:
    """Write the settlements and rounds that `rows`, just appended to the table
    `stream` in this transaction, make; return the table's state after them. `views`
    says where what earlier rows made is read and where this is written: the
    database, straight away (an append), or held for a batch (`Replay`). `folded` is
    (n, the state after the first n rows), as the command that decided them folded
    them (engine.command.Drafted.folded): that state is taken, not folded again."""
    if not rows:
        return before
    views = views if views is not None else Stored(conn)
    steps = list(_fold(before, rows, folded))
    deciders = [_decider(steps, i) for i in range(len(steps))]
    members = [_round_of(steps, i, deciders[i]) for i in range(len(steps))]
    changed = _write_rounds(views, stream, steps, members)
    _write_settlements(views, stream, steps, deciders)
    if any(step.row.type in disputeviews.DISPUTE_TYPES for step in steps):
        views.write_disputes(stream, steps)
    tally = dicetallies.Tally()
    dicetallies.throws(conn, stream, steps, tally)
    dicetallies.rounds(stream, steps[-1].after.rules, changed, tally)
    if tally:
        views.count(tally)
    views.seen(stream, steps)
    return steps[-1].after


ROUND_COLUMNS = tuple(column.name for column in rounds_table.columns)
"""A `rounds` row's columns, (stream, round) first: the key."""
assert ROUND_COLUMNS[:2] == ("stream", "round")
UPDATE_ROUND = (
    f"UPDATE rounds SET {', '.join(f'{name} = ?' for name in ROUND_COLUMNS[2:])} "
    "WHERE stream = ? AND round = ?"
)
"""The round's row rewritten as an append extends it: every throw of a round does, so
it is written once here rather than built by SQLAlchemy from each row's values."""


class Stored:
    """The read models as stored: `apply` reads the rounds and bets that earlier
    appends wrote from the database, and writes to it, in the append's transaction."""

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn

    def rounds(self, stream: str, numbers: list[int]) -> dict[int, dict[str, Any]]:
        """The stored rows of the table's rounds `numbers` (those there are)."""
        marks = ", ".join("?" * len(numbers))
        sql = (
            f"SELECT {', '.join(ROUND_COLUMNS)} FROM rounds WHERE stream = ? AND round IN ({marks})"
        )
        found = db.fetch(self.conn, sql, [stream, *numbers])
        return {row[1]: dict(zip(ROUND_COLUMNS, row, strict=True)) for row in found}

    def bets_taken(
        self, stream: str, oldest: int, first: int, bet_ids: set[str]
    ) -> dict[str, list[int]]:
        """The positions of the events of versions `oldest` to `first - 1` of the table
        that placed each of `bet_ids` or took its other side.

        One range of the (stream, version) key: a bet lives no longer than a round, so
        that range is at most about a round long."""
        found: dict[str, list[int]] = {}
        earlier = self.conn.execute(
            sa.select(events_table.c.position, events_table.c.payload)
            .where(
                events_table.c.stream == stream,
                events_table.c.version >= oldest,
                events_table.c.version < first,
                events_table.c.type.in_(_BET_TAKEN_TYPES),
            )
            .order_by(events_table.c.version)
        )
        for position, payload in earlier:
            bet_id = json.loads(payload)["bet_id"]
            if bet_id in bet_ids:
                found.setdefault(bet_id, []).append(position)
        return found

    def write_rounds(
        self, stream: str, fresh: list[dict[str, Any]], changed: list[dict[str, Any]]
    ) -> None:
        db.insert_rows(self.conn, rounds_table, fresh)
        for record in changed:
            values = [record[name] for name in ROUND_COLUMNS[2:]]
            db.execute(self.conn, UPDATE_ROUND, [*values, stream, record["round"]])

    def write_settlements(self, rows: list[dict[str, Any]], parties: list[dict[str, Any]]) -> None:
        db.insert_rows(self.conn, settlements_table, rows)
        db.insert_rows(self.conn, settlement_parties, parties)

    def write_disputes(self, stream: str, steps: Sequence[Step]) -> None:
        # Rare enough to write as they come, in a batch's replay too.
        disputeviews.record(self.conn, stream, steps, self.mark_adjusted)

    def seen(self, stream: str, steps: Sequence[Step]) -> None:
        """`apply` is done with `steps`: nothing to remember, the database has it all."""

    def count(self, tally: dicetallies.Tally) -> None:
        """Add what the rows change to the dice-fairness report's counts."""
        dicetallies.write(self.conn, tally)

    def mark_adjusted(self, stream: str, bet_id: str) -> None:
        """A dispute's resolution adjusted the bet: count it on its settlement."""
        s = settlements_table
        self.conn.execute(
            s.update()
            .where(s.c.bet_id == bet_id, s.c.stream == stream)
            .values(adjusted=s.c.adjusted + 1)
        )


class Held(Stored):
    """The read models of a replay from the first event, a batch at a time: what
    earlier batches made is held in memory as far as later events may need it (each
    table's latest round, which its next events may extend, and the events that took
    each bet still open), and a batch's rows are written together by `flush`, a few
    statements for the lot rather than a few for each table's share of it.

    Held rounds are written once, when the table has begun a newer one (or at the
    end), so that a round is inserted once and never updated."""

    def __init__(self, conn: sa.Connection) -> None:
        super().__init__(conn)
        self.held: dict[str, dict[int, dict[str, Any]]] = {}
        """Per table, its rounds not yet written (its latest among them)."""
        self.flushed: dict[str, int] = {}
        """Per table, the newest round written: every round up to it not held is
        stored (the replay began on empty read models), every one after it is new."""
        self.written: dict[str, set[int]] = {}
        """Rounds written already that an event came back to (never, as the engine
        goes: a round's events follow one another), to be updated."""
        self.changed: list[dict[str, Any]] = []
        self.settlements: list[dict[str, Any]] = []
        self.parties: list[dict[str, Any]] = []
        self.taken: dict[str, dict[str, list[int]]] = {}
        """Per table, the positions that placed or took each bet still open."""
        self.tally = dicetallies.Tally()
        """The dice-fairness report's counts the batch changes, written by `flush`."""

    def rounds(self, stream: str, numbers: list[int]) -> dict[int, dict[str, Any]]:
        held = self.held.get(stream, {})
        found = {n: held[n] for n in numbers if n in held}
        flushed = self.flushed.get(stream, 0)
        missing = [n for n in numbers if n not in held and n <= flushed]
        if missing:
            stored = super().rounds(stream, missing)
            self.written.setdefault(stream, set()).update(stored)
            found.update(stored)
        return found

    def bets_taken(
        self, stream: str, oldest: int, first: int, bet_ids: set[str]
    ) -> dict[str, list[int]]:
        taken = self.taken.get(stream, {})
        return {b: list(taken[b]) for b in bet_ids if b in taken}

    def write_rounds(
        self, stream: str, fresh: list[dict[str, Any]], changed: list[dict[str, Any]]
    ) -> None:
        held = self.held.setdefault(stream, {})
        written = self.written.get(stream, set())
        for record in [*fresh, *changed]:
            if record["round"] in written:
                self.changed.append(record)
            else:
                held[record["round"]] = record

    def write_settlements(self, rows: list[dict[str, Any]], parties: list[dict[str, Any]]) -> None:
        self.settlements += rows
        self.parties += parties

    def count(self, tally: dicetallies.Tally) -> None:
        self.tally.add(tally)

    def mark_adjusted(self, stream: str, bet_id: str) -> None:
        # The settlement may still be held for this batch's insert, or written already.
        for row in self.settlements:
            if row["stream"] == stream and row["bet_id"] == bet_id:
                row["adjusted"] += 1
                return
        super().mark_adjusted(stream, bet_id)

    def seen(self, stream: str, steps: Sequence[Step]) -> None:
        taken = self.taken.setdefault(stream, {})
        for step in steps:
            event = step.event
            if isinstance(event, BET_TAKEN):
                taken.setdefault(event.bet_id, []).append(step.row.position)
            elif isinstance(event, Closing):
                taken.pop(event.bet_id, None)

    def flush(self, everything: bool = False) -> None:
        """Write what the batch made: every held round but each table's latest (all of
        them, with `everything`), the settlements and their parties."""
        done: list[dict[str, Any]] = []
        for stream, held in self.held.items():
            latest = max(held, default=0)
            for number in sorted(held):
                if everything or number != latest:
                    done.append(held.pop(number))
                    self.flushed[stream] = max(number, self.flushed.get(stream, 0))
        if done:
            db.insert_rows(self.conn, rounds_table, done)
        changed, self.changed = self.changed, []
        for record in changed:
            super().write_rounds(record["stream"], [], [record])
        rows, self.settlements = self.settlements, []
        parties, self.parties = self.parties, []
        if rows:
            super().write_settlements(rows, parties)
        tally, self.tally = self.tally, dicetallies.Tally()
        if tally:
            super().count(tally)


def clear(conn: sa.Connection) -> None:
    """Empty the read models, before a rebuild."""
    conn.execute(settlement_parties.delete())
    conn.execute(settlements_table.delete())
    conn.execute(rounds_table.delete())
    disputeviews.clear(conn)
    dicetallies.clear(conn)


class Replay:
    """Every table folded from its first event, fed the events of all streams in order
    and in batches (ledger.books.projections.rebuild).

    A settlement looks for the act that decided it across the settlements next to it
    (a throw comes just before the bets it decides; a departure or closing just after
    the bets it voids). So the events are handed to `apply` cut only between two events
    that close no bet; the end of a batch waits for the next one.
    """

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn
        self.states: dict[str, hz.TableState] = {}
        self.held: list[Recorded] = []
        self.views = Held(conn)

    def feed(self, rows: Iterable[Recorded]) -> None:
        pending = [*self.held, *rows]
        cut = _last_safe_cut(pending)
        self.held = pending[cut:]
        self._apply(pending[:cut])
        self.views.flush()

    def finish(self) -> None:
        held, self.held = self.held, []
        self._apply(held)
        self.views.flush(everything=True)

    def _apply(self, rows: list[Recorded]) -> None:
        # A table's rows of the batch in one `apply`: its appends, whole, in order,
        # which is all `apply` asks (the other tables' events between change nothing).
        by_table: dict[str, list[Recorded]] = {}
        for row in rows:
            if row.stream.startswith(TABLE_PREFIX):
                by_table.setdefault(row.stream, []).append(row)
        for stream, run in by_table.items():
            state = self.states.get(stream, hz.INITIAL)
            self.states[stream] = apply(self.conn, stream, state, run, self.views)


def _last_safe_cut(rows: Sequence[Recorded]) -> int:
    """The last index at which `rows` may be cut: between two events that close no bet
    (0 if there is none; the last row may yet be followed by what it decides)."""
    for k in range(len(rows) - 1, 0, -1):
        if rows[k - 1].type not in CLOSING_TYPES and rows[k].type not in CLOSING_TYPES:
            return k
    return 0


def _runs_by_stream(rows: Sequence[Recorded]) -> Iterator[list[Recorded]]:
    """Consecutive rows of one stream. An append is consecutive, so a run is whole
    appends, and the settlements in it lie next to what decided them."""
    run: list[Recorded] = []
    for row in rows:
        if run and row.stream != run[0].stream:
            yield run
            run = []
        run.append(row)
    if run:
        yield run


FOLDED = "after"
"""A row may carry its table's state after it, as a check that folded the table
already found it (the offline check's referee, at the end of each command: the
restore's rows, ledger.exports.restore.Checked): taken, not folded again."""


def _fold(
    state: hz.TableState,
    rows: Iterable[Recorded],
    folded: tuple[int, hz.TableState] | None = None,
) -> Iterator[Step]:
    known, known_state = folded if folded is not None else (0, state)
    # One fold kept open over the rows (engine.fold.Folding, as the referee keeps it):
    # `hz.fold` copied the table afresh for every event, a third of its cost.
    folding = Folding(state)
    for i, row in enumerate(rows, 1):
        event = row.event()
        taken = getattr(row, FOLDED, None)
        if taken is not None and taken.version == row.version:
            after = taken
            folding = Folding(after)
        elif i == known and known_state.version == row.version:
            after = known_state
            folding = Folding(after)
        else:
            after = folding.fold((event,))
        yield Step(row, event, state, after)
        state = after


def _decider(steps: Sequence[Step], i: int) -> int | None:
    """The index of the act that decided the bet closed at `i` (None for any other
    event, or a bet refused or withdrawn, which is its own act).

    The engine writes a throw first and the bets it decides after it; a departure,
    a forfeit, a pass of the dice or a closing after the bets it voids. Either way only
    other closings of the same command lie between.
    """
    event = steps[i].event
    if isinstance(event, ev.BetSettled):
        act: type | None = ev.DiceThrown
    elif isinstance(event, ev.BetVoided):
        act = DECIDED_BY.get(event.reason)
    else:
        return None
    if act is None:
        return None
    direction = -1 if act is ev.DiceThrown else 1
    j = i + direction
    while 0 <= j < len(steps) and isinstance(steps[j].event, Closing):
        j += direction
    if 0 <= j < len(steps) and isinstance(steps[j].event, act):
        return j
    return None


def _round_of(steps: Sequence[Step], i: int, decider: int | None) -> int:
    """The round the event at `i` belongs to (0: none, while no round is in play). A
    dispute's events belong to the round disputed, which the disputes read model keeps
    (ledger.books.disputeviews), not to the round in play when it was opened."""
    if steps[i].row.type in disputeviews.DISPUTE_TYPES:
        return 0
    if decider is not None and isinstance(steps[decider].event, ev.DiceThrown):
        return steps[decider].before.round  # what a throw decides goes with the throw
    step = steps[i]
    if step.before.in_play:
        return step.before.round
    if step.after.in_play:
        return step.after.round
    if isinstance(step.event, ev.SeedRevealed) and step.before.last_result is ABANDONED:
        return step.before.round - 1  # the turn's last round, which its ending abandoned
    return 0


# -- rounds


def _write_rounds(
    views: Stored, stream: str, steps: Sequence[Step], members: Sequence[int]
) -> list[tuple[tuple[int, bool] | None, tuple[int, bool] | None]]:
    """Write the rounds the rows extend; return what each counted in the dice-fairness
    report before them and counts after (ledger.books.dicetallies.decided)."""
    touched = sorted({r for r in members if r})
    if not touched:
        return []
    records = views.rounds(stream, touched)
    stored = set(records)  # the round still open when these rows were appended, if any
    was = {n: dicetallies.decided(records[n]) for n in stored}
    for step, number in zip(steps, members, strict=True):
        if number:
            records[number] = _extend(records.get(number), stream, number, step)
    fresh = [records[n] for n in touched if n not in stored]
    views.write_rounds(stream, fresh, [records[n] for n in sorted(stored)])
    return [(was.get(n), dicetallies.decided(records[n])) for n in touched]


def _extend(record: dict[str, Any] | None, stream: str, number: int, step: Step) -> dict[str, Any]:
    """The round's row, with the event in `step` added to it."""
    row = step.row
    if record is None:
        record = {
            "stream": stream,
            "round": number,
            "caster": None,
            "main": None,
            "chance": None,
            "result": None,
            "first_version": row.version,
            "first_position": row.position,
            "started_at": row.recorded_at,
            "ended_at": None,
        }
    record["last_version"], record["last_position"] = row.version, row.position
    # Only a state still in this round shows its caster, main and chance: the throw that
    # ends a round clears them, and what it settles comes after it. The dice may change
    # hands within a round (a caster passing by choice before the main, or forfeiting
    # and the dice passing on): the last caster counts. A caster leaving or forfeiting
    # ends their round, whatever its phase.
    for state in (step.before, step.after):
        if state.round == number:
            record["caster"] = state.caster or record["caster"]
            record["main"] = state.main if state.main is not None else record["main"]
            record["chance"] = state.chance if state.chance is not None else record["chance"]
    if step.before.round == number < step.after.round:
        assert step.after.last_result is not None
        record["result"] = step.after.last_result.value
        record["ended_at"] = row.recorded_at
    return record


# -- settlements


def _write_settlements(
    views: Stored, stream: str, steps: Sequence[Step], deciders: Sequence[int | None]
) -> None:
    closed = [i for i, step in enumerate(steps) if isinstance(step.event, Closing)]
    if not closed:
        return
    taken = _bet_positions(views, stream, steps, {_bet_id(steps[i]) for i in closed})
    rows, parties = [], []
    for i in closed:
        step, decider = steps[i], deciders[i]
        event = step.event
        assert isinstance(event, Closing)
        bet = step.before.bets[event.bet_id]
        acts = [] if decider is None else [steps[decider].row.position]
        sources = sorted({*taken.get(bet.id, ()), *acts, step.row.position})
        rows.append(
            {
                "position": step.row.position,
                "stream": stream,
                # The round whose event closed it, as the rounds hold it: a next-total bet
                # outlives a round that ends with no throw (a forfeit, a pass, a caster
                # leaving) and is decided by the next round's throw, in that round.
                "round": _round_of(steps, i, decider) or bet.round,
                "bet_id": bet.id,
                "kind": bet.kind.value,
                "outcome": "settled" if isinstance(event, ev.BetSettled) else "voided",
                "winner": event.winner if isinstance(event, ev.BetSettled) else None,
                "reason": event.reason if isinstance(event, ev.BetVoided) else None,
                "recorded_at": step.row.recorded_at,
                "transfers": _transfers_text(transfers_of(stream, event)),
                "sources": _positions_text(sources),
                "adjusted": 0,
            }
        )
        parties += [
            {"position": step.row.position, "party": account}
            for account in sorted({book_account(stream, p) for p in bet.parties})
        ]
    views.write_settlements(rows, parties)


def _bet_id(step: Step) -> str:
    event = step.event
    assert isinstance(event, Closing)
    return event.bet_id


def _placed_at(bet_id: str) -> int:
    """The version of the event that placed the bet: a bet's id is "b<version>"."""
    return int(bet_id.removeprefix("b"))


def _bet_positions(
    views: Stored, stream: str, steps: Sequence[Step], bet_ids: set[str]
) -> dict[str, list[int]]:
    """The positions of the events that placed each bet and took its other side:
    those before the first step from `views` (`Stored.bets_taken`), the rest in
    `steps`."""
    found: dict[str, list[int]] = {}
    first = steps[0].row.version
    oldest = min(_placed_at(b) for b in bet_ids)
    if oldest < first:
        found = views.bets_taken(stream, oldest, first, bet_ids)
    for step in steps:
        if isinstance(step.event, BET_TAKEN) and step.event.bet_id in bet_ids:
            found.setdefault(step.event.bet_id, []).append(step.row.position)
    return found


def _transfers_text(transfers: Sequence[ev.Transfer]) -> str:
    """A settlement's transfers in the ledger's accounts, exactly as the book posts them
    (`transfers_of`), as `_canonical` writes `transfer_views` of them: written straight,
    every settlement has them and the encoder's look at each value first cost as much
    as the rest of its row. Text the way json writes it (the canonical form's), and
    anything not plain text and integers left to `_canonical`."""
    if not all(
        type(t.source) is str and type(t.target) is str and type(t.amount) is int for t in transfers
    ):
        return _canonical(
            [{"source": t.source, "target": t.target, "amount": t.amount} for t in transfers]
        )
    quoted = _QUOTED
    return (
        "["
        + ",".join(
            f'{{"amount":{t.amount},"source":{quoted(t.source)},"target":{quoted(t.target)}}}'
            for t in transfers
        )
        + "]"
    )


_QUOTED: Callable[[str], str] = json.encoder.encode_basestring
"""A text as json writes it with ensure_ascii off, as the canonical form has it."""


def _canonical(value: Any) -> str:
    return codec.canonical(value).decode()


def _positions_text(positions: list[int]) -> str:
    """A list of positions as `_canonical` writes it ("[3,5,8]"), written straight:
    every settlement has one, and the canonical encoder's look at each value first
    cost as much as the rest of its row."""
    return f"[{','.join(map(str, positions))}]"


# -- reading ------------------------------------------------------------------------


def settlements(
    conn: sa.Connection, *, json_text: Callable[[str], Any] = json.loads, **filters: Any
) -> list[dict[str, Any]]:
    """Settlements in position order, after `after_position`, at most `limit` (50).

    Filters (`settlement_query`'s): the table's `stream` ("table:t1") and its `round`; a
    `party` by ledger account ("player:ann", "setter"); a `bet_id`; and `since`
    (inclusive) to `until` (exclusive), ISO times compared as stored. Page on by passing
    the last position seen as `after_position`. `json_text` makes the transfers and
    sources, stored as JSON text, into what is returned: parsed, or (the API's) kept as
    text to be sent.
    """
    sql, params = settlement_query(**filters)
    views = [_settlement_view(row, json_text) for row in db.fetch(conn, sql, params)]
    # A dispute's adjustments, for the few settlements that have any: no query otherwise.
    adjusted: dict[str, list[dict[str, Any]]] = {}
    for view in views:
        if view.pop("_adjusted"):
            adjusted.setdefault(TABLE_PREFIX + view["table"], []).append(view)
    for stream, shown in adjusted.items():
        by_bet: dict[str, list[dict[str, Any]]] = {}
        for a in disputeviews.adjustments_of(conn, stream, bet_ids=[v["bet_id"] for v in shown]):
            by_bet.setdefault(a["bet_id"], []).append(a)
        for view in shown:
            view["adjustments"] = by_bet.get(view["bet_id"], [])
    return views


def settlement_query(
    *,
    stream: str | None = None,
    round: int | None = None,
    party: str | None = None,
    bet_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
    after_position: int = 0,
    limit: int = 50,
) -> tuple[str, list[Any]]:
    """The SQL (with `?` marks) and parameters `settlements` runs for these filters."""
    # Written as SQL on the driver's cursor: every settlement query of the API passes
    # here, and SQLAlchemy's building and running of the statement cost as much as
    # reading a page of fifty rows (bench.api). The filters only add conditions, each
    # value a parameter; the page walks the index that ends in `position`.
    where: list[str] = []
    params: list[Any] = []
    sql = f"SELECT {SETTLEMENT_COLUMNS} FROM settlements AS s"
    position = "s.position"
    if party is not None:
        sql += " JOIN settlement_parties AS p ON p.position = s.position"
        position = "p.position"  # so the page walks the (party, position) key
        where.append("p.party = ?")
        params.append(party)
    if stream is not None:
        where.append("s.stream = ?")
        params.append(stream)
    if round is not None:
        where.append("s.round = ?")
        params.append(round)
    if bet_id is not None:
        where.append("s.bet_id = ?")
        params.append(bet_id)
    if since is not None:
        # A range closed at both ends, so that SQLite (which has no statistics) reads
        # it from the recorded_at index; open-ended, it walks every settlement from the
        # first by position, testing each.
        where += ["s.recorded_at >= ?", "s.recorded_at < ?"]
        params += [since, until or END_OF_TIME]
    elif until is not None:
        where.append("s.recorded_at < ?")
        params.append(until)
    where.append(f"{position} > ?")
    params += [after_position, limit]
    sql += f" WHERE {' AND '.join(where)} ORDER BY {position} LIMIT ?"
    return sql, params


SETTLEMENT_COLUMNS = (
    "s.position, s.stream, s.round, s.bet_id, s.kind, s.outcome, s.winner, s.reason, "
    "s.recorded_at, s.transfers, s.sources, s.adjusted"
)


def _settlement_view(row: Sequence[Any], json_text: Callable[[str], Any]) -> dict[str, Any]:
    """A settlement as the API shows it, from a row of SETTLEMENT_COLUMNS."""
    position, stream, round, bet_id, kind, outcome, winner, reason, at, transfers, sources, adj = (
        row
    )
    return {
        "position": position,
        "table": stream.removeprefix(TABLE_PREFIX),
        "round": round,
        "bet_id": bet_id,
        "kind": kind,
        "outcome": outcome,
        "winner": winner,
        "reason": reason,
        "recorded_at": at,
        "transfers": json_text(transfers),
        "sources": json_text(sources),
        "adjustments": [],
        "_adjusted": adj,
    }


def rounds(
    conn: sa.Connection, stream: str, after_round: int = 0, limit: int = 50
) -> list[dict[str, Any]]:
    """The table's rounds in order, after `after_round`, at most `limit`."""
    r = rounds_table
    query = (
        sa.select(r)
        .where(r.c.stream == stream, r.c.round > after_round)
        .order_by(r.c.round)
        .limit(limit)
    )
    return [round_view(row) for row in conn.execute(query)]


def round_view(row: Any) -> dict[str, Any]:
    view = dict(row._mapping)
    stream = view.pop("stream")
    return {"table": stream.removeprefix(TABLE_PREFIX), **view, "winner": _winner(row)}


def _winner(row: Any) -> str | None:
    """Who won the round: the caster or the setter; None while it is open or if it was
    abandoned."""
    if row.result is None:
        return None
    won = hz.RoundResult(row.result).caster_won
    return None if won is None else row.caster if won else hz.SETTER


def round_detail(
    conn: sa.Connection,
    store: EventStore,
    stream: str,
    round: int,
    after_position: int = 0,
    limit: int = 50,
) -> dict[str, Any] | None:
    """One round: its row and a page of the events of the table's stream that belong
    to it, at most `limit` after position `after_position`; None if the table has no
    such round. A round may run to any number of events (a caster who throws and throws
    again), so they come a page at a time, like every other listing; its settlements
    are `settlements(stream=..., round=...)`, paged the same way.

    The events are read on `conn`, in the same snapshot as the round's span, rather
    than through a fresh connection of `store`'s.
    """
    row = round_row(conn, stream, round)
    if row is None:
        return None
    return {**round_view(row), "events": round_events(conn, stream, row, after_position, limit)}


def round_row(conn: sa.Connection, stream: str, round: int) -> Any:
    """The table's round `round` as stored (a `rounds` row), or None."""
    r = rounds_table
    return conn.execute(sa.select(r).where(r.c.stream == stream, r.c.round == round)).first()


def round_events(
    conn: sa.Connection, stream: str, row: Any, after_position: int = 0, limit: int = 50
) -> list[dict[str, Any]]:
    """The events of the round `row` (round_row's), at most `limit` after position
    `after_position`."""
    disputed = disputeviews.round_versions(conn, stream, row.round)
    rows = span_events(
        conn, stream, row.first_version, row.last_version, after_position, limit, disputed
    )
    return [_event_view(stream, event) for event in rows]


def span_events(
    conn: sa.Connection,
    stream: str,
    first_version: int,
    last_version: int | None,
    after_position: int,
    limit: int,
    disputed: Sequence[int] | None = None,
) -> list[Any]:
    """The table's stored events of versions `first_version` to `last_version` (to its
    head when None), at most `limit` after position `after_position`, in order: a
    round's (GET /tables/{t}/rounds/{r}, and its replay) or a whole session's (its
    replay). A round's (`disputed` given: the versions of its own disputes, their
    resolutions and adjustments) leaves out the disputes of other rounds opened while it
    was played, and takes its own, which came after it."""
    e = events_table
    # A stream's versions rise with its positions, so when `after_position` is one of
    # the stream's own events, as a page's last is, its version starts the range of
    # the (stream, version) index; the position test keeps any other `after` right.
    since = (
        conn.execute(
            sa.select(e.c.version).where(e.c.position == after_position, e.c.stream == stream)
        ).scalar()
        if after_position
        else None
    )
    span = e.c.version >= max(first_version, (since or 0) + 1)
    if last_version is not None:
        span = sa.and_(span, e.c.version <= last_version)
    if disputed is not None:
        span = sa.and_(span, e.c.type.not_in(sorted(disputeviews.DISPUTE_TYPES)))
        if disputed:
            span = sa.or_(span, e.c.version.in_(sorted(disputed)))
    return list(
        conn.execute(
            sa.select(
                e.c.position,
                e.c.version,
                e.c.type,
                e.c.schema_version,
                e.c.payload,
                e.c.actor,
                e.c.recorded_at,
            )
            .where(e.c.stream == stream, span, e.c.position > after_position)
            .order_by(e.c.version)
            .limit(limit)
        )
    )


def _event_view(stream: str, row: Any) -> dict[str, Any]:
    """An event of a round, as stored, with the money it moved in ledger accounts."""
    event = decode_row(row)  # or CorruptEvent, naming the position
    return {
        "position": row.position,
        "version": row.version,
        "type": row.type,
        "payload": json.loads(row.payload),
        "actor": row.actor,
        "recorded_at": row.recorded_at,
        "transfers": transfer_views(stream, event),
    }
