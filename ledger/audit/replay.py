"""A table replayed event by event: what each event was, the table after it, the money
it moved, the settlements it made and the balances of the parties it moved.

Nothing here knows one event type from another. Each event is decoded by the store's
codec, folded by the engine (`engine.fold`) into the state after it, and its money is
what the books post for it (`accounts.transfers_of`); its settlements are the
settlements read model's rows (ledger.books.tableviews) that name it among their
sources as the closing itself or the act that decided it, not as an event that placed
or took the bet. So an event type added to the engine replays as soon as the codec
knows it.

From the database, a page at a time (`page`): the state before the page's first event
is the newest snapshot at or before it plus the events after it (snapshots.load), and
a party's balance is the ledger's, as of each event (ledger.books.asof). From an export
file, offline (`from_file`): the file is checked as `hazard verify FILE` checks it
(ledger.exports.offline.read) and the table's events are run through the same code that
writes the read models, held in memory; a table's export holds no deposits, so a
balance there is the party's net over the file's events (BASIS).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import sqlalchemy as sa

import engine as hz
from ledger.books import asof, auditreads, disputeviews, tableviews
from ledger.books.accounts import TABLE_PREFIX, transfers_of
from ledger.exports import offline
from ledger.store import snapshots
from ledger.store.eventstore import EventStore, decode_row

ESCROW = "escrow:"
"""A bet's escrow in the ledger's names (accounts.book_account): money in passage, not a
party's, so its balance is not shown."""

BASIS = {
    "ledger": "each party's balance in the ledger, before and after the event",
    "file": "each party's net over the export file's events before and after this one: a "
    "table's export holds no deposits, so this is what the party won or lost at the "
    "table from the file's first event (a whole-log export holds every deposit: there "
    "it is the balance)",
}
"""What `balances` means, by where the replay reads from."""


@dataclass(frozen=True)
class Step:
    """One event of a replay, and what it did."""

    position: int
    version: int
    type: str
    payload: dict[str, Any]
    actor: str
    recorded_at: str
    state: hz.TableState
    """The table after the event."""
    transfers: list[dict[str, Any]]
    """The money the event moved, in ledger accounts."""
    settlements: list[dict[str, Any]] = field(default_factory=list)
    """The settlements it made: its own, if it closed a bet; those it decided, if it is
    the throw, the departure, the pass or the closing that settled or voided them."""
    balances: list[dict[str, Any]] = field(default_factory=list)
    """Each party it moved money for (every account but an escrow): before and after."""


def parties(transfers: Iterable[Mapping[str, Any]]) -> list[str]:
    """The accounts money moved for, escrows aside, in order of name."""
    return sorted(
        {a for t in transfers for a in (t["source"], t["target"]) if not a.startswith(ESCROW)}
    )


# -- from the database --------------------------------------------------------------


def page(
    conn: sa.Connection,
    store: EventStore,
    stream: str,
    first_version: int,
    last_version: int | None,
    after: int,
    limit: int,
    disputed: Sequence[int] | None = None,
) -> tuple[list[Step], int | None]:
    """The steps of the table's events of versions `first_version` to `last_version`
    (to its head when None), at most `limit` after position `after`, and the `after` of
    the next page (None on the last). A round's (`disputed`: its own disputes, which
    came after it) are read as its events are (tableviews.span_events)."""
    rows = tableviews.span_events(
        conn, stream, first_version, last_version, after, limit + 1, disputed
    )
    more = len(rows) > limit
    rows = rows[:limit]
    if not rows:
        return [], None
    state = snapshots.load(store, stream, at_version=rows[0].version - 1)
    steps = []
    for row in rows:
        if row.version != state.version + 1:  # a dispute of the round, played later
            state = snapshots.load(store, stream, at_version=row.version - 1)
        event = decode_row(row)
        state = hz.fold([event], state)
        steps.append(_step(row, stream, event, state))
    near = auditreads.settlements_near(conn, stream, steps[0].position, steps[-1].position)
    steps = _with_settlements(steps, near)
    steps = _with_ledger_balances(conn, steps)
    return steps, steps[-1].position if more else None


def round_page(
    conn: sa.Connection, store: EventStore, row: Any, after: int, limit: int
) -> tuple[list[Step], int | None]:
    """`page` over the round of the rounds read model's `row`, then its disputes, their
    resolutions and the adjustments they made, which came after it."""
    disputed = disputeviews.round_versions(conn, row.stream, row.round)
    return page(
        conn, store, row.stream, row.first_version, row.last_version, after, limit, disputed
    )


def _step(row: Any, stream: str, event: Any, state: hz.TableState) -> Step:
    return Step(
        position=row.position,
        version=row.version,
        type=row.type,
        payload=json.loads(row.payload),
        actor=row.actor,
        recorded_at=row.recorded_at,
        state=state,
        transfers=[
            {"source": t.source, "target": t.target, "amount": t.amount}
            for t in transfers_of(stream, event)
        ],
    )


def _with_settlements(steps: list[Step], rows: Sequence[Mapping[str, Any]]) -> list[Step]:
    views = [settlement_view(r) for r in rows]
    return [
        _replace(
            step,
            settlements=[
                v
                for v in views
                if step.position in v["sources"]
                and (v["position"] == step.position or step.payload.get("bet_id") != v["bet_id"])
            ],
        )
        for step in steps
    ]


def settlement_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """A settlements row, stored or held, as the API shows one (tableviews.settlements)."""
    return {
        "position": row["position"],
        "table": row["stream"].removeprefix(TABLE_PREFIX),
        "round": row["round"],
        "bet_id": row["bet_id"],
        "kind": row["kind"],
        "outcome": row["outcome"],
        "winner": row["winner"],
        "reason": row["reason"],
        "recorded_at": row["recorded_at"],
        "transfers": json.loads(row["transfers"]),
        "sources": json.loads(row["sources"]),
        # As the settlement was made, at its step: a later dispute's adjustments are steps
        # of their own when the replay reaches them.
        "adjustments": [],
    }


def _with_ledger_balances(conn: sa.Connection, steps: list[Step]) -> list[Step]:
    """Each step with its parties' ledger balances either side of it: each party's
    balance before the page (asof.balance_at), then its postings on the page, whatever
    stream made them (a deposit between two throws counts)."""
    lo, hi = steps[0].position, steps[-1].position
    balance: dict[str, int] = {}
    moves: dict[str, dict[int, int]] = {}
    for account in parties(t for step in steps for t in step.transfers):
        balance[account] = asof.balance_at(conn, account, lo - 1)
        moves[account] = {}
        for position, amount in asof.postings_between(conn, account, lo, hi):
            moves[account][position] = moves[account].get(position, 0) + amount
    done: list[Step] = []
    last = lo - 1
    for step in steps:
        for account, at in moves.items():  # what moved between the last step and this one
            balance[account] += sum(a for pos, a in at.items() if last < pos < step.position)
        lines = []
        for account in parties(step.transfers):
            before = balance[account]
            balance[account] += moves[account].get(step.position, 0)
            lines.append({"account": account, "before": before, "after": balance[account]})
        last = step.position
        done.append(_replace(step, balances=lines))
    return done


def _replace(step: Step, **changes: Any) -> Step:
    return dataclasses.replace(step, **changes)


# -- from an export file --------------------------------------------------------------


class NotInFile(LookupError):
    """The file has no such table, or not that round of it."""


def from_file(
    lines: Iterable[bytes],
    table: str,
    round: int | None = None,
    key: Any = None,
) -> Iterator[Step]:
    """The steps of `table`'s events in the export `lines` (of its round `round` only,
    when given), checked as `hazard verify FILE` checks the whole file: a file that
    does not verify raises offline.Disagreement, from the line it first disagrees at
    (after any steps of earlier lines). NotInFile if the table or round is not there."""
    stream = TABLE_PREFIX + table
    net: dict[str, int] = {}
    balances: dict[int, list[dict[str, Any]]] = {}
    kept = _Kept()
    replay = tableviews.Replay(cast(sa.Connection, None))
    replay.views = kept
    seen_table = False
    shown = False
    for item in offline.read(lines, key):
        if isinstance(item, offline.Snapshot) and item.stream == stream:
            replay.states[stream] = item.state
            continue
        if not isinstance(item, offline.EventLine):
            continue
        moved = [
            {"source": t.source, "target": t.target, "amount": t.amount}
            for t in transfers_of(item.row.stream, item.event)
        ]
        lines_ = []
        for account in parties(moved):
            before = net.get(account, 0)
            after = before + _net(moved, account)
            net[account] = after
            lines_.append({"account": account, "before": before, "after": after})
        if item.row.stream != stream:
            continue
        seen_table = True
        balances[item.row.position] = lines_
        replay.feed([item.row])
        for step in kept.ready(round, done=False):
            shown = True
            yield _replace(step, balances=balances.pop(step.position, []))
    replay.finish()
    for step in kept.ready(round, done=True):
        shown = True
        yield _replace(step, balances=balances.pop(step.position, []))
    if not seen_table:
        raise NotInFile(f"the file holds no event of table {table!r}")
    if round is not None and not shown:
        raise NotInFile(f"the file holds no round {round} of table {table!r}")


def _net(transfers: list[dict[str, Any]], account: str) -> int:
    """What `transfers` move into `account`, less what they move out of it."""
    gained = sum(t["amount"] for t in transfers if t["target"] == account)
    return int(gained - sum(t["amount"] for t in transfers if t["source"] == account))


class _Kept(tableviews.Held):
    """The read models of a file's table, held in memory and never written: the steps
    `apply` folded, the rounds it finished and the settlements it made, until `ready`
    hands them on."""

    def __init__(self) -> None:
        super().__init__(cast(sa.Connection, None))
        self.steps: list[tableviews.Step] = []
        self.finished: list[dict[str, Any]] = []
        self.closed: list[dict[str, Any]] = []
        self.round_seen = False
        """Whether the round replayed has been handed on: its disputes follow it."""

    def seen(self, stream: str, steps: Any) -> None:
        super().seen(stream, steps)
        self.steps += steps

    def write_disputes(self, stream: str, steps: Any) -> None:
        """Nothing: a file's replay reads a round's disputes off its steps (`_about`)."""

    def flush(self, everything: bool = False) -> None:
        # Every round but each table's latest is finished (Held.flush), and kept here.
        for held in self.held.values():
            latest = max(held, default=0)
            for number in sorted(held):
                if everything or number != latest:
                    self.finished.append(held.pop(number))
        self.closed += self.settlements
        self.settlements, self.parties = [], []

    def ready(self, round: int | None, done: bool) -> Iterator[Step]:
        """The steps that can be handed on now: with `round`, once that round has
        finished (or the file ended), its events; without, every step folded."""
        out: list[tableviews.Step] = []
        if round is None:
            out, self.steps = self.steps, []
        else:
            for record in self.finished:
                first, last = record["first_version"], record["last_version"]
                if record["round"] == round:
                    out += [
                        s
                        for s in self.steps
                        if first <= s.row.version <= last and not _is_dispute(s)
                    ]
                    self.round_seen = True
                self.steps = [s for s in self.steps if s.row.version > last or _about(s, round)]
            self.finished = []
            if self.round_seen:  # its disputes, after it, as the database's round replay
                out += [s for s in self.steps if _about(s, round)]
                self.steps = [s for s in self.steps if not _about(s, round)]
            if done:
                self.steps = []
        made = _with_settlements(
            [_step(s.row, s.row.stream, s.event, s.after) for s in out], self.closed
        )
        # An act and the closings it decides are applied together (Replay cuts between
        # them never), so a settlement older than every step still held names none.
        oldest = min((s.row.position for s in self.steps), default=None)
        self.closed = [] if oldest is None else [r for r in self.closed if r["position"] >= oldest]
        yield from made


def _is_dispute(step: tableviews.Step) -> bool:
    return step.row.type in disputeviews.DISPUTE_TYPES


def _about(step: tableviews.Step, round: int) -> bool:
    """Whether `step` is a dispute event of round `round` (one that a dispute wrote)."""
    return _is_dispute(step) and getattr(step.event, "round", None) == round
