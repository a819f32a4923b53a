"""The CPU an append costs, without the disk: EventStore.append of 1-event and 100-event
writes to SQLite in memory, timed in process CPU time (time.process_time), so that a
loaded machine's waits and fsyncs do not count. bench.store times the same appends on
disk, in wall time, against raw drivers; this isolates the store's own work (encoding,
the canonical frame, the chain hash, building the rows) when a change to that code is
to be compared with the code before it, on the same machine:

    .venv/bin/python -m bench.appendcpu                 # here
    (cd ../before && .venv/bin/python -m bench.appendcpu)   # another checkout, in turn

Medians of --repeat runs, in events per CPU-second; reported, never asserted.

`--seals` times whole writes instead (ledger.unit_of_work: the append, the postings, the
tree and its signed checkpoint), each with its seal and without it (store.seals off),
interleaved, and prints the ratio: the CPU the seal (issue 25's stream heads and account
chains) adds to a write.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Deposited


def rate(batch: int, events: int) -> float:
    """Events appended per CPU-second, `batch` to a transaction."""
    engine = db.make_engine("sqlite://")
    db.upgrade(engine)
    store = EventStore(engine)
    version = 0
    started = time.process_time()
    for _ in range(events // batch):
        new = [
            Deposited(version=version + i + 1, account="player:ann", amount=10 + i)
            for i in range(batch)
        ]
        with engine.begin() as conn:
            store.append(conn, "account:player:ann", version, new, "setter")
        version += batch
    spent = time.process_time() - started
    store.close()
    engine.dispose()
    return events / spent


def write_rate(batch: int, events: int, sealed: bool) -> float:
    """Events written per CPU-second through the unit of work, `batch` a write."""
    from ledger.store.log.keys import Signer
    from ledger.unit_of_work import UnitOfWork

    engine = db.make_engine("sqlite://")
    db.upgrade(engine)
    store = EventStore(engine, signer=Signer.generate("bench.hazard/appendcpu"))
    store.seals = sealed
    version = 0
    started = time.process_time()
    for _ in range(events // batch):
        new = [
            Deposited(version=version + i + 1, account="player:ann", amount=10 + i)
            for i in range(batch)
        ]
        with UnitOfWork(store) as uow:
            uow.record("account:player:ann", version, new, "setter")
            uow.commit()
        version += batch
    spent = time.process_time() - started
    store.close()
    engine.dispose()
    return events / spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each (default 7)")
    parser.add_argument("--seals", action="store_true", help="whole writes, sealed or not")
    args = parser.parse_args()
    if args.seals:
        for batch, events in ((1, 1_000), (100, 20_000)):
            pairs = [
                (write_rate(batch, events, True), write_rate(batch, events, False))
                for _ in range(args.repeat)
            ]
            sealed = statistics.median(p[0] for p in pairs)
            unsealed = statistics.median(p[1] for p in pairs)
            print(
                f"{batch:>3} event(s) a write: sealed {sealed:>9,.0f}, unsealed {unsealed:>9,.0f}"
                f" events per CPU-second: cost {unsealed / sealed:.3f} (per pair, median "
                f"{statistics.median(u / s for s, u in pairs):.3f})"
            )
        return
    for batch, events in ((1, 2_000), (100, 40_000)):
        rates = [rate(batch, events) for _ in range(args.repeat)]
        median = statistics.median(rates)
        print(f"{batch:>3} event(s) a write: {median:>9,.0f} events per CPU-second")


if __name__ == "__main__":
    main()
