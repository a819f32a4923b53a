"""Every table of the log in the database replayed through the engine's referee: what
`hazard verify --deep` checks besides the read models.

The read models say what the events make; the referee says whether the events are what
the rules make. Each table's stream is run through engine.referee by the code that runs
an export's tables offline (ledger.exports.offline.tables): every command run again
from the table's opening, under the rule set its TableOpened names, each event it
derives held to the one stored, a server-dice turn's throws drawn again from its
revealed seed, and each dispute judged on the record of its round. So a payout
rewritten, with its stream's chain, the tree and every checkpoint made again with the
bank's key and the read models rebuilt, passes every other check, and is named here:
the first event the rules do not allow, by position, stream and version, and why.

A table at a time: its events are read in version order a batch at a time and decoded
by the store's batched decode (eventstore.decode_rows), so that memory holds one
table's state and one batch, however long the log. Everything is read in one
transaction that sees one state of the log (db.snapshot). The other streams (the
accounts') have no rules of the game to break: the read models' check covers them.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ledger.books.accounts import TABLE_PREFIX
from ledger.exports.offline.tables import Tables
from ledger.exports.verdict import Disagreement
from ledger.store import db
from ledger.store.eventstore import CorruptEvent, decode_rows

BATCH = 20_000
"""Events read per query."""

Progress = Callable[[int, int, int], None]
"""Called after each table: (tables done, tables in the log, events replayed so far)."""

_STREAM_AFTER = "SELECT min(stream) FROM events WHERE stream > ?"
_EVENTS = (
    "SELECT type, schema_version, version, payload, position FROM events"
    " WHERE stream = ? AND version > ? ORDER BY version LIMIT ?"
)


@dataclass(frozen=True)
class Breach:
    """The first event the rules do not allow: where it is, and why."""

    position: int
    stream: str
    version: int
    reason: str
    """Which table and version, and what the engine derives there instead or which rule
    it breaks, in the referee's words (those of `hazard verify FILE`)."""

    def __str__(self) -> str:
        return f"position {self.position}: {self.reason}"


@dataclass
class Refereed:
    """What the replay found."""

    tables: int = 0
    """Tables replayed."""
    events: int = 0
    """Their events run through the referee (of a table at fault, up to its breach)."""
    breaches: list[Breach] = field(default_factory=list)
    """The first event the rules do not allow at each table at fault, in position order
    (a table's referee cannot go on past one: its state would be the log's, not the
    rules')."""
    unjudged: list[str] = field(default_factory=list)
    """What the referees could not judge, in words: the server throws of a turn still
    in play, whose seed is not revealed yet."""

    @property
    def breach(self) -> Breach | None:
        """The first event of the log the rules do not allow."""
        return self.breaches[0] if self.breaches else None

    @property
    def ok(self) -> bool:
        return not self.breaches


def replay(engine: sa.Engine, progress: Progress | None = None, batch: int = BATCH) -> Refereed:
    """Run every table of the log through the referee, one table at a time, each up to
    the first event the rules do not allow."""
    found = Refereed()
    # The cyclic collector held off, as the offline check holds it off: a replay
    # allocates events and table states, none in a cycle, and the collector's passes
    # over them cost a tenth of the time. Reference counting frees them as usual.
    was = gc.isenabled()
    gc.disable()
    try:
        with engine.connect() as conn, conn.begin():
            db.snapshot(conn)
            streams = table_streams(conn)
            for stream in streams:
                found.tables += 1
                tables = Tables(None, source="the log")
                tables.open(stream)
                try:
                    _run(conn, tables, stream, batch, found)
                except Disagreement as exc:
                    found.breaches.append(_breach(conn, stream, exc.line, exc.reason))
                else:
                    found.unjudged += tables.referees_trusted()
                if progress is not None:
                    progress(found.tables, len(streams), found.events)
        found.breaches.sort(key=lambda b: b.position)
    finally:
        if was:
            gc.enable()
    return found


def table_streams(conn: sa.Connection) -> list[str]:
    """Every table's stream in the log, from the events themselves (a read model could
    leave one out): one probe of the (stream, version) index per stream."""
    streams: list[str] = []
    after = TABLE_PREFIX
    while True:
        rows = db.fetch(conn, _STREAM_AFTER, (after,))
        stream = rows[0][0] if rows else None
        if stream is None or not stream.startswith(TABLE_PREFIX):
            return streams
        streams.append(stream)
        after = stream


def _run(conn: sa.Connection, tables: Tables, stream: str, batch: int, found: Refereed) -> None:
    """Every event of `stream` through its referee, each numbered by its position and
    counted in `found`; Disagreement at the first the rules do not allow."""
    version = position = 0
    while rows := db.fetch(conn, _EVENTS, (stream, version, batch)):
        try:
            events = decode_rows([row[:4] for row in rows], functools.partial(_position_of, rows))
        except CorruptEvent as exc:
            raise Disagreement(exc.position, f"the event cannot be read: {exc}") from None
        event_of = tables.event
        for row, event in zip(rows, events, strict=True):
            event_of(row[4], stream, event)
            found.events += 1
        version, position = rows[-1][2], rows[-1][4]
    # A write appends a command's events together, so a stream never ends inside one.
    tables.finish(position, "the table's last event")


def _position_of(rows: list[Any], version: int) -> int:
    return int(next(row[4] for row in rows if row[2] == version))


def _breach(conn: sa.Connection, stream: str, position: int, reason: str) -> Breach:
    """The breach at `position`, with its event's version as stored."""
    found = db.fetch(conn, "SELECT version FROM events WHERE position = ?", (position,))
    return Breach(position, stream, int(found[0][0]) if found else 0, reason)
