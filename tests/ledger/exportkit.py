"""The evening the export tests play (two tables side by side, deposits between, on a
clock a second on at each write) and its export: shared by the export, offline check,
restore and `hazard export` tests."""

from __future__ import annotations

from itertools import count
from typing import Any

import sqlalchemy as sa

import engine as hz
from ledger.exports import jsonl
from ledger.exports.scope import Scope
from ledger.service import Club
from ledger.store.vocabulary import Deposited
from tests.engine.tablekit import NICK_FIRST, next_total
from tests.signing import VERIFIER

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


WRITES = 45
"""How many writes `play` makes (each one checkpoint), to name times mid-log."""


def export(engine: sa.Engine, scope: Scope) -> bytes:
    prepared = jsonl.prepare(engine, scope, key=VERIFIER)
    return b"".join(prepared.chunks())
