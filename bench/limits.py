"""The CPU a deposit and a lay cost through the club's commands (ledger.service.Club),
on an SQLite file, with a player's five limits set (`--limits`) or none: what the
checks of ledger.books.limits add to the write path. Each round times 200 deposits and
40 lays (each refused by the caster after it is timed, so the player's open bets stay
under the table's cap); figures are medians of 7 rounds of process CPU time.

    .venv/bin/python -m bench.limits            # no limits: the check's one read
    .venv/bin/python -m bench.limits --limits   # all five: the sums as well

Run it in another checkout (without --limits) to set the code before the limits beside
it. Reported, never asserted.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from ledger.books.book import Book
from ledger.commands import Caller, Role, tables
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log.keys import Signer
from ledger.store.vocabulary import Deposited

ROUNDS, DEPOSITS, LAYS = 7, 200, 40


def main() -> None:
    limited = "--limits" in sys.argv
    where = Path(tempfile.mkdtemp(prefix="hazard-bench-limits-"))
    engine = db.make_engine(f"sqlite:///{where / 'limits.sqlite3'}")
    db.upgrade(engine)
    club = Club(Book(EventStore(engine, signer=Signer.generate("bench.hazard/limits"))))
    club.account_command("setter", Deposited, 10**9, "setter:bench")
    for name in ("ann", "bob"):
        club.create_player(name, "setter:bench")
        club.account_command(name, Deposited, 10**8, "setter:bench")
    if limited:
        from ledger.commands import limits

        setter = Caller(Role.SETTER, "bench")
        for kind in ("deposit_24h", "deposit_7d", "loss_evening", "loss_week", "stake"):
            limits.set_limit(club, setter, "bob", kind, 10**12)
    croupier = Caller(Role.CROUPIER, "bench")
    tables.open_table(club, "t1", croupier, ruleset="english")
    for name in ("ann", "bob"):
        tables.seat(club, "t1", croupier, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t1", croupier, name, die)
    bob, ann = Caller(Role.PLAYER, "bob"), Caller(Role.PLAYER, "ann")
    deposits, lays = [], []
    for _ in range(ROUNDS):
        start = time.process_time()
        for _ in range(DEPOSITS):
            club.account_command("bob", Deposited, 1, "setter:bench")
        deposits.append((time.process_time() - start) / DEPOSITS * 1e6)
        spent = 0.0
        for _ in range(LAYS):
            start = time.process_time()
            laid = tables.lay(club, "t1", bob, "bob", 1)
            spent += time.process_time() - start
            tables.refuse(club, "t1", ann, laid["events"][0]["payload"]["bet_id"])
        lays.append(spent / LAYS * 1e6)
    print(
        f"limits {'set' if limited else 'none'}: a deposit {statistics.median(deposits):.0f} us "
        f"of CPU, a lay {statistics.median(lays):.0f} us (medians of {ROUNDS} rounds)"
    )


if __name__ == "__main__":
    main()
