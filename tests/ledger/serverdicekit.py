"""A server-dice table played through the club on seeds fixed for the test: two turns
played out at table s1, and a throw of the next, still in play.

    with fixed_seeds():
        play(Club(Book(store)))

Each throw as the ledger throws now (ledger.commands.tables.throw: the client seed
logged, then drawn), or, with `logged=False`, as it threw before it logged seeds: the
seed and the dice in one write, as a log written then holds them."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import engine as hz
from engine import serverdice
from ledger.commands import Caller, Role, tables
from ledger.service import Club, Reads
from ledger.store.vocabulary import Deposited


@contextmanager
def fixed_seeds(seed: int = 13) -> Iterator[None]:
    """The service's seeds from a seeded generator instead of `secrets`, so that the log
    the tests tamper with is the same on every run."""
    rng = random.Random(seed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("ledger.service.secrets.token_bytes", rng.randbytes)
        yield


CROUPIER = Caller(Role.CROUPIER, "cecil")


def server_throw(club: Club, table: str, client_seed: str, logged: bool = True) -> dict[str, Any]:
    """As POST /tables/<t>/throws does at a server-dice table; `logged=False`, as it did
    before the seed was logged first."""
    if logged:
        return tables.throw(club, table, CROUPIER, client_seed=client_seed)

    def decide(state: hz.TableState, reads: Reads) -> list[hz.Event]:
        dice = serverdice.draw(reads.server_seed(), client_seed, state.nonce)
        return hz.server_throw(state, client_seed, *dice)

    return club.command(table, "croupier", decide)


def play(club: Club, logged: bool = True) -> None:
    """ann's turn and bob's played out at table s1, then one throw of ann's next turn,
    which is still in play."""
    club.account_command(hz.SETTER, Deposited, 100_000, "setter")
    for name in ("ann", "bob"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")

    def do(command: Callable[..., list[hz.Event]], *args: Any, new: bool = False) -> None:
        club.command("s1", "croupier", lambda state, _r: command(state, *args), new_table=new)

    do(lambda s: hz.open_table(hz.BUILTIN["club"], dice="server"), new=True)
    do(hz.seat, "ann")
    do(hz.seat, "bob")
    do(hz.cast_for_caster, "ann", 1)
    do(hz.cast_for_caster, "bob", 4)
    turns = 0
    for n in range(400):
        state = club.state("s1")
        if state.phase is hz.Phase.AWAITING_MAIN and not state.bets:
            do(hz.stake, 50)
        answer = server_throw(club, "s1", f"{state.caster}/{n}", logged)
        turns += any(e["type"] == "SeedRevealed" for e in answer["events"])
        if turns == 2:
            break
    server_throw(club, "s1", "ann again", logged)
