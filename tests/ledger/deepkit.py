"""The history the deep check's tests play: three players and the setter funded, and
four rounds at table t1, each command through Club.command. Shared by the deep check,
the running balance, the restore and `hazard import` tests."""

from __future__ import annotations

from typing import Any

import engine as hz
from ledger.service import Club
from ledger.store.vocabulary import Deposited
from tests.engine.tablekit import NICK_FIRST, next_total


def play(club: Club) -> None:
    """Three players and the setter funded, and four rounds at table t1 (as
    tests/ledger/test_tableviews.py plays them), each command through Club.command."""
    club.account_command(hz.SETTER, Deposited, 100_000, "setter")
    for name in ("ann", "bob", "cat"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")

    def do(command: Any, *args: Any, new: bool = False) -> None:
        club.command("t1", "croupier", lambda state, _funds: command(state, *args), new_table=new)

    do(lambda s: hz.open_table(hz.BUILTIN["english"]), new=True)
    do(hz.seat, "ann")
    do(hz.seat, "bob")
    do(hz.cast_for_caster, "ann", 1)
    do(hz.cast_for_caster, "bob", 6)
    do(hz.call_main, 7)
    do(hz.stake, 1000)
    do(hz.lay, "bob", 400)
    do(hz.lay, "bob", 100)
    do(hz.refuse, "b10")
    do(hz.cover, 4000)
    do(hz.offer_side_bet, "bob", next_total(7), True, 100, 500)
    do(hz.accept_side_bet, "b13", "setter")
    do(hz.offer_side_bet, "ann", NICK_FIRST, True, 200, 200, "bob")
    do(hz.throw, 2, 2)
    do(hz.lay_odds, "ann", "chance", 500)
    do(hz.throw, 1, 3)
    do(hz.call_main, 6)
    do(hz.seat, "cat")
    do(hz.lay, "cat", 300)
    do(hz.cover, 4000)
    do(hz.throw, 1, 1)
    do(hz.leave, "ann")
    do(hz.call_main, 5)
    do(hz.stake, 200)
    do(hz.close)
