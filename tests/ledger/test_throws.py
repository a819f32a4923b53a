"""A table's last throws as the console's table page reads them (ledger.books.throws,
through ledger.books.queries): each throw's dice, its result in the game's words, the
bets it settled and who was paid what, the caster's losses in a row and whether the
dice passed; and the stakes placed meanwhile. On SQLite and PostgreSQL."""

from __future__ import annotations

from ledger.books import queries
from ledger.books.throws import RESULTS
from ledger.commands import tables
from ledger.store.eventstore import EventStore
from tests.ledger.clubkit import CROUPIER, a_club


def _last(store: EventStore, limit: int = 20) -> queries.throws.Recent:
    with queries.reading(store) as read:
        return read.last_throws("table:t1", limit)


def test_each_throw_says_what_it_did_and_who_was_paid(store: EventStore) -> None:
    club = a_club(store)
    assert _last(store).throws == []
    # Round 1: ann stakes 100, bob lays 60 and ann covers; main 7; 5+6 nicks.
    tables.stake(club, "t1", CROUPIER, 100)
    laid = tables.lay(club, "t1", CROUPIER, "bob", 60)["events"][0]["payload"]["bet_id"]
    assert _last(store).stakes == [60, 100]  # no throw yet: the stakes so far
    tables.cover(club, "t1", CROUPIER, [laid])
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.throw(club, "t1", CROUPIER, 5, 6)
    [nick] = _last(store).throws
    assert (nick["die1"], nick["die2"], nick["total"], nick["result"]) == (5, 6, 11, "nick")
    assert (nick["round"], nick["caster"], nick["losses"], nick["dice_pass"]) == (
        1,
        "ann",
        0,
        False,
    )
    paid = {(s["bet_id"], s["winner"], s["paid"], s["won"]) for s in nick["settled"]}
    assert paid == {(nick["settled"][0]["bet_id"], "ann", 200, 100), (laid, "ann", 120, 60)}

    # Round 2: main 6, 1+1 throws out. Round 3: main 7, 2+2 sets the chance 4, 3+3
    # decides nothing, 3+4 is the main before the chance. Round 4: main 7, 1+2 throws
    # out: ann's third loss in a row, and the dice pass to bob.
    for main, dice in ((6, [(1, 1)]), (7, [(2, 2), (3, 3), (3, 4)]), (7, [(1, 2)])):
        tables.call_main(club, "t1", CROUPIER, main)
        for die1, die2 in dice:
            tables.throw(club, "t1", CROUPIER, die1, die2)
    recent = _last(store)
    assert [(t["total"], t["result"], t["losses"]) for t in recent.throws] == [
        (3, "out", 3),
        (7, "main", 2),
        (6, "no-decision", 1),
        (4, "chance-set", 1),
        (2, "out", 1),
        (11, "nick", 0),
    ]
    assert recent.throws[3]["chance"] == 4 and recent.throws[3]["main"] == 7
    last = recent.throws[0]
    assert (last["dice_pass"], last["passed_to"], last["pass_reason"]) == (True, "bob", "3-losses")
    assert club.state("t1").caster == "bob"
    assert all(t["result"] in RESULTS for t in recent.throws)
    assert [t["total"] for t in _last(store, limit=2).throws] == [3, 7]
    assert recent.usual == 60  # the median (the lower) of 100 and 60


def test_a_preliminary_roll_sets_the_main_or_is_thrown_again(store: EventStore) -> None:
    club = a_club(store, rules="french")
    tables.throw(club, "t1", CROUPIER, 6, 6)  # 12: no main, throw again
    tables.throw(club, "t1", CROUPIER, 3, 3)  # 6: the main
    tables.throw(club, "t1", CROUPIER, 6, 6)  # 12 nicks a main of 6
    recent = _last(store).throws
    assert [(t["result"], t["main"]) for t in recent] == [
        ("nick", 6),
        ("main-set", 6),
        ("no-main-yet", None),
    ]
