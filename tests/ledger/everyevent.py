"""Logs that hold every kind of event, for the codec's tests (the canonical bytes, the
round trip, the fast encoder held to the standard library's)."""

from __future__ import annotations

import engine as hz
from engine import disputes, serverdice
from engine.events import Proposition, PropositionKind
from engine.referee import read_round
from engine.rules import from_mapping


def a_table_with_every_event() -> list[hz.Event]:
    """A table whose log holds every kind of table event: seats, casts, a called main,
    a stake, lays covered and refused, a side bet, a void throw, odds with breakage, a
    dispute opened and voided, a departure and the closing."""
    mapping = hz.BUILTIN["hard-core"].to_mapping() | {"rounding": "round-down", "name": "x"}
    rules = from_mapping(mapping | {"main": "called", "cover": "refuse"})
    log: list[hz.Event] = []
    state = hz.INITIAL

    def do(events: list[hz.Event]) -> None:
        nonlocal state
        log.extend(events)
        state = hz.fold(events, state)

    do(hz.open_table(rules, hz.Limits(min_stake=1, max_stake=10_000, max_exposure=100_000)))
    for p in ("ann", "bob", "cat"):
        do(hz.seat(state, p))
    for p, d in (("ann", 2), ("bob", 5), ("cat", 6)):
        do(hz.cast_for_caster(state, p, d))
    do(hz.call_main(state, 7))
    do(hz.stake(state, 100))
    do(hz.lay(state, "bob", 50))
    do(hz.cover(state, 1000))
    do(hz.lay(state, "cat", 30))
    do(hz.refuse(state, state.open_bets[-1].id))
    offer = hz.offer_side_bet(
        state, "cat", Proposition(PropositionKind.NEXT_TOTAL, frozenset({2, 12})), True, 10, 300
    )
    do(offer)
    do(hz.accept_side_bet(state, offer[0].bet_id, "setter"))
    do(hz.void_throw(state, "cocked", 1, standing=4))
    do(hz.throw(state, 1, 4))  # die 2 stood at 4; chance 5
    do(hz.lay_odds(state, "ann", "chance", 7))  # 6/4 * 7 = 10.5: breakage 1/2
    do(hz.throw(state, 4, 3))  # main: caster loses
    record = read_round(1, hz.INITIAL, log, state)
    do(disputes.open_dispute(state, record, 1, "bob", "player", "the 5 was a 6", 18, 2, 4))
    opened = log[-1].dispute_id  # type: ignore[union-attr]
    do(disputes.resolve(state, record, opened, "voided", "the croupier misread the die"))
    do(hz.leave(state, "ann"))
    do(hz.close(state))
    return log


def a_server_dice_turn() -> list[hz.Event]:
    """A server-dice table's events: its choice, a turn's commitment, the caster's client
    seed logged, the throw drawn from it and the seed, and the seed revealed as the
    table closes."""
    seed = bytes(range(32))
    state = hz.INITIAL
    log: list[hz.Event] = []
    for command in (
        lambda s: hz.open_table(hz.BUILTIN["club"], dice="server"),
        lambda s: hz.seat(s, "ann"),
        lambda s: hz.cast_for_caster(s, "ann", 3),
        lambda s: hz.give_seed(s, "ann's seed"),
        lambda s: hz.server_throw(s, "ann's seed", *serverdice.draw(seed, "ann's seed", 0)),
        lambda s: hz.close(s),
    ):
        events = command(state)
        ends, begins = serverdice.turn_change(state, events)
        commitment = serverdice.commit_to(seed.hex()) if begins else None
        serverdice.seal(state, events, seed.hex() if ends else None, commitment)
        log += events
        state = hz.fold(events, state)
    return log
