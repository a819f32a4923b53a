"""Words that keep their amounts as data (engine.phrase): the text is the engine's, in
minor units, as the API says it; `said(money)` writes the same words with the amounts in
other money, and a phrase and a refusal convert both ways keeping them. A property over
random evenings: a what-if's words, and the setter's refusal of the correction, say the
same amounts in any money."""

from __future__ import annotations

import random
from fractions import Fraction

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import disputes
from engine import events as ev
from engine.errors import Amount, Between, Rule, RuleBroken, minor_units
from engine.phrase import Phrase, of_refusal
from engine.rulesets import BUILTIN
from engine.state import SETTER
from engine.words import command_words, describe
from tests.engine.disputekit import Game, play_randomly, tampered_nick


def marked(amount: Amount) -> str:
    """Money unlike minor units, so that an amount written either way tells which."""
    return f"<{amount}>"


def test_a_phrase_is_its_words_in_minor_units_and_keeps_its_amounts() -> None:
    paid = Phrase("ann is paid ", 40, ", ", Phrase("bob ", Between(Fraction(75, 2))))
    assert paid == "ann is paid 40, bob 75/2 minor units"
    assert paid.parts == ("ann is paid ", 40, ", bob ", Between(Fraction(75, 2)))
    assert paid.said() == paid
    assert paid.said(marked) == "ann is paid <40>, bob <75/2 minor units>"
    assert f"{paid}!" == "ann is paid 40, bob 75/2 minor units!"  # a str to every reader


def test_a_breakage_is_the_bare_fraction_of_a_minor_unit() -> None:
    odds = ev.OddsLaid(
        version=9,
        bet_id="b9",
        bettor="ann",
        on="chance",
        stake=25,
        payout=37,
        breakage=Fraction(1, 2),
    )
    assert describe(odds) == "OddsLaid b9: ann lays 25 on the chance, payout 37 with breakage 1/2"
    assert describe(odds).said(marked) == (
        "OddsLaid b9: ann lays <25> on the chance, payout <37> with breakage <1/2>"
    )
    whole = ev.OddsLaid(
        version=9, bet_id="b9", bettor="ann", on="chance", stake=24, payout=36, breakage=Fraction(0)
    )
    assert describe(whole).endswith("payout 36 with breakage 0")


def test_a_refusal_and_a_phrase_convert_keeping_their_amounts() -> None:
    broken = RuleBroken(
        Rule.PAYOUT_NOT_PAYABLE,
        "a stake of {stake} would pay {payout}; {{braces}} stay",
        {"stake": 25, "payout": Between(Fraction(75, 2))},
    )
    phrase = of_refusal(broken)
    assert phrase == broken.detail == "a stake of 25 would pay 75/2 minor units; {braces} stay"
    assert phrase.said(marked) == broken.said(marked)
    again = Phrase("{seed} ", phrase).refusal(Rule.CORRECTION_REACHES_BEYOND_ROUND)
    assert again.detail == "{seed} a stake of 25 would pay 75/2 minor units; {braces} stay"
    assert (
        again.said(marked) == "{seed} a stake of <25> would pay <75/2 minor units>; {braces} stay"
    )
    plain = RuleBroken(Rule.WRONG_PHASE, "no {amounts} here")
    assert of_refusal(plain) == "no {amounts} here" and of_refusal(plain).parts == (plain.detail,)


def test_a_command_in_words_names_its_amounts() -> None:
    staked = ev.CasterStaked(version=7, bet_id="b7", caster="ann", amount=100)
    words = command_words(staked, Game().state)
    assert words == "the caster's stake of 100 at version 7"
    assert words.said(marked) == "the caster's stake of <100> at version 7"


def test_where_a_round_stops_agreeing_with_the_engine_names_its_amounts() -> None:
    """The referee's words for a recorded round that the engine pays otherwise (the
    answer's `mismatch`), and the refusal of a correction to it, keep their amounts."""
    g, record = tampered_nick()
    assert g.state.rules is not None and g.state.rules.name == "english"
    settled = (
        "BetSettled b9 pays player ann {}, but the throw 3+4 at version 13 under english "
        "rules decides b9 for player ann: ann is paid {}"
    )
    assert record.mismatch == "at version 14: " + settled.format(21, 20)
    assert record.mismatch is not None
    assert record.mismatch.said(marked) == "at version 14: " + settled.format("<21>", "<20>")
    what = disputes.answer(g.state, record, None, 1, 1).what_if
    assert what is not None and what.refused is not None
    assert what.refused.said(marked) == (
        "the round's recorded events do not agree with the engine (at version 14: "
        + settled.format("<21>", "<20>")
        + "): it cannot be derived again; void the round instead"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), rounds=st.integers(2, 6), data=st.data())
def test_a_what_ifs_words_say_the_same_amounts_in_any_money(seed, rounds, data):  # type: ignore[no-untyped-def]
    """The what-if's words (for every pair of dice at each throw) are its text in minor
    units, every amount of them kept as data (said in other money, the text comes back
    when each amount is said in minor units again), and the setter's refusal of the
    correction says the answer's words, amounts and all, in whatever money it is said
    (test_disputes checks the refusal's rule and words for any correction)."""
    g = Game(rules=data.draw(st.sampled_from(sorted(BUILTIN))))
    play_randomly(g, random.Random(seed), rounds)
    naming = []  # the corrections the answer refuses in words that name amounts
    for number in range(1, g.state.round):
        record = g.record(number)
        for thrown in record.throws:
            for dice in ((d1, d2) for d1 in range(1, 7) for d2 in range(1, 7)):
                what = disputes.answer(g.state, record, thrown.version, *dice).what_if
                assert what is not None
                for words in (what.stopped, what.refused):
                    if words is None:
                        continue
                    assert words.said() == words == words.said(minor_units)
                    amounts = [p for p in words.parts if not isinstance(p, str)]
                    unmarked = words.said(marked)
                    for amount in amounts:
                        unmarked = unmarked.replace(f"<{amount}>", str(amount), 1)
                    assert unmarked == words
                    if amounts and words is what.refused and not record.open:
                        naming.append((number, thrown.version, *dice))
    event(f"refusals naming amounts: {'some' if naming else 'none'}")
    if not naming:
        return
    number, throw, *dice = data.draw(st.sampled_from(naming))
    what = disputes.answer(g.state, g.record(number), throw, *dice).what_if
    assert what is not None
    d = g.open(number, SETTER, "setter")
    try:
        g.resolve(d, "corrected", throw, *dice)
    except RuleBroken as refused:
        assert what.refused is not None
        assert refused.said(marked) == what.refused.said(marked)
        event("the setter refused, naming amounts" if refused.amounts else "the setter refused")
    else:
        assert what.refused is None
