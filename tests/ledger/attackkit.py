"""What a dishonest bank, or an insider holding its signing key and its database, can
do to a played log: every attack leaves a log that is whole by its own lights (each
hash chain, every write's seal and the heads it commits, the tree and every checkpoint
made again and signed with the bank's real key, the read models rebuilt), so that
`hazard verify --deep` on the database alone passes. Only something kept outside the
bank's reach (a witness's state, a watcher's file, gossip) can tell. Shared by the
witnessing tests of the ledger and the API.

Each attack works on the database in place, as the insider would, behind the
append-only triggers (tamperkit.unguarded), and returns the newest checkpoint note it
signed, the one the bank would now serve. The cosignatures witnesses returned and the
gossip are left as they were: what the insider does with them is the test's to say.

The evening attacked is tamperkit.play's, played on `clock()`: the consistent rewrite
plays it again on the same clock, so that all it changes is what it means to.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from ledger.books import projections
from ledger.store import codec, schema
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log import merkle, tree
from ledger.store.log.heads import SEALS
from tests.ledger.tamperkit import Log, play, rebuild_heads, remade, unguarded
from tests.signing import SIGNER

Attack = Callable[[Log], str]

EVENING = datetime(2026, 11, 23, 20, 0, tzinfo=UTC)
KEPT = {"alembic_version", "tokens", "cosignatures", "gossip", "witness_states"}
"""What the consistent rewrite leaves: the bank's tokens and its schema, and what
witnesses and others said (the insider's to keep or drop, as the test says)."""


def clock(start: datetime = EVENING) -> Callable[[], str]:
    """The evening's clock: a write a second from `start`, 20:00 on 23 November 2026
    unless told. Two evenings played on two of these are at the same times, write for
    write."""
    seconds = itertools.count()

    def now() -> str:
        at = start + timedelta(seconds=next(seconds))
        return at.isoformat(timespec="microseconds").replace("+00:00", "Z")

    return now


def _rows(conn: sa.Connection) -> list[Recorded]:
    result = conn.execute(sa.text("SELECT * FROM events ORDER BY position"))
    return [Recorded(**row._mapping) for row in result]


def _rewrite(
    conn: sa.Connection, rows: list[Recorded], versions: bool = True, resign: bool = True
) -> None:
    """Store `rows` as the whole log, made again as the bank's code would have written
    it (tamperkit.remade: positions from 1, each stream's chain and, unless told not to,
    its versions, every seal), heads_log and the tree rebuilt, and a checkpoint signed
    anew with the bank's own key at each seal, as each write signs one, saying the time
    the checkpoint of that seal's write had said; unless told not to, when the
    checkpoints stored are left as they were."""
    stored = conn.execute(sa.text("SELECT size, issued_at FROM checkpoints"))
    issued = {size: at for size, at in stored}
    fresh = remade(rows, versions=versions)
    conn.execute(sa.text("DELETE FROM events"))
    conn.execute(
        sa.text(
            "INSERT INTO events (position, stream, version, type, schema_version, payload, "
            "actor, idempotency_key, recorded_at, prev_hash, hash) VALUES (:position, "
            ":stream, :version, :type, :schema_version, :payload, :actor, "
            ":idempotency_key, :recorded_at, :prev_hash, :hash)"
        ),
        [row._asdict() for row in fresh],
    )
    rebuild_heads(conn, fresh)
    conn.execute(sa.text("DELETE FROM tree_hashes"))
    tree.build(conn)
    if not resign:
        return
    conn.execute(sa.text("DELETE FROM checkpoints"))
    for old, new in zip(rows, fresh, strict=True):
        if new.stream == SEALS:  # where a write ended, and its checkpoint
            size = new.position
            root = merkle.tree_hash(size, tree.reader(conn))
            tree.issue(conn, SIGNER, size, root, issued[old.position])


def _newest(log: Log) -> str:
    with log.engine.connect() as conn:
        note = conn.execute(sa.text("SELECT note FROM checkpoints ORDER BY size DESC")).first()
    assert note is not None
    return str(note[0])


def _rebuilt(log: Log) -> str:
    store = EventStore(log.engine, signer=SIGNER)
    try:
        projections.rebuild(store)
    finally:
        store.close()
    return _newest(log)


def _amount(payload: str, factor: int) -> str:
    data = json.loads(payload)
    data["amount"] *= factor
    return codec.canonical(data).decode()


def amount_rewritten(log: Log) -> str:
    """A deposit of ann's made ten times larger, and the read models rebuilt."""
    with unguarded(log) as conn:
        rows = _rows(conn)
        at = next(
            i
            for i, r in enumerate(rows)
            if r.stream == "account:player:ann" and r.type == "Deposited"
        )
        rows[at] = rows[at]._replace(payload=_amount(rows[at].payload, 10))
        _rewrite(conn, rows)
    return _rebuilt(log)


def reordered(log: Log) -> str:
    """Two deposits of different players swapped in the log's order, each taking the
    other's time, so that time still goes forward with position."""
    with unguarded(log) as conn:
        rows = _rows(conn)
        deposits = [i for i, r in enumerate(rows) if r.type == "Deposited"]
        first = deposits[-1]
        second = next(i for i in reversed(deposits) if rows[i].stream != rows[first].stream)
        rows[first], rows[second] = (
            rows[second]._replace(recorded_at=rows[first].recorded_at),
            rows[first]._replace(recorded_at=rows[second].recorded_at),
        )
        _rewrite(conn, rows)
    return _rebuilt(log)


def deposit_dropped(log: Log) -> str:
    """One of bob's deposits taken out with its write's seal (the write was the deposit
    alone), as if that write had never been, and every later event renumbered."""
    with unguarded(log) as conn:
        rows = _rows(conn)
        at = next(
            i
            for i, r in reversed(list(enumerate(rows)))
            if r.stream == "account:player:bob" and r.type == "Deposited"
        )
        assert rows[at - 1].stream == rows[at + 1].stream == SEALS, "a write of its own"
        del rows[at : at + 2]
        _rewrite(conn, rows)
    return _rebuilt(log)


def payload_rewritten(
    log: Log, kind: str, edit: Callable[[dict[str, Any]], None], position: int | None = None
) -> str:
    """The log's last event of type `kind` (or the one at `position`) with its payload
    changed by `edit`, everything made again from it with the bank's key (each hash
    chain, the tree, every checkpoint) and the read models rebuilt."""
    return payloads_rewritten(log, [(kind, edit, position)])


def payloads_rewritten(
    log: Log, edits: list[tuple[str, Callable[[dict[str, Any]], None], int | None]]
) -> str:
    """`payload_rewritten` of several events at once."""
    with unguarded(log) as conn:
        rows = _rows(conn)
        for kind, edit, position in edits:
            at = max(
                i for i, r in enumerate(rows) if r.type == kind and position in (None, r.position)
            )
            data = json.loads(rows[at].payload)
            edit(data)
            rows[at] = rows[at]._replace(payload=codec.canonical(data).decode())
        _rewrite(conn, rows)
    return _rebuilt(log)


def _paid_less(data: dict[str, Any]) -> None:
    data["transfers"][0]["amount"] -= 20


def payout_rewritten(log: Log) -> str:
    """The last payout made 20 smaller (the evening's 800 paid as 780), the 20 left in
    the bet's escrow: every read model is what the events make, but the events are not
    what the rules make. Not one of ATTACKS, which `hazard verify --deep` passes: the
    rules it applies find this one."""
    return payload_rewritten(log, "BetSettled", _paid_less)


def dropped(log: Log, position: int, versions: bool = True, resign: bool = True) -> str:
    """The event at `position` taken out (with its write's seal, when it was the
    write's one event) and every later one renumbered, each stream's
    chain made again (its versions too, unless told not to: then its stream skips a
    version where the event was), the tree and every checkpoint made again with the
    bank's key (the checkpoints left as they were, if told not to), and the read models
    rebuilt."""
    with unguarded(log) as conn:
        every = _rows(conn)
        at = position - 1
        # A write of that one event goes whole, its seal with it, as an insider would
        # take it out: a seal of no events would say where.
        alone = every[at - 1].stream == SEALS if at else True
        seal = at + 1 < len(every) and every[at + 1].stream == SEALS
        gone = {position, position + 1} if alone and seal else {position}
        rows = [r for r in every if r.position not in gone]
        _rewrite(conn, rows, versions, resign)
    return _rebuilt(log)


def consistent_rewrite(log: Log) -> str:
    """The round's deciding throw made another, as consistent with the rules as the
    first: ann's 1+3, which nicked her chance of 4, made a 3+4, which throws her out,
    so that the two bets on it are paid to the other side. The whole evening is played
    again through the service, on the same clock and with the bank's key, into the
    emptied database: every event after the throw, every hash, the tree, every
    checkpoint and every read model are what the service makes of those dice."""
    with unguarded(log) as conn:
        for table in reversed(schema.metadata.sorted_tables):
            if table.name not in KEPT:
                conn.execute(table.delete())
    store = EventStore(log.engine, clock=clock(), signer=SIGNER)
    try:
        play(store, last_throw=(3, 4))
    finally:
        store.close()
    return _newest(log)


def _moved(at: str, by: timedelta) -> str:
    moved = datetime.fromisoformat(at) + by
    return moved.isoformat(timespec="microseconds").replace("+00:00", "Z")


STEPPED_BACK = 20
"""How many of the log's last events a clock stepped back recorded."""


def clock_stepped_back(log: Log) -> str:
    """The log's last STEPPED_BACK events recorded by a clock stepped back ten minutes,
    as a server whose clock was set back would have written them had nothing held it,
    and everything made again and signed with the bank's key (at the times it had said).
    `stepped_back_at` is where."""
    with unguarded(log) as conn:
        rows = _rows(conn)
        back = -timedelta(minutes=10)
        for i in range(len(rows) - STEPPED_BACK, len(rows)):
            rows[i] = rows[i]._replace(recorded_at=_moved(rows[i].recorded_at, back))
        _rewrite(conn, rows)
    return _rebuilt(log)


def back_dated(log: Log) -> str:
    """One of bob's last deposits given the time of the evening's first write, and
    everything made again and signed with the bank's key: `stepped_back_at` is where."""
    with unguarded(log) as conn:
        rows = _rows(conn)
        at = next(
            i
            for i, r in reversed(list(enumerate(rows)))
            if r.stream == "account:player:bob" and r.type == "Deposited"
        )
        rows[at] = rows[at]._replace(recorded_at=rows[0].recorded_at)
        _rewrite(conn, rows)
    return _rebuilt(log)


def stepped_back_at(log: Log) -> int:
    """The first position whose event is recorded before the one before it."""
    rows = log.rows()
    return next(b.position for a, b in itertools.pairwise(rows) if b.recorded_at < a.recorded_at)


def checkpoints_back_dated(log: Log) -> str:
    """Every checkpoint signed again with the bank's key, each an hour before the events
    it covers: the first is `log`'s first checkpoint."""
    with unguarded(log) as conn:
        issued = conn.execute(sa.text("SELECT size, issued_at FROM checkpoints ORDER BY size"))
        issued = [(size, _moved(at, -timedelta(hours=1))) for size, at in issued.all()]
        conn.execute(sa.text("DELETE FROM checkpoints"))
        for size, issued_at in issued:
            tree.issue(conn, SIGNER, size, merkle.tree_hash(size, tree.reader(conn)), issued_at)
    return _newest(log)


def first_checkpoint(log: Log) -> int:
    with log.engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT min(size) FROM checkpoints")).scalar_one())


ATTACKS: dict[str, Attack] = {
    "the consistent rewrite": consistent_rewrite,
    "an amount rewritten": amount_rewritten,
    "two events reordered": reordered,
    "a deposit dropped and the rest renumbered": deposit_dropped,
}
