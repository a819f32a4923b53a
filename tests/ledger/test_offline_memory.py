"""What the offline verify keeps of the tables in a file: a referee each, which keeps
the table as it stands and, to judge a dispute, the state before each of the last
rounds; never a state per event or per command, so that a long file costs no more
memory than a short one with as many tables."""

from __future__ import annotations

import gc
import random

from engine.rounds import DISPUTE_WINDOW
from engine.state import TableState
from ledger.exports.offline.tables import Tables
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
