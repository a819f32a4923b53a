"""What the offline verify keeps of the tables in a file: a referee each, which keeps
the table as it stands and, to judge a dispute, the state before each of the last
rounds; never a state per event or per command, so that a long file costs no more
memory than a short one with as many tables."""

from __future__ import annotations

import dataclasses
import gc
import random
from collections.abc import Callable

import pytest

import engine
from engine import events as ev
from engine.rounds import DISPUTE_WINDOW
from engine.state import TableState
from ledger.exports.offline.tables import Tables
from ledger.exports.verdict import Disagreement
from tests.engine.serverkit import ServerGame
from tests.engine.streamkit import long_game

KEPT = DISPUTE_WINDOW + 1
"""The rounds a referee keeps to judge a dispute (engine.rounds.RoundBook)."""


def states_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is TableState)


def states_held(rounds: int, disputed: frozenset[str] | None = None) -> int:
    """The table states alive while the offline verify's tables hold two tables that
    have each played `rounds` rounds, their events interleaved as in a file."""
    games = [long_game(name, random.Random(rounds), rounds) for name in ("english", "club")]
    streams = [f"table:t{n}" for n in range(len(games))]
    lines = sorted(
        (i, stream, e)
        for stream, g in zip(streams, games, strict=True)
        for i, e in enumerate(g.events)
    )
    before = states_alive()
    tables = Tables(None, disputed=disputed)
    for stream in streams:
        tables.open(stream)
    for number, (_, stream, e) in enumerate(lines, start=2):
        tables.event(number, stream, e)
    tables.finish(len(lines) + 2, "the closing")
    held = states_alive() - before
    assert all(r.rounds >= rounds for r in tables.referees())
    return held


def test_the_tables_hold_the_same_states_for_a_short_file_and_a_long_one() -> None:
    short, long = states_held(KEPT), states_held(4 * KEPT)
    # each table: a state before each round kept, the table now, the last command's
    assert long <= 2 * (KEPT + 3), f"{long} states held after {4 * KEPT} rounds a table"
    assert long <= short + 4


def test_the_tables_no_dispute_comes_on_keep_no_rounds() -> None:
    # The offline verify reads the file ahead for the tables a dispute comes on
    # (ledger.exports.offline.disputed); a referee of any other keeps no round to judge
    # one: what a table costs is the table now, whatever the rounds it has played.
    held = states_held(4 * KEPT, disputed=frozenset())
    assert held <= 2 * 3, f"{held} states held by two tables no dispute comes on"


def closed_tables_held(count: int) -> int:
    """The table states alive once the offline verify's tables have read `count`
    tables, each played a few rounds and closed, one after the other as a club's
    evenings are (no dispute comes on any of them)."""
    before = states_alive()
    tables = Tables(None, disputed=frozenset())
    number = 2
    for n in range(count):
        g = long_game("english", random.Random(n), 3)
        g.do(engine.close)
        stream = f"table:t{n}"
        tables.open(stream)
        for e in g.events:
            tables.event(number, stream, e)
            number += 1
        del g
    tables.finish(number, "the closing")
    held = states_alive() - before
    assert sum(r.rounds for r in tables.referees()) >= 3 * count
    return held


def test_a_closed_table_holds_no_state() -> None:
    # A club's log grows table after table, most closed at the end of their evening:
    # a closed table keeps what later lines are judged by, not its referee's states.
    few, many = closed_tables_held(3), closed_tables_held(12)
    assert many <= few, f"{many} states held by 12 closed tables, {few} by 3"


def verdict(lines: list[tuple[str, ev.Event]], disputed: frozenset[str] | None) -> object:
    """What the tables say of `lines`: the disagreement (line, words), or the counts and
    the trusted list the closing record's summary reads."""
    tables = Tables(None, disputed=disputed)
    for stream in dict.fromkeys(s for s, _ in lines):
        tables.open(stream)
    try:
        for number, (stream, e) in enumerate(lines, start=2):
            tables.event(number, stream, e)
        tables.finish(len(lines) + 2, "the closing")
    except Disagreement as exc:
        return exc.line, exc.reason
    referees = tables.referees()
    return (
        [r.rounds for r in referees],
        [r.bets for r in referees],
        [r.state for r in referees],
        tables.settlements,
        tables.referees_trusted(),
    )


def closed_then(seed: int, later: Callable[[list[ev.Event]], list[ev.Event]]) -> list:
    """Two tables played, the first closed (mid-round when `seed` is odd), then
    `later`'s events on the first (a file tampered with after its closing), and the
    second's after them."""
    first = long_game("english", random.Random(seed), 4)
    if seed % 2:  # closed with the caster's stake and a player's laid: voided
        first.do(engine.stake, 60)
        first.do(engine.lay, "bob" if first.state.caster != "bob" else "cat", 60)
    first.do(engine.close)
    second = long_game("english", random.Random(seed + 1), 2)
    return [
        *(("table:t0", e) for e in first.events),
        *(("table:t0", e) for e in later(first.events)),
        *(("table:t1", e) for e in second.events),
    ]


def _next(events: list[ev.Event], e: ev.Event, ahead: int = 1) -> ev.Event:
    return dataclasses.replace(e, version=events[-1].version + ahead)


LATER: dict[str, Callable[[list[ev.Event]], list[ev.Event]]] = {
    "nothing": lambda es: [],
    "a stake": lambda es: [_next(es, next(e for e in es if isinstance(e, ev.CasterStaked)))],
    "a throw": lambda es: [_next(es, next(e for e in es if isinstance(e, ev.DiceThrown)))],
    "a settlement": lambda es: [_next(es, next(e for e in es if isinstance(e, ev.BetSettled)))],
    "a bet voided": lambda es: [_next(es, next(e for e in es if isinstance(e, ev.BetVoided)))],
    "a second closing": lambda es: [_next(es, es[-1])],
    "a seat": lambda es: [_next(es, next(e for e in es if isinstance(e, ev.PlayerSeated)))],
    "an event repeated": lambda es: [es[-5]],
    "an event skipped": lambda es: [_next(es, es[-1], ahead=3)],
    "an opening": lambda es: [_next(es, es[0])],
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("tamper", sorted(LATER))
def test_a_closed_table_judges_a_later_line_as_one_kept_whole(seed: int, tamper: str) -> None:
    # A table that may have a dispute keeps its referee whole (disputed None: any may);
    # one with none lets it go at its closing. A line after the closing is judged the
    # same by both: same line, same words; and an untampered file's counts the same.
    lines = closed_then(seed, LATER[tamper])
    kept, let_go = verdict(lines, None), verdict(lines, frozenset())
    assert let_go == kept
    if tamper != "nothing":
        assert isinstance(kept, tuple) and isinstance(kept[0], int), kept


SERVER_LATER = ("nothing", "a second closing", "a seat", "an event repeated", "an event skipped")
"""What `LATER` holds that a server-dice table without bets can be tampered with."""


@pytest.mark.parametrize("tamper", SERVER_LATER)
def test_a_closed_server_dice_table_judges_a_later_line_as_one_kept_whole(tamper: str) -> None:
    # Its closing ends the turn: the turn's seed is revealed after the TableClosed, and
    # every throw of the turn drawn again, before the referee is let go.
    game = ServerGame(("ann", "bob"))
    for seed in ("one", "two", "three"):
        game.throw(seed)
    closing = game.do(engine.close)
    assert isinstance(closing[-1], ev.SeedRevealed)
    later = LATER[tamper](game.events)
    lines = [*(("table:s", e) for e in game.events), *(("table:s", e) for e in later)]
    assert verdict(lines, frozenset()) == verdict(lines, None)
    if tamper == "nothing":
        tables = Tables(None, disputed=frozenset())
        tables.open("table:s")
        before = states_alive()
        for number, (stream, e) in enumerate(lines, start=2):
            tables.event(number, stream, e)
        assert states_alive() <= before, "a closed server-dice table keeps its states"
