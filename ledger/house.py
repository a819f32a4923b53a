"""The club's own way of writing money and time: its currency, how many minor units make
one major unit, and its time zone. Set once for the club (HAZARD_CURRENCY,
HAZARD_MINOR_UNITS, HAZARD_TIMEZONE, or the app's config of the same names), and used
by every page, CSV sheet and statement that a person reads.

The ledger itself never changes for it: balances, postings and exports stay integer
minor units and UTC times, so a file verifies the same whatever the club's settings.
This module only writes those for people: 12345 as "£123.45", and
2026-11-26T21:30:05.123456Z as "26 Nov 2026 21:30:05 GMT". Integer arithmetic
throughout, never a float.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ledger.store.db import BadSetting

CURRENCY_ENV = "HAZARD_CURRENCY"
MINOR_UNITS_ENV = "HAZARD_MINOR_UNITS"
TIMEZONE_ENV = "HAZARD_TIMEZONE"
FAIRNESS_LEVEL_ENV = "HAZARD_FAIRNESS_LEVEL"
COOLING_OFF_ENV = "HAZARD_LIMIT_COOLING_OFF"
REALITY_CHECK_ENV = "HAZARD_REALITY_CHECK"
MOST_HOURS = 24 * 366
"""The longest cooling-off a club may set, in hours: a year."""

# (symbol, major unit one/many, minor unit one/many, ISO 4217 minor units)
CURRENCIES: dict[str, tuple[str, str, str, str, str, int]] = {
    "GBP": ("£", "pound", "pounds", "penny", "pence", 2),
    "EUR": ("€", "euro", "euros", "cent", "cents", 2),
    "USD": ("$", "dollar", "dollars", "cent", "cents", 2),
    "JPY": ("¥", "yen", "yen", "", "", 0),
    "CHF": ("CHF ", "franc", "francs", "centime", "centimes", 2),
}
"""The currencies the club may name with a symbol and words; any other ISO 4217 code is
written as its code ("SEK 12.50"), and in words by its code too ("twelve point five
zero SEK")."""

_CODE = re.compile(r"[A-Z]{3}")


_AMOUNT = re.compile(r"([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.([0-9]+))?")
"""An amount as typed: digits (commas between threes, if any), and a point with digits."""
_DIGITS = 18
"""The most digits a typed amount's whole part may have: far past any amount the ledger
takes (the schemas stop at 10**15 minor units), and short of int()'s digit limit."""


def _places(n: int) -> str:
    return f"{n} decimal place" + ("" if n == 1 else "s")


class BadAmount(ValueError):
    """An amount typed that the club cannot read exactly, saying which rule it broke."""


class BadSettings(BadSetting):
    """A setting the club gave that cannot be used, naming it (`hazard serve` prints it
    and stops, as it does for the database's settings)."""


@dataclass(frozen=True)
class House:
    currency: str = "GBP"
    minor_units: int = 2
    zone: str = "UTC"
    fairness_level: Fraction = Fraction(99, 100)
    """The dice-fairness report's confidence level: a test is flagged when its p-value
    is below 1 - level (ledger.audit.fairness)."""
    cooling_off: timedelta = timedelta(hours=24)
    """How long a player's raised (or removed) limit waits before it binds."""
    reality_check: timedelta = timedelta(minutes=60)
    """How often a player's console page reminds them of their time and their net."""

    def __post_init__(self) -> None:
        if not 0 < self.fairness_level < 1:
            raise BadSettings(
                f"{FAIRNESS_LEVEL_ENV}: {self.fairness_level} is not a level between 0 and 1 "
                "such as 0.99"
            )
        if not _CODE.fullmatch(self.currency):
            raise BadSettings(
                f"{CURRENCY_ENV}: {self.currency!r} is not an ISO 4217 code such as GBP"
            )
        if not 0 <= self.minor_units <= 6:
            raise BadSettings(f"{MINOR_UNITS_ENV}: {self.minor_units} is not 0 to 6")
        try:
            ZoneInfo(self.zone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise BadSettings(
                f"{TIMEZONE_ENV}: {self.zone!r} is not a time zone such as Europe/London"
            ) from exc

    @property
    def fairness_alpha(self) -> float:
        """The p-value below which the dice-fairness report flags a test."""
        return float(1 - self.fairness_level)

    # -- money ----------------------------------------------------------------------

    @property
    def symbol(self) -> str:
        known = CURRENCIES.get(self.currency)
        return known[0] if known else f"{self.currency} "

    def figure(self, minor: int) -> str:
        """`minor` units in major units, without a symbol: 12345 -> "123.45", with a
        thousands separator: 123456789 -> "1,234,567.89"."""
        whole, part = divmod(abs(minor), 10**self.minor_units)
        text = f"{whole:,}" + (f".{part:0{self.minor_units}d}" if self.minor_units else "")
        return ("-" if minor < 0 else "") + text

    def money(self, minor: int, *, signed: bool = False) -> str:
        """`minor` units as the club writes money: "£123.45", "-£5.00"; with `signed`,
        a gain has its plus: "+£120.00"."""
        sign = "-" if minor < 0 else ("+" if signed and minor > 0 else "")
        return sign + self.symbol + self.figure(abs(minor))

    def words(self, minor: int) -> str:
        """`minor` units in words, as a confirmation reads them back:
        12345 -> "one hundred and twenty-three pounds and forty-five pence"."""
        known = CURRENCIES.get(self.currency)
        one, many, minor_one, minor_many = (
            known[1:5] if known else (self.currency, self.currency, "", "")
        )
        whole, part = divmod(abs(minor), 10**self.minor_units)
        said = [f"{number_words(whole)} {one if whole == 1 else many}"]
        if part:
            if minor_one and known and known[5] == self.minor_units:
                said.append(f"{number_words(part)} {minor_one if part == 1 else minor_many}")
            else:  # no name for the minor unit at these decimals: say the fraction
                said = [
                    f"{number_words(whole)} point "
                    + " ".join(_ONES[int(d)] for d in f"{part:0{self.minor_units}d}")
                    + f" {many}"
                ]
        return ("minus " if minor < 0 else "") + " and ".join(said)

    def parse(self, typed: str) -> int:
        """An amount a person typed in major units, as the exact minor units the ledger
        keeps: "12.50" -> 1250, "1,234.5" -> 123450, "£3" -> 300. ASCII digits, commas
        between threes, at most `minor_units` after the point, and no sign (what is
        paid in or out says the direction). BadAmount says which rule it broke. No
        float is near it: the digits are the integer."""
        text = typed.strip()
        for prefix in (self.symbol.strip(), self.currency):
            if text.startswith(prefix):
                text = text.removeprefix(prefix).strip()
                break
        example = "12.50" if self.minor_units else "12"
        if not text:
            raise BadAmount(f"type an amount, such as {example}")
        if text[0] in "+-":
            raise BadAmount(f"an amount is written without a sign, such as {example}")
        found = _AMOUNT.fullmatch(text)
        if found is None:
            raise BadAmount(f"{text!r} is not an amount: write it in digits, such as {example}")
        whole, part = found.group(1).replace(",", ""), found.group(2) or ""
        if len(part) > self.minor_units:
            raise BadAmount(f"{text} has {_places(len(part))}: {self._counted()}")
        if len(whole) > _DIGITS:
            raise BadAmount(f"{text[:20]}… is too large an amount")
        return int(whole + part.ljust(self.minor_units, "0"))  # the digits are the minor units

    def _counted(self) -> str:
        """How finely the club counts its currency, as a refusal of too many decimals says."""
        known = CURRENCIES.get(self.currency)
        if self.minor_units == 0:
            many = known[2] if known else self.currency
            return f"{self.currency} is counted in whole {many}, no decimal places"
        if known and known[3] and known[5] == self.minor_units:
            unit = f"the {known[3]}"
        else:
            unit = f"1/{10**self.minor_units}"
        return f"{self.currency} is counted to {unit}, at most {_places(self.minor_units)}"

    # -- time -----------------------------------------------------------------------

    def when(self, recorded_at: str) -> str:
        """A time as the ledger records it (UTC, to the microsecond) in the club's zone,
        to the second: "26 Nov 2026 21:30:05 GMT"."""
        at = datetime.strptime(recorded_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        local = at.astimezone(ZoneInfo(self.zone))
        return local.strftime("%d %b %Y %H:%M:%S ") + (local.tzname() or self.zone)

    def day(self, recorded_at: str) -> str:
        """The club's calendar day a time falls on, as YYYY-MM-DD."""
        at = datetime.strptime(recorded_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        return at.astimezone(ZoneInfo(self.zone)).strftime("%Y-%m-%d")


def from_settings(config: Mapping[str, object] | None = None) -> House:
    """The club's settings: from `config` (the app's), else the environment, else the
    defaults (GBP, its 2 minor units, UTC). BadSettings names what is wrong."""
    config = config or {}

    def setting(name: str) -> str | None:
        value = config.get(name)
        return str(value) if value not in (None, "") else (os.environ.get(name) or None)

    currency = (setting(CURRENCY_ENV) or "GBP").upper()
    units = setting(MINOR_UNITS_ENV)
    if units is None:
        known = CURRENCIES.get(currency)
        minor_units = known[5] if known else 2
    elif units.isascii() and units.isdigit():
        minor_units = int(units)
    else:
        raise BadSettings(f"{MINOR_UNITS_ENV}: {units!r} is not a whole number 0 to 6")
    return House(
        currency,
        minor_units,
        setting(TIMEZONE_ENV) or "UTC",
        _level(setting(FAIRNESS_LEVEL_ENV)),
        timedelta(hours=_whole(COOLING_OFF_ENV, setting(COOLING_OFF_ENV), 24, 0, MOST_HOURS)),
        timedelta(minutes=_whole(REALITY_CHECK_ENV, setting(REALITY_CHECK_ENV), 60, 1, 24 * 60)),
    )


def _whole(name: str, typed: str | None, default: int, least: int, most: int) -> int:
    """A setting that is a whole number from `least` to `most` (hours, minutes)."""
    if typed is None:
        return default
    text = typed.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 6 and least <= int(text) <= most):
        raise BadSettings(f"{name}: {typed!r} is not a whole number from {least} to {most}")
    return int(text)


def _level(typed: str | None) -> Fraction:
    """HAZARD_FAIRNESS_LEVEL as typed, a decimal such as 0.99, exactly."""
    if typed is None:
        return Fraction(99, 100)
    try:
        level = Fraction(typed.strip())
    except (ValueError, ZeroDivisionError) as exc:
        raise BadSettings(
            f"{FAIRNESS_LEVEL_ENV}: {typed!r} is not a level between 0 and 1 such as 0.99"
        ) from exc
    if not 0 < level < 1:
        raise BadSettings(
            f"{FAIRNESS_LEVEL_ENV}: {typed!r} is not a level between 0 and 1 such as 0.99"
        )
    return level


_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = [(10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand")]


def number_words(n: int) -> str:
    """A whole number 0 <= n < 10**15 in British English words:
    1234 -> "one thousand two hundred and thirty-four"."""
    if n < 0:
        raise ValueError("number_words takes 0 or more")
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_ONES[hundreds]} hundred" + (f" and {number_words(rest)}" if rest else "")
    for scale, name in _SCALES:
        if n >= scale:
            top, rest = divmod(n, scale)
            head = f"{number_words(top)} {name}"
            if not rest:
                return head
            return head + (" and " if rest < 100 else " ") + number_words(rest)
    raise AssertionError("unreachable")  # pragma: no cover
