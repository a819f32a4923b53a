"""What a server-dice throw costs through the club's own command, beside a croupier's
throw at the same kind of table: throws a second, in-process, on a SQLite file (WAL,
fsync on every commit, as the service runs it) and, given --postgres URL, on
PostgreSQL. A server throw logs the caster's client seed in a write of its own before
the write that draws the dice (ledger.commands.serverdice), so it costs two writes and
their two signed checkpoints where a croupier's throw costs one.

    .venv/bin/python -m bench.serverthrows                  # here
    (cd ../before && .venv/bin/python -m bench.serverthrows)   # another checkout, in turn
    .venv/bin/python -m bench.serverthrows --postgres postgresql+psycopg://...

Each run opens a fresh table, plays `--throws` throws (the caster staking 10 at the
start of each round) and times them in wall time; the figure is the median of
`--repeat` runs, and the server throw's ratio to the croupier's in the same process
takes out most of the machine's own noise. Reported, never asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import engine as hz
from engine import serverdice
from ledger.books.book import Book
from ledger.commands import Caller, Role, tables
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log.keys import Signer
from ledger.store.vocabulary import Deposited

CROUPIER = Caller(Role.CROUPIER, "cecil")
_tables = itertools.count()


def _club(url: str) -> tuple[Club, EventStore]:
    engine = db.make_engine(url)
    db.upgrade(engine)
    store = EventStore(engine, signer=Signer.generate("bench.local/ledger"))
    club = Club(Book(store))
    club.account_command(hz.SETTER, Deposited, 10**12, "setter")
    for name in ("ann", "bob"):
        if not club.player_exists(name):
            club.create_player(name, "setter")
        club.account_command(name, Deposited, 10**9, "setter")
    return club, store


def _run(club: Club, dice: str, throws: int, rng: random.Random) -> float:
    """Throws a second at a fresh table whose dice are `dice`."""
    table = f"b{next(_tables)}"
    tables.open_table(club, table, CROUPIER, ruleset="club", dice=dice)
    for name in ("ann", "bob"):
        tables.seat(club, table, CROUPIER, name)
    tables.cast(club, table, CROUPIER, "ann", 1)
    tables.cast(club, table, CROUPIER, "bob", 4)
    spent = 0.0
    for n in range(throws):
        state = club.state(table)
        if state.phase is hz.Phase.AWAITING_MAIN and not state.bets:  # untimed
            tables.stake(club, table, Caller(Role.PLAYER, state.caster or "ann"), 10)
        started = time.perf_counter()
        if dice == serverdice.SERVER:  # the croupier gives the caster's seed for them
            tables.throw(club, table, CROUPIER, client_seed=f"seed {n} {rng.random()}")
        else:
            tables.throw(club, table, CROUPIER, die1=rng.randint(1, 6), die2=rng.randint(1, 6))
        spent += time.perf_counter() - started
    return throws / spent


def measure(url: str, throws: int, repeat: int) -> dict[str, Any]:
    club, store = _club(url)
    rng = random.Random(7)
    try:
        rates: dict[str, list[float]] = {serverdice.CROUPIER: [], serverdice.SERVER: []}
        for _ in range(repeat):  # taken in turn, so that both see the same machine
            for dice in rates:
                rates[dice].append(_run(club, dice, throws, rng))
    finally:
        store.close()
        store.engine.dispose()
    croupier = statistics.median(rates[serverdice.CROUPIER])
    server = statistics.median(rates[serverdice.SERVER])
    return {
        "croupier_throws_per_s": round(croupier, 1),
        "server_throws_per_s": round(server, 1),
        "server_to_croupier": round(server / croupier, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--throws", type=int, default=200, help="throws a run (default 200)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--postgres", metavar="URL", help="also on this PostgreSQL database")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'throws.sqlite3'}"
        results["sqlite"] = measure(url, args.throws, args.repeat)
    if args.postgres:
        results["postgresql"] = measure(args.postgres, args.throws, args.repeat)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for where, r in results.items():
        print(
            f"{where:<10} croupier {r['croupier_throws_per_s']:>8.1f}/s   server "
            f"{r['server_throws_per_s']:>8.1f}/s   server/croupier {r['server_to_croupier']:.3f}"
        )


if __name__ == "__main__":
    main()
