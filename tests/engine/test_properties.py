"""Property tests for the engine: random, valid table histories under every built-in
rule set (and one odds-rounding variant), and what must hold of every one of them.

The strategy `histories()` opens a table, seats two to four players, casts dice for
the first caster and then attempts a random sequence of commands with random (often
wrong) arguments. A command that raises `RuleBroken` must leave the state it was given
exactly as it was, and contributes nothing; the events of every command that succeeds
are folded onto the running state and kept, step by step, as the table's history.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import engine
from engine import events as ev
from engine.errors import ReplayError, Rule, RuleBroken
from engine.fold import INITIAL, contest_for, fold
from engine.money import ESCROW, balances, escrow, holds, postings
from engine.odds import odds_ratio
from engine.play import must_pass
from engine.rules import CoverPolicy, MainMethod, Rounding, RuleSet
from engine.rulesets import BUILTIN
from engine.state import SETTER, BetKind, Phase, RoundResult, TableState

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
REFUSING_RULES = tuple(n for n, r in RULE_SETS.items() if r.cover is CoverPolicy.REFUSE)
LOSSES = (RoundResult.OUT, RoundResult.MAIN, RoundResult.NO_MAIN)

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


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


def _pending(state: TableState, kind: BetKind) -> list[str]:
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
    pending = _pending(state, BetKind.LAID)
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
    pending = _pending(state, BetKind.LAID)
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
    h.attempt("refuse", engine.refuse, _bet_id(draw, _pending(h.state, BetKind.LAID)))


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
    bet_id = _bet_id(draw, _pending(state, BetKind.SIDE))
    bet = state.bets.get(bet_id)
    if bet is not None and bet.offered_to is not None and not rarely(draw):
        acceptor = bet.offered_to
    else:
        others = [p for p in (*state.seats, SETTER) if bet is None or p not in bet.parties]
        acceptor = _player(draw, state, SETTER) if not others else draw(st.sampled_from(others))
    h.attempt("accept_side_bet", engine.accept_side_bet, bet_id, acceptor)


def do_withdraw(draw: Draw, h: History) -> None:
    state = h.state
    bet_id = _bet_id(draw, _pending(state, BetKind.SIDE))
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


# -- helpers for the properties -----------------------------------------------------


def expected_result(rules: RuleSet, before: TableState, total: int) -> RoundResult | None:
    """How a throw of `total` ends the round, read straight off the rule set's table
    (None: the round goes on)."""
    if before.phase is Phase.FIRST_THROW:
        assert before.main is not None
        if total in rules.nicks[before.main]:
            return RoundResult.NICK
        if total in rules.outs[before.main]:
            return RoundResult.OUT
        return None
    if before.phase is Phase.CHANCE:
        if total == before.chance:
            return RoundResult.CHANCE
        if total == before.main:
            return RoundResult.MAIN
        return None
    assert before.phase is Phase.AWAITING_MAIN
    if 5 <= total <= 9 or rules.main_method is not MainMethod.FIRST_ROLL:
        return None
    return RoundResult.NO_MAIN


def left_of(seats: tuple[str, ...], player: str) -> str:
    return seats[(seats.index(player) + 1) % len(seats)]


# -- the properties --------------------------------------------------------------------


@settings(PROPERTY_SETTINGS, max_examples=100)
@given(histories())
def test_every_command_returns_events_its_state_folds(h: History) -> None:
    """A command's events are numbered on from the state it was given and fold onto
    it: no gap, no repeat, no bet closed twice or taken twice."""
    assert h.unfoldable is None, h.unfoldable
    for step in h.steps:
        versions = [e.version for e in step.events]
        assert versions == list(range(step.before.version + 1, step.after.version + 1))


@PROPERTY_SETTINGS
@given(histories())
def test_replay_is_deterministic(h: History) -> None:
    first = fold(h.events, INITIAL)
    second = fold(list(h.events))
    assert first == second
    assert snapshot(first) == snapshot(second)
    # The state tracked command by command is the state of the whole history.
    assert first == h.state
    done: list[Any] = []
    for step in h.steps:
        assert fold(step.events, step.before) == step.after
        done.extend(step.events)
        assert fold(done) == step.after
    # Versions run 1, 2, 3, ... with no gap or repeat.
    assert [e.version for e in h.events] == list(range(1, len(h.events) + 1))
    assert h.state.version == len(h.events)


@PROPERTY_SETTINGS
@given(histories())
def test_folding_a_prefix_then_the_rest_is_folding_everything(h: History) -> None:
    whole = fold(h.events)
    for k in range(len(h.events) + 1):
        prefix = fold(h.events[:k])
        assert fold(h.events[k:], prefix) == whole, f"split at event {k}"
    # Three pieces fold the same as one.
    n = len(h.events)
    a, b = n // 3, 2 * n // 3
    assert fold(h.events[b:], fold(h.events[a:b], fold(h.events[:a]))) == whole


@settings(PROPERTY_SETTINGS, max_examples=100)
@given(histories())
def test_every_settlement_sums_to_zero(h: History) -> None:
    check_money(h)


@PROPERTY_SETTINGS
@given(st.data())
def test_covering_named_stakes_holds_each_stake_once(data: st.DataObject) -> None:
    """The caster covers stakes by id, in any order, naming one more than once; each
    stake is matched once, and the round settles every escrow to zero."""
    h = data.draw(histories(rule_names=REFUSING_RULES, max_steps=6))
    state = h.state
    others = [p for p in state.seats if p != state.caster]
    assume(state.phase in (Phase.AWAITING_MAIN, Phase.FIRST_THROW) and others)
    for _ in range(data.draw(st.integers(1, 3))):
        h.attempt(
            "lay", engine.lay, data.draw(st.sampled_from(others)), data.draw(st.integers(5, 50))
        )
    pending = _pending(h.state, BetKind.LAID)
    assume(pending)
    named = data.draw(st.lists(st.sampled_from(pending), min_size=1, max_size=4))
    named += data.draw(st.lists(st.sampled_from(named), min_size=0, max_size=2))
    assert h.attempt("cover", engine.cover, BIG_FUNDS, tuple(named)) is not None
    for bet_id in set(named):
        assert not h.state.bets[bet_id].pending
    covered = [e.bet_id for e in h.steps[-1].events if isinstance(e, ev.StakeCovered)]
    assert sorted(covered) == sorted(set(named)), f"cover{h.steps[-1].args} -> {covered}"
    # Play the round out and check the money.
    round_ = h.state.round
    for _ in range(200):
        if h.state.round != round_ or h.state.phase is Phase.SEATING:
            break
        do_progress(data.draw, h)
    check_money(h)


@settings(PROPERTY_SETTINGS, max_examples=100)
@given(st.data())
def test_leaving_closes_each_bet_once(data: st.DataObject) -> None:
    """A player leaves with offers made to them alone (and others) on the table: every
    bet the leaving closes is closed once, and none is left that only they could take."""
    h = data.draw(histories(max_steps=8))
    state = h.state
    assume(h.unfoldable is None and state.phase is not Phase.CLOSED and state.seats)
    leaver = data.draw(st.sampled_from([p for p in (state.caster,) if p] + list(state.seats)))
    others = [p for p in (*state.seats, SETTER) if p != leaver]
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(ev.PropositionKind))
        totals = frozenset({7}) if kind is ev.PropositionKind.NEXT_TOTAL else frozenset()
        h.attempt(
            "offer_side_bet",
            engine.offer_side_bet,
            data.draw(st.sampled_from(others)),
            ev.Proposition(kind, totals),
            data.draw(st.booleans()),
            data.draw(st.integers(5, 50)),
            data.draw(st.integers(5, 50)),
            data.draw(st.sampled_from((leaver, None, *others))),
        )
    assume(h.unfoldable is None)
    left = h.attempt("leave", engine.leave, leaver)
    assert h.unfoldable is None, h.unfoldable
    if left is not None:
        closed = [e.bet_id for e in left if isinstance(e, ev.BetSettled | ev.BetVoided)]
        assert len(closed) == len(set(closed)), f"leave({leaver!r}) closed {closed}"
        assert not [b.id for b in h.state.bets.values() if b.offered_to == leaver and b.pending]
    check_money(h)


def check_money(h: History) -> None:
    """Every settlement pays out exactly what its bet's escrow holds (a refund returns
    each stake to whoever put it up), every closed bet's escrow is empty, every open
    bet's escrow holds exactly its stakes, and all balances sum to zero throughout."""
    net: Counter[str] = Counter()
    put_in: dict[str, Counter[str]] = {}  # bet id -> who put how much into its escrow
    closed: set[str] = set()
    for i, e in enumerate(h.events):
        if isinstance(e, ev.BetSettled | ev.BetVoided):
            account = escrow(e.bet_id)
            assert e.bet_id in put_in and e.bet_id not in closed, f"event {i}: {e}"
            held = net[account]
            assert held > 0
            assert all(t.source == account and t.amount > 0 for t in e.transfers), e
            assert sum(t.amount for t in e.transfers) == held, (
                f"{e} pays out {sum(t.amount for t in e.transfers)} but the escrow holds {held}"
            )
            if isinstance(e, ev.BetSettled):
                assert e.winner in put_in[e.bet_id]
                assert {t.target for t in e.transfers} == {e.winner}
            else:
                returned: Counter[str] = Counter()
                for t in e.transfers:
                    returned[t.target] += t.amount
                assert returned == put_in[e.bet_id], f"{e} returns {returned}"
            closed.add(e.bet_id)
        else:
            for t in holds(e):
                bet_id = t.target.removeprefix(ESCROW)
                assert t.target == escrow(bet_id) and t.amount > 0, e
                assert bet_id not in closed
                put_in.setdefault(bet_id, Counter())[t.source] += t.amount
        for t in holds(e):
            net[t.source] -= t.amount
            net[t.target] += t.amount
        if isinstance(e, ev.BetSettled | ev.BetVoided):
            assert net[escrow(e.bet_id)] == 0, f"escrow of {e.bet_id} not empty after {e}"
        assert sum(net.values()) == 0
        assert sum(balances(postings(h.events[: i + 1])).values()) == 0
    assert balances(postings(h.events)) == net
    assert sum(balances(postings(h.events)).values()) == 0
    # After every command, each open bet's escrow holds exactly its parties' stakes,
    # and the setter's exposure is within its cap.
    done: list[Any] = []
    for step in h.steps:
        done.extend(step.events)
        totals = balances(postings(done))
        for bet in step.after.bets.values():
            held = sum(bet.held_by(p) for p in set(bet.parties))
            assert totals[escrow(bet.id)] == held, (
                f"after {step.name}{step.args}: escrow of {bet.id} holds "
                f"{totals[escrow(bet.id)]}, the bet says {held}"
            )
        for account, amount in totals.items():
            if account.startswith(ESCROW) and account.removeprefix(ESCROW) not in (step.after.bets):
                assert amount == 0, f"after {step.name}{step.args}: {account} holds {amount}"
        cap = step.after.limits.max_exposure
        if cap is not None and step.name != "open_table":
            assert step.after.exposure(SETTER) <= cap
    if h.state.phase is Phase.CLOSED:
        assert not h.state.bets
        assert all(v == 0 for k, v in net.items() if k.startswith(ESCROW))


@PROPERTY_SETTINGS
@given(histories(actions=(do_progress, do_throw, do_void, do_void, do_void, do_leave)))
def test_a_standing_die_stands_until_the_next_throw(h: History) -> None:
    """Once a die stands, every void keeps it standing at the same value or ends the
    standing (both recast), and the next throw shows it."""
    for step in h.steps:
        was = step.before.standing
        if was is None:
            continue
        if step.name == "void_throw":
            assert step.after.standing in (was, None), f"{step.args} moved {was}"
        elif step.name == "throw":
            thrown = step.events[0]
            assert isinstance(thrown, ev.DiceThrown)
            off, value = was
            assert (thrown.die2 if off == 1 else thrown.die1) == value


@PROPERTY_SETTINGS
@given(histories())
def test_the_stakes_a_payout_refusal_names_may_be_laid(h: History) -> None:
    """An odds stake refused because it does not pay in whole units names the stakes
    nearest to it that do: each of them is accepted in the same state."""
    for refusal in h.refusals:
        if refusal.name != "lay_odds" or refusal.rule is not Rule.PAYOUT_NOT_PAYABLE:
            continue
        try:
            engine.lay_odds(refusal.given, *refusal.args)
        except RuleBroken as exc:
            detail = exc.detail
        named = re.search(r"(?:are|is) ([\d ]+(?:and \d+)?)$", detail)
        if named is None:
            assert "no stake that may be laid" in detail, detail
            continue
        bettor, on, _ = refusal.args
        for amount in map(int, named.group(1).split(" and ")):
            (laid,) = engine.lay_odds(refusal.given, bettor, on, amount)
            assert isinstance(laid, ev.OddsLaid) and laid.payout > 0, detail


@PROPERTY_SETTINGS
@given(
    rounding=st.sampled_from(Rounding),
    multiple=st.integers(1, 3),
    original=st.integers(1, 60),
    main_throw=st.sampled_from([(1, 4), (3, 3), (3, 4), (4, 4), (4, 5)]),
    chance_throw=st.sampled_from([(1, 3), (2, 2), (1, 4), (3, 3), (3, 4), (4, 4), (5, 5)]),
    on=st.sampled_from(("chance", "main")),
    cap=st.one_of(st.none(), st.integers(60, 400)),
    data=st.data(),
)
def test_odds_near_the_limits_name_only_stakes_that_may_be_laid(
    rounding: Rounding,
    multiple: int,
    original: int,
    main_throw: tuple[int, int],
    chance_throw: tuple[int, int],
    on: str,
    cap: int | None,
    data: st.DataObject,
) -> None:
    """Odds stakes up to the odds limit, after some already laid, with or without the
    setter's cap: a refusal for a payout between minor units names only stakes that
    are then accepted."""
    rules = dataclasses.replace(
        BUILTIN["french"], name="odds", rounding=rounding, odds_multiple=multiple
    )
    state = INITIAL
    for command in (
        lambda s: engine.open_table(rules, ev.Limits(max_exposure=cap)),
        lambda s: engine.seat(s, "ann"),
        lambda s: engine.seat(s, "bob"),
        lambda s: engine.cast_for_caster(s, "ann", 1),
        lambda s: engine.cast_for_caster(s, "bob", 2),
        lambda s: engine.stake(s, original),
        lambda s: engine.throw(s, *main_throw),
        lambda s: engine.throw(s, *chance_throw),
    ):
        try:
            state = fold(command(state), state)
        except RuleBroken:
            return
    assume(state.phase is Phase.CHANCE)
    for _ in range(3):
        amount = data.draw(st.integers(1, multiple * original))
        try:
            state = fold(engine.lay_odds(state, "ann", on, amount), state)
            continue
        except RuleBroken as exc:
            if exc.rule is not Rule.PAYOUT_NOT_PAYABLE:
                continue
            detail = exc.detail
        named = re.search(r"(?:are|is) ([\d ]+(?:and \d+)?)$", detail)
        if named is None:
            assert "no stake that may be laid" in detail, detail
            continue
        for stake in map(int, named.group(1).split(" and ")):
            (laid,) = engine.lay_odds(state, "ann", on, stake)
            assert isinstance(laid, ev.OddsLaid) and laid.payout > 0, detail


@PROPERTY_SETTINGS
@given(histories())
def test_every_round_ends_in_one_win_or_one_loss(h: History) -> None:
    rules = h.rules
    ended_by_throws = 0
    abandoned = 0
    for step in h.steps:
        before, after = step.before, step.after
        if step.name == "throw":
            thrown = step.events[0]
            assert isinstance(thrown, ev.DiceThrown)
            at_throw = fold(step.events[:1], before)
            result = expected_result(rules, before, thrown.die1 + thrown.die2)
            if result is None:
                assert at_throw.round == after.round == before.round
                assert (at_throw.wins, at_throw.losses) == (before.wins, before.losses)
                continue
            ended_by_throws += 1
            assert at_throw.round == after.round == before.round + 1
            assert at_throw.last_result is result
            won = result.caster_won
            assert at_throw.wins - before.wins == int(bool(won))
            assert at_throw.losses - before.losses == int(not won)
            assert at_throw.abandoned == before.abandoned
            # Every bet that the caster wins the round is settled by it, to the side
            # backing the caster iff the caster won.
            for bet in before.bets.values():
                if bet.proposition.kind is not ev.PropositionKind.CASTER_WINS:
                    continue
                assert bet.round == before.round
                closing = [
                    e
                    for e in step.events
                    if isinstance(e, ev.BetSettled | ev.BetVoided) and e.bet_id == bet.id
                ]
                assert len(closing) == 1, f"{bet.id} closed {len(closing)} times"
                if bet.pending:
                    assert isinstance(closing[0], ev.BetVoided)
                    continue
                assert isinstance(closing[0], ev.BetSettled)
                assert (closing[0].winner == bet.yes) is won
                if bet.kind in (BetKind.CASTER, BetKind.LAID):
                    assert bet.yes == before.caster
                    assert (closing[0].winner == before.caster) is won
        else:
            # Only a departing or forfeiting caster, or the table closing, ends a round
            # without a throw, whatever part of it was played; that round counts for
            # nobody.
            assert after.round in (before.round, before.round + 1)
            assert (after.wins, after.losses) == (before.wins, before.losses)
            departs = (step.name == "leave" and step.args[0] == before.caster) or any(
                isinstance(e, ev.CasterForfeited) for e in step.events
            )
            if before.round == 0:
                # Choosing the first caster starts round 1.
                assert after.round == (1 if after.caster is not None else 0)
            elif after.round != before.round:
                # Closing ends only a round in play: with nobody holding the dice there
                # is none.
                assert departs or (step.name == "close" and before.in_play)
                assert after.abandoned == before.abandoned + 1
                assert after.last_result is RoundResult.ABANDONED
                abandoned += 1
            else:
                assert not departs, f"{step.name} kept the round"
                assert step.name != "close" or not before.in_play, "close kept the round"
                assert after.abandoned == before.abandoned
        # No bet on a round outlives the round.
        for bet in after.bets.values():
            if bet.proposition.round_scoped:
                assert bet.round == after.round, f"{bet} outlived its round"
    state = h.state
    assert state.abandoned == abandoned
    assert state.wins + state.losses + state.abandoned == ended_by_throws + abandoned
    assert state.wins + state.losses + state.abandoned == max(state.round - 1, 0)


def _check_dice_pass(h: History) -> int:
    """The dice pass after a throw exactly when the rule set says; returns how many
    throws passed them."""
    rules = h.rules
    losses = wins = 0  # the current caster's run, counted here from the results
    passes = 0
    for step in h.steps:
        before, after = step.before, step.after
        passed = [e for e in step.events if isinstance(e, ev.DicePassed)]
        if step.name != "throw":
            if passed or before.caster != after.caster:
                losses = wins = 0
            continue
        thrown = step.events[0]
        at_throw = fold(step.events[:1], before)
        result = expected_result(rules, before, thrown.die1 + thrown.die2)
        if result is None:
            assert not passed, f"{step.name}{step.args} passed the dice mid-round"
            assert after.caster == before.caster
            continue
        if result in LOSSES:
            losses, wins = losses + 1, 0
        else:
            losses, wins = 0, wins + 1
        assert (at_throw.consecutive_losses, at_throw.consecutive_wins) == (losses, wins)
        reason = must_pass(rules.dice_pass, at_throw.consecutive_losses, at_throw.consecutive_wins)
        rule = rules.dice_pass
        due = (rule.after_losses is not None and losses >= rule.after_losses) or (
            rule.after_wins is not None and wins >= rule.after_wins
        )
        assert (reason is not None) is due
        assert len(passed) == (1 if due else 0), f"{step.name}{step.args}: {passed}"
        assert before.caster is not None
        if due:
            passes += 1
            assert passed[0] is step.events[-1]
            assert passed[0].reason == reason
            assert passed[0].caster == left_of(before.seats, before.caster)
            assert after.caster == left_of(before.seats, before.caster)
            assert (after.consecutive_losses, after.consecutive_wins) == (0, 0)
            losses = wins = 0
        else:
            assert after.caster == before.caster
        if rules.name == "english":
            # The English caster keeps the dice through any number of wins and loses
            # them exactly on the third loss in a row.
            third_loss = result in LOSSES and before.consecutive_losses == 2
            assert due is third_loss
            if len(before.seats) > 1:
                assert (after.caster != before.caster) is third_loss
    return passes


@PROPERTY_SETTINGS
@given(histories())
def test_the_dice_pass_exactly_when_the_rule_set_says(h: History) -> None:
    _check_dice_pass(h)


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(histories(rule_names=("english",), min_steps=80, max_steps=160, actions=PLAYING))
def test_english_dice_pass_after_three_losses(h: History) -> None:
    _check_dice_pass(h)


def _always_refused(state: TableState) -> list[tuple[str, Callable[[], Any]]]:
    """Commands that break a rule whatever the state of the table."""
    player = state.seats[0] if state.seats else GHOST
    reopen = (
        []
        if state.phase is Phase.NEW
        else [("open again", lambda: engine.open_table(BUILTIN["english"], ev.Limits(), state))]
    )
    return [
        *reopen,
        ("throw 7", lambda: engine.throw(state, 7, 1)),
        ("throw 0", lambda: engine.throw(state, 3, 0)),
        ("call 4", lambda: engine.call_main(state, 4)),
        ("void bogus", lambda: engine.void_throw(state, "dropped", 1)),
        ("stake 0", lambda: engine.stake(state, 0)),
        ("lay ghost", lambda: engine.lay(state, GHOST, 10)),
        ("cover -1", lambda: engine.cover(state, -1)),
        ("refuse unknown", lambda: engine.refuse(state, "b0")),
        ("odds ghost", lambda: engine.lay_odds(state, GHOST, "chance", 60)),
        ("accept unknown", lambda: engine.accept_side_bet(state, "b0", player)),
        ("withdraw unknown", lambda: engine.withdraw_side_bet(state, "b0", player)),
        ("seat setter", lambda: engine.seat(state, SETTER)),
        ("leave ghost", lambda: engine.leave(state, GHOST)),
        ("cast 0", lambda: engine.cast_for_caster(state, player, 0)),
        (
            "self side bet",
            lambda: engine.offer_side_bet(
                state,
                player,
                ev.Proposition(ev.PropositionKind.NEXT_TOTAL, frozenset({7})),
                True,
                10,
                10,
                player,
            ),
        ),
    ]


@PROPERTY_SETTINGS
@given(histories())
def test_a_refused_command_changes_nothing(h: History) -> None:
    # Every refusal met while building the history left its state as it was, and that
    # state is still the fold of the history up to the attempt.
    for refusal in h.refusals:
        assert refusal.before == refusal.after, refusal.name
        assert refusal.given == fold(h.events[: refusal.at])
        assert isinstance(refusal.rule, Rule)
    # And commands that break a rule in any state, tried at every point of the game.
    for state in [INITIAL, *(step.after for step in h.steps)]:
        before = snapshot(state)
        for name, command in _always_refused(state):
            try:
                produced = command()
            except RuleBroken as exc:
                assert isinstance(exc.rule, Rule) and exc.code == exc.rule.value
            else:
                raise AssertionError(
                    f"{name} was not refused at version {state.version}: {produced}"
                )
            assert snapshot(state) == before, name
