"""The table's amounts as people type and read them (ledger.console.amounts): typed in the
club's major units and read exactly, a refusal naming its rule, and the engine's refusals
of a table's limits said in the club's money rather than its minor units."""

from __future__ import annotations

import pytest
from marshmallow import ValidationError

from ledger.console import amounts
from ledger.house import House
from ledger.web.schemas import LaySchema, OpenTableSchema

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


@pytest.mark.parametrize(
    ("code", "engine", "page"),
    [
        ("stake-below-minimum", "the lay of 50 is below the table minimum of 100",
         "the lay of £0.50 is below the table minimum of £1.00"),
        ("stake-above-maximum", "the stake of 5000 is above the table maximum of 1000",
         "the stake of £50.00 is above the table maximum of £10.00"),
        ("exposure-limit",
         "the setter would stand to lose 1500, over its cap of 1000 on this table",
         "the setter would stand to lose £15.00, over its cap of £10.00 on this table"),
        ("not-seated", "'zed' is not seated at this table", "'zed' is not seated at this table"),
    ],
)  # fmt: skip
def test_the_engines_limits_are_said_in_the_clubs_money(code: str, engine: str, page: str) -> None:
    assert amounts.rule_words(GBP, code, engine) == page
