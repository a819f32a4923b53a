"""A SQLite database of realistic play, written the way the service writes it, cached.

    from bench.seed import seeded
    db = seeded(1_000_000, cache_dir=Path(".bench-cache"))   # reuses a cached file
    db.path, db.meta["token"], db.meta["tables"], db.meta["players"]

    .venv/bin/python -m bench.seed --events 10000          # seed (or find) one database

Many tables are played at once, round after round, each round on a table picked at
random, so the tables' events interleave in the log as a club's would. A round is
what `bench.fold`'s mixed stream plays: the caster calls a main and stakes, usually a
player lays a stake and the caster covers it (from the funds the ledger says the
caster has), side bets are offered and mostly taken, odds are laid once a chance is
set, throws now and then cocked or wild. The players come from one pool, so each plays
at several tables, with an account opened and funded first (AccountOpened, Deposited),
and the setter funds itself (Deposited to "setter").

Every command goes through what `ledger.service.Club.command` does inside its unit of
work: the engine command against the table's state, then `UnitOfWork.play(stream,
before, events, actor)` (events, postings, balances, the overdraft check, settlements,
their parties, rounds, a snapshot every `snapshots.EVERY` events). Only the units of
work differ: many commands share one commit here, where the service commits each, which changes
what is durable when, not what is written. The clock is simulated (a few seconds a
command from 2024-01-01), so `recorded_at` spans months as a real history would.

`THROW_TABLES` extra tables are left mid-round in the chance phase, with stakes on
the round and no bet that an ordinary throw would decide: the benchmark throws dice
at them that are neither the main nor the chance, which keeps them there.

The file is cached under the cache directory, keyed by the size asked for, the seed
and `SEED_VERSION`, with a JSON file of what is in it (tables, players, a setter token
for the API, the schema revision). A cached file behind the code's migrations is
upgraded in place, as a deployment would be. A half-written file is never cached.

Beside it goes a whole-log export of it (`<name>.jsonl`, ledger.exports.jsonl), and
with it a database is seeded by import (ledger.exports.restore: every line verified,
the read models replayed) rather than through the write path, minutes rather than
half an hour at a million events: `seeded` imports it when the database is not cached
but the export is (and its key and JSON file: copy those three to seed a new
machine), and `restored_at` makes a fresh database anywhere from it, PostgreSQL too:

    .venv/bin/python -m bench.seed --events 1000000 --to postgresql+psycopg://...
    .venv/bin/python -m bench.seed --events 1000000 --to sqlite:///fresh.sqlite3
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import random
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import engine as hz
from bench.fold import UNIT, _say, _side_proposition
from engine.fold import contest_for
from ledger.books.accounts import account_stream, player_account
from ledger.books.book import Book
from ledger.service import Club, table_stream
from ledger.store import db
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log.keys import Signer, create_key, load_signer
from ledger.store.vocabulary import AccountOpened, Deposited
from ledger.unit_of_work import UnitOfWork
from ledger.web import tokens

SEED_VERSION = 1
"""Bump when what is seeded changes: cached databases of other versions are not used."""
SEED = 1757
ACTOR = "setter:bench"
EVENTS_PER_TABLE = 2500
"""Tables to open: one per this many events asked for (at least MIN_TABLES)."""
MIN_TABLES = 16
PLAYERS_PER_TABLE = 2
"""The player pool: this many players per table; each table seats 3 to 6 of them."""
THROW_TABLES = 16
PLAYER_FUNDS = 10**9
SETTER_FUNDS = 10**13
COMMIT_EVERY = 2000
"""Events per write transaction while seeding."""
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


class Clock:
    """A simulated clock: each call (one append) is 1 to 20 seconds after the last."""

    def __init__(self, rng: random.Random) -> None:
        self.now, self.rng = EPOCH, rng

    def __call__(self) -> str:
        self.now += timedelta(seconds=self.rng.randrange(1, 21))
        return self.now.isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class Table:
    name: str
    state: hz.TableState = hz.INITIAL
    players: list[str] = field(default_factory=list)

    @property
    def stream(self) -> str:
        return table_stream(self.name)


class Seeder:
    """Commands recorded as Club.command records them, in the caller's transaction."""

    def __init__(self, store: EventStore, rng: random.Random) -> None:
        self.store, self.rng = store, rng
        self.book = Book(store)
        self.club = Club(self.book)
        self.count = 0

    def command(
        self,
        uow: UnitOfWork,
        table: Table,
        decide: Callable[[hz.TableState], list[hz.Event]],
    ) -> list[Recorded]:
        """Club.command's work in its unit of work, minus the If-Match and idempotency
        checks."""
        before = table.state
        events = decide(before)
        state = hz.fold(events, before)
        rows, _ = uow.play(table.stream, before, events, ACTOR)
        table.state = state
        self.count += len(rows)
        return rows

    def account(self, uow: UnitOfWork, name: str, amount: int) -> None:
        """Club.create_player and Club.account_command(Deposited), for `name`."""
        account = player_account(name)
        stream = account_stream(account)
        version = self.store.stream_version(uow.conn, stream)
        events: list[Any] = []
        if not version and name != hz.SETTER:
            events.append(AccountOpened(version=1, account=account))
        events.append(Deposited(version=version + len(events) + 1, account=account, amount=amount))
        for event in events:  # one command each, as the API takes them
            self.count += len(uow.record(stream, event.version - 1, [event], ACTOR))

    # -- a table's life ---------------------------------------------------------------

    def open(self, uow: UnitOfWork, table: Table) -> None:
        """Open the table, seat its players and cast for the first caster."""
        self.command(uow, table, lambda st: hz.open_table(hz.BUILTIN["english"], state=st))
        for player in table.players:
            self.command(uow, table, functools.partial(hz.seat, player=player))
        while table.state.phase is hz.Phase.SEATING:
            s = table.state
            contest, casts = contest_for(s.contest, s.casts, s.seats)
            player = next(p for p in contest if p not in casts)
            die = self.rng.randrange(1, 7)
            cast = functools.partial(hz.cast_for_caster, player=player, die=die)
            self.command(uow, table, cast)

    def start_round(self, uow: UnitOfWork, table: Table) -> tuple[str | None, int, int]:
        """Main, stakes, cover and side bets: the round up to its first throw.
        Returns who laid against the caster, how much, and the caster's stake."""
        rng = self.rng
        caster = table.state.caster
        assert caster is not None
        main = rng.randrange(5, 10)
        self.command(uow, table, lambda st: hz.call_main(st, main))
        staked = rng.randrange(1, 6) * UNIT
        self.command(uow, table, lambda st: hz.stake(st, staked))
        layer, laid = None, 0
        if rng.random() < 0.8:
            layer = rng.choice([p for p in table.state.seats if p != caster])
            laid = rng.randrange(1, 6) * UNIT
            self.command(uow, table, lambda st: hz.lay(st, layer, laid))
            funds = self.club.free_funds(uow.conn, caster)
            self.command(uow, table, lambda st: hz.cover(st, funds))
        return layer, laid, staked

    def side_bet(self, uow: UnitOfWork, table: Table, accept_p: float = 0.85) -> None:
        rng = self.rng
        participants = [*table.state.seats, hz.SETTER]
        offerer = rng.choice(participants)
        prop = _side_proposition(rng, table.state.phase)
        backs, amount, asks = (
            rng.random() < 0.5,
            rng.randrange(1, 11) * 10,
            rng.randrange(1, 11) * 10,
        )
        rows = self.command(
            uow, table, lambda st: hz.offer_side_bet(st, offerer, prop, backs, amount, asks)
        )
        if rng.random() < accept_p:
            bet_id = json.loads(rows[0].payload)["bet_id"]
            taker = rng.choice([p for p in participants if p != offerer])
            self.command(uow, table, lambda st: hz.accept_side_bet(st, bet_id, taker))

    def throw(self, uow: UnitOfWork, table: Table) -> None:
        """A throw; now and then a cocked or wild one first, recast as the rules say."""
        rng = self.rng
        die1, die2 = rng.randrange(1, 7), rng.randrange(1, 7)
        if rng.random() < 0.03:
            off = rng.choice((0, 1, 2))
            standing = rng.randrange(1, 7) if off and rng.random() < 0.5 else None
            reason = rng.choice(("cocked", "wild"))
            self.command(uow, table, lambda st: hz.void_throw(st, reason, off, standing))
            if standing is not None:
                die1, die2 = (die1, standing) if off == 1 else (standing, die2)
        self.command(uow, table, lambda st: hz.throw(st, die1, die2))

    def play_round(self, uow: UnitOfWork, table: Table) -> None:
        rng = self.rng
        caster = table.state.caster
        assert caster is not None
        layer, laid, staked = self.start_round(uow, table)
        for _ in range(rng.randrange(0, 3)):
            self.side_bet(uow, table)
        current = table.state.round
        odds_laid = False
        while table.state.round == current:
            if table.state.phase is hz.Phase.CHANCE:
                if not odds_laid:
                    odds_laid = True
                    if rng.random() < 0.7:
                        amount = rng.randrange(1, staked // UNIT + 1) * UNIT
                        odds = functools.partial(
                            hz.lay_odds, bettor=caster, on="chance", amount=amount
                        )
                        self.command(uow, table, odds)
                    if layer is not None and rng.random() < 0.5:
                        amount = rng.randrange(1, laid // UNIT + 1) * UNIT
                        odds = functools.partial(
                            hz.lay_odds, bettor=layer, on="main", amount=amount
                        )
                        self.command(uow, table, odds)
                if rng.random() < 0.15:
                    self.side_bet(uow, table)
            self.throw(uow, table)

    def to_chance(self, uow: UnitOfWork, table: Table) -> None:
        """Leave the table mid-round with a chance set: stakes (and odds) on the
        round, nothing pending, no side bet open (an ordinary throw could decide one)."""
        while True:
            caster = table.state.caster
            assert caster is not None
            _layer, _laid, staked = self.start_round(uow, table)
            current = table.state.round
            self.command(
                uow,
                table,
                lambda st: hz.throw(st, self.rng.randrange(1, 7), self.rng.randrange(1, 7)),
            )
            if table.state.round == current:
                break
            # The first throw ended the round (a nick or an out): play on.
        assert table.state.phase is hz.Phase.CHANCE and not any(
            b.pending or b.proposition.kind is hz.PropositionKind.NEXT_TOTAL
            for b in table.state.bets.values()
        )
        amount = self.rng.randrange(1, staked // UNIT + 1) * UNIT
        self.command(uow, table, lambda st: hz.lay_odds(st, caster, "chance", amount))


# -- the database -------------------------------------------------------------------


@dataclass
class Seeded:
    path: Path
    meta: dict[str, Any]


def seeded(events: int, cache_dir: Path, seed: int = SEED, export: bool = True) -> Seeded:
    """The cached database of `events` events: seeded first if it is not there, by
    import of its cached export if that is there, else through the write path (and
    then exported, with `export`, for the next time)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    stem = f"api-v{SEED_VERSION}-seed{seed}-{events}"
    path, meta_path = cache_dir / f"{stem}.sqlite3", cache_dir / f"{stem}.json"
    if not path.exists() and all(p.exists() for p in (meta_path, key_for(path), export_for(path))):
        _say(f"seeding {path} by import of {export_for(path).name}...")
        partial = cache_dir / f"{stem}.partial.sqlite3"
        for leftover in cache_dir.glob(f"{stem}.partial.sqlite3*"):
            leftover.unlink()
        meta = json.loads(meta_path.read_text())
        seconds = _import(f"sqlite:///{partial}", path, meta)
        _checkpoint(partial)
        os.replace(partial, path)
        _say(f"  imported {meta['events']:,} events in {seconds:.1f} s")
        meta["imported_seconds"] = round(seconds, 1)
        meta_path.write_text(json.dumps(meta, indent=2))
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        head, current = db.code_head(), _revision_of(path)
        if current != head:
            # As a deployment would: the migrations bring the data along.
            _say(f"upgrading the cached {path.name} from schema {current} to {head}...")
            engine = db.make_engine(f"sqlite:///{path}")
            db.upgrade(engine)
            engine.dispose()
            _checkpoint(path)
        if meta.get("schema_head") != head:
            meta["schema_head"] = head
            meta_path.write_text(json.dumps(meta, indent=2))
        meta["cached"] = True
        return Seeded(path, meta)
    partial = cache_dir / f"{stem}.partial.sqlite3"
    for leftover in [*cache_dir.glob(f"{stem}.partial.sqlite3*"), key_for(partial)]:
        leftover.unlink(missing_ok=True)
    _say(f"seeding {events:,} events into {path} (cached for the next run)...")
    meta = seed_database(partial, events, seed)
    meta["cache_key"] = stem
    os.replace(key_for(partial), key_for(path))
    os.replace(partial, path)
    meta_path.write_text(json.dumps(meta, indent=2))
    if export:
        exported(path)
    meta["cached"] = False
    return Seeded(path, meta)


def export_for(database: Path) -> Path:
    """The whole-log export of a seeded database: beside it, `<name>.jsonl`."""
    return database.with_suffix(".jsonl")


def exported(database: Path) -> Path:
    """The cached whole-log export of the seeded `database`, made first if it is not
    there (signed by its key, key_for)."""
    from ledger.exports import jsonl
    from ledger.exports.scope import scope_of

    out = export_for(database)
    if out.exists():
        return out
    _say(f"exporting {database.name} to {out.name} (cached beside it)...")
    started = time.perf_counter()
    partial = out.with_suffix(".partial.jsonl")
    engine = db.make_engine(f"sqlite:///{database}")
    verifier = load_signer(key_for(database)).verifier
    prepared = jsonl.prepare(engine, scope_of(everything=True), key=verifier)
    with open(partial, "wb") as f:
        for chunk in prepared.chunks():
            f.write(chunk)
    engine.dispose()
    os.replace(partial, out)
    _say(f"  exported in {time.perf_counter() - started:.1f} s")
    return out


def restored_at(url: str, events: int, cache_dir: Path, seed: int = SEED) -> dict[str, Any]:
    """A new database at `url` (an SQLite file that is not there yet, or an empty
    PostgreSQL database) holding the seeded log of `events` events, by import of its
    cached export; returns the seeded database's meta, with how long the import took.
    The log's signing key is key_for(the cached database)."""
    found = seeded(events, cache_dir, seed)
    exported(found.path)
    meta = dict(found.meta)
    meta["imported_seconds"] = round(_import(url, found.path, meta), 1)
    return meta


def _import(url: str, database: Path, meta: dict[str, Any]) -> float:
    """Restore the export of the seeded `database` into the new database at `url`, with
    the bench's setter token (meta["token"]); returns the seconds the restore took."""
    from ledger.exports import restore
    from ledger.store import tokens
    from ledger.web import tokens as api_tokens

    engine = db.make_engine(url)
    db.upgrade(engine)
    verifier = load_signer(key_for(database)).verifier
    started = time.perf_counter()
    with open(export_for(database), "rb") as f:
        restore.restore(engine, f, key=verifier)
    seconds = time.perf_counter() - started
    # Tokens are not in an export: the bench's is stored again, as tokens stores any
    # (a SHA-256 of the secret), so that the meta's token still opens the API.
    with engine.begin() as conn:
        digest = hashlib.sha256(meta["token"].encode()).hexdigest()
        tokens.insert(conn, api_tokens.Role.SETTER.value, "bench", digest)
    holder = api_tokens.holder(engine, meta["token"])
    engine.dispose()
    assert holder is not None, "the bench's token is not stored as ledger.web.tokens reads it"
    return seconds


def _revision_of(path: Path) -> str | None:
    """The schema revision the database file is at (Alembic's record of it)."""
    con = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        row = con.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error:
        row = None
    finally:
        con.close()
    return None if row is None else str(row[0])


def _checkpoint(path: Path) -> None:
    """Fold the write-ahead log into the file, so that the file alone is the database."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def key_for(database: Path) -> Path:
    """The signing key of a seeded database: beside it, `<name>.key`."""
    return database.with_suffix(".key")


def _signer_for(database: Path) -> Signer:
    key = key_for(database)
    if not key.exists():
        create_key(key, "bench.hazard/ledger")
    return load_signer(key)


def seed_database(path: Path, events: int, seed: int = SEED) -> dict[str, Any]:
    started = time.perf_counter()
    rng = random.Random(seed)
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    # Every write signs a checkpoint: the seeded log's key lives beside it (key_for),
    # where bench.api's servers find it.
    signer = _signer_for(path)
    store = EventStore(engine, clock=Clock(random.Random(seed + 1)), signer=signer)
    seeder = Seeder(store, rng)

    n_tables = max(MIN_TABLES, events // EVENTS_PER_TABLE)
    players = [f"p{i:04d}" for i in range(1, PLAYERS_PER_TABLE * n_tables + 1)]
    tables = [Table(f"t{i:04d}") for i in range(1, n_tables + 1)]
    live = [Table(f"live{i:02d}") for i in range(1, THROW_TABLES + 1)]
    for table in (*tables, *live):
        table.players = rng.sample(players, rng.randrange(3, 7))

    last_said = time.perf_counter()
    with UnitOfWork(store) as uow:
        seeder.account(uow, hz.SETTER, SETTER_FUNDS)
        for name in players:
            seeder.account(uow, name, PLAYER_FUNDS)
        for table in (*tables, *live):
            seeder.open(uow, table)
        for table in live:  # a round or two of history each
            for _ in range(rng.randrange(1, 3)):
                seeder.play_round(uow, table)
        uow.commit()
    target = events - len(live) * 8  # to_chance adds about that many at the end
    while seeder.count < target:
        with UnitOfWork(store) as uow:
            goal = min(seeder.count + COMMIT_EVERY, target)
            while seeder.count < goal:
                seeder.play_round(uow, rng.choice(tables))
            uow.commit()
        if time.perf_counter() - last_said > 15:
            last_said = time.perf_counter()
            rate = seeder.count / (last_said - started)
            _say(f"  seeded {seeder.count:,} / {events:,} events ({rate:,.0f}/s)")
    with UnitOfWork(store) as uow:
        for table in live:
            seeder.to_chance(uow, table)
        uow.commit()
    token = tokens.create(engine, tokens.Role.SETTER, "bench")

    with engine.connect() as conn:
        counts = {
            name: conn.execute(sa.text(f"SELECT count(*) FROM {name}")).scalar_one()
            for name in ("events", "settlements", "settlement_parties", "rounds", "postings")
        }
    store.close()
    engine.dispose()
    _checkpoint(path)
    seconds = time.perf_counter() - started
    _say(f"  seeded {counts['events']:,} events in {seconds:.1f} s")
    return {
        "seed_version": SEED_VERSION,
        "schema_head": _revision_of(path),
        "seed": seed,
        "events_asked": events,
        "events": counts["events"],
        "counts": counts,
        "seconds": round(seconds, 1),
        "bytes": path.stat().st_size,
        "tables": [t.name for t in tables],
        "throw_tables": [t.name for t in live],
        "players": players,
        "token": token,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.seed", description="Seed (or find cached) bench.api databases."
    )
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    parser.add_argument(
        "--to",
        metavar="URL",
        help="also make a new database at URL (an SQLite file not there yet, or an empty "
        "PostgreSQL database) by import of the cached export",
    )
    args = parser.parse_args(argv)
    if args.to:
        meta = restored_at(args.to, args.events, args.cache_dir, args.seed)
        shown = {k: v for k, v in meta.items() if k not in ("tables", "players", "token")}
        print(json.dumps({"url": args.to, **shown}, indent=2))
        return 0
    found = seeded(args.events, args.cache_dir, args.seed)
    shown = {k: v for k, v in found.meta.items() if k not in ("tables", "players", "token")}
    print(json.dumps({"path": str(found.path), **shown}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
