"""What every command shares: drafting numbered events and the common checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from engine import events as ev
from engine.errors import Rule, RuleBroken
from engine.fold import Folding
from engine.rules import RuleSet
from engine.state import SETTER, Phase, TableState

E = TypeVar("E")


class Drafted(list[ev.Event]):
    """A command's events, as it returns them. `folded` is (n, the state its first n
    events fold to) once the command has folded them for its own use: the referee
    folds only the rest instead of all of them again, and on the same copy of the
    table (`folding`, whose state is that one)."""

    __slots__ = ("folded", "folding")

    def __init__(self) -> None:
        super().__init__()
        self.folded: tuple[int, TableState] | None = None
        self.folding: Folding | None = None


class Draft:
    """Events a command is about to return, numbered on from the state's version."""

    def __init__(self, state: TableState, folding: Folding | None = None) -> None:
        self.state = state
        self.events: Drafted = Drafted()
        self._folding = folding
        """A fold kept open on `state` to fold the draft on (the referee's), if any."""

    def add(self, kind: Callable[..., E], **fields: Any) -> E:
        event = kind(version=self.state.version + len(self.events) + 1, **fields)
        self.events.append(event)  # type: ignore[arg-type]
        return event

    def next_bet_id(self) -> str:
        """Bet ids come from the version of the event that places the bet: unique
        within the table and the same on every replay."""
        return f"b{self.state.version + len(self.events) + 1}"

    def folded(self) -> TableState:
        """The state as the drafted events leave it."""
        folding, self._folding = self._folding, None
        if folding is None or folding.state is not self.state:
            folding = Folding(self.state)
        state = folding.fold(self.events)
        self.events.folded = (len(self.events), state)
        self.events.folding = folding
        return state


def open_rules(state: TableState) -> RuleSet:
    """The table's rules, refusing a table that is not open."""
    if state.phase is Phase.CLOSED:
        raise RuleBroken(Rule.TABLE_CLOSED, "the table is closed")
    if state.rules is None:
        raise RuleBroken(Rule.WRONG_PHASE, "no table has been opened")
    return state.rules


def require_caster(state: TableState) -> str:
    open_rules(state)
    if state.caster is None:
        raise RuleBroken(Rule.WRONG_PHASE, "no caster has been chosen yet")
    return state.caster


def require_participant(state: TableState, name: str) -> None:
    if name != SETTER and name not in state.seats:
        raise RuleBroken(Rule.NOT_SEATED, f"{name!r} is not seated at this table")


def require_player(state: TableState, name: str) -> None:
    if name not in state.seats:
        raise RuleBroken(Rule.NOT_SEATED, f"{name!r} is not seated at this table")


def require_stake(state: TableState, amount: object, what: str = "stake") -> int:
    """A whole, positive number of minor units within the table's limits."""
    if type(amount) is not int or amount <= 0:
        raise RuleBroken(
            Rule.INVALID_STAKE, f"the {what} must be a whole, positive number of minor units"
        )
    limits = state.limits
    if amount < limits.min_stake:
        raise RuleBroken(
            Rule.STAKE_BELOW_MINIMUM,
            f"the {what} of " + "{stake} is below the table minimum of {minimum}",
            {"stake": amount, "minimum": limits.min_stake},
        )
    if limits.max_stake is not None and amount > limits.max_stake:
        raise RuleBroken(
            Rule.STAKE_ABOVE_MAXIMUM,
            f"the {what} of " + "{stake} is above the table maximum of {maximum}",
            {"stake": amount, "maximum": limits.max_stake},
        )
    return amount


def require_exposure(state: TableState, extra: int) -> None:
    """The setter's cap on what it can lose across the table's open bets."""
    cap = state.limits.max_exposure
    if cap is not None and state.exposure(SETTER) + extra > cap:
        raise RuleBroken(
            Rule.EXPOSURE_LIMIT,
            "the setter would stand to lose {exposure}, over its cap of {cap} on this table",
            {"exposure": state.exposure(SETTER) + extra, "cap": cap},
        )


def left_of(seats: tuple[str, ...], player: str) -> str:
    """The next seat to the left: the dice always pass that way."""
    return seats[(seats.index(player) + 1) % len(seats)]


def pass_to_left(state: TableState, draft: Draft, caster: str, reason: str) -> None:
    """Hand the dice to the seat left of `caster` (who may be leaving)."""
    seats = state.seats
    draft.add(ev.DicePassed, caster=left_of(seats, caster) if seats else None, reason=reason)
