"""Hypothesis strategies for table histories, shared by the engine's property tests
and the ledger's (snapshots, table views).

The strategy `histories()` opens a table, seats two to four players, casts dice for
the first caster and then attempts a random sequence of commands with random (often
wrong) arguments. A command that raises `RuleBroken` must leave the state it was given
exactly as it was, and contributes nothing; the events of every command that succeeds
are folded onto the running state and kept, step by step, as the table's history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

import engine
from engine import events as ev
from engine.errors import ReplayError, Rule, RuleBroken
from engine.fold import INITIAL, contest_for, fold
from engine.odds import odds_ratio
from engine.rules import CoverPolicy, MainMethod, Rounding, RuleSet
from engine.rulesets import BUILTIN
from engine.state import SETTER, BetKind, Phase, TableState

PLAYERS = ("ann", "bob", "cat", "dan")
NEWCOMERS = ("eve", "fay")
BAD_NAMES = ("", " ann", SETTER, "escrow:x", "x" * 65)
GHOST = "ghost"
BIG_FUNDS = 10**9
# The built-in rule sets, and one variant that pays odds rounded down (no built-in
# rule set does), so that settlements with breakage are generated too.
RULE_SETS: dict[str, RuleSet] = {
    **BUILTIN,
    "english-round-down": dataclasses.replace(
        BUILTIN["english"],
        name="english-round-down",
        rounding=Rounding.ROUND_DOWN,
        odds_multiple=3,
    ),
}
ALL_RULES = tuple(RULE_SETS)


# -- recording a history ------------------------------------------------------------


def snapshot(state: TableState) -> tuple[Any, ...]:
    """A copy of everything in the state, mappings copied out of their proxies."""
    return tuple(
        dict(value) if isinstance(value, Mapping) else value
        for value in (getattr(state, f.name) for f in dataclasses.fields(state))
    )


@dataclass(frozen=True)
class Step:
    """A command that succeeded: the state it was given, its events, the state after."""

    name: str
    args: tuple[Any, ...]
    before: TableState
    events: tuple[Any, ...]
    after: TableState


@dataclass(frozen=True)
class Refusal:
    """A command that raised `RuleBroken`."""

    name: str
    args: tuple[Any, ...]
    at: int
    """How many events of the history came before the attempt."""
    given: TableState
    before: tuple[Any, ...]
    after: tuple[Any, ...]
    rule: Rule


@dataclass(frozen=True)
class Unfoldable:
    """A command that returned events its own state cannot fold (an engine bug)."""

    name: str
    args: tuple[Any, ...]
    events: tuple[Any, ...]
    error: str


@dataclass
class History:
    rules: RuleSet
    state: TableState = INITIAL
    steps: list[Step] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    unfoldable: Unfoldable | None = None
    """Set when a command's events would not fold; the history stops there."""

    def attempt(self, name: str, command: Callable[..., list[Any]], *args: Any) -> list[Any] | None:
        """Run `command(state, *args)`; keep its events if it succeeds."""
        before = self.state
        snap = snapshot(before)
        try:
            events = command(before, *args)
        except RuleBroken as exc:
            after = snapshot(before)
            assert after == snap, f"{name}{args} refused ({exc.code}) but changed the state"
            self.refusals.append(
                Refusal(name, args, len(self.events), before, snap, after, exc.rule)
            )
            return None
        assert snapshot(before) == snap, f"{name}{args} changed the state it was given"
        try:
            after_state = fold(events, before)
        except ReplayError as exc:
            self.unfoldable = Unfoldable(name, args, tuple(events), str(exc))
            return None
        self.steps.append(Step(name, args, before, tuple(events), after_state))
        self.events.extend(events)
        self.state = after_state
        return events

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example
        lines = [f"History({self.rules.name!r}, limits={self.steps[0].after.limits})"]
        for s in self.steps:
            names = ", ".join(type(e).__name__ for e in s.events)
            lines.append(f"  {s.name}{s.args} -> [{names}]")
        if self.unfoldable is not None:
            u = self.unfoldable
            lines.append(f"  {u.name}{u.args} -> {list(u.events)}: {u.error}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


# -- drawing commands -------------------------------------------------------------------

Draw = Callable[[st.SearchStrategy[Any]], Any]

limits_strategy = st.builds(
    ev.Limits,
    min_stake=st.sampled_from([1, 5]),
    max_stake=st.sampled_from([None, 500, 100]),
    max_exposure=st.sampled_from([None, 1_000_000, 300, 0]),
)


def rarely(draw: Draw) -> bool:
    """True one time in ten (and never once shrunk), for a deliberately wrong argument."""
    return draw(st.integers(0, 9)) == 9


def pending_ids(state: TableState, kind: BetKind) -> list[str]:
    return [b.id for b in state.bets.values() if b.kind is kind and b.pending]


def _bet_id(draw: Draw, ids: list[str]) -> str:
    """One of `ids`, or now and then (always, if there are none) an unknown bet."""
    if not ids or rarely(draw):
        return draw(st.sampled_from(["b0", "b1", "nope"]))
    return draw(st.sampled_from(ids))


def _player(draw: Draw, state: TableState, *extra: str) -> str:
    if not state.seats or rarely(draw):
        return draw(st.sampled_from((GHOST, SETTER, *state.seats)))
    return draw(st.sampled_from((*state.seats, *extra)))


def _amount(draw: Draw) -> int:
    if rarely(draw):
        return draw(st.sampled_from([0, -5, 1_000_000, 2]))
    return draw(st.integers(1, 120))


def _dice(draw: Draw, state: TableState) -> tuple[int, int]:
    die1, die2 = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    # Mostly recast only the die that went off; now and then break that rule.
    if state.standing is not None and not rarely(draw):
        off, standing = state.standing
        if off == 1:
            die2 = standing
        else:
            die1 = standing
    return die1, die2


def do_cast(draw: Draw, h: History, forced: bool = False) -> None:
    """Cast one die for first caster. `forced` casts so the contest is decided: the
    first in a fresh cast-off throws 1, everyone after them 6."""
    state = h.state
    if not state.seats:
        h.attempt("seat", engine.seat, draw(st.sampled_from(PLAYERS + NEWCOMERS)))
        return
    contest, casts = contest_for(state.contest, state.casts, state.seats)
    todo = [p for p in contest if p not in casts]
    if forced:
        player, die = todo[0], (6 if casts else 1)
    elif rarely(draw):
        player, die = draw(st.sampled_from((*state.seats, GHOST))), draw(st.integers(0, 7))
    else:
        player, die = draw(st.sampled_from(todo)), draw(st.integers(1, 6))
    h.attempt("cast_for_caster", engine.cast_for_caster, player, die)


def do_throw(draw: Draw, h: History) -> None:
    h.attempt("throw", engine.throw, *_dice(draw, h.state))


def do_progress(draw: Draw, h: History) -> None:
    """Whatever moves the game on from here."""
    state = h.state
    if state.phase is Phase.SEATING:
        do_cast(draw, h)
        return
    pending = pending_ids(state, BetKind.LAID)
    if pending:
        if h.rules.cover is CoverPolicy.FORFEIT or draw(st.booleans()):
            h.attempt("cover", engine.cover, BIG_FUNDS, None)
        else:
            h.attempt("refuse", engine.refuse, pending[0])
    elif state.phase is Phase.AWAITING_MAIN and h.rules.main_method is MainMethod.CALLED:
        h.attempt("call_main", engine.call_main, draw(st.integers(5, 9)))
    else:
        do_throw(draw, h)


def do_call_main(draw: Draw, h: History) -> None:
    h.attempt("call_main", engine.call_main, draw(st.integers(4, 10)))


def do_void(draw: Draw, h: History) -> None:
    if rarely(draw):
        reason = draw(st.sampled_from(("dropped", "")))
        off, standing = draw(st.integers(-1, 3)), draw(st.one_of(st.none(), st.integers(0, 7)))
    else:
        reason = draw(st.sampled_from(("cocked", "wild")))
        off = draw(st.sampled_from((1, 2, 0)))
        standing = None if off == 0 else draw(st.one_of(st.integers(1, 6), st.none()))
        if h.state.standing is not None and not rarely(draw):
            # While a die stands, mostly the die that was cast goes off again.
            off = h.state.standing[0]
            standing = draw(
                st.one_of(st.sampled_from((h.state.standing[1], None)), st.integers(1, 6))
            )
    h.attempt("void_throw", engine.void_throw, reason, off, standing)


def do_stake(draw: Draw, h: History) -> None:
    h.attempt("stake", engine.stake, _amount(draw))


def do_lay(draw: Draw, h: History) -> None:
    state = h.state
    others = tuple(p for p in state.seats if p != state.caster)
    bettor = draw(st.sampled_from(others)) if others and not rarely(draw) else _player(draw, state)
    h.attempt("lay", engine.lay, bettor, _amount(draw))


def do_cover(draw: Draw, h: History) -> None:
    state = h.state
    pending = pending_ids(state, BetKind.LAID)
    owed = sum(state.bets[i].no_stake for i in pending)
    # Enough to cover everything, or (to be refused, or to forfeit) too little.
    funds = draw(st.one_of(st.just(BIG_FUNDS), st.integers(0, max(owed - 1, 0)), st.just(owed)))
    if rarely(draw):
        funds = -1
    bet_ids: tuple[str, ...] | None = None
    if pending and draw(st.booleans()):
        # Some of the stakes, in any order; the same stake may be named twice.
        bet_ids = tuple(draw(st.lists(st.sampled_from(pending), min_size=1, max_size=3)))
        if draw(st.booleans()):
            bet_ids += bet_ids[:1]
    elif rarely(draw):
        bet_ids = (_bet_id(draw, []),)
    h.attempt("cover", engine.cover, funds, bet_ids)


def do_refuse(draw: Draw, h: History) -> None:
    h.attempt("refuse", engine.refuse, _bet_id(draw, pending_ids(h.state, BetKind.LAID)))


def do_odds(draw: Draw, h: History) -> None:
    state = h.state
    backers = sorted(
        {
            b.yes if b.kind is BetKind.CASTER else b.no
            for b in state.bets.values()
            if b.kind in (BetKind.CASTER, BetKind.LAID) and b.round == state.round
        }
        - {None}
    )
    bettor = draw(st.sampled_from(backers)) if backers and not rarely(draw) else None
    if bettor is None:
        bettor = _player(draw, state)
    on = draw(st.sampled_from(("chance", "main"))) if not rarely(draw) else "both"
    amount = draw(st.integers(1, 100))
    # Where the odds are rounded down, any stake; elsewhere mostly one they pay exactly.
    inexact = draw(st.booleans()) if h.rules.rounding is Rounding.ROUND_DOWN else rarely(draw)
    if state.main is not None and state.chance is not None and not inexact:
        step = odds_ratio(state.main, state.chance, on != "main").denominator
        amount = step * draw(st.integers(1, 12))
    h.attempt("lay_odds", engine.lay_odds, bettor, on, amount)


def do_offer(draw: Draw, h: History) -> None:
    state = h.state
    offerer = _player(draw, state, SETTER, SETTER)
    kind = draw(st.sampled_from(ev.PropositionKind))
    if kind is ev.PropositionKind.NEXT_TOTAL:
        totals = draw(st.sets(st.integers(2, 12), min_size=1, max_size=10))
        if rarely(draw):
            totals = draw(st.sampled_from([set(), set(range(2, 13)), {1, 7}]))
    else:
        totals = {7} if rarely(draw) else set()
    backs = draw(st.booleans())
    to = draw(st.one_of(st.none(), st.sampled_from((*state.seats, SETTER))))
    if rarely(draw):
        to = draw(st.sampled_from((GHOST, offerer)))
    h.attempt(
        "offer_side_bet",
        engine.offer_side_bet,
        offerer,
        ev.Proposition(kind, frozenset(totals)),
        backs,
        _amount(draw),
        _amount(draw),
        to,
    )


def do_accept(draw: Draw, h: History) -> None:
    state = h.state
    bet_id = _bet_id(draw, pending_ids(state, BetKind.SIDE))
    bet = state.bets.get(bet_id)
    if bet is not None and bet.offered_to is not None and not rarely(draw):
        acceptor = bet.offered_to
    else:
        others = [p for p in (*state.seats, SETTER) if bet is None or p not in bet.parties]
        acceptor = _player(draw, state, SETTER) if not others else draw(st.sampled_from(others))
    h.attempt("accept_side_bet", engine.accept_side_bet, bet_id, acceptor)


def do_withdraw(draw: Draw, h: History) -> None:
    state = h.state
    bet_id = _bet_id(draw, pending_ids(state, BetKind.SIDE))
    bet = state.bets.get(bet_id)
    own = bet is not None and not rarely(draw)
    who = bet.parties[0] if own and bet is not None else _player(draw, state, SETTER)
    h.attempt("withdraw_side_bet", engine.withdraw_side_bet, bet_id, who)


def do_pass(draw: Draw, h: History) -> None:
    h.attempt("pass_dice", engine.pass_dice)


def do_leave(draw: Draw, h: History) -> None:
    state = h.state
    # Mostly someone with no open bets, so the leaving goes through.
    free = [p for p in state.seats if not any(p in b.parties for b in state.bets.values())]
    if free and not rarely(draw):
        h.attempt("leave", engine.leave, draw(st.sampled_from(free)))
    else:
        h.attempt("leave", engine.leave, _player(draw, state))


def do_seat(draw: Draw, h: History) -> None:
    names = BAD_NAMES if rarely(draw) else PLAYERS + NEWCOMERS
    h.attempt("seat", engine.seat, draw(st.sampled_from(names)))


def do_close(draw: Draw, h: History) -> None:
    if draw(st.integers(0, 7)) == 7:
        h.attempt("close", engine.close)


ACTIONS: tuple[Callable[[Draw, History], None], ...] = (
    do_progress,
    do_progress,
    do_progress,
    do_throw,
    do_call_main,
    do_void,
    do_stake,
    do_stake,
    do_lay,
    do_lay,
    do_cover,
    do_cover,
    do_refuse,
    do_odds,
    do_odds,
    do_odds,
    do_offer,
    do_offer,
    do_accept,
    do_accept,
    do_withdraw,
    do_pass,
    do_leave,
    do_seat,
    do_close,
)


# Mostly moving the game on, for long runs of rounds.
PLAYING: tuple[Callable[[Draw, History], None], ...] = (
    *(do_progress,) * 12,
    do_stake,
    do_lay,
    do_cover,
    do_offer,
    do_accept,
    do_void,
    do_leave,
    do_seat,
)


@st.composite
def histories(
    draw: Draw,
    rule_names: tuple[str, ...] = ALL_RULES,
    max_steps: int = 150,
    min_steps: int = 0,
    actions: tuple[Callable[[Draw, History], None], ...] = ACTIONS,
) -> History:
    rules = RULE_SETS[draw(st.sampled_from(rule_names))]
    limits = draw(limits_strategy)
    h = History(rules)
    h.attempt("open_table", lambda state: engine.open_table(rules, limits, state))
    for player in PLAYERS[: draw(st.integers(2, 4))]:
        h.attempt("seat", engine.seat, player)
    casts = 0
    while h.state.phase is Phase.SEATING and h.unfoldable is None:
        do_cast(draw, h, forced=casts >= 6)
        casts += 1
    # Go on for a while: `min_steps` commands, then about 80 more, at most `max_steps`.
    for n in range(max_steps):
        if h.unfoldable is not None or h.state.phase is Phase.CLOSED:
            break
        if n >= min_steps and draw(st.integers(0, 79)) == 0:
            break
        draw(st.sampled_from(actions))(draw, h)
    return h
