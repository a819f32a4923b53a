"""The club's settings for players' limits: the cooling-off before a raised limit binds
(HAZARD_LIMIT_COOLING_OFF, hours) and the reality check's interval
(HAZARD_REALITY_CHECK, minutes); a value that cannot be used is refused, naming it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ledger.house import BadSettings, from_settings


def test_the_defaults_are_a_day_and_an_hour() -> None:
    house = from_settings({})
    assert (house.cooling_off, house.reality_check) == (timedelta(hours=24), timedelta(hours=1))


def test_the_club_sets_them() -> None:
    house = from_settings({"HAZARD_LIMIT_COOLING_OFF": "48", "HAZARD_REALITY_CHECK": "20"})
    assert (house.cooling_off, house.reality_check) == (timedelta(hours=48), timedelta(minutes=20))
    assert from_settings({"HAZARD_LIMIT_COOLING_OFF": "0"}).cooling_off == timedelta(0)


@pytest.mark.parametrize(
    ("name", "typed"),
    [("HAZARD_LIMIT_COOLING_OFF", "-1"), ("HAZARD_LIMIT_COOLING_OFF", "1.5"),
     ("HAZARD_LIMIT_COOLING_OFF", "99999"), ("HAZARD_LIMIT_COOLING_OFF", "9" * 5000),
     ("HAZARD_REALITY_CHECK", "0"), ("HAZARD_REALITY_CHECK", "a day")],
    ids=["negative", "a fraction", "past a year", "5,000 digits", "never", "words"],
)  # fmt: skip
def test_a_value_that_cannot_be_used_is_refused_naming_it(name: str, typed: str) -> None:
    with pytest.raises(BadSettings, match=name):
        from_settings({name: typed})
