"""The tables a restore fills (ledger.exports.restore): whether they are empty, the
checkpoints it writes, the accounts it made, and on PostgreSQL the checks it leaves to
the end.

The events and the tree's hashes it writes by name (db.insert_tuples), as fast as the
driver takes them; the read models, through the books' own replay.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import compress
from operator import is_not
from typing import Any

import sqlalchemy as sa

from ledger.store.log import sealing
from ledger.store.log.heads import SEALS, Head, Heads
from ledger.store.schema import (
    accounts,
    checkpoints,
    dice_counts,
    events,
    main_counts,
    main_tables,
    postings,
    rounds,
    settlement_parties,
    settlements,
    snapshots,
    tree_hashes,
)

HELD = (
    tree_hashes,
    checkpoints,
    accounts,
    postings,
    settlements,
    settlement_parties,
    rounds,
    snapshots,
    dice_counts,
    main_counts,
    main_tables,
)
"""What a restore fills besides the events: each must be empty before it starts."""


def event_count(conn: sa.Connection) -> int:
    """How many events the log holds."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())


def first_filled(conn: sa.Connection) -> str | None:
    """The name of the first table of HELD that holds a row, if any."""
    for table in HELD:
        if conn.execute(sa.select(sa.literal(1)).select_from(table).limit(1)).first():
            return table.name
    return None


def write_checkpoints(conn: sa.Connection, ready: Sequence[tuple[int, str, str, str]]) -> None:
    """Store the checkpoints `ready`, each (size, root, issued_at, note), in one statement."""
    conn.execute(
        checkpoints.insert(),
        [{"size": s, "root": r, "issued_at": at, "note": note} for s, r, at, note in ready],
    )


def account_count(conn: sa.Connection) -> int:
    """How many accounts the books hold, the bets' escrows aside."""
    return int(
        conn.execute(
            sa.select(sa.func.count())
            .select_from(accounts)
            .where(~accounts.c.account.startswith("escrow:"))
        ).scalar_one()
    )


# -- The seals' heads, as the offline check folded them ---------------------------------


class HeadsSeen:
    """The heads each seal of a whole log commits, as the offline check folded them
    (ledger.exports.offline.complete): read at each seal, right after the check held
    the seal to them, as the heads that moved since the seal before it (a head moved is
    a new `Head` object; one not moved is the same object)."""

    def __init__(self) -> None:
        self.last: list[Head] = []

    def moved(self, heads: Heads) -> list[tuple[int, Head]]:
        """The heads of `heads` (at a seal) set since the last seal, by index."""
        now, last = heads.heads, self.last
        moved = [(i, now[i]) for i in compress(range(len(last)), map(is_not, now, last))]
        moved += [(i, now[i]) for i in range(len(last), len(now))]
        self.last = list(now)
        return moved


LOOSE = 4096
"""Events after a seal kept unfolded, for the next seal's heads to stand for (a write's
events: bench.seed's seals are at most 2,046 apart); past that many, folded."""


class TakenSeals(sealing.Rebuild):
    """`heads_log` written from the heads the offline check folded (`HeadsSeen`), not
    folded from the events a second time: each seal's row carries `moved` (the heads
    set since the seal before it, by index). Once a seal has come with them, the
    events after each seal are kept until the next, whose heads stand for them; past
    `LOOSE` of them, or before the first such seal (a log from before seals, a file
    whose heads the check does not fold), or after the last, they are folded as
    `sealing.Rebuild` folds them, a batch at a time. Either way each head ends as the
    check found it, at the same index."""

    def __init__(self, conn: sa.Connection) -> None:
        super().__init__(conn)
        self.loose: list[Any] = []
        self.taking = False
        """Whether a seal has come with its heads: the next will too."""

    def feed(self, rows: Sequence[Any]) -> None:
        for row in rows:
            if row.stream != SEALS:
                self.loose.append(row)
                if len(self.loose) >= LOOSE:
                    self._fold_loose()
                continue
            moved: list[tuple[int, Head]] | None = getattr(row, "moved", None)
            if moved is None:
                self._fold_loose()
                super().feed([row])
                continue
            self.taking, self.loose = True, []
            heads = self.heads
            for i, head in moved:
                if heads.set(head) != i:
                    raise sealing.SealError(row.position, f"head {i} is not where the check had it")
            sealing.store_moved(self.conn, row.position, moved)
            sealing.sealed(heads, row)
            self.moved = {}
        if not self.taking:  # no seal to stand for them: held, a log would be held whole
            self._fold_loose()

    def _fold_loose(self) -> None:
        loose, self.loose = self.loose, []
        self._fold(loose)

    def finish(self) -> Heads:
        self._fold_loose()
        return super().finish()


# -- PostgreSQL: what the server checks row by row, checked once at the end ------------

_FOREIGN_KEYS_SQL = (
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE contype = 'f' AND connamespace = current_schema()::regnamespace"
    " ORDER BY conrelid::regclass::text, conname"
)
TIME_TRIGGER = "events_refuse_earlier"
"""The trigger that refuses an event recorded before the one before it (migration 0013)."""

_EARLIER_SQL = (
    # The trigger's two refusals (migrations/versions/0013_time_forward.py), over every
    # event at once: a recorded_at not in the store's one form, or earlier (in byte
    # order, which is time order for that form) than the event's before it.
    "SELECT position, recorded_at, before, formed FROM (SELECT position, recorded_at,"
    " lag(recorded_at) OVER (ORDER BY position) AS before,"
    r" recorded_at ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$' AS formed"
    ' FROM events) AS e WHERE NOT formed OR recorded_at COLLATE "C" < before COLLATE "C"'
    " ORDER BY position LIMIT 1"
)


class Earlier(Exception):
    """An event restored is recorded before the one before it, or not in the one form
    the store writes: what the time trigger refuses, found at the end."""


@contextmanager
def checked_once(conn: sa.Connection) -> Iterator[None]:
    """On PostgreSQL, the checks the server would run for every row the restore
    writes, run once over all of them before it commits, the guarantees left in the
    database as they were. Each foreign key is dropped and added back as it was
    (pg_get_constraintdef), which checks every row in one pass; the trigger that
    refuses an event earlier than the one before it is off while the events are
    written, and on again after one query has held every event to what it refuses.
    Together, a third of the server's work in a restore (bench.exports). Nothing
    else is touched: the events' refusal of UPDATE and DELETE stays on throughout.

    The restore's transaction holds it all: a restore that fails rolls the keys and
    the trigger back with the rows. Without the right to alter the tables (not their
    owner), if another session holds them past the lock timeout, and on SQLite, every
    row is checked as it is written."""
    if conn.dialect.name != "postgresql":
        yield
        return
    keys = [tuple(r) for r in conn.exec_driver_sql(_FOREIGN_KEYS_SQL)]
    try:
        with conn.begin_nested():
            for table, name, _ in keys:
                conn.exec_driver_sql(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
            conn.exec_driver_sql(f"ALTER TABLE events DISABLE TRIGGER {TIME_TRIGGER}")
        deferred = True
    except (sa.exc.ProgrammingError, sa.exc.OperationalError):
        # Not the tables' owner, or another session held them past the lock timeout:
        # the server checks each row as it is written, as it would for any write.
        deferred = False
    yield
    if not deferred:
        return
    conn.exec_driver_sql(f"ALTER TABLE events ENABLE TRIGGER {TIME_TRIGGER}")
    earlier = conn.exec_driver_sql(_EARLIER_SQL).first()
    if earlier is not None:
        position, at, before, formed = earlier
        raise Earlier(
            f"the event at position {position} is recorded at {at}, earlier than {before} "
            "of the event before it: time only goes forward"
            if formed
            else f"the event at position {position} is recorded at {at}, not written "
            "YYYY-MM-DDTHH:MM:SS.ffffffZ"
        )
    for table, name, definition in keys:
        conn.exec_driver_sql(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
