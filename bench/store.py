"""How fast the event store appends and loads, against raw drivers and a peer library.

Run from the repository root:

    .venv/bin/python -m bench.store                        # readable report
    .venv/bin/python -m bench.store --json                 # JSON on stdout
    .venv/bin/python -m bench.store --events 100000 --appends 2000 --repeat 3
    .venv/bin/python -m bench.store --skip-postgres

The targets (from the issue), each measured side by side in one run:

  appends       EventStore.append at 50% or more of a raw driver's rate writing the
                same rows into the same table with the same durability, for
                single-event commits and for batches of 100 events per transaction.
  peer          ahead of the `eventsourcing` library's SQLite recorders on the same
                appends and on reading the stream back.
  big table     with a 1,000,000-event table: load with a snapshot near the head
                (ledger.store.snapshots.load) in 10 ms or less (median), and full replay
                from the database, decoding included (EventStore.load + fold), at
                300,000 events a second or more.
  postgres      the appends and big-table figures again on a PostgreSQL server the
                benchmark starts itself (fsync=on).

Streams are generated once, before the timings that use them, by driving the real
engine commands with a seeded random.Random (the generators of bench.fold): the
appended stream first, the big tables only after the append groups, so that appends
are timed with a small heap. Set-up (generation, writing the big tables) is timed
separately and reported, never mixed into the figures. Within each group the
contenders run interleaved: one untimed warm-up each, then R repetitions, each
running every contender once in an order rotated by one place per repetition.
Figures are medians; speed is reported, never asserted.

Standard library plus the project's own dependencies; the peer comparison needs the
`bench` extra (`eventsourcing`), the PostgreSQL half needs `initdb` and psycopg.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.fold import _machine, _say, composition, generate_mixed, generate_throws
from engine import events as ev
from engine.fold import fold
from ledger.store import codec, db, snapshots
from ledger.store.eventstore import EventStore, Recorded, decode_rows
from tests import pgcluster

SEED = 1757
DEFAULT_EVENTS = 1_000_000
DEFAULT_APPENDS = 10_000
SINGLE_SHARE = 10
"""Single-event commits append --appends / SINGLE_SHARE events (each one fsyncs)."""
MIXED_SHARE = 0.3
"""The second, mixed table's size as a share of --events (as in bench.fold)."""
BATCH = 100
"""Events per transaction in the batched append comparisons."""
SETUP_BATCH = 1000
"""Events per transaction when writing the big tables (set-up, not timed)."""
SNAPSHOT_CALLS = 20
"""Loads with a snapshot per repetition; each is timed on its own."""
SNAPSHOT_TAIL = snapshots.EVERY - 1
"""Events after the snapshot: the most a table snapshotted every EVERY events has."""
ACTOR = "bench"

APPEND_RATIO_GOAL = 0.5
SNAPSHOT_LOAD_TARGET = 0.010
REPLAY_TARGET = 300_000

COLUMNS = Recorded._fields
_INSERT = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({{}})"
INSERT_SQLITE = _INSERT.format(", ".join(["?"] * len(COLUMNS)))
INSERT_PG = _INSERT.format(", ".join(["%s"] * len(COLUMNS)))
LOAD_SQL = (
    "SELECT type, schema_version, version, payload FROM events "
    "WHERE stream = {p} AND version > {p} ORDER BY version"
)


# -- contenders and timing ----------------------------------------------------------


@dataclass
class Contender:
    """One thing timed. `prepare` (untimed) makes the input of each timed `run`.

    A rate contender's sample is items / seconds of one run; a latency contender
    (`calls` > 0) runs `calls` times per repetition, each call timed on its own.
    """

    name: str
    group: str
    items: int
    run: Callable[[Any], Any]
    prepare: Callable[[], Any] = lambda: None
    calls: int = 0
    what: str = ""
    check: Callable[[Any], Any] | None = None
    """Applied to what the warm-up run returns: the contender did the work it claims."""
    samples: list[float] = field(default_factory=list)

    @property
    def latency(self) -> bool:
        return self.calls > 0


def _time_once(c: Contender, check: bool = False) -> list[float]:
    arg = c.prepare()
    gc.collect()
    if not c.latency:
        start = time.perf_counter()
        result = c.run(arg)
        rates = [c.items / (time.perf_counter() - start)]
    else:
        rates = []
        for _ in range(c.calls):
            start = time.perf_counter()
            result = c.run(arg)
            rates.append(time.perf_counter() - start)
    if check and c.check is not None:
        c.check(result)
    return rates


def measure(contenders: list[Contender], repeat: int, label: str) -> None:
    """Time every contender `repeat` times, interleaved, rotating the order each time."""
    for c in contenders:  # one untimed warm-up each, its result checked
        c.samples = []
        _time_once(c, check=True)
    k = len(contenders)
    for r in range(repeat):
        for c in contenders[r % k :] + contenders[: r % k]:
            c.samples.extend(_time_once(c))
        _say(f"  {label}: repetition {r + 1}/{repeat} done")


# -- SQLite -------------------------------------------------------------------------


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def new_store(url: str) -> EventStore:
    engine = db.make_engine(url)
    db.upgrade(engine)
    return EventStore(engine)


def raw_sqlite(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection with the durability make_engine sets."""
    con = sqlite3.connect(path, isolation_level=None, timeout=db.BUSY_TIMEOUT_MS / 1000)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=FULL")
    con.execute(f"PRAGMA busy_timeout={db.BUSY_TIMEOUT_MS}")
    con.execute("PRAGMA foreign_keys=ON")
    return con


def sqlite_durability(con: Any) -> dict[str, Any]:
    journal = con.execute("PRAGMA journal_mode").fetchone()[0]
    sync = con.execute("PRAGMA synchronous").fetchone()[0]
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return {"journal_mode": journal, "synchronous": names.get(sync, sync)}


def _rows_as_tuples(rows: Sequence[Recorded]) -> list[tuple[Any, ...]]:
    return [tuple(getattr(r, name) for name in COLUMNS) for r in rows]


def reference_rows(events: Sequence[ev.Event], tmp: Path) -> list[tuple[Any, ...]]:
    """The rows EventStore writes for `events` (hashes and all), for the raw drivers."""
    store = new_store(sqlite_url(tmp / "reference.sqlite3"))
    with store.transaction() as conn:
        rows = store.append(conn, "table:reference", 0, events, ACTOR)
    store.engine.dispose()
    return _rows_as_tuples(rows)


def _raw_what(mode: str) -> str:
    return "INSERT; COMMIT per row" if mode == "single" else f"executemany({BATCH}); COMMIT"


def _restream(rows: Sequence[tuple[Any, ...]], stream: str, offset: int) -> list[tuple[Any, ...]]:
    """The same rows in another stream at later positions, so each run writes new keys."""
    return [(r[0] + offset, stream, *r[2:]) for r in rows]


class _Streams:
    """Hands out a new stream name for each run, and remembers the first."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.count = prefix, 0
        self.names: list[str] = []

    def next(self) -> str:
        self.count += 1
        name = f"table:{self.prefix}-{self.count}"
        self.names.append(name)
        return name


def store_append_contenders(
    label: str,
    url_for: Callable[[str], str],
    events: Sequence[ev.Event],
    single: int,
    group: str,
) -> tuple[list[Contender], dict[str, Any]]:
    """EventStore.append: single-event commits and batches of BATCH."""
    out: list[Contender] = []
    stores: dict[str, Any] = {}
    for mode, n in (("single", single), ("batched", len(events))):
        store = new_store(url_for(mode))
        streams = _Streams(f"{label}-{mode}")
        stores[mode] = (store, streams)

        def run(stream: str, store: EventStore = store, n: int = n, mode: str = mode) -> None:
            if mode == "single":
                for e in events[:n]:
                    with store.transaction() as conn:
                        store.append(conn, stream, e.version - 1, [e], ACTOR)
            else:
                for i in range(0, n, BATCH):
                    with store.transaction() as conn:
                        store.append(conn, stream, i, events[i : i + BATCH], ACTOR)

        out.append(
            Contender(
                f"store_{mode}",
                group,
                n,
                run,
                streams.next,
                what=f"EventStore.append, {'1 event' if mode == 'single' else f'{BATCH} events'}"
                " per transaction",
            )
        )
    return out, stores


def raw_sqlite_contenders(
    path_for: Callable[[str], Path], rows: Sequence[tuple[Any, ...]], single: int, group: str
) -> tuple[list[Contender], dict[str, Any]]:
    """sqlite3 on its own: the same rows, one INSERT + COMMIT each, or executemany."""
    out: list[Contender] = []
    conns: dict[str, Any] = {}
    for mode, n in (("single", single), ("batched", len(rows))):
        path = path_for(mode)
        engine = db.make_engine(sqlite_url(path))  # the same table: the same migrations
        db.upgrade(engine)
        engine.dispose()
        con = raw_sqlite(path)
        streams = _Streams(f"raw-{mode}")
        conns[mode] = (con, streams)

        def prepare(streams: _Streams = streams, n: int = n) -> list[tuple[Any, ...]]:
            return _restream(rows[:n], streams.next(), len(rows) * (streams.count - 1))

        def run(
            batch_rows: list[tuple[Any, ...]], con: sqlite3.Connection = con, mode: str = mode
        ) -> None:
            if mode == "single":
                for row in batch_rows:
                    con.execute("BEGIN IMMEDIATE")
                    con.execute(INSERT_SQLITE, row)
                    con.execute("COMMIT")
            else:
                for i in range(0, len(batch_rows), BATCH):
                    con.execute("BEGIN IMMEDIATE")
                    con.executemany(INSERT_SQLITE, batch_rows[i : i + BATCH])
                    con.execute("COMMIT")

        out.append(
            Contender(
                f"raw_sqlite3_{mode}",
                group,
                n,
                run,
                prepare,
                what="sqlite3: BEGIN IMMEDIATE; " + _raw_what(mode),
            )
        )
    return out, conns


# -- the peer: eventsourcing --------------------------------------------------------


def _eventsourcing() -> Any:
    try:
        import eventsourcing.sqlite as es_sqlite
    except ImportError:
        return None
    return es_sqlite


def _es_version() -> str:
    from importlib.metadata import version

    return version("eventsourcing")


def es_datastore(es: Any, path: Path) -> Any:
    """An eventsourcing SQLiteDatastore whose connections run synchronous=FULL.

    Its pool already puts the file in WAL mode; SQLite's compiled-in default for
    synchronous is FULL on most builds, but the benchmark sets it on every
    connection the pool makes so that the comparison does not depend on that.
    """
    datastore = es.SQLiteDatastore(str(path), originator_id_type="text")
    pool = datastore.pool
    create = getattr(pool, "_create_connection", None)
    if create is None:  # another eventsourcing: its default stands, and is reported
        return datastore

    def create_full() -> Any:
        connection = create()
        connection._sqlite_conn.execute("PRAGMA synchronous=FULL")
        return connection

    pool._create_connection = create_full
    return datastore


def es_durability(datastore: Any) -> dict[str, Any]:
    try:
        with datastore.get_connection(commit=False) as connection:
            return sqlite_durability(connection._sqlite_conn)
    except AttributeError:
        return {"journal_mode": "unknown", "synchronous": "unknown"}


def stored_events(es_persistence: Any, stream: str, events: Sequence[ev.Event]) -> list[Any]:
    """The peer's input: eventsourcing StoredEvents with the project's codec bytes,
    encoded as EventStore.append encodes them (codec.payload_text)."""
    stored = es_persistence.StoredEvent
    out = []
    for e in events:
        name, _schema, text = codec.payload_text(e)
        out.append(stored(stream, e.version, name, text.encode()))
    return out


def decode_stored(rows: Sequence[Any]) -> list[ev.Event]:
    """The peer's output back to engine events, decoded exactly as EventStore.load
    decodes (ledger.store.eventstore.decode_rows), so that decoding costs the same on both sides.
    Its state column is a BLOB, so the bytes become text first."""
    schema = codec.SCHEMA_VERSION
    return decode_rows(
        ((s.topic, schema[s.topic], s.originator_version, s.state.decode()) for s in rows),
        lambda version: version,  # a peer's row has no global position
    )


def es_append_contenders(
    es: Any, path_for: Callable[[str], Path], events: Sequence[ev.Event], single: int, group: str
) -> tuple[list[Contender], dict[str, Any]]:
    import eventsourcing.persistence as es_persistence

    out: list[Contender] = []
    recorders: dict[str, Any] = {}
    kinds = (
        ("aggregate", es.SQLiteAggregateRecorder),
        ("application", es.SQLiteApplicationRecorder),
    )
    for kind, recorder_class in kinds:
        for mode, n in (("single", single), ("batched", len(events))):
            datastore = es_datastore(es, path_for(f"{kind}-{mode}"))
            recorder = recorder_class(datastore)
            recorder.create_table()
            streams = _Streams(f"es-{kind}-{mode}")
            recorders[f"{kind}_{mode}"] = (recorder, datastore, streams)

            def run(stream: str, recorder: Any = recorder, n: int = n, mode: str = mode) -> None:
                if mode == "single":
                    for e in events[:n]:
                        recorder.insert_events(stored_events(es_persistence, stream, [e]))
                else:
                    for i in range(0, n, BATCH):
                        batch = stored_events(es_persistence, stream, events[i : i + BATCH])
                        recorder.insert_events(batch)

            out.append(
                Contender(
                    f"es_{kind}_{mode}",
                    group,
                    n,
                    run,
                    streams.next,
                    what=f"eventsourcing {recorder_class.__name__}.insert_events, "
                    + ("1 event" if mode == "single" else f"{BATCH} events")
                    + " per call (codec encoding included)",
                )
            )
    return out, recorders


# -- PostgreSQL ---------------------------------------------------------------------


PG_SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
}
"""Durable commits, unlike the tests' fsync=off: a commit waits for its WAL flush."""


@contextmanager
def postgres_server(parent: Path | None) -> Iterator[tuple[str | None, str]]:
    """(socket directory, "") for a temporary, durable cluster, or (None, why not)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield None, "psycopg is not installed (the `postgres` extra): PostgreSQL skipped"
        return
    with ExitStack() as stack:
        try:
            sock = stack.enter_context(
                pgcluster.temporary_cluster(PG_SETTINGS, parent, prefix="hazard-bench-pg-")
            )
        except pgcluster.Unavailable as exc:
            yield None, f"{exc}: the PostgreSQL half is skipped"
            return
        yield str(sock), ""


def pg_url(sock: str, name: str) -> str:
    return pgcluster.url(sock, name)


def pg_create(sock: str, name: str) -> str:
    admin = sa.create_engine(pg_url(sock, "postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    url = pg_url(sock, name)
    engine = db.make_engine(url)
    db.upgrade(engine)
    engine.dispose()
    return url


def pg_raw(sock: str, name: str) -> Any:
    import psycopg

    return psycopg.connect(host=sock, dbname=name, user="postgres")


def pg_durability(sock: str) -> dict[str, Any]:
    con = pg_raw(sock, "postgres")
    try:
        names = [*PG_SETTINGS, "wal_sync_method", "shared_buffers", "server_version"]
        return {n: con.execute(f"SHOW {n}").fetchone()[0] for n in names}
    finally:
        con.close()


def raw_pg_contenders(
    sock: str, name_for: Callable[[str], str], rows: Sequence[tuple[Any, ...]], single: int
) -> tuple[list[Contender], dict[str, Any]]:
    """psycopg on its own: the same rows, one INSERT + COMMIT each, or executemany."""
    out: list[Contender] = []
    conns: dict[str, Any] = {}
    for mode, n in (("single", single), ("batched", len(rows))):
        name = name_for(mode)
        pg_create(sock, name)
        con = pg_raw(sock, name)
        streams = _Streams(f"raw-{mode}")
        conns[mode] = (con, streams)

        def prepare(streams: _Streams = streams, n: int = n) -> list[tuple[Any, ...]]:
            return _restream(rows[:n], streams.next(), len(rows) * (streams.count - 1))

        def run(batch_rows: list[tuple[Any, ...]], con: Any = con, mode: str = mode) -> None:
            with con.cursor() as cur:
                if mode == "single":
                    for row in batch_rows:
                        cur.execute(INSERT_PG, row)
                        con.commit()
                else:
                    for i in range(0, len(batch_rows), BATCH):
                        cur.executemany(INSERT_PG, batch_rows[i : i + BATCH])
                        con.commit()

        out.append(
            Contender(
                f"raw_psycopg_{mode}",
                "postgres appends",
                n,
                run,
                prepare,
                what="psycopg: " + _raw_what(mode),
            )
        )
    return out, conns


# -- the big table ------------------------------------------------------------------


def write_table(store: EventStore, stream: str, events: Sequence[ev.Event]) -> None:
    for i in range(0, len(events), SETUP_BATCH):
        with store.transaction() as conn:
            store.append(conn, stream, i, events[i : i + SETUP_BATCH], ACTOR)


def build_big_tables(
    store: EventStore,
    throws: Sequence[ev.Event],
    mixed: Sequence[ev.Event],
    label: str,
) -> dict[str, Any]:
    """Write both tables with batched appends and snapshot the big one near its head."""
    info: dict[str, Any] = {}
    for stream, events in (("table:big", throws), ("table:mixed", mixed)):
        _say(f"  {label}: appending {len(events):,} events to {stream} ({SETUP_BATCH}/commit)...")
        t0 = time.perf_counter()
        write_table(store, stream, events)
        seconds = time.perf_counter() - t0
        info[stream] = {
            "events": len(events),
            "seconds": round(seconds, 3),
            "rate": round(len(events) / seconds),
        }
    cut = max(1, len(throws) - SNAPSHOT_TAIL)
    t0 = time.perf_counter()
    snapshots.save(store, "table:big", fold(throws[:cut]))
    info["snapshot"] = {
        "version": cut,
        "tail": len(throws) - cut,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return info


def big_table_contenders(
    group: str,
    store: EventStore,
    raw_fetch: Callable[[str], int],
    throws: Sequence[ev.Event],
    mixed: Sequence[ev.Event],
    driver: str,
    expected: tuple[Any, Any],
) -> list[Contender]:
    """Every contender must reach the state the commands reached (checked on its
    warm-up run), or it is not doing the same work."""
    state, mixed_state = expected
    tail = len(throws) - max(1, len(throws) - SNAPSHOT_TAIL)
    return [
        Contender(
            "snapshot_load",
            group,
            tail,
            lambda _: snapshots.load(store, "table:big"),
            calls=SNAPSHOT_CALLS,
            what=f"ledger.store.snapshots.load: newest snapshot + {tail}-event tail, folded",
            check=_expect("snapshot load", state),
        ),
        Contender(
            "replay_full",
            group,
            len(throws),
            lambda _: fold(store.load("table:big")),
            what="fold(EventStore.load(stream)) of the big table, from its first event",
            check=_expect("replay", state),
        ),
        Contender(
            "raw_fetch",
            group,
            len(throws),
            lambda _: raw_fetch("table:big"),
            what=f"{driver} alone: the same SELECT, rows fetched, nothing decoded. The floor",
            check=_expect("raw fetch", len(throws)),
        ),
        Contender(
            "fold_only",
            group,
            len(throws),
            lambda _: fold(throws),
            what="engine fold of the same events, already in memory (no database)",
            check=_expect("fold", state),
        ),
        Contender(
            "replay_full_mixed",
            group,
            len(mixed),
            lambda _: fold(store.load("table:mixed")),
            what="fold(EventStore.load(stream)) of the mixed table (bets, settlements)",
            check=_expect("mixed replay", mixed_state),
        ),
    ]


def _expect(what: str, expected: Any) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        if result != expected:
            raise RuntimeError(f"{what} does not reach the state the engine commands reached")

    return check


def sqlite_fetcher(path: Path) -> Callable[[str], int]:
    con = raw_sqlite(path)
    sql = LOAD_SQL.format(p="?")

    def fetch(stream: str) -> int:
        return len(con.execute(sql, (stream, 0)).fetchall())

    return fetch


def pg_fetcher(con: Any) -> Callable[[str], int]:
    sql = LOAD_SQL.format(p="%s")

    def fetch(stream: str) -> int:
        with con.cursor() as cur:
            cur.execute(sql, (stream, 0))
            n = len(cur.fetchall())
        con.rollback()
        return n

    return fetch


# -- reporting ----------------------------------------------------------------------


def summarise(contenders: list[Contender]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in contenders:
        median = statistics.median(c.samples)
        out[f"{c.group}/{c.name}"] = {
            "group": c.group,
            "name": c.name,
            "what": c.what,
            "items": c.items,
            "unit": "seconds per call" if c.latency else "events per second",
            "samples": [round(x, 6) if c.latency else round(x) for x in c.samples],
            "median": round(median, 6) if c.latency else round(median),
            "min": round(min(c.samples), 6) if c.latency else round(min(c.samples)),
            "max": round(max(c.samples), 6) if c.latency else round(max(c.samples)),
        }
    return out


def comparisons(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Pairs measured side by side: ours over theirs, and the issue's goal for it."""
    pairs: list[tuple[str, str, str, float | None]] = []
    for prefix, raw in (("sqlite appends", "raw_sqlite3"), ("postgres appends", "raw_psycopg")):
        for mode in ("single", "batched"):
            pairs.append((prefix, f"store_{mode}", f"{raw}_{mode}", APPEND_RATIO_GOAL))
    for kind in ("aggregate", "application"):
        for mode in ("single", "batched"):
            pairs.append(("sqlite appends", f"store_{mode}", f"es_{kind}_{mode}", 1.0))
        pairs.append(("sqlite reads", "store_load", f"es_{kind}_read", 1.0))
    pairs.append(("sqlite reads", "store_load", "raw_sqlite3_read", None))
    for prefix in ("sqlite big table", "postgres big table"):
        pairs.append((prefix, "replay_full", "raw_fetch", None))
        pairs.append((prefix, "replay_full", "fold_only", None))
    out = []
    for group, ours, theirs, goal in pairs:
        a, b = results.get(f"{group}/{ours}"), results.get(f"{group}/{theirs}")
        if a is None or b is None:
            continue
        ratio = a["median"] / b["median"]
        met = None
        if goal is not None:
            met = ratio >= goal if goal != 1.0 else ratio > 1.0
        out.append(
            {
                "group": group,
                "ours": ours,
                "theirs": theirs,
                "ratio": round(ratio, 3),
                "goal": goal,
                "met": met,
            }
        )
    return out


def targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for group in ("sqlite big table", "postgres big table"):
        snap = results.get(f"{group}/snapshot_load")
        if snap is not None:
            out.append(
                {
                    "group": group,
                    "name": "snapshot_load",
                    "median": snap["median"],
                    "target": SNAPSHOT_LOAD_TARGET,
                    "kind": "at most (seconds)",
                    "met": snap["median"] <= SNAPSHOT_LOAD_TARGET,
                }
            )
        for name in ("replay_full", "replay_full_mixed"):
            r = results.get(f"{group}/{name}")
            if r is not None:
                out.append(
                    {
                        "group": group,
                        "name": name,
                        "median": r["median"],
                        "target": REPLAY_TARGET,
                        "kind": "at least (events/s)",
                        "met": r["median"] >= REPLAY_TARGET,
                        "judged": name == "replay_full",
                    }
                )
    return out


def _fmt(r: dict[str, Any], x: float) -> str:
    if r["unit"] == "seconds per call":
        return f"{x * 1000:.2f}ms"
    if x >= 1e6:
        return f"{x / 1e6:.3f}M/s"
    if x >= 1e4:
        return f"{x / 1e3:.1f}k/s"
    return f"{x:,.0f}/s"


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"bench.store  Python {m['python']} ({m['implementation']}) on {m['platform']}",
        f"  cpus: {m['cpu_count']}, affinity: {m['cpu_affinity']}   seed: {report['seed']}"
        f"   repetitions: {report['repeat']} (interleaved per group, plus one warm-up each)",
        f"  databases under {report['directory']}",
        "",
        "Durability:",
    ]
    for name, d in report["durability"].items():
        lines.append(f"  {name:<22} " + ", ".join(f"{k}={v}" for k, v in d.items()))
    for note in report["notes"]:
        lines.append(f"  note: {note}")
    lines += ["", "Streams (generated once through the engine commands; not timed below):"]
    for name, g in report["streams"].items():
        comp = ", ".join(f"{k} {v}" for k, v in list(g["composition"].items())[:6])
        lines.append(
            f"  {name:<8} {g['events']:>9,} events in {g['generation_seconds']:.1f} s   {comp}, ..."
        )
    lines += ["", "Set-up (batched appends through EventStore.append; not timed below):"]
    for backend, s in report["setup"].items():
        for stream, w in s.items():
            if stream == "snapshot":
                lines.append(
                    f"  {backend:<8} snapshot of table:big at version {w['version']:,}"
                    f" (tail {w['tail']} events) saved in {w['seconds']:.2f} s"
                )
            else:
                lines.append(
                    f"  {backend:<8} {stream:<12} {w['events']:>9,} events in"
                    f" {w['seconds']:.1f} s ({w['rate']:,}/s)"
                )
    lines += [
        "",
        f"{'group / contender':<38} {'events':>9}  {'median':>10} {'min':>10} {'max':>10}",
    ]
    group = None
    for r in report["results"].values():
        if r["group"] != group:
            group = r["group"]
            lines.append(f"{group}")
        lines.append(
            f"  {r['name']:<36} {r['items']:>9,}  {_fmt(r, r['median']):>10}"
            f" {_fmt(r, r['min']):>10} {_fmt(r, r['max']):>10}"
        )
    lines += ["", "Comparisons (median over median, same run, interleaved):"]
    for c in report["comparisons"]:
        if c["goal"] is None:
            verdict = "(informational)"
        elif c["goal"] == 1.0:
            verdict = f"goal > 1 (ahead)  {'MET' if c['met'] else 'MISSED'}"
        else:
            verdict = f"goal >= {c['goal']:g}  {'MET' if c['met'] else 'MISSED'}"
        lines.append(
            f"  {c['group']:<18} {c['ours']:<14} / {c['theirs']:<22} {c['ratio']:>7.3f}  {verdict}"
        )
    lines += ["", "Targets (absolute):"]
    for t in report["targets"]:
        if t["name"] == "snapshot_load":
            have = f"median {t['median'] * 1000:.2f} ms, target <= {t['target'] * 1000:g} ms"
        else:
            have = f"median {t['median']:,}/s, target >= {t['target']:,}/s"
        judged = "" if t.get("judged", True) else "  (informational: the mixed table)"
        verdict = "MET" if t["met"] else "MISSED"
        lines.append(f"  {t['group']:<18} {t['name']:<18} {have}  {verdict}{judged}")
    for skipped in report["skipped"]:
        lines.append(f"  skipped: {skipped}")
    lines += [
        "",
        "Rates are events a second (k = thousand, M = million); snapshot_load is ms a call.",
        "store_* write through EventStore.append (encode, hash chain, version check);",
        "raw_* write the very same rows, prepared beforehand, with the driver alone.",
        f"Total run time {report['total_seconds']:.1f} s.",
    ]
    return "\n".join(lines)


def read_contenders(
    stores: dict[str, Any],
    raw_conns: dict[str, Any],
    recorders: dict[str, Any],
    appends: Sequence[ev.Event],
) -> list[Contender]:
    """Reading back the stream each batched-append contender wrote in its first run."""
    store_b, streams_b = stores["batched"]
    stream_b = streams_b.names[0]
    raw_con, raw_streams = raw_conns["batched"]
    raw_stream = raw_streams.names[0]
    load_sql = LOAD_SQL.format(p="?")

    def raw_read(_: Any) -> list[ev.Event]:
        return decode_rows(raw_con.execute(load_sql, (raw_stream, 0)), lambda version: version)

    reads = [
        Contender(
            "store_load",
            "sqlite reads",
            len(appends),
            lambda _: store_b.load(stream_b),
            what="EventStore.load(stream): rows to engine events",
        ),
        Contender(
            "raw_sqlite3_read",
            "sqlite reads",
            len(appends),
            raw_read,
            what="sqlite3: the same SELECT, rows decoded as EventStore.load decodes them",
        ),
    ]
    assert store_b.load(stream_b) == list(appends), "store read-back differs"
    assert raw_read(None) == list(appends), "raw read-back differs"
    for kind in ("aggregate", "application"):
        if f"{kind}_batched" not in recorders:
            continue
        recorder, _ds, es_streams = recorders[f"{kind}_batched"]
        es_stream = es_streams.names[0]

        def es_read(_: Any, recorder: Any = recorder, es_stream: str = es_stream) -> Any:
            return decode_stored(recorder.select_events(es_stream))

        assert es_read(None) == list(appends), f"eventsourcing {kind} read-back differs"
        reads.append(
            Contender(
                f"es_{kind}_read",
                "sqlite reads",
                len(appends),
                es_read,
                what=f"{type(recorder).__name__}.select_events + codec decoding",
            )
        )
    return reads


def profile_appends(directory: Path, appends: Sequence[ev.Event], single: int) -> str:
    store = new_store(sqlite_url(directory / "profile.sqlite3"))

    def batched() -> None:
        for i in range(0, len(appends), BATCH):
            with store.transaction() as conn:
                store.append(conn, "table:profile-batched", i, appends[i : i + BATCH], ACTOR)

    def one_by_one() -> None:
        for e in appends[:single]:
            with store.transaction() as conn:
                store.append(conn, "table:profile-single", e.version - 1, [e], ACTOR)

    text = _profile(f"EventStore.append, {len(appends):,} events in batches of {BATCH}", batched)
    text += _profile(f"EventStore.append, {single:,} single-event commits", one_by_one)
    store.engine.dispose()
    return text


def _profile(label: str, run: Callable[[], Any], top: int = 14) -> str:
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    buf = io.StringIO()
    buf.write(f"\n-- cProfile: {label} --\n")
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


# -- the run ------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.store", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--events",
        type=int,
        default=DEFAULT_EVENTS,
        help=f"size of the big table (default {DEFAULT_EVENTS:,}); a mixed table of "
        f"{MIXED_SHARE:g} x this is written beside it",
    )
    parser.add_argument(
        "--appends",
        type=int,
        default=DEFAULT_APPENDS,
        help=f"events per run in the batched append comparisons (default {DEFAULT_APPENDS:,})",
    )
    parser.add_argument(
        "--single",
        type=int,
        default=None,
        help=f"events per run in the single-event-commit comparisons "
        f"(default --appends / {SINGLE_SHARE})",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions (default 5)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"generator seed (default {SEED})")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--skip-postgres", action="store_true", help="SQLite only")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the databases go (default: a temp dir)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile one batched append run and one full replay (SQLite)",
    )
    args = parser.parse_args(argv)
    single = args.single if args.single is not None else max(1, args.appends // SINGLE_SHARE)
    if min(args.events, args.appends, single, args.repeat) < 1:
        parser.error("--events, --appends, --single and --repeat must be at least 1")
    if single > args.appends:
        parser.error("--single may not exceed --appends")

    started = time.perf_counter()
    with ExitStack() as stack:
        parent = Path(tempfile.mkdtemp(prefix="hazard-bench-store-", dir=args.dir))
        stack.callback(shutil.rmtree, parent, True)
        report = run(args, single, parent, stack)
    report["total_seconds"] = round(time.perf_counter() - started, 3)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    if report.get("profile"):
        print(report.pop("profile"), file=sys.stderr if args.json else sys.stdout)
    return 0


def _generate(
    name: str,
    gen: Callable[[int, int], list[ev.Event]],
    n: int,
    seed: int,
    streams: dict[str, Any],
) -> list[ev.Event]:
    _say(f"generating the {name} stream (~{n:,} events) through the commands...")
    t0 = time.perf_counter()
    events = gen(n, seed)
    streams[name] = {
        "events": len(events),
        "generation_seconds": round(time.perf_counter() - t0, 3),
        "composition": composition(events),
    }
    return events


def run(args: argparse.Namespace, single: int, parent: Path, stack: ExitStack) -> dict[str, Any]:
    """Appends and reads first, with only the small stream in memory; then the big tables."""
    streams: dict[str, Any] = {}
    durability: dict[str, Any] = {}
    notes: list[str] = []
    skipped: list[str] = []
    setup: dict[str, Any] = {}
    all_contenders: list[Contender] = []
    profile_text = ""

    def group(contenders: list[Contender], label: str) -> None:
        _say(f"timing {label}: {len(contenders)} contenders x {args.repeat} repetitions...")
        measure(contenders, args.repeat, label)
        all_contenders.extend(contenders)

    # The appended stream is the start of the mixed table's (same generator and seed).
    appends = _generate("appends", generate_mixed, args.appends, args.seed + 1, streams)
    appends = appends[: args.appends]
    streams["appends"]["events"] = len(appends)
    streams["appends"]["composition"] = composition(appends)

    # -- SQLite appends, against sqlite3 and eventsourcing -------------------------
    sq = parent / "sqlite"
    sq.mkdir()
    rows = reference_rows(appends, sq)
    ours, stores = store_append_contenders(
        "sqlite",
        lambda mode: sqlite_url(sq / f"store-{mode}.sqlite3"),
        appends,
        single,
        "sqlite appends",
    )
    raw, raw_conns = raw_sqlite_contenders(
        lambda mode: sq / f"raw-{mode}.sqlite3", rows, single, "sqlite appends"
    )
    with stores["batched"][0].engine.connect() as conn:
        durability["sqlite EventStore"] = sqlite_durability(conn.connection.driver_connection)
    durability["sqlite raw sqlite3"] = sqlite_durability(raw_conns["batched"][0])
    es = _eventsourcing()
    peers: list[Contender] = []
    recorders: dict[str, Any] = {}
    if es is None:
        skipped.append(
            "eventsourcing is not installed: peer comparison skipped "
            "(.venv/bin/pip install eventsourcing, or the `bench` extra)"
        )
    else:
        peers, recorders = es_append_contenders(
            es, lambda kind: sq / f"es-{kind}.sqlite3", appends, single, "sqlite appends"
        )
        datastore = recorders["aggregate_batched"][1]
        durability[f"sqlite eventsourcing {_es_version()}"] = es_durability(datastore)
        notes.append(
            "eventsourcing: its own recorders and schema (originator_id TEXT, version, "
            "topic, state BLOB); state = the project's codec bytes, and reading decodes "
            "them as EventStore.load does, so encoding and decoding cost the same on both "
            "sides; its pool sets WAL, the benchmark adds "
            "synchronous=FULL; it begins writes with BEGIN (deferred), one writer here"
        )
    group(ours[:1] + raw[:1] + peers[0::2] + ours[1:] + raw[1:] + peers[1::2], "sqlite appends")

    # -- SQLite: reading the appended stream back -----------------------------------
    group(read_contenders(stores, raw_conns, recorders, appends), "sqlite reads")
    if args.profile:
        profile_text += profile_appends(sq, appends, single)
    for store, _ in stores.values():
        store.engine.dispose()
    for con, _ in raw_conns.values():
        con.close()
    for _recorder, datastore, _streams in recorders.values():
        datastore.close()

    # -- PostgreSQL appends -------------------------------------------------------------
    sock: str | None = None
    if args.skip_postgres:
        skipped.append("PostgreSQL: --skip-postgres")
    else:
        sock, why = stack.enter_context(postgres_server(args.dir))
        if sock is None:
            skipped.append(why)
            _say(f"skipping PostgreSQL: {why}")
    if sock is not None:
        durability["postgres (all)"] = pg_durability(sock)
        ours_pg, pg_stores = store_append_contenders(
            "pg",
            lambda mode: pg_create(sock, f"store_{mode}"),
            appends,
            single,
            "postgres appends",
        )
        raw_pg, pg_conns = raw_pg_contenders(sock, lambda mode: f"raw_{mode}", rows, single)
        group(ours_pg[:1] + raw_pg[:1] + ours_pg[1:] + raw_pg[1:], "postgres appends")
        for store, _ in pg_stores.values():
            store.engine.dispose()
        for con, _ in pg_conns.values():
            con.close()

    # -- the big tables -------------------------------------------------------------
    throws = _generate("throws", generate_throws, args.events, args.seed, streams)
    mixed_n = int(args.events * MIXED_SHARE)
    mixed = _generate("mixed", generate_mixed, max(1, mixed_n), args.seed + 1, streams)
    expected = (fold(throws), fold(mixed))

    big_path = sq / "big.sqlite3"
    big = new_store(sqlite_url(big_path))
    setup["sqlite"] = build_big_tables(big, throws, mixed, "sqlite")
    group(
        big_table_contenders(
            "sqlite big table", big, sqlite_fetcher(big_path), throws, mixed, "sqlite3", expected
        ),
        "sqlite big table",
    )
    if args.profile:
        profile_text += _profile(
            f"fold(EventStore.load) of the big table ({len(throws):,} events, SQLite)",
            lambda: fold(big.load("table:big")),
        )
    big.engine.dispose()

    if sock is not None:
        big_pg = new_store(pg_create(sock, "big"))
        setup["postgres"] = build_big_tables(big_pg, throws, mixed, "postgres")
        pg_con = pg_raw(sock, "big")
        group(
            big_table_contenders(
                "postgres big table",
                big_pg,
                pg_fetcher(pg_con),
                throws,
                mixed,
                "psycopg",
                expected,
            ),
            "postgres big table",
        )
        pg_con.close()
        big_pg.engine.dispose()

    results = summarise(all_contenders)
    report: dict[str, Any] = {
        "benchmark": "bench.store",
        "machine": _machine(),
        "seed": args.seed,
        "repeat": args.repeat,
        "parameters": {
            "events": args.events,
            "appends": args.appends,
            "single": single,
            "batch": BATCH,
            "setup_batch": SETUP_BATCH,
            "snapshot_calls": SNAPSHOT_CALLS,
            "snapshot_tail": SNAPSHOT_TAIL,
        },
        "directory": str(parent),
        "durability": durability,
        "notes": notes,
        "streams": streams,
        "setup": setup,
        "results": results,
        "comparisons": comparisons(results),
        "targets": targets(results),
        "skipped": skipped,
    }
    if profile_text:
        report["profile"] = profile_text
    return report


if __name__ == "__main__":
    raise SystemExit(main())
