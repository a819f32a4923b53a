"""Where a player may have something in play (ledger.books.inplay), on SQLite and
PostgreSQL: every table where, by its state, they have a bet open or hold the dice is
among the tables it names (every table with a bet open, those of their newest rounds as
caster), each found along an index of its own (migration 0015), and a table with
nothing open and no round of theirs is not."""

from __future__ import annotations

from typing import Any

import engine as hz
from ledger.books import inplay
from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Deposited
from tests.ledger.plankit import capture, full_scan_or_sort, plan

PLAYERS = ("ann", "bob", "cat")


def _do(club: Club, table: str, command: Any, *args: Any, new: bool = False) -> None:
    club.command(table, "croupier", lambda state, _: command(state, *args), new_table=new)


def truth(club: Club, name: str) -> list[str]:
    """The same, read from every table's state: a bet open with the player in it, or
    the dice in their hand in a round in play (or waiting for its first event)."""
    found = []
    for table in ("t1", "t2"):
        try:
            state = club.state(table)
        except Exception:  # not opened yet
            continue
        open_bet = any(name in bet.parties for bet in state.bets.values())
        if open_bet or (state.caster == name and state.in_play):
            found.append(table)
    return found


def held(club: Club, name: str) -> list[str]:
    """The tables inplay names where, by their states, the player has a bet open or the
    dice: it names a few more (any with a bet open, where they cast lately)."""
    with club.book.store.engine.connect() as conn:
        named = inplay.tables(conn, name)
    return [t for t in named if t in truth(club, name)]


def named(club: Club, name: str) -> list[str]:
    with club.book.store.engine.connect() as conn:
        return inplay.tables(conn, name)


def test_the_tables_in_play_are_those_every_states_say(store: EventStore) -> None:
    club = Club(Book(store))
    club.account_command(hz.SETTER, Deposited, 100_000, "setter")
    for name in PLAYERS:
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")
    seen = []

    def check() -> None:
        for name in PLAYERS:
            assert held(club, name) == truth(club, name), name
        seen.append({name: held(club, name) for name in PLAYERS})

    _do(club, "t1", lambda s: hz.open_table(hz.BUILTIN["english"]), new=True)
    for name in ("ann", "bob"):
        _do(club, "t1", hz.seat, name)
    check()  # seated, nothing more
    _do(club, "t1", hz.cast_for_caster, "ann", 1)
    _do(club, "t1", hz.cast_for_caster, "bob", 6)
    check()  # ann holds the dice
    _do(club, "t1", hz.call_main, 7)
    _do(club, "t1", hz.lay, "bob", 400)  # waiting for ann to cover it
    check()
    _do(club, "t2", lambda s: hz.open_table(hz.BUILTIN["english"]), new=True)
    for name in ("cat", "bob"):
        _do(club, "t2", hz.seat, name)
    _do(club, "t2", hz.cast_for_caster, "cat", 2)
    _do(club, "t2", hz.cast_for_caster, "bob", 1)
    _do(club, "t2", hz.call_main, 6)
    _do(club, "t2", hz.stake, 300)
    check()  # bob: a lay at t1 and the dice at t2
    _do(club, "t1", hz.cover, 4000)
    _do(club, "t1", hz.throw, 5, 6)  # a nick: settled, and ann casts again
    check()
    _do(club, "t1", hz.close)
    _do(club, "t2", hz.throw, 1, 1)  # out: bob's stake lost, and he casts again
    check()
    _do(club, "t2", hz.close)
    check()
    assert seen[0] == {"ann": [], "bob": [], "cat": []}
    assert seen[3] == {"ann": ["t1"], "bob": ["t1", "t2"], "cat": []}
    assert seen[-1] == {"ann": [], "bob": [], "cat": []}
    # Both tables closed: nothing held in escrow; only where each cast is named.
    assert {n: named(club, n) for n in PLAYERS} == {"ann": ["t1"], "bob": ["t2"], "cat": []}


def test_each_read_is_along_its_own_index(store: EventStore) -> None:
    club = Club(Book(store))
    club.create_player("ann", "setter")
    ran = capture(store.engine)
    with store.engine.connect() as conn:
        inplay.tables(conn, "ann")
        asked = list(ran)
        found = [plan(conn, statement, params) for statement, params in asked]
    assert all(not full_scan_or_sort(p) and "SCAN postings" not in p for p in found), found
    assert "SCAN accounts" not in found[0] or "ix_accounts_held" in found[0], found
    assert "ix_accounts_held" in found[0], found
    assert "ix_rounds_caster" in found[-1], found
