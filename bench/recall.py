"""Game recall (`GET /players/{p}/recall`, `GET /tables/{t}/recall`) over a long round and
a million postings, before and after issue 22.

    .venv/bin/python -m bench.recall                          # SQLite and PostgreSQL
    .venv/bin/python -m bench.recall --throws 5000 --postings 200000 --no-postgres

A table is played through the write path (bench.seed's Seeder: the engine's commands,
then `UnitOfWork.play`, as Club.command records them): ten rounds in which bob lays
against ann, who covers, and bob and cat make side bets on the next throw, and, fifth
of them, a long round of `--throws` throws. Then `--postings` more postings (with their
events) are filled in by SQL, money of other tables, so that the ledger is as large as
a club's. Each recall is timed (median of `--repeat` runs, milliseconds) and its answer
measured (bytes of its JSON):

- `before`: what recall did before issue 22: every throw of each round, and each bet's
  net read off the parties' postings by position and counterparty, which no index
  serves (a scan of every posting, per bet);
- `after`: `ledger.audit.recall` now: a round's last RECALL_THROWS throws and their
  count, and each bet's net off its escrow's postings, through the (account, position,
  id) index.

And one bet's net query alone, both ways. Every answer of `before` and `after` is
checked to agree on everything but the throws left out. Speed is reported, never
asserted.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import engine as hz
from bench.seed import Clock, Seeder, Table
from engine.events import Proposition, PropositionKind
from ledger.audit import recall
from ledger.books import auditreads
from ledger.books.accounts import player_account
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log.keys import create_key, load_signer
from ledger.store.schema import postings
from ledger.unit_of_work import UnitOfWork

ROUNDS = 10
LONG = 5
"""Which of the rounds is the long one."""
BATCH = 2000
"""Commands a transaction while the table is played."""
EIGHT = Proposition(PropositionKind.NEXT_TOTAL, frozenset({8}))


def play(store: EventStore, throws: int) -> None:
    """Table t1: ann casts, bob lays against her, bob and cat bet on the next throw."""
    seeder = Seeder(store, random.Random(22))
    table = Table("t1", players=["ann", "bob", "cat"])
    with UnitOfWork(store) as uow:
        seeder.account(uow, hz.SETTER, 10**12)
        for name in table.players:
            seeder.account(uow, name, 10**9)
        seeder.command(uow, table, lambda st: hz.open_table(hz.BUILTIN["english"], state=st))
        for name in table.players:
            seeder.command(uow, table, functools.partial(hz.seat, player=name))
        for die, name in enumerate(table.players, start=1):
            seeder.command(uow, table, functools.partial(hz.cast_for_caster, player=name, die=die))
        uow.commit()
    for number in range(1, ROUNDS + 1):
        with UnitOfWork(store) as uow:
            run = functools.partial(seeder.command, uow, table)
            run(lambda st: hz.stake(st, 100))
            run(lambda st: hz.lay(st, "bob", 50))
            run(lambda st: hz.cover(st, 10**9))
            run(lambda st: hz.call_main(st, 7))
            run(lambda st: hz.throw(st, 2, 4))  # the chance: 6
            for _ in range(5):
                (offer,) = run(lambda st: hz.offer_side_bet(st, "bob", EIGHT, True, 10, 10))
                bet = offer.event().bet_id  # type: ignore[union-attr]
                run(lambda st, bet=bet: hz.accept_side_bet(st, bet, "cat"))
            uow.commit()
        left = throws - 2 if number == LONG else 1
        while left > 0:
            with UnitOfWork(store) as uow:
                for _ in range(min(left, BATCH)):
                    seeder.command(uow, table, lambda st: hz.throw(st, 4, 4))  # 8: neither
                left -= min(left, BATCH)
                uow.commit()
        with UnitOfWork(store) as uow:
            seeder.command(uow, table, lambda st: hz.throw(st, 3, 3))  # the chance
            uow.commit()


def fill(engine: sa.Engine, n: int) -> None:
    """`n` more postings, one event each, of other tables' money (after the table's)."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.begin() as conn:
        head = conn.exec_driver_sql("SELECT max(position) FROM events").scalar_one()
        series = (
            f"WITH RECURSIVE g(x) AS (SELECT {head + 1} UNION ALL SELECT x + 1 FROM g "
            f"WHERE x < {head + n}) SELECT x FROM g"
            if sqlite
            else f"SELECT x FROM generate_series({head + 1}, {head + n}) AS g(x)"
        )
        conn.exec_driver_sql(
            "INSERT INTO events (position, stream, version, type, schema_version, payload, "
            "actor, idempotency_key, recorded_at, prev_hash, hash) "
            f"SELECT x, 'table:t9', x - {head}, 'BetSettled', 1, '{{}}', 'bench', NULL, "
            f"'2026-01-01T00:00:00.000000Z', '0', '0' FROM ({series}) AS s"
        )
        conn.exec_driver_sql(
            "INSERT INTO postings (position, account, amount, counterparty, balance) "
            f"SELECT x, 'player:f' || (x - (x / 1000) * 1000), 1, 'escrow:t9:b' || x, 0 "
            f"FROM ({series}) AS s"
        )
        if not sqlite:
            conn.exec_driver_sql("ANALYZE")


def before_net_query(pot: str, sources: list[int]) -> Any:
    """recall's net query before issue 22: the parties' postings against the escrow."""
    p = postings.c
    return (
        sa.select(p.account, sa.func.sum(p.amount))
        .where(p.position.in_(sources), p.counterparty == pot)
        .group_by(p.account)
    )


@contextmanager
def as_before() -> Iterator[None]:
    """ledger.audit.recall as it was: every throw, and the net query by position."""
    kept = auditreads.net_query, recall.RECALL_THROWS
    auditreads.net_query, recall.RECALL_THROWS = before_net_query, 10**12  # type: ignore[assignment]
    try:
        yield
    finally:
        auditreads.net_query, recall.RECALL_THROWS = kept


def _ms(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, answer = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        answer = run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), answer


def _same(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    """The answers agree, but for the throws `after` leaves out (and counts)."""
    paged = ("throws", "throw_count", "earlier_throws")
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        assert new["throws"] == old["throws"][len(old["throws"]) - len(new["throws"]) :]
        assert new["throw_count"] == len(old["throws"])
        assert {k: v for k, v in new.items() if k not in paged} == {
            k: v for k, v in old.items() if k not in paged
        }


def measure(engine: sa.Engine, throws: int, filler: int, repeat: int, key: Path) -> None:
    store = EventStore(engine, clock=Clock(random.Random(23)), signer=load_signer(key))
    began = time.perf_counter()
    play(store, throws)
    fill(engine, filler)
    with engine.connect() as conn:
        count = conn.exec_driver_sql("SELECT count(*) FROM postings").scalar_one()
        events = conn.exec_driver_sql("SELECT count(*) FROM events").scalar_one()
    print(
        f"{engine.dialect.name}: {events:,} events, {count:,} postings, a round of "
        f"{throws:,} throws (set up in {time.perf_counter() - began:.0f} s)"
    )
    bob = player_account("bob")
    cases: dict[str, Callable[[sa.Connection], Any]] = {
        "GET /players/bob/recall": lambda conn: recall.of_player(conn, bob),
        "GET /tables/t1/recall": lambda conn: recall.of_table(conn, "table:t1"),
    }
    print(f"  {'':26} {'before':>12} {'after':>12} {'bytes before':>14} {'bytes after':>12}")
    for name, run in cases.items():
        with engine.connect() as conn:
            with as_before():
                old_ms, old = _ms(functools.partial(run, conn), max(1, repeat // 2))
            new_ms, new = _ms(functools.partial(run, conn), repeat)
        _same(old, new)
        sizes = len(json.dumps(old)), len(json.dumps(new))
        print(f"  {name:26} {old_ms:>9.1f} ms {new_ms:>9.1f} ms {sizes[0]:>14,} {sizes[1]:>12,}")
    with engine.connect() as conn:
        row = conn.exec_driver_sql(
            "SELECT bet_id, sources FROM settlements WHERE stream = 'table:t1' LIMIT 1"
        ).one()
        pot, sources = f"escrow:t1:{row.bet_id}", json.loads(row.sources)
        ways = {"before": before_net_query, "after": auditreads.net_query}
        cells = []
        for query in ways.values():
            took, _ = _ms(lambda q=query: conn.execute(q(pot, sources)).all(), repeat)
            cells.append(f"{took:>9.2f} ms")
    print(f"  {'one bet net':26} " + " ".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall", description=__doc__)
    parser.add_argument("--throws", type=int, default=50_000, help="throws of the long round")
    parser.add_argument("--postings", type=int, default=1_000_000, help="postings filled in")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (median)")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        key = Path(tmp) / "bench.key"
        create_key(key, "bench.hazard/recall")
        engine = db.make_engine(f"sqlite:///{Path(tmp) / 'recall.sqlite3'}")
        db.upgrade(engine)
        measure(engine, args.throws, args.postings, args.repeat, key)
        engine.dispose()
        if args.no_postgres:
            return 0
        from tests import pgcluster

        with pgcluster.temporary_cluster({"fsync": "off"}) as sock:
            engine = db.make_engine(pgcluster.url(sock))
            db.upgrade(engine)
            measure(engine, args.throws, args.postings, args.repeat, key)
            engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
