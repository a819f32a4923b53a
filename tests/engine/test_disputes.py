"""Disputes in the engine: opening one, the answer (re-derivation and what-if), and the
three resolutions, with every figure worked by hand; the referee judging them in a
stream; and a property: voiding a round puts every party back where it stood."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import engine
from engine import disputes
from engine import events as ev
from engine.causes import derive
from engine.errors import Disagreement, Rule, RuleBroken
from engine.fold import INITIAL, fold
from engine.money import balances, holds, postings
from engine.referee import Referee
from engine.rulesets import BUILTIN
from engine.state import SETTER
from tests.engine.disputekit import Game, nick_round, play_randomly
from tests.engine.tablekit import NICK_FIRST, next_total


def chance_round(g: Game) -> None:
    """Round 2: main 7; 2+4 sets the chance 6; cat offers bob 5 against 20 that the next
    throw is 8 and bob takes it; 4+4 is thrown (cat wins bob's 20); then 3+3: the chance."""
    g.do(engine.call_main, 7)
    g.do(engine.throw, 2, 4)
    g.do(engine.offer_side_bet, "cat", next_total(8), True, 5, 20, "bob")
    offer = g.events[-1]
    assert isinstance(offer, ev.SideBetOffered)
    g.do(engine.accept_side_bet, offer.bet_id, "bob")
    g.do(engine.throw, 4, 4)
    g.do(engine.throw, 3, 3)


def test_record_of_a_round_reads_its_commands_and_money():
    g = Game()
    nick_round(g)
    record = g.record(1)
    assert record.ended and record.mismatch is None
    assert [type(grp.events[0]).__name__ for grp in record.groups] == [
        "CasterStaked",
        "StakeLaid",
        "StakeCovered",
        "MainCalled",
        "DiceThrown",
    ]
    assert record.nets() == {
        "b9": {"ann": 10, SETTER: -10},  # b9: ann's stake, won
        "b10": {"ann": 5, "bob": -5},  # b10: bob's lay, covered by ann, lost
    }
    answer = disputes.answer(g.state, record)
    assert answer.matches and answer.result == "nick" and answer.what_if is None


def test_a_player_without_money_in_the_round_cannot_open_a_dispute():
    g = Game()
    nick_round(g)
    with pytest.raises(RuleBroken) as refused:
        g.open(1, "cat")
    assert refused.value.rule is Rule.NOT_IN_ROUND
    # ... but the setter and a croupier may, and so may bob, who lost 5 in it.
    assert g.open(1, SETTER, "setter") and g.open(1, "carol", "croupier") and g.open(1, "bob")


def test_only_an_ended_recent_round_may_be_disputed():
    g = Game()
    g.do(engine.stake, 10)
    for number in (1, 2):  # round 1 is in play; round 2 has not begun
        with pytest.raises(RuleBroken) as refused:
            g.do(disputes.open_dispute, None, number, SETTER, "setter", "claim")
        assert refused.value.rule is Rule.ROUND_NOT_ENDED
    g.do(engine.call_main, 7)
    g.do(engine.throw, 3, 4)
    for _ in range(disputes.DISPUTE_WINDOW):
        g.do(engine.call_main, 7)
        g.do(engine.throw, 3, 4)
    assert g.state.round == disputes.DISPUTE_WINDOW + 2
    with pytest.raises(RuleBroken) as refused:
        g.do(disputes.open_dispute, None, 1, SETTER, "setter", "claim")
    assert refused.value.rule is Rule.ROUND_TOO_OLD
    assert g.open(2, SETTER, "setter")


@pytest.mark.parametrize(
    ("kw", "rule"),
    [
        ({"claim": ""}, Rule.INVALID_CLAIM),
        ({"claim": "x" * 501}, Rule.INVALID_CLAIM),
        ({"throw": 3}, Rule.NOT_A_THROW_OF_ROUND),
        ({"die1": 7, "die2": 1}, Rule.INVALID_DIE),
        ({"die1": 2}, Rule.INVALID_DIE),
    ],
)
def test_a_claim_is_refused_with_the_rule_it_breaks(kw, rule):
    g = Game()
    nick_round(g)
    before = list(g.events)
    with pytest.raises(RuleBroken) as refused:
        g.open(1, "bob", **kw)
    assert refused.value.rule is rule and g.events == before


def test_the_answer_rederives_the_round_and_says_what_other_dice_would_have_done():
    g = Game()
    nick_round(g)
    record = g.record(1)
    throw = g.throw_version(3, 4)
    what = disputes.answer(g.state, record, throw, 1, 2).what_if  # 3: an out at main 7
    assert what is not None
    assert what.result == "out" and what.main == 7 and what.chance is None
    assert {p.bet_id: (p.winner, dict(p.net)) for p in what.bets} == {
        "b9": (SETTER, {"ann": -10, SETTER: 10}),
        "b10": ("bob", {"ann": -5, "bob": 5}),
    }
    # English rules pass the dice after three losses: a loss here would change the
    # caster's run, so the correction is refused; the what-if still answers.
    assert what.refused is not None and "run" in what.refused


def test_void_reverses_every_bet_of_the_round_and_leaves_its_events():
    g = Game()
    nick_round(g)
    before_round = Counter()  # nobody had moved money before round 1
    assert g.balance()["ann"] == 15
    d = g.open(1, "bob", die1=1, die2=2)
    resolved = g.resolve(d, "voided")
    assert [type(e).__name__ for e in resolved] == ["DisputeResolved", "BetAdjusted", "BetAdjusted"]
    assert resolved[1] == ev.BetAdjusted(
        resolved[1].version, "b9", d, 1, "reversal", (ev.Transfer("ann", SETTER, 10),)
    )
    assert resolved[2].transfers == (ev.Transfer("ann", "bob", 5),)
    balance = g.balance()
    assert all(balance[p] == before_round[p] for p in ("ann", "bob", SETTER))
    assert g.state.adjusted == frozenset({1}) and g.state.disputes == {}


def test_a_dispute_is_resolved_once_and_a_round_adjusted_once():
    g = Game()
    nick_round(g)
    d = g.open(1, "bob")
    g.resolve(d, "voided")
    with pytest.raises(RuleBroken) as refused:
        g.do(disputes.resolve, g.record(1), d, "upheld", "again")
    assert refused.value.rule is Rule.NO_SUCH_DISPUTE
    d2 = g.open(1, SETTER, "setter")
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d2, "voided")
    assert refused.value.rule is Rule.ROUND_ADJUSTED
    assert [type(e).__name__ for e in g.resolve(d2, "upheld")] == ["DisputeResolved"]


def test_a_correction_inside_its_round_pays_the_difference_per_bet():
    g = Game()
    nick_round(g)
    chance_round(g)
    balance = g.balance()
    assert (balance["cat"], balance["bob"]) == (20, -5 - 20)
    eight = g.throw_version(4, 4)
    d = g.open(2, "bob", throw=eight, die1=4, die2=5)
    what = disputes.answer(g.state, g.record(2), eight, 4, 5).what_if
    assert what is not None and what.refused is None and what.result == "chance"
    assert what.chance == 6
    # 4+5 is 9, not 8: bob, not cat, wins the side bet: cat gives back 20 and pays 5.
    bet = next(p for p in what.bets if p.net.get("cat"))
    assert bet.winner == "bob" and dict(bet.net) == {"bob": 5, "cat": -5}
    resolved = g.resolve(d, "corrected", eight, 4, 5)
    assert [type(e).__name__ for e in resolved] == ["DisputeResolved", "BetAdjusted"]
    assert resolved[1].adjustment == "correction"
    assert resolved[1].transfers == (ev.Transfer("cat", "bob", 25),)
    after = g.balance()
    assert (after["cat"], after["bob"]) == (-5, -5 + 5)
    assert sum(after.values()) == 0
    # The throw still reads 4+4 in the stream: nothing is edited.
    assert any(
        isinstance(e, ev.DiceThrown) and e.version == eight and e.die1 == 4 for e in g.events
    )


def test_a_correction_that_reaches_beyond_its_round_is_refused():
    g = Game()
    nick_round(g)
    chance_round(g)
    chance_set = g.throw_version(2, 4)
    d = g.open(2, "bob")
    before = list(g.events)
    # 5+2 is a nick at main 7: the round would have ended there, before the side bet.
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d, "corrected", chance_set, 5, 2)
    assert refused.value.rule is Rule.CORRECTION_REACHES_BEYOND_ROUND
    assert "void the round instead" in refused.value.detail
    assert g.events == before


def french_nick_round(g: Game) -> str:
    """A round at a french table (the main rolled, re-tossed until 5 to 9): ann, the
    caster, offers bob 150 against his 170 that the first throw after the main nicks,
    and he takes it. 1+3 is re-tossed, 4+1 sets the main 5, and 1+4 nicks it: ann wins
    the side bet, 320 paid to her. Returns the bet's id."""
    offer = g.do(engine.offer_side_bet, "ann", NICK_FIRST, True, 150, 170, "bob")[0]
    assert isinstance(offer, ev.SideBetOffered)
    g.do(engine.accept_side_bet, offer.bet_id, "bob")
    g.do(engine.throw, 1, 3)
    g.do(engine.throw, 4, 1)
    g.do(engine.throw, 1, 4)
    return offer.bet_id


def test_a_correction_that_decides_a_bet_a_throw_earlier_stays_inside_its_round():
    """With 4+4 at the first throw, the main is 8, 4+1 sets the chance 5 (deciding the
    side bet for bob there, a throw earlier) and 1+4 throws it: the round ends at the
    same throw, the caster wins it, and the table goes on as it did. Only the side bet
    is paid otherwise, so the correction is made (it was refused for deriving the
    settlement at another place in the round)."""
    g = Game(rules="french")
    bet = french_nick_round(g)
    assert g.balance()["ann"] == 170 and g.balance()["bob"] == -170
    first = g.throw_version(1, 3)
    what = disputes.answer(g.state, g.record(1), first, 4, 4).what_if
    assert what is not None and what.refused is None, what
    assert (what.result, what.main, what.chance) == ("chance", 8, 5)
    assert [(p.bet_id, p.winner, dict(p.net)) for p in what.bets] == [
        (bet, "bob", {"ann": -150, "bob": 150})
    ]
    assert what.adjustments == {bet: (ev.Transfer("ann", "bob", 320),)}
    d = g.open(1, "bob", throw=first, die1=4, die2=4)
    resolved = g.resolve(d, "corrected", first, 4, 4)
    assert [(type(e).__name__, getattr(e, "transfers", None)) for e in resolved] == [
        ("DisputeResolved", None),
        ("BetAdjusted", (ev.Transfer("ann", "bob", 320),)),
    ]
    assert (g.balance()["ann"], g.balance()["bob"]) == (-150, 150)
    referee = Referee()  # and the referee, judging the stream again, makes the same
    for e in g.events:
        referee.check(e)
    referee.finish()
    assert referee.trusted == [] and referee.state == g.state


def test_what_follows_a_settlement_moved_earlier_keeps_its_place_in_the_round():
    """The side bet of the french round decided a throw earlier moves every later event
    of the round along by one, but each recorded command stays where it was: a bet
    offered after it keeps its id, and a dispute over another round opened between the
    throws still lies between them (the what-if used to stop at both)."""
    g = Game(rules="french")
    g.do(engine.throw, 3, 3)  # round 1: the main 6,
    g.do(engine.throw, 3, 3)  # and a nick
    offer = g.do(engine.offer_side_bet, "ann", NICK_FIRST, True, 150, 170, "bob")[0]
    assert isinstance(offer, ev.SideBetOffered)
    g.do(engine.accept_side_bet, offer.bet_id, "bob")
    g.do(engine.throw, 1, 3)
    g.do(engine.throw, 4, 1)  # the main 5
    g.open(1, SETTER, "setter")  # a dispute over round 1, between round 2's throws
    later = g.do(engine.offer_side_bet, "cat", next_total(5), True, 10, 20, "bob")[0]
    assert isinstance(later, ev.SideBetOffered)
    g.do(engine.accept_side_bet, later.bet_id, "bob")
    g.do(engine.throw, 1, 4)  # a nick: ann wins 320, cat bob's 20
    first = g.throw_version(1, 3)
    what = disputes.answer(g.state, g.record(2), first, 4, 4).what_if
    assert what is not None and what.refused is None and what.stopped is None, what
    assert {p.bet_id: p.winner for p in what.bets} == {offer.bet_id: "bob", later.bet_id: "cat"}
    assert what.adjustments == {offer.bet_id: (ev.Transfer("ann", "bob", 320),)}
    d = g.open(2, "bob", throw=first, die1=4, die2=4)
    g.resolve(d, "corrected", first, 4, 4)
    referee = Referee()
    for e in g.events:
        referee.check(e)
    referee.finish()
    assert referee.trusted == [] and referee.state == g.state


def test_a_correction_that_would_settle_another_rounds_bet_otherwise_is_refused():
    """A next-total bet of round 1 outlives it (the caster left) and is settled by round
    2's out, 1+1. With 1+2 round 2 is still an out, but round 1's bet goes the other
    way: correcting round 2 would reach into round 1's money, so it is refused (it was
    made, paying round 2's bets only)."""
    g = Game()
    g.do(engine.call_main, 7)
    offer = g.do(engine.offer_side_bet, "bob", next_total(2), True, 5, 10, "cat")[0]
    assert isinstance(offer, ev.SideBetOffered)
    g.do(engine.accept_side_bet, offer.bet_id, "cat")
    g.do(engine.leave, "ann")  # round 1 abandoned; the dice pass to bob
    g.do(engine.stake, 10)
    g.do(engine.call_main, 7)
    g.do(engine.throw, 1, 1)  # an out; and 2: bob wins round 1's side bet
    assert g.state.round == 3 and offer.bet_id not in g.state.bets
    out = g.throw_version(1, 1)
    what = disputes.answer(g.state, g.record(2), out, 1, 2).what_if
    assert what is not None and what.result == "out"
    assert what.refused is not None and offer.bet_id in what.refused, what
    d = g.open(2, "bob", throw=out, die1=1, die2=2)
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d, "corrected", out, 1, 2)
    assert refused.value.rule is Rule.CORRECTION_REACHES_BEYOND_ROUND


def test_a_correction_names_a_throw_of_the_round_and_new_dice():
    g = Game()
    nick_round(g)
    chance_round(g)
    d = g.open(2, "bob")
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d, "corrected", g.throw_version(3, 4), 1, 1)  # round 1's throw
    assert refused.value.rule is Rule.NOT_A_THROW_OF_ROUND
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d, "corrected", g.throw_version(4, 4), 4, 4)  # as recorded
    assert refused.value.rule is Rule.INVALID_RESOLUTION
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d, "upheld", g.throw_version(4, 4), 4, 5)
    assert refused.value.rule is Rule.INVALID_RESOLUTION
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d, "overturned")
    assert refused.value.rule is Rule.INVALID_RESOLUTION


def test_the_referee_judges_disputes_and_catches_a_forged_adjustment():
    g = Game()
    nick_round(g)
    chance_round(g)
    d = g.open(2, "bob", throw=g.throw_version(4, 4), die1=4, die2=5)
    g.resolve(d, "corrected", g.throw_version(4, 4), 4, 5)
    d1 = g.open(1, "bob")
    g.resolve(d1, "voided")
    referee = Referee()
    for e in g.events:
        referee.check(e)
    referee.finish()
    assert referee.trusted == [] and referee.state == g.state

    forged = list(g.events)
    i = next(i for i, e in enumerate(forged) if isinstance(e, ev.BetAdjusted))
    a = forged[i]
    assert isinstance(a, ev.BetAdjusted)
    forged[i] = ev.BetAdjusted(
        a.version, a.bet_id, a.dispute_id, a.round, a.adjustment, (ev.Transfer("cat", "bob", 30),)
    )
    referee = Referee()
    with pytest.raises(Disagreement) as caught:
        for e in forged:
            referee.check(e)
    assert caught.value.version == a.version


def test_a_referee_that_starts_after_the_round_takes_its_dispute_on_trust():
    g = Game()
    nick_round(g)
    chance_round(g)
    cut = len(g.events)
    d = g.open(1, "bob")
    g.resolve(d, "voided")
    referee = Referee(fold(g.events[:cut]))
    for e in g.events[cut:]:
        referee.check(e)
    referee.finish()
    assert referee.trusted == [e.version for e in g.events[cut:]]
    assert referee.state == g.state


def test_server_dice_are_never_corrected():
    from engine import serverdice

    seed = bytes(32)
    g = Game()
    g.events, g.state = [], INITIAL
    g.do(lambda s: engine.open_table(BUILTIN["english"], ev.Limits(), s))
    g.do(engine.serve_dice)
    for p in ("ann", "bob"):
        g.do(engine.seat, p)
    g.do(engine.cast_for_caster, "ann", 1)
    g.do(engine.cast_for_caster, "bob", 2)
    commitment = serverdice.commit_to(seed.hex())
    g.events.append(ev.SeedCommitted(g.state.version + 1, commitment))
    g.state = fold(g.events[-1:], g.state)
    g.do(engine.stake, 10)
    g.do(engine.call_main, 7)
    while g.state.round == 1:
        d1, d2 = serverdice.draw(seed, "c", g.state.nonce)
        g.do(engine.server_throw, "c", d1, d2)
    throw = next(e.version for e in g.events if isinstance(e, ev.DiceThrown))
    d = g.open(1, SETTER, "setter")
    dice = (1, 1 if g.events[throw - 1].die1 != 1 else 2)
    # The answer says so before the setter tries (it said a correction could be made).
    what = disputes.answer(g.state, g.record(1), throw, *dice).what_if
    assert what is not None and what.refused_rule is Rule.SERVER_DICE
    assert what.adjustments == {}
    with pytest.raises(RuleBroken) as refused:
        g.resolve(d, "corrected", throw, *dice)
    assert refused.value.rule is Rule.SERVER_DICE and refused.value.detail == what.refused
    assert g.resolve(d, "voided")


# -- the property --------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), rounds=st.integers(1, 6), data=st.data())
def test_void_then_replay_returns_every_party_to_its_balance_before_the_round(seed, rounds, data):
    g = Game(rules=data.draw(st.sampled_from(sorted(BUILTIN))))
    play_randomly(g, random.Random(seed), rounds)
    number = data.draw(st.integers(1, g.state.round - 1))
    record = g.record(number)
    if record.open:
        return
    first = record.groups[0].events[0].version
    before_round = balances(postings(g.events[: first - 1]))
    later = balances(
        postings(e for e in g.events[first - 1 :] if getattr(e, "bet_id", None) not in record.money)
    )
    d = g.open(number, SETTER, "setter")
    reversed_bets = len(g.resolve(d, "voided")) - 1
    event(f"bets reversed: {min(reversed_bets, 3)}{'+' if reversed_bets >= 3 else ''}")
    # Replayed from the start by the referee, the stream holds: the reversal is the
    # engine's own, and every party stands where the round's bets found it (plus only
    # what bets of other rounds moved since).
    referee = Referee()
    for e in g.events:
        referee.check(e)
    referee.finish()
    after = g.balance()
    for party in set(after) | set(before_round):
        if not party.startswith("escrow:"):
            assert after[party] == before_round[party] + later[party], party
    assert sum(after.values()) == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), rounds=st.integers(2, 6), data=st.data())
def test_a_correction_made_leaves_the_table_going_on_as_recorded(seed, rounds, data):
    """Whenever a correction would be made, the table goes on from the corrected round
    as it went on from the recorded one: with the new dice, each command run again at
    its place in the stream, every command after the round derives exactly the events
    recorded, every bet of another round is paid as recorded, and each bet of the round
    nets what it was paid plus its adjustment."""
    g = Game(rules=data.draw(st.sampled_from(sorted(BUILTIN))))
    play_randomly(g, random.Random(seed), rounds)
    number = data.draw(st.integers(1, g.state.round - 1))
    record = g.record(number)
    if record.open or not record.throws:
        return
    throw = data.draw(st.sampled_from([t.version for t in record.throws]))
    die1, die2 = data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6)))
    what = disputes.answer(g.state, record, throw, die1, die2).what_if
    assert what is not None
    event("correctable" if what.refused is None else "refused")
    if what.refused is not None:
        return
    groups: list[tuple[ev.Event, ...]] = []
    referee = Referee(on_group=lambda events, before, after: groups.append(tuple(events)))
    for e in g.events:
        referee.check(e)
    referee.finish()
    k = next(i for i, group in enumerate(groups) if group[0].version == throw)
    state = fold(g.events[: throw - 1])
    money = [e for e in g.events[: throw - 1] if getattr(e, "bet_id", None) in record.money]
    others: list[ev.Event] = []  # the bets of other rounds it touches
    was: list[ev.Event] = []
    ended = False
    for group in groups[k:]:
        cause = group[0]
        if cause.version == throw:
            cause = dataclasses.replace(cause, die1=die1, die2=die2)  # type: ignore[type-var]
        state = dataclasses.replace(state, version=cause.version - 1)
        derived = derive(state, cause)
        if ended:
            assert derived == list(group)
        else:
            money += [e for e in derived if getattr(e, "bet_id", None) in record.money]
            others += [e for e in derived if getattr(e, "bet_id", None) not in record.money]
            was += [e for e in group if getattr(e, "bet_id", None) not in record.money]
        state = fold(derived, state)
        ended = ended or state.round > number
    assert ended
    assert balances(postings(others)) == balances(postings(was))
    for bet_id, transfers in record.money.items():
        paid = Counter(disputes.net(transfers))
        paid.update(disputes.net(what.adjustments.get(bet_id, ())))
        should = disputes.net(t for e in money if e.bet_id == bet_id for t in holds(e))  # type: ignore[attr-defined]
        assert {p: n for p, n in paid.items() if n} == should, bet_id


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), rounds=st.integers(2, 6), data=st.data())
def test_the_answer_says_what_a_correction_would_do(seed, rounds, data):
    """A dispute's answer says a correction to its dice would be refused, and under
    which rule, exactly when the setter's correction is refused, with the same words;
    otherwise the correction posts the adjustments the answer showed. Some rounds are
    voided first, and some claims name the dice recorded."""
    g = Game(rules=data.draw(st.sampled_from(sorted(BUILTIN))))
    play_randomly(g, random.Random(seed), rounds)
    number = data.draw(st.integers(1, g.state.round - 1))
    record = g.record(number)
    if record.open or not record.throws:
        return
    thrown = data.draw(st.sampled_from(record.throws))
    dice = data.draw(
        st.sampled_from([(thrown.die1, thrown.die2)])
        | st.tuples(st.integers(1, 6), st.integers(1, 6))
    )
    d = g.open(number, SETTER, "setter")
    if data.draw(st.integers(0, 3)) == 0:
        g.resolve(g.open(number, "cecil", "croupier"), "voided")  # the setter's is open
    what = disputes.answer(g.state, g.record(number), thrown.version, *dice).what_if
    assert what is not None
    event(f"refused: {what.refused_rule.value if what.refused_rule else None}")
    try:
        made = g.resolve(d, "corrected", thrown.version, *dice)
    except RuleBroken as refused:
        assert (refused.rule, refused.detail) == (what.refused_rule, what.refused)
    else:
        assert what.refused is None and what.refused_rule is None
        assert {a.bet_id: a.transfers for a in made[1:]} == dict(what.adjustments)  # type: ignore[attr-defined]


def test_an_old_dispute_is_kept_until_resolved_and_a_too_old_one_is_refused():
    g = Game()
    nick_round(g)
    d = g.open(1, "bob")
    for _ in range(disputes.DISPUTE_WINDOW + 5):  # round 1 ages past the window
        g.do(engine.call_main, 7)
        g.do(engine.throw, 3, 4)
    # Still open, so still resolvable: the round's record is kept until then.
    g.resolve(d, "voided")
    referee = Referee()
    for e in g.events:
        referee.check(e)
    referee.finish()
    assert referee.trusted == [] and referee.state == g.state
    # A round read back across that resolution reads clean: the referee that reads it
    # takes disputes about other rounds as recorded.
    last = g.state.round - 1
    assert g.record(last).mismatch is None
    # A dispute forged on round 1 now, too old to open, is caught.
    forged = ev.DisputeOpened(
        g.state.version + 1, f"d{g.state.version + 1}", 1, SETTER, SETTER, "late", None, None, None
    )
    with pytest.raises(Disagreement) as caught:
        referee.check(forged)
    assert "more than 50 rounds ago" in caught.value.reason


def test_a_bet_that_outlives_its_round_is_reversed_with_it():
    """A next-total side bet is not decided by its round: if the caster leaves, it waits
    for the next valid throw, in the next caster's round. Voiding the round it was made
    in reverses it, wherever it was settled."""
    g = Game()
    g.do(engine.call_main, 7)
    offer = g.do(engine.offer_side_bet, "bob", next_total(2), True, 5, 10, "cat")[0]
    assert isinstance(offer, ev.SideBetOffered)
    g.do(engine.accept_side_bet, offer.bet_id, "cat")
    g.do(engine.leave, "ann")  # round 1 abandoned; the dice pass to bob
    assert g.state.round == 2 and offer.bet_id in g.state.bets
    with pytest.raises(RuleBroken) as refused:  # the bet of round 1 is still open
        g.open(1, "bob")
    assert refused.value.rule is Rule.ROUND_NOT_ENDED
    g.do(engine.call_main, 7)
    g.do(engine.throw, 1, 1)  # 2: bob wins cat's 10, in round 2
    assert g.balance()["bob"] == 10 and g.balance()["cat"] == -10
    d = g.open(1, "cat")
    reversal = g.resolve(d, "voided")[1:]
    assert [(a.bet_id, a.transfers) for a in reversal] == [
        (offer.bet_id, (ev.Transfer("bob", "cat", 10),))
    ]
    assert (g.balance()["bob"], g.balance()["cat"]) == (0, 0)
    referee = Referee()
    for e in g.events:
        referee.check(e)
    referee.finish()
    assert referee.trusted == []


def test_a_round_with_another_rounds_dispute_inside_it_reads_back_whole():
    """A dispute over round 1 opened and resolved while round 2 is in play: its events
    lie between round 2's commands but are not round 2's. Round 2's record steps over
    them (it used to fold round 2's commands straight on, found a version missing, and
    the API answered a dispute over round 2 with a 500); the answer, a correction within
    the round and the referee's judgement all still work."""
    g = Game()
    nick_round(g)
    g.do(engine.call_main, 7)
    g.do(engine.throw, 2, 4)  # round 2: the chance is 6
    d1 = g.open(1, "bob")
    g.resolve(d1, "voided")  # round 1's dispute, between round 2's throws
    g.do(engine.offer_side_bet, "cat", next_total(8), True, 5, 20, "bob")
    offer = g.events[-1]
    assert isinstance(offer, ev.SideBetOffered)
    g.do(engine.accept_side_bet, offer.bet_id, "bob")
    d0 = g.open(1, SETTER, "setter")  # and another, left open, among round 2's commands
    g.do(engine.throw, 4, 4)
    g.do(engine.throw, 3, 3)  # the chance: round 2 ends

    record = g.record(2)
    assert record.ended and record.mismatch is None
    assert [type(grp.events[0]).__name__ for grp in record.groups] == [
        "MainCalled",
        "DiceThrown",
        "SideBetOffered",
        "SideBetAccepted",
        "DiceThrown",
        "DiceThrown",
    ]
    assert [type(e).__name__ for e in record.groups[1].then] == [
        "DisputeOpened",
        "DisputeResolved",
        "BetAdjusted",
        "BetAdjusted",
    ]
    assert [type(e).__name__ for e in record.groups[3].then] == ["DisputeOpened"]
    assert disputes.answer(g.state, record).matches

    eight = g.throw_version(4, 4)
    what = disputes.answer(g.state, record, eight, 4, 5).what_if
    assert what is not None and what.refused is None and what.result == "chance"
    d2 = g.open(2, "bob", throw=eight, die1=4, die2=5)
    resolved = g.resolve(d2, "corrected", eight, 4, 5)
    assert [type(e).__name__ for e in resolved] == ["DisputeResolved", "BetAdjusted"]
    assert resolved[1].transfers == (ev.Transfer("cat", "bob", 25),)
    g.resolve(d0, "upheld")

    referee = Referee()
    for e in g.events:
        referee.check(e)
    referee.finish()
    assert referee.trusted == [] and referee.state == g.state


# -- who may hold disputes open: no claimant locks out another --------------------------


def layers_round(g: Game, layers: tuple[str, ...]) -> None:
    """A round in which each of `layers` lays 5 against the caster, who covers: a nick."""
    for player in layers:
        g.do(engine.lay, player, 5)
    g.do(engine.cover, 1000)
    g.do(engine.call_main, 7)
    g.do(engine.throw, 3, 4)


def test_a_claimant_holds_one_open_dispute_per_round():
    g = Game()
    nick_round(g)
    d = g.open(1, "bob")
    before = list(g.events)
    with pytest.raises(RuleBroken) as refused:
        g.open(1, "bob", claim="and again")
    assert refused.value.rule is Rule.ALREADY_DISPUTED and g.events == before
    assert refused.value.detail == (
        f"'bob' has dispute {d} over round 1 open already: one open dispute per claimant "
        "and round; the setter resolves it first"
    )
    # Others dispute the same round; a croupier of bob's name is another claimant.
    assert g.open(1, "ann") and g.open(1, SETTER, "setter") and g.open(1, "bob", "croupier")
    g.resolve(d, "upheld")
    assert g.open(1, "bob")  # once resolved, bob may dispute the round again


def test_one_claimant_cannot_close_the_table_to_disputes():
    g = Game()
    for _ in range(disputes.MAX_DISPUTES_PER_CLAIMANT + 1):
        layers_round(g, ("bob", "cat"))
    rounds = range(1, disputes.MAX_DISPUTES_PER_CLAIMANT + 1)
    for number in rounds:
        g.open(number, "bob")
    before = list(g.events)
    last = disputes.MAX_DISPUTES_PER_CLAIMANT + 1
    with pytest.raises(RuleBroken) as refused:
        g.open(last, "bob")
    assert refused.value.rule is Rule.TOO_MANY_OWN_DISPUTES and g.events == before
    assert refused.value.detail == (
        f"'bob' has {disputes.MAX_DISPUTES_PER_CLAIMANT} disputes open at this table, the "
        "most one claimant may: wait for the setter to resolve some"
    )
    assert (
        g.open(last, "cat") and g.open(last, SETTER, "setter") and g.open(last, "eve", "croupier")
    )


def test_players_together_leave_room_for_the_setter_and_croupiers():
    """Players' disputes fill the table to its players' share; the rest is the staff's."""
    per = disputes.MAX_DISPUTES_PER_CLAIMANT
    layers = tuple(f"p{n}" for n in range(disputes.PLAYERS_SHARE // per + 1))
    g = Game(players=("ann", "bob", "cat"))
    for player in layers:
        g.do(engine.seat, player)
    for _ in range(per):
        layers_round(g, layers)
    for player in layers[:-1]:
        for number in range(1, per + 1):
            g.open(number, player)
    assert len(g.state.disputes) == disputes.PLAYERS_SHARE
    before = list(g.events)
    with pytest.raises(RuleBroken) as refused:
        g.open(1, layers[-1])
    assert refused.value.rule is Rule.TOO_MANY_DISPUTES and g.events == before
    staff = [(SETTER, "setter")] + [(f"croupier{n}", "croupier") for n in range(per)]
    opened = 0
    for claimant, role in staff:
        for number in range(1, per + 1):
            if len(g.state.disputes) < disputes.MAX_OPEN_DISPUTES:
                g.open(number, claimant, role)
                opened += 1
    assert opened == disputes.MAX_OPEN_DISPUTES - disputes.PLAYERS_SHARE
    with pytest.raises(RuleBroken) as refused:
        g.open(per, "croupier99", "croupier")
    assert refused.value.rule is Rule.TOO_MANY_DISPUTES
    # The referee holds a recorded stream to the same rules.
    referee = Referee()
    for e in g.events:
        referee.check(e)
    referee.finish()
    assert referee.state == g.state


def test_the_referee_refuses_a_second_open_dispute_of_one_claimant():
    g = Game()
    nick_round(g)
    g.open(1, "bob")
    forged = ev.DisputeOpened(
        g.state.version + 1,
        f"d{g.state.version + 1}",
        1,
        "bob",
        "player",
        "again",
        None,
        None,
        None,
    )
    referee = Referee()
    for e in g.events:
        referee.check(e)
    with pytest.raises(Disagreement) as caught:
        referee.check(forged)
    assert "one open dispute per claimant and round" in caught.value.reason


def test_a_table_opened_under_the_first_caps_is_judged_by_them():
    """A table records the edition of the house caps it was opened under: one opened
    before claimants had caps of their own (Limits.caps 1) keeps the table's alone, so
    a log written then is judged by the rules it was played under, referee included."""
    g = Game(limits=ev.Limits(caps=1))
    nick_round(g)
    first = g.open(1, "bob")
    again = g.open(1, "bob", claim="and again")  # refused at a table opened now
    assert first != again and len(g.state.disputes) == 2
    referee = Referee()
    for recorded in g.events:
        referee.check(recorded)
