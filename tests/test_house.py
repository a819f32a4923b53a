"""The club's way of writing money and time (ledger.house): exact, in its currency and
zone, and refusing settings it cannot use, by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ledger.cli import main
from ledger.house import BadSettings, House, from_settings, number_words


def test_money_in_the_club_s_currency() -> None:
    gbp = House()
    assert gbp.money(12345) == "£123.45"
    assert gbp.money(-500) == "-£5.00"
    assert gbp.money(120, signed=True) == "+£1.20"
    assert gbp.money(0, signed=True) == "£0.00"
    assert gbp.money(123456789) == "£1,234,567.89"
    assert House("JPY", 0).money(1500) == "¥1,500"
    assert House("SEK", 2).money(1250) == "SEK 12.50"
    assert House("GBP", 0).money(7) == "£7"


def test_money_in_words() -> None:
    gbp = House()
    assert gbp.words(12345) == "one hundred and twenty-three pounds and forty-five pence"
    assert gbp.words(100) == "one pound"
    assert gbp.words(101) == "one pound and one penny"
    assert gbp.words(150_000) == "one thousand five hundred pounds"
    assert House("EUR").words(-250) == "minus two euros and fifty cents"
    assert House("GBP", 3).words(1005) == "one point zero zero five pounds"
    assert House("SEK").words(1250) == "twelve point five zero SEK"


def test_number_words() -> None:
    assert number_words(0) == "zero"
    assert number_words(15) == "fifteen"
    assert number_words(40) == "forty"
    assert number_words(1001) == "one thousand and one"
    assert number_words(2_000_305) == "two million three hundred and five"


@given(st.integers(-(10**15), 10**15), st.integers(0, 6))
def test_a_figure_is_the_amount_exactly(minor: int, units: int) -> None:
    """What the page shows reads back to the integer stored, at any minor units."""
    shown = House("GBP", units).figure(minor).replace(",", "")
    whole, _, part = shown.lstrip("-").partition(".")
    back = int(whole) * 10**units + int(part or 0)
    assert (-back if shown.startswith("-") else back) == minor


def test_times_in_the_club_s_zone_to_the_second() -> None:
    assert House().when("2026-11-26T21:30:05.999999Z") == "26 Nov 2026 21:30:05 UTC"
    london = House(zone="Europe/London")
    assert london.when("2026-07-01T21:30:05.000000Z") == "01 Jul 2026 22:30:05 BST"
    assert london.day("2026-07-01T23:30:00.000000Z") == "2026-07-02"


def test_settings_from_config_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert from_settings({}) == House("GBP", 2, "UTC")
    monkeypatch.setenv("HAZARD_CURRENCY", "jpy")
    monkeypatch.setenv("HAZARD_TIMEZONE", "Asia/Tokyo")
    assert from_settings({}) == House("JPY", 0, "Asia/Tokyo")
    assert from_settings({"HAZARD_CURRENCY": "EUR", "HAZARD_MINOR_UNITS": "3"}).minor_units == 3


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"HAZARD_CURRENCY": "pounds"}, "HAZARD_CURRENCY"),
        ({"HAZARD_MINOR_UNITS": "two"}, "HAZARD_MINOR_UNITS"),
        ({"HAZARD_MINOR_UNITS": "9"}, "HAZARD_MINOR_UNITS"),
        ({"HAZARD_TIMEZONE": "Mars/Olympus"}, "HAZARD_TIMEZONE"),
        ({"HAZARD_TIMEZONE": "../../etc/passwd"}, "HAZARD_TIMEZONE"),
    ],
)
def test_settings_it_cannot_use_are_refused_by_name(config: dict[str, str], named: str) -> None:
    with pytest.raises(BadSettings, match=named):
        from_settings(config)


def test_serve_stops_at_once_on_a_setting_it_cannot_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HAZARD_TIMEZONE", "Mars/Olympus")
    found = CliRunner().invoke(main, ["serve", "--port", "0"])
    assert found.exit_code == 1
    assert "HAZARD_TIMEZONE: 'Mars/Olympus' is not a time zone" in found.output
    assert not (tmp_path / "hazard.sqlite3").exists()  # nothing was made


def test_the_fairness_level_is_the_club_s(monkeypatch: pytest.MonkeyPatch) -> None:
    assert from_settings({}).fairness_alpha == 0.01  # 99% by default
    assert from_settings({"HAZARD_FAIRNESS_LEVEL": "0.95"}).fairness_alpha == 0.05
    monkeypatch.setenv("HAZARD_FAIRNESS_LEVEL", "0.999")
    assert from_settings({}).fairness_alpha == pytest.approx(0.001)


@pytest.mark.parametrize("level", ["99", "1", "0", "-0.5", "ninety-nine", "nan", "0.99%"])
def test_a_fairness_level_it_cannot_use_is_refused_by_name(level: str) -> None:
    with pytest.raises(BadSettings, match="HAZARD_FAIRNESS_LEVEL"):
        from_settings({"HAZARD_FAIRNESS_LEVEL": level})
