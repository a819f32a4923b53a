"""The table's amounts as people type and read them (ledger.console.amounts): typed in the
club's major units and read exactly, a refusal naming its rule, and every refusal of the
engine or the books that names an amount said in the club's money rather than its minor
units, from the amounts the refusal gives as data, while the API keeps its words."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
from marshmallow import ValidationError

import engine as hz
from engine.errors import Between, RuleBroken
from engine.events import Limits, Proposition, PropositionKind
from engine.rules import from_mapping
from engine.rulesets import BUILTIN
from ledger.books.projections import CreditInUse, Overdraft
from ledger.console import amounts
from ledger.house import House
from ledger.web.schemas import LaySchema, OpenTableSchema
from tests.engine.tablekit import Table

GBP, JPY = House(), House("JPY", 0)


@pytest.mark.parametrize(
    ("house", "typed", "minor"),
    [(GBP, "12.50", 1250), (GBP, "£1,000", 100_000), (GBP, "0.05", 5), (JPY, "500", 500)],
)
def test_an_amount_is_read_exactly_in_minor_units(house: House, typed: str, minor: int) -> None:
    assert amounts.read(house, {"amount": typed}, "amount") == minor


@pytest.mark.parametrize(
    ("house", "typed", "rule"),
    [
        (GBP, "12.505", "amount: 12.505 has 3 decimal places: GBP is counted to the penny"),
        (JPY, "5.5", "amount: 5.5 has 1 decimal place: JPY is counted in whole yen"),
        (GBP, "-5", "amount: an amount is written without a sign"),
        (GBP, "1e3", "amount: '1e3' is not an amount"),
    ],
)
def test_an_amount_the_club_cannot_read_is_refused_naming_its_rule(
    house: House, typed: str, rule: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        amounts.read(house, {"amount": typed}, "amount")
    assert amounts.refusal(house, refused.value, LaySchema()).startswith(rule)


def test_a_range_is_said_in_the_clubs_money_a_nested_limit_by_its_own_name() -> None:
    with pytest.raises(ValidationError) as refused:
        LaySchema().load({"player": "bob", "amount": 0})
    assert amounts.refusal(GBP, refused.value, LaySchema()) == (
        "amount: an amount from £0.01 to £10,000,000,000,000.00"
    )
    with pytest.raises(ValidationError) as refused:
        OpenTableSchema().load({"id": "t2", "ruleset": "english", "limits": {"min_stake": 0}})
    assert amounts.refusal(GBP, refused.value, OpenTableSchema()) == (
        "min_stake: an amount from £0.01 to £10,000,000,000,000.00"
    )
    # A limit the reader refused keeps the reader's words (the rule it broke).
    with pytest.raises(ValidationError) as refused:
        amounts.read(GBP, {"min_stake": "5p"}, "min_stake")
    assert amounts.refusal(GBP, refused.value, OpenTableSchema()).startswith(
        "min_stake: '5p' is not an amount"
    )


def _refused(t: Table, command: Callable[..., Any], *args: Any) -> RuleBroken:
    with pytest.raises(RuleBroken) as refused:
        command(t.state, *args)
    return refused.value


def _odds(rules: str = "english", limits: Limits = Limits(), stake: int = 100) -> Table:
    """ann the caster with `stake` against the setter, bob's 100 laid and covered, and a
    chance of 5 on a main of 7 (odds 3/2 on the chance)."""
    if rules != "english":
        data = BUILTIN["english"].to_mapping()
        data.update(name=rules, rounding=rules, odds_multiple=2)
    t = Table(from_mapping(data) if rules != "english" else rules, limits, ("ann", "bob"), True)
    t.do(hz.stake, stake)
    t.do(hz.call_main, 7)
    t.do(hz.throw, 1, 4)
    return t


def _limits(limits: Limits) -> Table:
    return Table("english", limits, ("ann", "bob"), True)


def _laid_beyond_funds() -> RuleBroken:
    t = _limits(Limits())
    t.do(hz.stake, 100)
    t.do(hz.lay, "bob", 450)
    return _refused(t, hz.cover, 400)


REFUSALS: list[tuple[Callable[[], RuleBroken], str, str]] = [
    (lambda: _refused(_limits(Limits(min_stake=100)), hz.lay, "bob", 50),
     "the stake of 50 is below the table minimum of 100",
     "the stake of £0.50 is below the table minimum of £1.00"),
    (lambda: _refused(_limits(Limits(max_stake=1000)), hz.stake, 5000),
     "the stake of 5000 is above the table maximum of 1000",
     "the stake of £50.00 is above the table maximum of £10.00"),
    (lambda: _refused(_limits(Limits(max_exposure=1000)), hz.stake, 1500),
     "the setter would stand to lose 1500, over its cap of 1000 on this table",
     "the setter would stand to lose £15.00, over its cap of £10.00 on this table"),
    (lambda: _refused(
        _limits(Limits(min_stake=100)), hz.offer_side_bet, "bob",
        Proposition(PropositionKind.NICK_FIRST_THROW), True, 100, 50),
     "the amount asked of 50 is below the table minimum of 100",
     "the amount asked of £0.50 is below the table minimum of £1.00"),
    (_laid_beyond_funds,
     "the caster has 400 free but the stakes to cover come to 450; cover fewer or refuse some",
     "the caster has £4.00 free but the stakes to cover come to £4.50; cover fewer or "
     "refuse some"),
    (lambda: _refused(_odds(), hz.lay_odds, "ann", "chance", 101),
     "odds are limited to 1 times the original stake of 100: 100 more may be laid",
     "odds are limited to 1 times the original stake of £1.00: £1.00 more may be laid"),
    (lambda: _refused(_odds(), hz.lay_odds, "ann", "chance", 25),
     "odds of 3/2 on a stake of 25 would pay 75/2 minor units; the nearest stakes that pay "
     "exactly are 24 and 26",
     "odds of 3/2 on a stake of £0.25 would pay £0.37 and 1/2 of a penny; the nearest "
     "stakes that pay exactly are £0.24 and £0.26"),
    (lambda: _refused(_odds(stake=25), hz.lay_odds, "ann", "chance", 25),
     "odds of 3/2 on a stake of 25 would pay 75/2 minor units; the nearest stake that pays "
     "exactly and may be laid (at most 25) is 24",
     "odds of 3/2 on a stake of £0.25 would pay £0.37 and 1/2 of a penny; the nearest "
     "stake that pays exactly and may be laid (at most £0.25) is £0.24"),
    (lambda: _refused(_odds("round-down"), hz.lay_odds, "ann", "main", 1),
     "odds of 2/3 on a stake of 1 would pay 2/3 of a minor unit, which rounds down to "
     "nothing; the smallest stake that pays is 2",
     "odds of 2/3 on a stake of £0.01 would pay 2/3 of a penny, which rounds down to "
     "nothing; the smallest stake that pays is £0.02"),
]  # fmt: skip
"""Each refusal of the engine that names an amount: what the API says (minor units, as
it always has) and what the page says."""


@pytest.mark.parametrize(("refused", "api", "page"), REFUSALS)
def test_every_engine_refusal_naming_an_amount_is_said_in_the_clubs_money(
    refused: Callable[[], RuleBroken], api: str, page: str
) -> None:
    broken = refused()
    assert broken.detail == str(broken) == api  # the API's words, unchanged
    assert amounts.rule_words(GBP, broken) == page


def test_a_refusal_naming_no_amount_is_said_as_the_engine_words_it() -> None:
    broken = _refused(_limits(Limits()), hz.lay, "zed", 100)
    assert amounts.rule_words(GBP, broken) == broken.detail == "'zed' is not seated at this table"


def test_a_payout_between_minor_units_is_said_by_the_clubs_smallest_coin() -> None:
    assert amounts.said(GBP, Between(Fraction(75, 2))) == "£0.37 and 1/2 of a penny"
    assert amounts.said(JPY, Between(Fraction(2, 3))) == "2/3 of a yen"
    assert amounts.said(House("SEK", 2), Between(Fraction(1, 2))) == "1/2 of SEK 0.01"


def test_the_books_refusals_are_said_in_the_clubs_money() -> None:
    assert amounts.refused_words(GBP, Overdraft("player:bob", -100, 0)) == (
        "not enough funds (overdraft): bob would stand at -£1.00, and they have no credit"
    )
    assert amounts.refused_words(GBP, Overdraft("player:bob", -600, 500)) == (
        "not enough funds (overdraft): bob would stand at -£6.00, below their credit limit of £5.00"
    )
    assert amounts.refused_words(GBP, CreditInUse("player:bob", 300, 100)) == (
        "player:bob has drawn £3.00 on its credit: its limit cannot go below £3.00 (asked "
        "for £1.00) until that is repaid"
    )
