"""Rule sets: the game's rules as validated data.

The rule texts disagree (docs/rules.md), so nothing about them is coded
as a branch: a `RuleSet` says, for each main, which first-throw totals nick and which
throw out, how the main is set, when the dice pass, what a caster who cannot cover
does, how far odds go and how odds that fall between minor units are paid.
"""

from __future__ import annotations

import enum
import json
import tomllib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.dice import MAINS, TOTALS
from engine.errors import RuleSetError


class Outcome(enum.IntEnum):
    """What the first throw after the main does."""

    CHANCE = 0
    """Neither nick nor out: the total becomes the chance."""
    NICK = 1
    """The caster throws in and wins the round."""
    OUT = 2
    """The caster throws out and loses the round."""


class MainMethod(enum.Enum):
    """How the main is set."""

    CALLED = "called"
    """The caster calls a main of 5 to 9 (English rules)."""
    ROLLED = "rolled"
    """A preliminary roll, re-tossed until it shows 5 to 9 (French rules)."""
    FIRST_ROLL = "first-roll"
    """The first roll is the main; a roll outside 5 to 9 loses the round."""


class CoverPolicy(enum.Enum):
    """What happens when the caster cannot match the stakes laid against them."""

    REFUSE = "refuse"
    """The caster covers what they can and refuses the rest."""
    FORFEIT = "forfeit"
    """Hard-core play: a caster who cannot cover every stake forfeits the dice."""


class Rounding(enum.Enum):
    """How odds payouts that fall between minor units are handled."""

    REJECT = "reject"
    """Refuse the stake and name the nearest stakes that pay exactly."""
    ROUND_DOWN = "round-down"
    """Pay the payout rounded down and record the breakage in the settlement that pays
    it; refuse a stake whose payout would round down to nothing."""


@dataclass(frozen=True)
class DicePass:
    """When the caster must, or may, hand the dice to the left."""

    after_losses: int | None = 3
    """Pass after this many consecutive losses (None: never for losing)."""
    after_wins: int | None = None
    """Pass after this many consecutive wins (None: never for winning)."""
    voluntary: bool = False
    """After a win the caster may choose to pass the dice."""


@dataclass(frozen=True, eq=True)
class RuleSet:
    name: str
    description: str
    nicks: Mapping[int, frozenset[int]]
    outs: Mapping[int, frozenset[int]]
    main_method: MainMethod = MainMethod.CALLED
    dice_pass: DicePass = DicePass()
    cover: CoverPolicy = CoverPolicy.REFUSE
    odds_multiple: int = 1
    """Odds on a round are at most this many times the bettor's original stake."""
    rounding: Rounding = Rounding.REJECT
    first_throw: Mapping[int, tuple[Outcome, ...]] = field(init=False, repr=False, compare=False)
    """first_throw[main][total]: the outcome table, precomputed for the fold."""

    def __post_init__(self) -> None:
        _check_table(self.nicks, self.outs)
        if type(self.odds_multiple) is not int or self.odds_multiple < 0:
            raise RuleSetError("odds_multiple", "must be a whole number, 0 or more")
        for key in ("after_losses", "after_wins"):
            value = getattr(self.dice_pass, key)
            if value is not None and (type(value) is not int or value < 1):
                raise RuleSetError(f"dice_pass.{key}", "must be a whole number, 1 or more")
        table = {
            main: tuple(
                Outcome.NICK
                if t in self.nicks[main]
                else Outcome.OUT
                if t in self.outs[main]
                else Outcome.CHANCE
                for t in range(13)
            )
            for main in MAINS
        }
        object.__setattr__(self, "first_throw", table)

    def outcome(self, main: int, total: int) -> Outcome:
        """The outcome of the first throw `total` after `main` is set."""
        return self.first_throw[main][total]

    def to_mapping(self) -> dict[str, Any]:
        """The rule set as plain data, the shape `from_mapping` reads."""
        return {
            "name": self.name,
            "description": self.description,
            "main": self.main_method.value,
            "cover": self.cover.value,
            "rounding": self.rounding.value,
            "odds_multiple": self.odds_multiple,
            "dice_pass": {
                "after_losses": self.dice_pass.after_losses or 0,
                "after_wins": self.dice_pass.after_wins or 0,
                "voluntary": self.dice_pass.voluntary,
            },
            "table": {
                str(m): {"nicks": sorted(self.nicks[m]), "outs": sorted(self.outs[m])}
                for m in MAINS
            },
        }


def _check_table(nicks: Mapping[int, frozenset[int]], outs: Mapping[int, frozenset[int]]) -> None:
    for main in sorted(set(nicks) | set(outs)):
        if main not in MAINS:
            raise RuleSetError(f"table.{main}", "a main is 5, 6, 7, 8 or 9")
    for main in MAINS:
        if main not in nicks or main not in outs:
            raise RuleSetError(f"table.{main}", "every main 5..9 needs its nicks and outs")
        for kind, totals in (("nicks", nicks[main]), ("outs", outs[main])):
            for total in sorted(totals):
                if total not in TOTALS:
                    raise RuleSetError(f"table.{main}.{kind}", f"total {total} is outside 2..12")
        both = nicks[main] & outs[main]
        if both:
            raise RuleSetError(
                f"table.{main}",
                f"total {min(both)} both nicks and throws out",
            )
        # If the main were a chance, the chance phase could not tell a win from a loss.
        if main not in nicks[main] | outs[main]:
            raise RuleSetError(
                f"table.{main}.nicks", f"the main {main} itself must nick or throw out"
            )


E = TypeVar("E", bound=enum.Enum)

_KEYS = {"name", "description", "main", "cover", "rounding", "odds_multiple", "dice_pass", "table"}
_PASS_KEYS = {"after_losses", "after_wins", "voluntary"}


def from_mapping(data: Mapping[str, Any]) -> RuleSet:
    """Build a rule set from plain data (parsed JSON or TOML), naming any bad field."""
    if not isinstance(data, Mapping):
        raise RuleSetError("(top)", "a rule set is a table of fields")
    for key in data:
        if key not in _KEYS:
            raise RuleSetError(str(key), "unknown field")
    name = _string(data, "name", required=True)
    table = data.get("table")
    if not isinstance(table, Mapping):
        raise RuleSetError("table", "required: a table keyed by main, 5 to 9")
    nicks: dict[int, frozenset[int]] = {}
    outs: dict[int, frozenset[int]] = {}
    given_as: dict[int, object] = {}
    for key, row in table.items():
        main = _int_key(key, "table")
        if main not in MAINS:
            raise RuleSetError(f"table.{key}", "a main is 5, 6, 7, 8 or 9")
        # "5" and "05" are different keys to JSON and TOML but the same main: one row
        # would silently replace the other.
        if main in given_as:
            raise RuleSetError(
                f"table.{key}", f"main {main} is given twice (also as table.{given_as[main]})"
            )
        given_as[main] = key
        if not isinstance(row, Mapping):
            raise RuleSetError(f"table.{key}", "needs nicks and outs")
        for sub in row:
            if sub not in ("nicks", "outs"):
                raise RuleSetError(f"table.{key}.{sub}", "unknown field")
        nicks[main] = _totals(row, f"table.{key}", "nicks")
        outs[main] = _totals(row, f"table.{key}", "outs")
    dice_pass = data.get("dice_pass", {})
    if not isinstance(dice_pass, Mapping):
        raise RuleSetError("dice_pass", "must be a table")
    for key in dice_pass:
        if key not in _PASS_KEYS:
            raise RuleSetError(f"dice_pass.{key}", "unknown field")
    voluntary = dice_pass.get("voluntary", False)
    if type(voluntary) is not bool:
        raise RuleSetError("dice_pass.voluntary", "must be true or false")
    odds_multiple = data.get("odds_multiple", 1)
    if type(odds_multiple) is not int:
        raise RuleSetError("odds_multiple", "must be a whole number, 0 or more")
    return RuleSet(
        name=name,
        description=_string(data, "description", required=False),
        nicks=nicks,
        outs=outs,
        main_method=_choice(data, "main", MainMethod, MainMethod.CALLED),
        dice_pass=DicePass(
            after_losses=_count(dice_pass, "after_losses", 3),
            after_wins=_count(dice_pass, "after_wins", None),
            voluntary=voluntary,
        ),
        cover=_choice(data, "cover", CoverPolicy, CoverPolicy.REFUSE),
        odds_multiple=odds_multiple,
        rounding=_choice(data, "rounding", Rounding, Rounding.REJECT),
    )


def loads(text: str, fmt: str) -> RuleSet:
    """Parse a rule set from JSON (`fmt="json"`) or TOML (`fmt="toml"`) text."""
    try:
        if fmt == "json":
            data = json.loads(text, object_pairs_hook=_JsonObject.of)
        else:
            data = tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise RuleSetError("(file)", f"not valid {fmt.upper()}: {exc}") from None
    _refuse_repeated_keys(data)
    return from_mapping(data)


class _JsonObject(dict[str, Any]):
    """A parsed JSON object that remembers a key it was given twice: JSON allows it and
    keeps the last, so a file could say one thing and mean another. (TOML refuses.)"""

    repeated: str | None = None

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _JsonObject:
        obj = cls(pairs)
        if len(obj) < len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    obj.repeated = key
                    break
                seen.add(key)
        return obj


def _refuse_repeated_keys(data: object) -> None:
    """Name the first key a JSON object was given twice, at any depth (walked without
    recursion: the parser accepts nesting deeper than Python's call stack)."""
    todo: deque[tuple[object, str]] = deque([(data, "")])
    while todo:
        value, where = todo.popleft()
        if isinstance(value, _JsonObject):
            if value.repeated is not None:
                raise RuleSetError(f"{where}{value.repeated}", "is given twice")
            todo.extend((item, f"{where}{key}.") for key, item in value.items())
        elif isinstance(value, list):
            todo.extend((item, where) for item in value)


def _string(data: Mapping[str, Any], key: str, *, required: bool) -> str:
    value = data.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise RuleSetError(key, "must be a non-empty string" if required else "must be a string")
    return value


def _int_key(key: object, where: str) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and key.strip().lstrip("-").isdigit():
        return int(key)
    raise RuleSetError(f"{where}.{key}", "a main is a whole number")


def _totals(row: Mapping[str, Any], where: str, key: str) -> frozenset[int]:
    values = row.get(key)
    if not isinstance(values, list) or any(type(v) is not int for v in values):
        raise RuleSetError(f"{where}.{key}", "must be a list of totals")
    for v in values:
        if v not in TOTALS:
            raise RuleSetError(f"{where}.{key}", f"total {v} is outside 2..12")
    return frozenset(values)


def _count(data: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None or (value == 0 and type(value) is int):
        return None
    if type(value) is not int or value < 0:
        raise RuleSetError(f"dice_pass.{key}", "must be a whole number (0 for never)")
    return value


def _choice(data: Mapping[str, Any], key: str, kind: type[E], default: E) -> E:
    value = data.get(key, default.value)
    for member in kind:
        if member.value == value:
            return member
    allowed = ", ".join(str(m.value) for m in kind)
    raise RuleSetError(key, f"must be one of: {allowed}")
