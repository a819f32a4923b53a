"""Property tests for the engine: random, valid table histories under every built-in
rule set (and one odds-rounding variant), and what must hold of every one of them.

The histories come from `histories()` in tests/engine/strategies.py, which the
ledger's suites share. A command that raises `RuleBroken` must leave the state it was
given exactly as it was, and contributes nothing.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import engine
from engine import events as ev
from engine.errors import Rule, RuleBroken
from engine.fold import INITIAL, fold
from engine.money import ESCROW, balances, escrow, holds, postings
from engine.play import must_pass
from engine.rules import CoverPolicy, MainMethod, Rounding, RuleSet
from engine.rulesets import BUILTIN
from engine.state import SETTER, BetKind, Phase, RoundResult, TableState
from tests.engine.strategies import (
    BIG_FUNDS,
    GHOST,
    PLAYING,
    RULE_SETS,
    History,
    do_leave,
    do_progress,
    do_throw,
    do_void,
    histories,
    pending_ids,
    snapshot,
)

REFUSING_RULES = tuple(n for n, r in RULE_SETS.items() if r.cover is CoverPolicy.REFUSE)
LOSSES = (RoundResult.OUT, RoundResult.MAIN, RoundResult.NO_MAIN)

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


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
    pending = pending_ids(h.state, BetKind.LAID)
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
