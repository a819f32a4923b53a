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


def _rewrite(conn: sa.Connection, rows: list[Recorded]) -> None:
    """Store `rows` as the whole log, made again as the bank's code would have written
    it (tamperkit.remade: positions from 1, each stream's versions and chain, every
    seal), heads_log and the tree rebuilt, and a checkpoint signed anew with the bank's
    own key at each seal, as each write signs one, saying the time the checkpoint of
    that seal's write had said."""
    stored = conn.execute(sa.text("SELECT size, issued_at FROM checkpoints"))
    issued = {size: at for size, at in stored}
    fresh = remade(rows)
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
    conn.execute(sa.text("DELETE FROM checkpoints"))
    conn.execute(sa.text("DELETE FROM tree_hashes"))
    tree.build(conn)
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


ATTACKS: dict[str, Attack] = {
    "the consistent rewrite": consistent_rewrite,
    "an amount rewritten": amount_rewritten,
    "two events reordered": reordered,
    "a deposit dropped and the rest renumbered": deposit_dropped,
}
