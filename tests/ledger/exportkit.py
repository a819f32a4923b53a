"""The evening the export tests play (two tables side by side, deposits between, on a
clock a second on at each write; a table of disputes beside them), a store it is
written to, its export with the money its closing should count, and what other
connections hold while one is read: shared by the export, offline check, restore and
`hazard export` tests."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import engine as hz
from engine import events as ev
from ledger.books.book import Book
from ledger.commands.disputes import open_dispute, resolve_dispute
from ledger.exports import jsonl
from ledger.exports.scope import Scope
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.vocabulary import Deposited
from tests.engine.tablekit import NICK_FIRST, next_total
from tests.signing import SIGNER, VERIFIER

START = "2026-11-23T14:00:00.000000Z"


def ticking() -> Any:
    """A clock a second on at each write, from START: times a test can name."""
    seconds = count()

    def now() -> str:
        n = next(seconds)
        return f"2026-11-23T14:{n // 60:02d}:{n % 60:02d}.000000Z"

    return now


def at(write: int) -> str:
    """The time `ticking` gives the write numbered `write` (from 0)."""
    return f"2026-11-23T14:{write // 60:02d}:{write % 60:02d}.000000Z"


def play(club: Club) -> None:
    """Two tables played side by side, with deposits between: t1 as test_deep plays it,
    t2 a round of its own between t1's commands. ann plays at t1 only, cat at both."""
    club.account_command(hz.SETTER, Deposited, 100_000, "setter")
    for name in ("ann", "bob", "cat"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")

    def do(table: str, command: Any, *args: Any, new: bool = False) -> None:
        club.command(table, "croupier", lambda state, _f: command(state, *args), new_table=new)

    t2 = iter(
        [
            (lambda s: hz.open_table(hz.BUILTIN["english"]), True),
            (lambda s: hz.seat(s, "cat"), False),
            (lambda s: hz.seat(s, "bob"), False),
            (lambda s: hz.cast_for_caster(s, "cat", 1), False),
            (lambda s: hz.cast_for_caster(s, "bob", 6), False),
            (lambda s: hz.call_main(s, 7), False),
            (lambda s: hz.stake(s, 300), False),
            (lambda s: hz.lay(s, "bob", 100), False),
        ]
    )

    def other() -> None:
        step = next(t2, None)
        if step is not None:
            do("t2", step[0], new=step[1])

    do("t1", lambda s: hz.open_table(hz.BUILTIN["english"]), new=True)
    for command, *args in [
        (hz.seat, "ann"),
        (hz.seat, "bob"),
        (hz.cast_for_caster, "ann", 1),
        (hz.cast_for_caster, "bob", 6),
        (hz.call_main, 7),
        (hz.stake, 1000),
        (hz.lay, "bob", 400),
        (hz.lay, "bob", 100),
        (hz.refuse, "b10"),
        (hz.cover, 4000),
        (hz.offer_side_bet, "bob", next_total(7), True, 100, 500),
        (hz.accept_side_bet, "b13", "setter"),
        (hz.offer_side_bet, "ann", NICK_FIRST, True, 200, 200, "bob"),
        (hz.throw, 2, 2),
        (hz.lay_odds, "ann", "chance", 500),
        (hz.throw, 1, 3),
        (hz.call_main, 6),
        (hz.seat, "cat"),
        (hz.lay, "cat", 300),
        (hz.cover, 4000),
        (hz.throw, 1, 1),
        (hz.leave, "ann"),
        (hz.call_main, 5),
        (hz.stake, 200),
    ]:
        do("t1", command, *args)
        other()
        if command is hz.throw:
            club.account_command("bob", Deposited, 10, "setter")
    do("t1", hz.close)
    club.account_command("ann", Deposited, 1, "setter")  # the log goes on past t1


def play_disputes(club: Any) -> None:
    """Table t3, as tests/api/disputekit.py plays its two rounds, then a dispute of
    each resolution: round 1 voided (ann hands back the setter's 100 and bob's 60), round
    2 upheld and then corrected (its 4+4 was 4+5: bob wins the side bet, cat pays 70)."""

    def do(command: Any, *args: Any, new: bool = False) -> list[ev.Event]:
        made: list[ev.Event] = []

        def decide(state: Any, _reads: Any) -> list[ev.Event]:
            made.extend(command(state, *args))
            return made

        club.command("t3", "croupier:cecil", decide, new_table=new)
        return made

    do(lambda s: hz.open_table(hz.BUILTIN["english"]), new=True)
    for name in ("ann", "bob", "cat"):
        do(hz.seat, name)
    for name, die in (("ann", 1), ("bob", 2), ("cat", 3)):
        do(hz.cast_for_caster, name, die)
    do(hz.stake, 100)
    laid = do(hz.lay, "bob", 60)[0]
    do(hz.cover, 1000, [laid.bet_id])  # type: ignore[union-attr]
    do(hz.call_main, 7)
    do(hz.throw, 3, 4)  # a nick
    do(hz.call_main, 7)
    do(hz.throw, 2, 4)  # the chance is 6
    side = do(hz.offer_side_bet, "cat", next_total(8), True, 20, 50, "bob")[0]
    do(hz.accept_side_bet, side.bet_id, "bob")  # type: ignore[union-attr]
    eight = do(hz.throw, 4, 4)[0].version
    do(hz.throw, 3, 3)  # the chance: ann wins round 2

    voided = open_dispute(club, "t3", "player:bob", "player", "bob", 1, "the dice left the table")
    resolve_dispute(club, "t3", "setter:bank", voided["dispute_id"], "voided", "a wild throw")
    upheld = open_dispute(club, "t3", "player:cat", "player", "cat", 2, "bob nudged the table")
    resolve_dispute(club, "t3", "setter:bank", upheld["dispute_id"], "upheld", "he did not")
    corrected = open_dispute(club, "t3", "player:bob", "player", "bob", 2, "4+5", eight, (4, 5))
    resolve_dispute(
        club, "t3", "setter:bank", corrected["dispute_id"], "corrected", "the camera", eight, (4, 5)
    )


def evening(engine: sa.Engine) -> Iterator[EventStore]:
    """A store on `engine` with `play`'s evening written on the `ticking` clock, closed
    after: a fixture's body (`yield from evening(engine)`)."""
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    play(Club(Book(store)))
    yield store
    store.close()


WRITES = 45
"""How many writes `play` makes (each one checkpoint), to name times mid-log."""


def export(engine: sa.Engine, scope: Scope) -> bytes:
    prepared = jsonl.prepare(engine, scope, key=VERIFIER)
    return b"".join(prepared.chunks())


def all_events(store: EventStore) -> list[Recorded]:
    return store.read_all(0, limit=100_000)


def money(store: EventStore, positions: set[int]) -> dict[str, dict[str, int]]:
    """The closing's money, from the postings of `positions` (the read model)."""
    out: dict[str, Counter[str]] = {}
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT position, account, amount, counterparty FROM postings"))
        for position, account, amount, other in rows:
            if position not in positions or account == "cash" or account.startswith("escrow:"):
                continue
            figures = out.setdefault(account, Counter())
            if other == "cash":
                figures["deposited" if amount > 0 else "withdrawn"] += abs(amount)
            elif other.startswith("escrow:"):
                figures["paid" if amount > 0 else "staked"] += abs(amount)
            else:  # party to party: a dispute's adjustment
                figures["adjusted"] += amount
    keys = ("deposited", "paid", "staked", "withdrawn")
    return {
        a: {k: f[k] for k in keys} | ({"adjusted": f["adjusted"]} if f["adjusted"] else {})
        for a, f in sorted(out.items())
    }


def held(engine: sa.Engine) -> list[str]:
    """What other connections hold of the database's history right now: on SQLite, a
    WAL that a checkpoint cannot empty (a reader keeps an older state of the file); on
    PostgreSQL, a session idle in a transaction or holding back the xmin horizon."""
    where = db.sqlite_file(engine.url)
    if where is not None:
        plain = sqlite3.connect(where, timeout=0.2, isolation_level=None)
        try:
            busy, frames, copied = plain.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            plain.close()
        wal = Path(f"{where}-wal")
        size = wal.stat().st_size if wal.exists() else 0
        found = []
        if busy:
            found.append(f"the WAL checkpoint was busy: {copied} of {frames} frames copied")
        if size:
            found.append(f"the WAL is {size} bytes after a checkpoint that truncates it")
        return found
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT pid, state, backend_xmin FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
            " AND (state IN ('idle in transaction', 'idle in transaction (aborted)')"
            " OR backend_xmin IS NOT NULL)"
        ).all()
    return [f"session {pid}: {state}, xmin {xmin}" for pid, state, xmin in rows]
