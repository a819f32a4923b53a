"""The table's commands and the dispute commands, called directly as the API, the
console and the CLI call them (ledger.commands), with no HTTP, on SQLite and
PostgreSQL: each runs one engine command as its caller, and each refusal, whoever
refuses (the caller's role, the table, the rules, the service), writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.commands import Caller, NotPermitted, Role, tables
from ledger.commands import disputes as dispute_commands
from ledger.service import AlreadyExists, Club, Forbidden, NotFound, StaleVersion
from ledger.store.eventstore import EventStore, Refused
from ledger.store.idempotency import IdempotencyConflict
from ledger.store.schema import commands, events, postings
from tests.ledger.clubkit import CROUPIER, a_club

SETTER = Caller(Role.SETTER, "boss")
AUDITOR = Caller(Role.AUDITOR, "al")
ANN = Caller(Role.PLAYER, "ann")
BOB = Caller(Role.PLAYER, "bob")


def _written(store: EventStore) -> tuple[int, ...]:
    """What the ledger holds: events, postings and answers kept under a key."""
    with store.engine.connect() as conn:
        return tuple(
            conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in (events, postings, commands)
        )


def _balances(club: Club) -> dict[str, int]:
    with club.store.engine.connect() as conn:
        return {name: club.standing(conn, name)[0] for name in ("ann", "bob", hz.SETTER)}


def _bet(answer: dict[str, Any], kind: str) -> str:
    [bet] = [e["payload"]["bet_id"] for e in answer["events"] if e["type"] == kind]
    return str(bet)


def test_an_evening_runs_on_the_commands_alone(store: EventStore) -> None:
    """Every table command, called as a surface calls it: no request, no Flask."""
    club = a_club(store)
    tables.stake(club, "t1", ANN, 100)
    laid = _bet(tables.lay(club, "t1", BOB, "bob", 60), "StakeLaid")
    tables.cover(club, "t1", ANN, [laid])
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.throw(club, "t1", CROUPIER, 2, 4)  # a chance of 6
    tables.lay_odds(club, "t1", ANN, "ann", "chance", 100)
    side = {"kind": "next-total", "totals": [8]}
    offered = tables.offer_side_bet(club, "t1", BOB, "bob", side, True, 20, 50)
    tables.withdraw_side_bet(club, "t1", BOB, "bob", _bet(offered, "SideBetOffered"))
    offered = tables.offer_side_bet(club, "t1", BOB, "bob", side, True, 20, 50)
    tables.accept_side_bet(club, "t1", ANN, "ann", _bet(offered, "SideBetOffered"))
    tables.void_throw(club, "t1", CROUPIER, "cocked", 0)
    won = tables.throw(club, "t1", CROUPIER, 3, 3)  # the chance: ann wins
    assert [e["type"] for e in won["events"]] == ["DiceThrown"] + ["BetSettled"] * 4
    # Ann won the setter's 100, bob's 60, 120 on her odds (6 to 5 on a chance of 6
    # against a main of 7) and bob's 20 on the side bet.
    assert _balances(club) == {"ann": 1300, "bob": 920, hz.SETTER: 9780}
    laid = _bet(tables.lay(club, "t1", BOB, "bob", 30), "StakeLaid")
    tables.refuse(club, "t1", ANN, laid)
    tables.leave(club, "t1", ANN, "ann")
    assert club.state("t1").caster == "bob"
    closed = tables.close(club, "t1", SETTER)
    assert club.state("t1").phase is hz.Phase.CLOSED
    assert closed["version"] == club.state("t1").version
    assert _balances(club) == {"ann": 1300, "bob": 920, hz.SETTER: 9780}  # none moved
    # Where the rule set lets a caster pass the dice by choice, after a win.
    tables.open_table(club, "t2", CROUPIER, ruleset="club")
    for name in ("ann", "bob"):
        tables.seat(club, "t2", CROUPIER, name)
    for name, die in (("ann", 1), ("bob", 2)):
        tables.cast(club, "t2", CROUPIER, name, die)
    tables.throw(club, "t2", CROUPIER, 3, 4)  # the main, thrown: 7
    tables.throw(club, "t2", CROUPIER, 3, 4)  # a nick
    tables.pass_dice(club, "t2", ANN)
    assert club.state("t2").caster == "bob"


Refusal = tuple[Callable[[Club], Any], type[Exception]]
REFUSALS: dict[str, Refusal] = {
    "open by a player": (
        lambda c: tables.open_table(c, "t2", ANN, ruleset="english"),
        NotPermitted,
    ),
    "open with a rule set named and given": (
        lambda c: tables.open_table(c, "t2", CROUPIER, ruleset="english", rules={}),
        hz.RuleSetError,
    ),
    "open with no such rule set": (
        lambda c: tables.open_table(c, "t2", CROUPIER, ruleset="snap"),
        hz.RuleSetError,
    ),
    "open a table that is there": (
        lambda c: tables.open_table(c, "t1", CROUPIER, ruleset="english"),
        AlreadyExists,
    ),
    "seat by a player": (lambda c: tables.seat(c, "t1", ANN, "ann"), NotPermitted),
    "seat by the auditor": (lambda c: tables.seat(c, "t1", AUDITOR, "zed"), NotPermitted),
    "seat no such player": (lambda c: tables.seat(c, "t1", CROUPIER, "zed"), NotFound),
    "seat at no such table": (lambda c: tables.seat(c, "t9", CROUPIER, "ann"), NotFound),
    "leave for another": (lambda c: tables.leave(c, "t1", ANN, "bob"), NotPermitted),
    "close by a player": (lambda c: tables.close(c, "t1", ANN), NotPermitted),
    "cast by a player": (lambda c: tables.cast(c, "t1", BOB, "bob", 3), NotPermitted),
    "main by a player": (lambda c: tables.call_main(c, "t1", ANN, 7), NotPermitted),
    "main of 4": (lambda c: tables.call_main(c, "t1", CROUPIER, 4), hz.RuleBroken),
    "throw by a player at the croupier's table": (
        lambda c: tables.throw(c, "t1", ANN, 3, 4),
        Forbidden,
    ),
    "throw without dice": (lambda c: tables.throw(c, "t1", CROUPIER), hz.RuleBroken),
    "throw by the auditor": (lambda c: tables.throw(c, "t1", AUDITOR, 3, 4), NotPermitted),
    "void throw by a player": (
        lambda c: tables.void_throw(c, "t1", ANN, "cocked", 0),
        NotPermitted,
    ),
    "pass by one not the caster": (lambda c: tables.pass_dice(c, "t1", BOB), Forbidden),
    "pass before a win": (lambda c: tables.pass_dice(c, "t1", ANN), hz.RuleBroken),
    "stake by one not the caster": (lambda c: tables.stake(c, "t1", BOB, 100), Forbidden),
    "stake on a stale version": (
        lambda c: tables.stake(c, "t1", ANN, 100, if_match=1),
        StaleVersion,
    ),
    "stake past the funds": (lambda c: tables.stake(c, "t1", ANN, 5000), Refused),
    "lay for another": (lambda c: tables.lay(c, "t1", ANN, "bob", 60), NotPermitted),
    "cover by one not the caster": (lambda c: tables.cover(c, "t1", BOB), Forbidden),
    "refuse by one not the caster": (lambda c: tables.refuse(c, "t1", BOB, "b9"), Forbidden),
    "odds for another": (
        lambda c: tables.lay_odds(c, "t1", BOB, "ann", "chance", 10),
        NotPermitted,
    ),
    "odds before a chance": (
        lambda c: tables.lay_odds(c, "t1", ANN, "ann", "chance", 10),
        hz.RuleBroken,
    ),
    "side bet for another": (
        lambda c: tables.offer_side_bet(
            c, "t1", BOB, "ann", {"kind": "next-total", "totals": [8]}, True, 20, 50
        ),
        NotPermitted,
    ),
    "accept for another": (
        lambda c: tables.accept_side_bet(c, "t1", BOB, "ann", "b9"),
        NotPermitted,
    ),
    "withdraw for another": (
        lambda c: tables.withdraw_side_bet(c, "t1", BOB, "ann", "b9"),
        NotPermitted,
    ),
    "withdraw no such bet": (
        lambda c: tables.withdraw_side_bet(c, "t1", BOB, "bob", "b9"),
        hz.RuleBroken,
    ),
    "a key used before for another command": (
        lambda c: tables.seat(c, "t1", CROUPIER, "ann", key="k1", request={"other": 1}),
        IdempotencyConflict,
    ),
    "dispute a round not played": (
        lambda c: dispute_commands.open_dispute(c, "t1", "player:bob", "player", "bob", 5, "no"),
        hz.RuleBroken,
    ),
    "resolve no such dispute": (
        lambda c: dispute_commands.resolve_dispute(c, "t1", "setter:boss", "d9", "upheld", "x"),
        hz.RuleBroken,
    ),
}


@pytest.mark.parametrize("case", REFUSALS, ids=list(REFUSALS))
def test_each_commands_refusal_writes_nothing(store: EventStore, case: str) -> None:
    club = a_club(store)
    # The key k1 answered a seat once: its request is kept with it.
    tables.leave(club, "t1", CROUPIER, "bob", key="k1", request={"first": 1})
    tables.seat(club, "t1", CROUPIER, "bob")
    before, state = _written(store), club.state("t1")
    run, refused = REFUSALS[case]
    with pytest.raises(refused):
        run(club)
    assert _written(store) == before
    assert club.state("t1") == state


def test_a_refused_role_is_not_permitted_and_the_table_is_not_read(store: EventStore) -> None:
    """Who may send what is decided before the table is read: a player's seat is refused
    at a table that does not exist as at one that does."""
    club = a_club(store)
    for table in ("t1", "nowhere"):
        with pytest.raises(NotPermitted, match="a player may not do this"):
            tables.seat(club, table, ANN, "ann")
    with pytest.raises(NotPermitted, match="not for 'bob'"):
        tables.lay(club, "nowhere", ANN, "bob", 10)


def test_a_command_repeated_with_its_key_answers_again_and_writes_nothing(
    store: EventStore,
) -> None:
    club = a_club(store)
    first = tables.stake(club, "t1", ANN, 100, key="ann:1", request={"stake": 100})
    written = _written(store)
    again = tables.stake(club, "t1", ANN, 100, key="ann:1", request={"stake": 100})
    assert again == first
    assert _written(store) == written


def test_a_dispute_is_opened_and_resolved_by_the_commands_alone(store: EventStore) -> None:
    club = a_club(store, "english")
    tables.stake(club, "t1", ANN, 100)
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.throw(club, "t1", CROUPIER, 3, 4)  # a nick: ann wins the setter's 100
    opened = dispute_commands.open_dispute(
        club, "t1", "player:ann", "player", "ann", 1, "the 4 was a 5", dice=(3, 5)
    )
    assert opened["answer"]["matches"] is True
    resolved = dispute_commands.resolve_dispute(
        club, "t1", "setter:boss", opened["dispute_id"], "voided", "a wild throw"
    )
    assert [e["type"] for e in resolved["events"]] == ["DisputeResolved", "BetAdjusted"]
    assert _balances(club) == {"ann": 1000, "bob": 1000, hz.SETTER: 10_000}
