"""An evening with something in it, through the commands every surface calls: the
night report's tests (the book's, the API's, the CLI's, the console's) read it."""

from __future__ import annotations

from typing import Any

from ledger.commands import Caller, Role, evenings, tables
from ledger.commands import disputes as dispute_commands
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Deposited
from tests.ledger.clubkit import CROUPIER, a_club

SETTER = Caller(Role.SETTER, "boss")
ANN = Caller(Role.PLAYER, "ann")


def played_evening(club: Club) -> dict[str, Any]:
    """Evening 1: t1 floated 5,000 and the cage 1,000; ann nicks 100 off the setter
    after a cocked throw, then is out for 200, which a dispute voids; bob deposits 300.
    The setter is 100 down at t1; the largest exposure is ann's 200. Returns the
    opening's answer."""
    opened = evenings.open_evening(club, SETTER, {"t1": 5000}, 1000)
    tables.stake(club, "t1", ANN, 100)
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.void_throw(club, "t1", CROUPIER, "cocked", 0)
    tables.throw(club, "t1", CROUPIER, 3, 4)  # a nick: ann wins 100
    tables.stake(club, "t1", ANN, 200)
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.throw(club, "t1", CROUPIER, 6, 6)  # out: the setter wins 200
    disputed = dispute_commands.open_dispute(
        club, "t1", "player:ann", "player", "ann", 2, "the 12 was a 7", dice=(3, 4)
    )
    dispute_commands.resolve_dispute(
        club, "t1", SETTER.actor, disputed["dispute_id"], "voided", "a wild throw"
    )
    club.account_command("bob", Deposited, 300, SETTER.actor)
    return opened


def closed_evening(store: EventStore) -> Club:
    """`played_evening`, cashed up: t1 counted 4,890 (10 short), the cage 1,300."""
    club = a_club(store)
    played_evening(club)
    evenings.close_evening(club, SETTER, {"t1": 4890}, 1300)
    return club
