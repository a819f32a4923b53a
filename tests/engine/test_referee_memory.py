"""What a referee keeps while it reads a long stream: the table as it stands and, to
judge a dispute, each of the last rounds' state before it and their events; never a
state per command. The offline verify keeps a referee per table for the whole file, so
what one keeps is paid as many times as the file has tables, however long it is."""

from __future__ import annotations

import gc
import random

import pytest

from engine import events as ev
from engine.fold import fold
from engine.referee import Referee
from engine.rounds import DISPUTE_WINDOW
from engine.state import TableState
from tests.engine.streamkit import long_game

KEPT = DISPUTE_WINDOW + 1
"""The rounds a referee keeps to judge a dispute (engine.rounds.RoundBook)."""


def states_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is TableState)


def states_held(events: list[ev.Event], rounds: int) -> int:
    """The table states alive while a referee that has read `events` is."""
    before = states_alive()
    referee = Referee()
    for e in events:
        referee.check(e)
    referee.finish()
    held = states_alive() - before
    assert referee.rounds >= rounds
    del referee
    return held


@pytest.mark.parametrize("name", ["english", "hard-core"])
def test_a_referee_holds_a_state_a_round_kept_however_long_the_stream(name: str) -> None:
    for rounds in (20, 3 * KEPT):
        game = long_game(name, random.Random(rounds), rounds)
        assert fold(game.events) == game.state
        # a state before each round kept, the table now, the last command's before
        held = states_held(game.events, rounds)
        assert held <= min(rounds, KEPT) + 3, f"{held} states held after {rounds} rounds"
