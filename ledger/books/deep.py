"""The deep check: every read model recomputed from the events and compared, row by
row, with what is stored.

The read models (accounts, postings, settlements, settlement_parties, rounds, disputes,
adjustments, and the dice-fairness report's counts: dice_counts, main_counts,
main_tables) are caches written beside the events; the events are the truth. So the
check replays every event into an empty scratch database (a temporary SQLite file)
through the very code that writes the read models (`projections.replay`, as `rebuild`
runs it), then walks each table of both databases in key order, side by side (a merge
join over two ordered cursors), and names the first row that differs, with how many
do. Memory stays bounded whatever the size of the log: the events go to the scratch
file a batch at a time, and the comparison holds one row of each side.

Everything stored is read in one transaction (REPEATABLE READ on PostgreSQL, one
WAL snapshot on SQLite), so a write while the check runs is neither half seen nor
reported as a difference.

Postings have no key of their own (their ids are renumbered by a rebuild): a posting
is named by its event's position, its account and its counterparty (and, should an
event post the same pair twice, which of those it is, by amount and running balance).
Its amount and its running balance (the account's balance just after it) are compared.

The evenings' cash-ups are held to the events too (ledger.books.cashup.Replayed): each
line's expected is what the events between the evening's opening and its closing give,
and its difference is counted less expected.

Snapshots are checked too, though they are a cache of state rather than a read model:
loading a table starts from its newest one, so a forged snapshot would decide every
command after it. Each readable one must be the table's events folded to its version.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import engine as hz
from ledger.books import cashup, projections, tableviews
from ledger.store import db, snapshots
from ledger.store.eventstore import (
    CorruptEvent,
    EventStore,
    Known,
    Recorded,
    Refused,
    RowDecoder,
)
from ledger.store.schema import (
    accounts,
    adjustments,
    dice_counts,
    disputes,
    events,
    main_counts,
    main_tables,
    metadata,
    postings,
    rounds,
    settlement_parties,
    settlements,
)
from ledger.store.schema import snapshots as snapshots_table

Progress = Callable[[str, int, int | None], None]
"""Called as the check goes: (step, done, total): step "events" while the events are
replayed (done and total in events), then each table's name while it is compared
(done and total in rows; total None when not known)."""

BATCH = 2000
"""Events replayed, and rows of each side compared, at once: a batch of settlements is
a few MiB on each side, and at 5,000 the batches were a tenth of the check's peak
memory at a million events."""
SEEN = 256
"""Payload texts of each event type whose decoded fields the replay keeps for the next
row with the same text: a table's throws and stakes repeat a few texts, and every
settlement is a text of its own, so more kept only holds memory that grows with the log
up to the store's cap."""
EVERY = 10_000
"""Rows compared between two progress reports."""

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Difference:
    """The first row of a read model that is not what the events make.

    `key` is the row's key (its columns in `KEYS[table]`), `row` says it in words,
    `column` is the first column that differs (None for a row on one side only),
    `stored` and `expected` are its values (None for the side without the row), and
    `rows` counts every row of the table that differs."""

    table: str
    key: Key
    row: str
    column: str | None
    stored: Any
    expected: Any
    rows: int = 1

    @property
    def what(self) -> str:
        if self.expected is None and self.column is None:
            return f"stored {_say(self.stored)}, the events give no such row"
        if self.stored is None and self.column is None:
            return f"not stored, the events give {_say(self.expected)}"
        return f"{self.column}: stored {_say(self.stored)}, the events give {_say(self.expected)}"

    def __str__(self) -> str:
        more = f" ({self.rows - 1} more rows of {self.table} differ)" if self.rows > 1 else ""
        return f"{self.table}: {self.row}: {self.what}{more}"

    def view(self) -> dict[str, Any]:
        """As JSON: what an API answer can carry."""
        return {
            "table": self.table,
            "row": self.row,
            "key": list(self.key),
            "column": self.column,
            "stored": self.stored,
            "expected": self.expected,
            "rows": self.rows,
            "message": str(self),
        }


def _say(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_say(v)}" for k, v in value.items())
    return json.dumps(value)


@dataclass(frozen=True)
class _Model:
    table: sa.Table
    key: tuple[str, ...]
    values: tuple[str, ...]
    label: Callable[[Key], str]


MODELS = (
    _Model(accounts, ("account",), ("balance", "credit_limit"), lambda k: str(k[0])),
    _Model(
        postings,
        ("position", "account", "counterparty", "n"),
        ("amount", "balance"),
        lambda k: f"position {k[0]}, {k[1]} (with {k[2]})" + (f" #{k[3] + 1}" if k[3] else ""),
    ),
    _Model(
        settlements,
        ("position",),
        tuple(c.name for c in settlements.c if c.name != "position"),
        lambda k: f"position {k[0]}",
    ),
    _Model(settlement_parties, ("party", "position"), (), lambda k: f"position {k[1]}, {k[0]}"),
    _Model(
        rounds,
        ("stream", "round"),
        tuple(c.name for c in rounds.c if c.name not in ("stream", "round")),
        lambda k: f"{k[0]} round {k[1]}",
    ),
    _Model(
        disputes,
        ("stream", "dispute_id"),
        tuple(c.name for c in disputes.c if c.name not in ("stream", "dispute_id")),
        lambda k: f"{k[0]} dispute {k[1]}",
    ),
    _Model(
        adjustments,
        ("position",),
        tuple(c.name for c in adjustments.c if c.name != "position"),
        lambda k: f"position {k[0]}",
    ),
    _Model(dice_counts, ("die1", "die2"), ("throws",), lambda k: f"dice {k[0]} and {k[1]}"),
    _Model(
        main_counts,
        ("rules", "main", "caster_won"),
        ("rounds",),
        lambda k: f"rule set {k[0][:12]}, main {k[1]}, " + ("won" if k[2] else "lost"),
    ),
    _Model(main_tables, ("stream",), ("rules",), lambda k: str(k[0])),
)
"""Every read model written from the events, with its key and the columns compared."""
KEYS = {m.table.name: m.key for m in MODELS}


def differences(
    store: EventStore, progress: Progress | None = None, scratch_dir: str | Path | None = None
) -> Iterator[Difference]:
    """The first difference of each read model from what the events make, table by
    table (none: every read model is what the events make). An event the code cannot
    read (or whose money leaves the ledger's range) ends the check with a difference of
    table "events" naming its position. The scratch database lives in `scratch_dir`
    (default: the system's temporary directory) until the check ends."""
    report: Progress = progress or (lambda _step, _done, _total: None)
    with tempfile.TemporaryDirectory(prefix="hazard-deep-", dir=scratch_dir) as where:
        scratch = _scratch_engine(Path(where) / "replayed.sqlite3")
        try:
            with store.engine.connect() as source:
                if source.dialect.name == "postgresql":
                    source = source.execution_options(isolation_level="REPEATABLE READ")
                with source.begin():
                    cashups = cashup.Replayed()
                    with scratch.begin() as replayed:
                        reached = _replay(store, source, replayed, report, cashups)
                    if isinstance(reached, Difference):
                        yield reached
                        return
                    with scratch.connect() as replayed:
                        for model in MODELS:
                            found = _compare(model, source, replayed, report)
                            if found is not None:
                                yield found
                    found = _snapshots(store, source, report, reached)
                    if found is not None:
                        yield found
                    if cashups.problems:
                        yield _cash_ups(cashups.problems)
        finally:
            scratch.dispose()


def _scratch_engine(path: Path) -> sa.Engine:
    """A throwaway SQLite file with the read models' tables and the events table (which
    holds the throws a replay reads back): no journal, no fsync (it is deleted after),
    a bounded page cache."""
    engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=OFF")
        cursor.execute("PRAGMA synchronous=OFF")
        # 4 MiB: at 64 MiB the cache alone was a quarter of the check's memory at a
        # million events (peak RSS 174 MiB over the first 300,000 events' replay,
        # against 86 with this and batches of 2,000), for no more CPU an event that
        # the shared machine could tell; the pages it drops stay in the system's file
        # cache.
        cursor.execute("PRAGMA cache_size=-4096")
        cursor.close()

    metadata.create_all(engine, tables=[events, *(m.table for m in MODELS)])
    return engine


def _replay(
    store: EventStore,
    source: sa.Connection,
    replayed: sa.Connection,
    report: Progress,
    cashups: cashup.Replayed,
) -> Difference | dict[Key, Difference | None]:
    """Replay every event of `source` into the scratch database `replayed`: a
    difference of table "events" if an event cannot be replayed, else what each
    snapshot the replay reached came to (`_Watched`). `cashups` is fed every event on
    the way (the evenings' cash-ups held to the events, ledger.books.cashup)."""
    total = int(source.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())
    last: list[Recorded] = []

    def copied() -> Iterator[Sequence[Recorded]]:
        done = 0
        report("events", 0, total)
        for rows in decoded(source, BATCH):
            # The one read of the events a replay makes on the database it writes to:
            # a dispute's correction reads its throw's dice back (dicetallies._recorded;
            # a settlement's bets come from the replay's memory, tableviews.Held). So
            # the throws alone are copied: the rest were a sixteenth of the check's CPU.
            throws = [row for row in rows if row.type == "DiceThrown"]
            db.insert_tuples(replayed, events.name, Recorded._fields, throws)
            for row in rows:
                cashups.event(row.stream, row.event())
            last[:] = rows
            yield rows
            done += len(rows)
            report("events", done, total)

    tables = tableviews.Replay(replayed)
    watched = tables.views = _Watched(replayed, source)
    try:
        projections.replay(replayed, copied(), tables)
    except CorruptEvent as exc:
        return Difference(
            "events", (exc.position,), f"position {exc.position}", None, str(exc), None
        )
    except Refused as exc:
        span = f"{last[0].position} to {last[-1].position}" if last else "?"
        return Difference("events", (), f"positions {span}", None, str(exc), None)
    return watched.reached


_ALL_EVENTS = (
    f"SELECT {', '.join(Recorded._fields)} FROM events WHERE position > ? ORDER BY position LIMIT ?"
)


def decoded(conn: sa.Connection, batch: int = BATCH) -> Iterator[list[Known]]:
    """Every event of the log in position order, `batch` at a time, each row with its
    event decoded once: the postings and the tables' views both ask a row for its
    event (Known), and a row of SQLAlchemy's cost as much again as reading it. The
    store's fast decode (RowDecoder), which gives what `decode_row` gives, or raises
    the same CorruptEvent naming the row's position."""
    decode = RowDecoder(seen=SEEN)
    after = 0
    while rows := db.fetch(conn, _ALL_EVENTS, (after, batch)):
        yield [Known.of(row, decode(row[0], row[3], row[4], row[2], row[5])) for row in rows]
        after = rows[-1][0]


def _compare(
    model: _Model, source: sa.Connection, replayed: sa.Connection, report: Progress
) -> Difference | None:
    """The first row of `model` that differs between what is stored (`source`) and
    what the events make (`replayed`), with how many do."""
    name = model.table.name
    total = int(replayed.execute(sa.select(sa.func.count()).select_from(model.table)).scalar_one())
    report(name, 0, total)
    if _same(model, source, replayed):
        report(name, total, total)
        return None
    stored, expected = _rows(model, source), _rows(model, replayed)
    first: Difference | None = None
    count = done = 0
    for key, mine, theirs in _merged(stored, expected):
        done += 1
        if done % EVERY == 0:
            report(name, done, total)
        found = _differs(model, key, mine, theirs)
        if found is None:
            continue
        count += 1
        first = first or found
    report(name, done, total)
    if first is None:
        return None
    return Difference(
        first.table, first.key, first.row, first.column, first.stored, first.expected, count
    )


def _differs(
    model: _Model, key: Key, stored: tuple[Any, ...] | None, expected: tuple[Any, ...] | None
) -> Difference | None:
    name, label = model.table.name, model.label(key)
    if stored is None or expected is None:
        side = stored if expected is None else expected
        assert side is not None
        values = dict(zip(model.values, side, strict=True)) or dict(
            zip(model.key, key, strict=False)
        )
        return Difference(
            name,
            key,
            label,
            None,
            values if expected is None else None,
            values if stored is None else None,
        )
    for column, mine, theirs in zip(model.values, stored, expected, strict=True):
        if mine != theirs:
            return Difference(name, key, label, column, mine, theirs)
    return None


def _rows(model: _Model, conn: sa.Connection) -> Iterator[tuple[Key, tuple[Any, ...]]]:
    """(key, values) of every row of the model in key order, read a batch at a time
    (a server-side cursor on PostgreSQL)."""
    table = model.table
    query = _ordered(model, conn).execution_options(yield_per=BATCH)
    width = len(model.key) - (1 if table is postings else 0)
    if table is not postings:
        for row in conn.execute(query):
            yield tuple(row[:width]), tuple(row[width:])
        return
    previous: Key | None = None
    n = 0
    for row in conn.execute(query):
        pair = tuple(row[:width])
        n = n + 1 if pair == previous else 0
        previous = pair
        yield (*pair, n), tuple(row[width:])


def _ordered(model: _Model, conn: sa.Connection) -> sa.Select[Any]:
    """Every row of the model, its key's columns (but a posting's `n`, which `_rows`
    counts) then its values, in key order: a posting's in the order of all its columns,
    so that two postings alike but for their amount or balance come in one order on
    either side. Strings are ordered by their bytes (COLLATE "C" on PostgreSQL,
    SQLite's own order), which is Python's order of str."""
    table = model.table
    ordering = [c for c in model.key if c != "n"] + (
        ["amount", "balance"] if table is postings else []
    )
    postgres = conn.dialect.name == "postgresql"
    order = [
        table.c[c].collate("C")
        if postgres and isinstance(table.c[c].type, sa.String)
        else table.c[c]
        for c in ordering
    ]
    columns = [table.c[c] for c in (*[c for c in model.key if c != "n"], *model.values)]
    return sa.select(*columns).order_by(*order)


def _same(model: _Model, source: sa.Connection, replayed: sa.Connection) -> bool:
    """Whether the model's rows stored are the rows the events make, every one.

    The check's fast path: both sides in the same total order (`_ordered`: by a key,
    or by every column), read through the drivers a batch at a time, and each pair of
    batches compared whole, with no row made into a key and values. Equal batches all
    through mean equal rows; anything else (a row missing, extra or changed, or a value
    stored in another type) is left to `_compare`, which finds and names the rows that
    differ. The drivers' values compare as SQLAlchemy's do: the same ints and strings,
    and a boolean as SQLite's 0 or 1, which equal False and True."""
    with _cursor(source) as stored, _cursor(replayed) as expected:
        stored.execute(str(_ordered(model, source).compile(dialect=source.dialect)))
        expected.execute(str(_ordered(model, replayed).compile(dialect=replayed.dialect)))
        while True:
            mine, theirs = stored.fetchmany(BATCH), expected.fetchmany(BATCH)
            if mine != theirs:
                return False
            if not mine:
                return True


@contextmanager
def _cursor(conn: sa.Connection) -> Iterator[Any]:
    """A driver's cursor in `conn`'s transaction that reads a batch at a time: on
    PostgreSQL a server-side (named) one, which holds no more than a batch in memory."""
    if conn.dialect.name == "postgresql":
        cursor = conn.connection.cursor(name="hazard_deep")
    else:
        cursor = conn.connection.cursor()
    try:
        yield cursor
    finally:
        cursor.close()


def _merged(
    stored: Iterable[tuple[Key, tuple[Any, ...]]], expected: Iterable[tuple[Key, tuple[Any, ...]]]
) -> Iterator[tuple[Key, tuple[Any, ...] | None, tuple[Any, ...] | None]]:
    """Both sides in key order, row by row: (key, stored values or None, expected
    values or None)."""
    left, right = iter(stored), iter(expected)
    a, b = next(left, None), next(right, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            assert a is not None
            yield a[0], a[1], None
            a = next(left, None)
        elif a is None or b[0] < a[0]:
            yield b[0], None, b[1]
            b = next(right, None)
        else:
            yield a[0], a[1], b[1]
            a, b = next(left, None), next(right, None)


def _cash_ups(problems: list[cashup.Problem]) -> Difference:
    """The first cash-up line the events do not bear out, with how many do not: its
    recorded expected (or difference) is not what the evening's events give."""
    where, figure, recorded, given = problems[0]
    return Difference("evenings", (where,), where, figure, recorded, given, len(problems))


def _snapshots(
    store: EventStore,
    source: sa.Connection,
    report: Progress,
    reached: dict[Key, Difference | None],
) -> Difference | None:
    """The first snapshot whose state is not the table's state folded from its events
    up to that version, with how many are not. Loading a table starts from its newest
    snapshot, so a forged one would decide the commands after it. A snapshot in a
    format this code does not read is passed over by loading, and here.

    Those the replay `reached` are held to its fold already (`_Watched`); any other (a
    version past its stream's last event, a stream the replay does not fold) is held
    here to its stream's events, loaded and folded."""
    s = snapshots_table
    stream_order = s.c.stream.collate("C") if source.dialect.name == "postgresql" else s.c.stream
    query = sa.select(s.c.stream, s.c.version).order_by(stream_order, s.c.version)
    first: Difference | None = None
    count = done = 0
    table: tuple[str, list[hz.Event]] | None = None
    report("snapshots", 0, None)
    for stream, version in source.execute(query).all():
        done += 1
        if (stream, version) in reached:
            found = reached[stream, version]
        else:
            if table is None or table[0] != stream:
                # Events are never changed, so a connection of the store's own reads
                # the same ones up to any version this snapshot names.
                table = (stream, store.load(stream))
            found = _snapshot_differs(stream, version, _blob(source, stream, version), table[1])
        if found is not None:
            count += 1
            first = first or found
    report("snapshots", done, done)
    if first is None:
        return None
    return Difference(
        first.table, first.key, first.row, first.column, first.stored, first.expected, count
    )


def _blob(source: sa.Connection, stream: str, version: int) -> bytes:
    found = db.fetch(
        source, "SELECT state FROM snapshots WHERE stream = ? AND version = ?", (stream, version)
    )
    return bytes(found[0][0])


def _snapshot_differs(
    stream: str, version: int, blob: bytes, events: list[hz.Event]
) -> Difference | None:
    """The difference of one snapshot from its stream's `events` folded to its version
    (None: none, or a format passed over)."""
    if version > len(events):
        key, label = (stream, version), f"{stream} version {version}"
        return Difference("snapshots", key, label, None, {"version": version}, None)
    return _held_to(stream, version, blob, hz.fold(events[:version], hz.INITIAL))


def _held_to(stream: str, version: int, blob: bytes, folded: hz.TableState) -> Difference | None:
    """The difference of one snapshot from the table's state `folded` at its version
    (None: none, or a format passed over)."""
    key, label = (stream, version), f"{stream} version {version}"
    try:
        cached = snapshots.decode_state(blob)
    except Exception as exc:  # whatever a forged blob makes the decoder raise
        return Difference("snapshots", key, label, "state", f"unreadable ({exc})", None)
    if cached is None:
        return None
    mine, theirs = (
        json.loads(snapshots.encode_state(cached)),
        json.loads(snapshots.encode_state(folded)),
    )
    for field in theirs:
        if mine.get(field) != theirs[field]:
            return Difference(
                "snapshots", key, label, f"state.{field}", mine.get(field), theirs[field]
            )
    return None


class _Watched(tableviews.Held):
    """The replay's read models (tableviews.Held), which also hold each snapshot the
    replay reaches to the table's state it folded there: the one fold of every table
    serves both, where loading each table again and folding it cost as much as a
    tenth of the check."""

    def __init__(self, conn: sa.Connection, source: sa.Connection) -> None:
        super().__init__(conn)
        self.source = source
        self.wanted: dict[str, set[int]] = {}
        """The versions of each table's snapshots, as stored."""
        for stream, version in db.fetch(source, "SELECT stream, version FROM snapshots"):
            self.wanted.setdefault(stream, set()).add(int(version))
        self.reached: dict[Key, Difference | None] = {}
        """What each snapshot reached came to, by (stream, version)."""

    def seen(self, stream: str, steps: Sequence[tableviews.Step]) -> None:
        super().seen(stream, steps)
        wanted = self.wanted.get(stream)
        if not wanted:
            return
        for step in steps:
            version = step.row.version
            if version in wanted:
                blob = _blob(self.source, stream, version)
                self.reached[stream, version] = _held_to(stream, version, blob, step.after)
