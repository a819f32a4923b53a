"""A club with a table in play, through the same commands every surface runs
(ledger.commands.tables), for the ledger's tests of commands and of what they leave."""

from __future__ import annotations

import engine as hz
from ledger.books.book import Book
from ledger.commands import Caller, Role, tables
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Deposited

CROUPIER = Caller(Role.CROUPIER, "cecil")


def a_club(store: EventStore, rules: str = "english") -> Club:
    """Table t1 (`rules`), ann and bob seated with 1,000 each, ann the caster (her die
    is the lower), the setter's bank 10,000."""
    club = Club(Book(store))
    club.account_command(hz.SETTER, Deposited, 10_000, "setter:boss")
    for name in ("ann", "bob"):
        club.create_player(name, "setter:boss")
        club.account_command(name, Deposited, 1000, "setter:boss")
    tables.open_table(club, "t1", CROUPIER, ruleset=rules)
    for name in ("ann", "bob"):
        tables.seat(club, "t1", CROUPIER, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t1", CROUPIER, name, die)
    assert club.state("t1").caster == "ann"
    return club
