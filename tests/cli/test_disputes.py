"""`hazard dispute`, through click's runner, on SQLite and PostgreSQL: a dispute
opened by a player with the service's answer, each resolution with what it moved, the
listing, and what is refused (printed with its rule, exit 1, nothing written).

The table is the one of tests/api/test_disputes.py and of docs/setter.md's "A disputed
round, start to finish" (english rules, ann casts, mains called): deposits ann 1000,
bob 1000, cat 1000, the setter 10 000.

Round 1: ann stakes 100 against the setter; bob lays 60 and ann covers it. Main 7,
3+4: a nick. ann 1160, bob 940, setter 9900.

Round 2: main 7; 2+4 sets the chance 6. cat offers bob 20 against 50 that the next
throw is 8, and bob takes it. 4+4: cat wins bob's 50. Then 3+3, the chance.
ann 1160, bob 890, cat 1050, setter 9900.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

import engine as hz
from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Deposited
from tests.signing import SIGNER

DEPOSITS = {"ann": 1000, "bob": 1000, "cat": 1000, "setter": 10_000}
NICK = 13
"""The version of round 1's 3+4 (as docs/setter.md names it)."""
EIGHT = 20
"""The version of round 2's 4+4."""


@pytest.fixture
def played(engine: sa.Engine, database_url: str) -> Iterator[str]:
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    for name, amount in DEPOSITS.items():
        if name != hz.SETTER:
            club.create_player(name, "setter:bank")
        club.account_command(name, Deposited, amount, "setter:bank")
    two_rounds(club, "t1")
    store.close()
    assert balances(engine) == {"ann": 1160, "bob": 890, "cat": 1050, "setter": 9900}
    yield database_url


def two_rounds(club: Club, table: str) -> None:
    """The two rounds above at `table`, its croupier cecil (docs/setter.md plays them at t1)."""

    def do(command: Any, new: bool = False) -> dict[str, Any]:
        return club.command(table, "croupier:cecil", lambda s, _r: command(s), new_table=new)

    do(lambda s: hz.open_table(hz.BUILTIN["english"]), new=True)
    for name in ("ann", "bob", "cat"):
        do(lambda s, n=name: hz.seat(s, n))
    for name, die in (("ann", 1), ("bob", 2), ("cat", 3)):
        do(lambda s, n=name, d=die: hz.cast_for_caster(s, n, d))
    do(lambda s: hz.stake(s, 100))
    laid = do(lambda s: hz.lay(s, "bob", 60))["events"][0]["payload"]["bet_id"]
    do(lambda s: hz.cover(s, 1000, [laid]))
    do(lambda s: hz.call_main(s, 7))
    assert do(lambda s: hz.throw(s, 3, 4))["events"][0]["version"] == NICK
    do(lambda s: hz.call_main(s, 7))
    do(lambda s: hz.throw(s, 2, 4))
    eight = hz.Proposition(hz.PropositionKind.NEXT_TOTAL, frozenset({8}))
    offer = do(lambda s: hz.offer_side_bet(s, "cat", eight, True, 20, 50, "bob"))
    do(lambda s: hz.accept_side_bet(s, offer["events"][0]["payload"]["bet_id"], "bob"))
    assert do(lambda s: hz.throw(s, 4, 4))["events"][0]["version"] == EIGHT
    do(lambda s: hz.throw(s, 3, 3))


def balances(engine: sa.Engine) -> dict[str, int]:
    from ledger.store.schema import accounts

    with engine.connect() as conn:
        rows = conn.execute(sa.select(accounts.c.account, accounts.c.balance)).all()
    found = {a.removeprefix("player:"): b for a, b in rows}
    return {name: found[name] for name in DEPOSITS}


def hazard(url: str, line: str) -> Result:
    """`hazard dispute ...`, the rest of the line as a shell would split it."""
    return CliRunner().invoke(main, ["dispute", *shlex.split(line), "--database-url", url])


def events(engine: sa.Engine) -> int:
    from ledger.store.schema import events as table

    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def test_a_player_opens_a_dispute_and_has_the_answer_at_once(
    played: str, engine: sa.Engine
) -> None:
    result = hazard(
        played,
        f"open --table t1 --round 2 --claim 'it was 4+5, not 4+4' --throw {EIGHT} --dice 4 5 "
        "--as player:bob",
    )
    assert result.exit_code == 0, result.output
    # As recorded, cat won bob's 50; with 4+5 the round goes on to the same chance, bob
    # wins the side bet instead, and a correction would post the 70 between them.
    assert result.output.splitlines() == [
        "dispute d23 opened over round 2 of table t1 by player:bob",
        "answer: the recorded settlements match the round's events (chance)",
        "  bet b18 to player:cat: player:bob -50, player:cat +50",
        f"what if throw v{EIGHT} was 4+5: chance, main 7, chance 6",
        "  bet b18 to player:bob: player:bob +20, player:cat -20",
        "  correctable; a correction would post:",
        "    bet b18: 70 from player:cat to player:bob",
    ]
    assert balances(engine) == {"ann": 1160, "bob": 890, "cat": 1050, "setter": 9900}
    shown = json.loads(hazard(played, "show --table t1 d23 --json").output)
    assert shown["opened"]["by"] == "player:bob" and shown["status"] == "open"
    assert shown["answer"]["what_if"]["correctable"] is True


def test_the_three_resolutions_move_what_they_say(played: str, engine: sa.Engine) -> None:
    def opened(line: str) -> str:
        result = hazard(played, f"open --table t1 --json {line}")
        assert result.exit_code == 0, result.output
        found: str = json.loads(result.output)["dispute_id"]
        return found

    upheld = opened("--round 1 --claim 'the 4 was a 5' --dice 3 5")
    wild = opened("--round 1 --claim 'the dice left the table' --as croupier:cecil")
    camera = opened(f"--round 2 --claim 4+5 --throw {EIGHT} --dice 4 5 --as player:bob")

    result = hazard(played, f"resolve --table t1 {upheld} --resolution upheld --reason 'I saw 3+4'")
    assert result.exit_code == 0, result.output
    assert result.output == f"dispute {upheld} upheld by setter:cli, at version 26\n"
    assert balances(engine) == {"ann": 1160, "bob": 890, "cat": 1050, "setter": 9900}

    # Voided: ann gives back the setter's 100 and bob's 60; round 2 stands.
    result = hazard(
        played, f"resolve --table t1 {wild} --resolution voided --reason 'a wild throw'"
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1:] == [
        "  reversal of bet b9: 100 from player:ann to setter",
        "  reversal of bet b10: 60 from player:ann to player:bob",
    ]
    assert balances(engine) == {"ann": 1000, "bob": 950, "cat": 1050, "setter": 10_000}

    # Corrected: cat gives back bob's 50 and pays him her 20.
    result = hazard(
        played,
        f"resolve --table t1 {camera} --resolution corrected --reason 'the camera' "
        f"--throw {EIGHT} --dice 4 5",
    )
    assert result.exit_code == 0, result.output
    assert "correction of bet b18: 70 from player:cat to player:bob" in result.output
    assert balances(engine) == {"ann": 1000, "bob": 1020, "cat": 980, "setter": 10_000}

    shown = hazard(played, f"show --table t1 {wild}")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0] == f"dispute {wild} over round 1 of table t1: voided"
    assert lines[1].startswith("claim by cecil (croupier; croupier:cecil, v24, ")
    assert lines[-3].startswith("resolution: voided by setter:cli, v27, ")
    assert lines[-3].endswith(": a wild throw")
    assert lines[-2:] == [
        "  reversal of bet b9 (v28): 100 from player:ann to setter",
        "  reversal of bet b10 (v29): 60 from player:ann to player:bob",
    ]


def test_a_refusal_names_its_rule_and_writes_nothing(played: str, engine: sa.Engine) -> None:
    def refused(rule: str, line: str) -> str:
        before = events(engine), balances(engine)
        result = hazard(played, line)
        assert result.exit_code == 1, result.output
        assert result.output.startswith(f"refused ({rule}): "), result.output
        assert result.output.endswith("; nothing was written\n")
        assert (events(engine), balances(engine)) == before
        return result.output

    # cat had no money in round 1; round 3 is in play.
    refused("not-in-round", "open --table t1 --round 1 --claim x --as player:cat")
    refused("round-not-ended", "open --table t1 --round 3 --claim x")
    opened = hazard(played, "open --table t1 --round 1 --claim 1+2 --dice 1 2 --as player:bob")
    assert (
        "  not correctable (correction-reaches-beyond-round): with 1+2 at version 13 the "
        "caster's run would be" in opened.output
    )
    # 1+2 is out, not a nick: ann's run of losses decides when the dice pass under
    # english rules, so the correction would reach past the round.
    said = refused(
        "correction-reaches-beyond-round",
        f"resolve --table t1 d23 --resolution corrected --reason r --throw {NICK} --dice 1 2",
    )
    assert "void the round instead" in said
    voided = hazard(played, "resolve --table t1 d23 --resolution voided --reason r")
    assert voided.exit_code == 0, voided.output
    # Resolved, its answer says no resolution would be made now, and why.
    shown = hazard(played, "show --table t1 d23")
    assert "  not correctable (dispute-resolved): dispute d23 was resolved already" in shown.output
    refused("dispute-resolved", "resolve --table t1 d23 --resolution upheld --reason again")
    again = hazard(played, "open --table t1 --round 1 --claim more")
    assert again.exit_code == 0, again.output
    refused("round-adjusted", "resolve --table t1 d27 --resolution voided --reason twice")


def test_what_is_not_there_is_said_plainly(played: str) -> None:
    result = hazard(played, "show --table t1 d99")
    assert result.exit_code == 1
    assert result.output == "Error: there is no dispute 'd99' at table 't1'\n"
    result = hazard(played, "open --table t7 --round 1 --claim x")
    assert result.exit_code == 1
    assert "there is no table 't7'" in result.output
    result = hazard(played, "open --table t1 --round 1 --claim x --as dealer:dan")
    assert result.exit_code == 2
    assert "give setter, croupier:NAME or player:NAME" in result.output


def test_the_listing_is_the_setter_s_queue(played: str) -> None:
    for line in ("--round 1 --claim 'the 4 was a 5'", "--round 2 --claim 'the 8 was a 9'"):
        result = hazard(played, f"open --table t1 {line}")
        assert result.exit_code == 0, result.output
    hazard(played, "resolve --table t1 d23 --resolution upheld --reason r")
    queue = hazard(played, "list --status open")
    assert queue.exit_code == 0, queue.output
    lines = queue.output.splitlines()
    assert lines[0] == "1 dispute(s)"
    assert lines[1].startswith("t1 d24: round 2, open, by setter:cli at ")
    assert lines[1].endswith(": the 8 was a 9")
    resolved = json.loads(hazard(played, "list --table t1 --status resolved --json").output)
    assert [(d["dispute_id"], d["status"]) for d in resolved] == [("d23", "upheld")]


def test_the_deep_check_replays_the_disputes_and_finds_an_adjustment_edited(
    played: str, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.store.schema import adjustments

    hazard(played, "open --table t1 --round 1 --claim 'the dice left the table'")
    hazard(played, "resolve --table t1 d23 --resolution voided --reason 'a wild throw'")
    monkeypatch.setenv("DATABASE_URL", played)
    clean = CliRunner().invoke(main, ["verify", "--deep"])
    assert clean.exit_code == 0, clean.output
    assert "read models: every table equals the replay of the events" in clean.output
    with engine.begin() as conn:  # behind the ledger's back: the reversal made smaller
        first = conn.execute(sa.select(sa.func.min(adjustments.c.position))).scalar_one()
        moved = [{"source": "player:ann", "target": "setter", "amount": 1}]
        conn.execute(
            adjustments.update()
            .where(adjustments.c.position == first)
            .values(transfers=json.dumps(moved))
        )
    edited = CliRunner().invoke(main, ["verify", "--deep"])
    assert edited.exit_code == 1, edited.output
    assert f"  adjustments: position {first}: transfers: stored " in edited.output
