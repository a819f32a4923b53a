"""Money typed by a person (ledger.house.House.parse): an amount in the club's major
units, read exactly into the integer minor units the ledger keeps, or refused saying
which rule it broke. The office's forms read every amount this way."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.house import BadAmount, House


@pytest.mark.parametrize(
    ("typed", "minor"),
    [
        ("12.50", 1250),
        ("12.5", 1250),
        ("12", 1200),
        ("0.01", 1),
        (" 7.05 ", 705),
        ("1,234.56", 123456),
        ("£12.50", 1250),
        ("£ 3", 300),
        ("GBP 3", 300),
        ("0", 0),
    ],
)
def test_an_amount_typed_in_pounds_is_read_exactly_in_pence(typed: str, minor: int) -> None:
    assert House().parse(typed) == minor


def test_other_currencies_and_minor_units() -> None:
    assert House("JPY", 0).parse("1,500") == 1500
    assert House("JPY", 0).parse("¥1500") == 1500
    assert House("GBP", 3).parse("1.005") == 1005
    assert House("SEK", 2).parse("SEK 12.50") == 1250


@pytest.mark.parametrize(
    ("house", "typed", "rule"),
    [
        (House(), "12.505", "at most 2 decimal places"),
        (House(), "0.001", "at most 2 decimal places"),
        (House("JPY", 0), "12.5", "no decimal places"),
        (House(), "", "type an amount"),
        (House(), "   ", "type an amount"),
        (House(), "-5", "without a sign"),
        (House(), "+5", "without a sign"),
        (House(), "--5", "without a sign"),
        (House(), "ten", "digits"),
        (House(), "1e3", "digits"),
        (House(), "²", "digits"),
        (House(), "١٢", "digits"),
        (House(), "1.2.3", "digits"),
        (House(), ".5", "digits"),
        (House(), "5.", "digits"),
        (House(), "1,2345", "digits"),
        (House(), "9" * 5_000, "too large"),
        (House(), "$5", "digits"),
    ],
)
def test_an_amount_that_is_not_one_is_refused_naming_the_rule(
    house: House, typed: str, rule: str
) -> None:
    with pytest.raises(BadAmount, match=rule):
        house.parse(typed)


def test_the_refusal_of_too_many_decimals_names_the_currency_and_its_minor_unit() -> None:
    with pytest.raises(BadAmount) as refused:
        House().parse("12.505")
    assert str(refused.value) == (
        "12.505 has 3 decimal places: GBP is counted to the penny, at most 2 decimal places"
    )


@given(st.integers(0, 10**15), st.integers(0, 6))
def test_what_the_page_shows_reads_back_as_the_amount(minor: int, units: int) -> None:
    """A figure the office shows (House.figure), typed back, is the same amount."""
    house = House("GBP", units)
    assert house.parse(house.figure(minor)) == minor
    assert house.parse(house.money(minor)) == minor
