"""The game of Hazard: rules as data, commands that return events, and a pure fold.

Standard library only. Commands take a `TableState` and return new events (or raise
`RuleBroken`, returning nothing); `fold` turns events into state. Same events in,
same state out.
"""

from engine.betting import (
    accept_side_bet,
    cover,
    lay,
    lay_odds,
    offer_side_bet,
    refuse,
    stake,
    withdraw_side_bet,
)
from engine.errors import HazardError, ReplayError, Rule, RuleBroken, RuleSetError
from engine.events import Event, Limits, Proposition, PropositionKind, Transfer
from engine.fold import INITIAL, fold
from engine.play import call_main, give_seed, must_pass, server_throw, throw, void_throw
from engine.rules import CoverPolicy, MainMethod, Outcome, Rounding, RuleSet
from engine.rulesets import BUILTIN, DEFAULT
from engine.state import SETTER, Bet, BetKind, Phase, RoundResult, TableState
from engine.table import (
    cast_for_caster,
    close,
    leave,
    open_table,
    pass_dice,
    seat,
    serve_dice,
)

__all__ = [
    "BUILTIN",
    "DEFAULT",
    "INITIAL",
    "SETTER",
    "Bet",
    "BetKind",
    "CoverPolicy",
    "Event",
    "HazardError",
    "Limits",
    "MainMethod",
    "Outcome",
    "Phase",
    "Proposition",
    "PropositionKind",
    "ReplayError",
    "RoundResult",
    "Rounding",
    "Rule",
    "RuleBroken",
    "RuleSet",
    "RuleSetError",
    "TableState",
    "Transfer",
    "accept_side_bet",
    "call_main",
    "cast_for_caster",
    "close",
    "cover",
    "fold",
    "give_seed",
    "lay",
    "lay_odds",
    "leave",
    "must_pass",
    "offer_side_bet",
    "open_table",
    "pass_dice",
    "refuse",
    "seat",
    "serve_dice",
    "server_throw",
    "stake",
    "throw",
    "void_throw",
    "withdraw_side_bet",
]
