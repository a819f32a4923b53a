"""A seeded log ten times over, written as the service writes it, in minutes: the log
issue 27's "every figure at 10^7 events" is measured on.

    .venv/bin/python -m bench.tenfold --events 10000000 --base 1000000

bench.seed writes through the service's write path, engine commands and all, at about
half an hour a million events; bench.grown copies a log in SQL but keeps its hashes, so
the log check refuses what it grows. Here the seeded log of `--base` events is the
first part of a bigger one, and then copies of it are appended until the log holds
`--events`: every event of the seeded log but its seals and its accounts' openings
(the players are the club's, opened once), decoded and handed to the service's own
unit of work (ledger.unit_of_work: `play` for a table's events, `record` for an
account's), which hashes and chains each event, grows the Merkle tree, seals each
write, signs its checkpoint, and writes every read model (postings, balances,
settlements, rounds, snapshots, the dice report's counts) as a write would. What is
left out is only the engine's deciding: each copy's events are the seeded log's, which
the engine decided once.

Each copy's tables are renamed (`table:t0003` to `table:t0003-x2`, and so its escrows);
its accounts' events go on from the account's version; its writes are whole writes of
the seeded log (a write's events share its time, and its seal ends it), many to a commit
(`--batch` events), so that no write ends inside a command; each write's time is a
few seconds after the last. The last copy stops at the first write boundary at or
past `--events`.

The log is cached beside bench.seed's as bench.seed names a log of that size
(`api-v1-seed1757-<events>.sqlite3`, its key and JSON file), so that bench.exports
and bench.verify take it with `--events <events>`; its export is made by bench.seed's
`exported`, once, on first use. tests/ledger/test_bench_tenfold.py holds a grown log to
`hazard verify` (ledger.exports.offline), the import and the deep check.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import engine as hz
from bench.fold import _say
from bench.seed import SEED, SEED_VERSION, Clock, key_for, seeded
from ledger.store import db
from ledger.store.eventstore import EventStore, RowDecoder
from ledger.store.log.heads import SEALS
from ledger.store.log.keys import load_signer
from ledger.unit_of_work import UnitOfWork

SUFFIX = "-x"
"""A copy's tables are the seeded log's, named `<name>-x<k>`."""
TABLE = "table:"
BATCH = 20_000
"""Events a commit, at least (whole writes of the seeded log)."""

_WRITES_SQL = (
    "SELECT position, stream, version, type, schema_version, payload, actor, recorded_at "
    "FROM events ORDER BY position"
)


def _writes(base: Path) -> Iterator[list[tuple[Any, ...]]]:
    """The seeded log's writes, each its events but its seal, in order: a write's
    events share one time (ledger.unit_of_work), and its seal is its last. Read afresh
    for each copy, a batch of rows at a time."""
    con = sqlite3.connect(f"file:{base}?immutable=1", uri=True)
    try:
        cursor = con.execute(_WRITES_SQL)
        write: list[tuple[Any, ...]] = []
        while rows := cursor.fetchmany(10_000):
            for row in rows:
                if write and row[7] != write[-1][7]:
                    yield write
                    write = []
                if row[1] != SEALS:
                    write.append(row)
        if write:
            yield write
    finally:
        con.close()


class Copier:
    """The copies, appended to the log at `path` through the service's unit of work."""

    def __init__(self, path: Path, key: Path) -> None:
        self.engine = db.make_engine(f"sqlite:///{path}")
        with self.engine.connect() as conn:
            last = conn.exec_driver_sql("SELECT max(recorded_at) FROM events").scalar_one()
            accounts = conn.exec_driver_sql(
                "SELECT stream, max(version) FROM events WHERE stream NOT LIKE 'table:%' "
                f"AND stream != '{SEALS}' GROUP BY stream"
            ).all()
            self.count = int(conn.exec_driver_sql("SELECT max(position) FROM events").scalar_one())
        clock = Clock(random.Random(SEED + 2))
        clock.now = datetime.fromisoformat(last) + timedelta(seconds=1)
        self.store = EventStore(self.engine, clock=clock, signer=load_signer(key))
        self.versions: dict[str, int] = {stream: int(v) for stream, v in accounts}
        self.decode = RowDecoder()

    def close(self) -> None:
        self.store.close()
        self.engine.dispose()

    def copy(self, base: Path, k: int, until: int, batch: int) -> None:
        """Copy k of the seeded log at `base`, in commits of at least `batch` events,
        stopping at the first write's end at or past `until` events in the log."""
        tables: dict[str, hz.TableState] = {}
        suffix = f"{SUFFIX}{k}"
        uow: UnitOfWork | None = None
        written = 0
        for write in _writes(base):
            if self.count >= until:
                break
            if uow is None:
                uow = UnitOfWork(self.store).__enter__()
            for stream, rows in _runs(write):
                if stream.startswith(TABLE):
                    renamed = stream + suffix
                    before = tables.get(renamed, hz.INITIAL)
                    events = [self._event(row, row[2]) for row in rows]
                    recorded, tables[renamed] = uow.play(renamed, before, events, rows[0][6])
                else:
                    rows = [row for row in rows if row[3] != "AccountOpened"]
                    if not rows:
                        continue
                    version = self.versions[stream]
                    events = [self._event(row, version + i) for i, row in enumerate(rows, 1)]
                    recorded = uow.record(stream, version, events, rows[0][6])
                    self.versions[stream] = version + len(events)
                self.count += len(recorded)
                written += len(recorded)
            if written >= batch:
                self._commit(uow)
                uow, written = None, 0
        if uow is not None:
            self._commit(uow)

    def _commit(self, uow: UnitOfWork) -> None:
        uow.commit()
        uow.__exit__(None, None, None)
        self.count += 1  # the write's seal

    def _event(self, row: tuple[Any, ...], version: int) -> Any:
        position, _stream, _version, name, schema, payload = row[:6]
        return self.decode(position, name, schema, version, payload)


def _runs(write: list[tuple[Any, ...]]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """A write's events in runs of one stream each, in order (a command's events are
    one run; a write's commands on one table one after another make one run too)."""
    run: list[tuple[Any, ...]] = []
    for row in write:
        if run and row[1] != run[0][1]:
            yield run[0][1], run
            run = []
        run.append(row)
    if run:
        yield run[0][1], run


def grow(base: Path, path: Path, events: int, batch: int = BATCH) -> tuple[int, int]:
    """The seeded log at `base` (its key beside it, bench.seed.key_for) at `path`,
    grown by copies of itself until it holds at least `events` events: how many it
    holds, and how many copies of the seeded log it is (the last perhaps in part)."""
    shutil.copyfile(base, path)
    copier = Copier(path, key_for(base))
    k = 1
    try:
        while copier.count < events:
            copier.copy(base, k, events, batch)
            k += 1
            _say(f"  {copier.count:,} events, {k - 1} copies appended")
    finally:
        copier.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return copier.count, k


def tenfold(events: int, base_events: int, cache_dir: Path, batch: int = BATCH) -> Path:
    """The log of `events` events grown from bench.seed's of `base_events`, cached as
    bench.seed caches a seeded log of `events` (so bench.exports and bench.verify take
    it with `--events events`): made first if it is not there."""
    stem = f"api-v{SEED_VERSION}-seed{SEED}-{events}"
    path, meta_path = cache_dir / f"{stem}.sqlite3", cache_dir / f"{stem}.json"
    if path.exists() and meta_path.exists():
        return path
    base = seeded(base_events, cache_dir)
    partial = cache_dir / f"{stem}.partial.sqlite3"
    for leftover in cache_dir.glob(f"{stem}.partial.sqlite3*"):
        leftover.unlink()
    _say(f"growing {base.path.name} to {events:,} events in {path.name}...")
    started = time.perf_counter()
    total, copies = grow(base.path, partial, events, batch)
    seconds = time.perf_counter() - started
    _say(f"  grown to {total:,} events ({copies} copies) in {seconds:.1f} s")
    shutil.copyfile(key_for(base.path), key_for(path))
    os.chmod(key_for(path), 0o600)
    meta = dict(base.meta)
    meta.pop("cached", None)
    meta.update(
        events_asked=events, events=total, cache_key=stem, grown_from=base.path.stem,
        copies=copies, grown_seconds=round(seconds, 1), bytes=partial.stat().st_size,
    )  # fmt: skip
    meta.pop("counts", None)
    os.replace(partial, path)
    Path(f"{partial}.writers").unlink(missing_ok=True)  # the writers' queue (ledger.store.writers)
    meta_path.write_text(json.dumps(meta, indent=2))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tenfold", description=__doc__)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--base", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    args = parser.parse_args(argv)
    path = tenfold(args.events, args.base, args.cache_dir, args.batch)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
