"""The command each group of a table's stream records, run again.

A table's stream is a run of groups, one per command; the first event of a group (its
*cause*) says which command it was and carries its inputs (engine.referee lists which
event records which command). `COMMANDS` runs, for each kind of event, the command it
records on the state before it; `derive` is that for one cause. The referee holds a
stream to what they derive, and a what-if runs a round's commands again with other dice
(engine.whatif). Standard library and engine only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine import events as ev
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
from engine.errors import Disagreement, HazardError
from engine.fold import Folding
from engine.phrase import Phrase
from engine.play import call_main, give_seed, server_throw, throw, void_throw
from engine.rules import CoverPolicy
from engine.state import BetKind, TableState
from engine.table import cast_for_caster, close, leave, open_table, pass_dice, seat, serve_dice
from engine.words import describe

Run = Callable[[TableState, Any], list[ev.Event]]


def derive(state: TableState, cause: ev.Event) -> list[ev.Event]:
    """The events the command that `cause` records derives on `state` (cause first), as
    the referee runs it. Raises RuleBroken if the engine refuses it, and HazardError for
    an event no command starts with, or a dispute (which needs its round's record)."""
    if isinstance(cause, ev.DisputeOpened | ev.DisputeResolved):
        raise HazardError(f"{describe(cause)} is judged on its round's record")
    try:
        return COMMANDS[cause.__class__](state, cause)
    except Orphan:
        raise HazardError(f"{describe(cause)} is derived by a command, not one itself") from None


def _orphan(state: TableState, e: ev.Event) -> list[ev.Event]:
    raise Orphan(e)


class Orphan(Exception):
    """An event that only a command derives, standing where a command must start (the
    referee says so in words, `Referee.orphan`)."""

    def __init__(self, event: ev.Event) -> None:
        self.event = event


def _covered(state: TableState, e: ev.StakeCovered) -> list[ev.Event]:
    if state.rules is not None and state.rules.cover is CoverPolicy.FORFEIT:
        pending = [b for b in state.bets.values() if b.kind is BetKind.LAID and b.pending]
        return cover(state, sum(b.no_stake for b in pending))
    bet = state.bets.get(e.bet_id)
    return cover(state, bet.no_stake if bet is not None else 0, (e.bet_id,))


def _forfeit(state: TableState, e: ev.Event) -> list[ev.Event]:
    rules = state.rules
    if rules is not None and rules.cover is not CoverPolicy.FORFEIT:
        raise Disagreement(
            e.version,
            Phrase(
                describe(e),
                f", but under {rules.name} rules a caster who cannot cover refuses stakes: "
                "only hard-core play (cover: forfeit) forfeits the dice",
            ),
        )
    owed = sum(b.no_stake for b in state.bets.values() if b.kind is BetKind.LAID and b.pending)
    if owed == 0:
        raise Disagreement(
            e.version,
            Phrase(
                describe(e),
                ", but no stake laid against the caster is waiting to be covered: the caster "
                "forfeits only when they cannot cover the stakes pending",
            ),
        )
    return cover(state, owed - 1)


def _voided(state: TableState, e: ev.BetVoided) -> list[ev.Event]:
    reason = e.reason
    if reason == "refused":
        return refuse(state, e.bet_id)
    if reason == "withdrawn":
        bet = state.bets.get(e.bet_id)
        maker = bet.parties[0] if bet is not None and bet.parties else ""
        return withdraw_side_bet(state, e.bet_id, maker)
    if reason == "caster-left":
        if state.caster is None:
            raise Disagreement(
                e.version, Phrase(describe(e), ", but no caster holds the dice to leave")
            )
        return leave(state, state.caster)
    if reason == "offeree-left":
        bet = state.bets.get(e.bet_id)
        if bet is None or bet.offered_to is None:
            raise Disagreement(
                e.version,
                Phrase(describe(e), f", but {e.bet_id} is not an open offer made to one player"),
            )
        return leave(state, bet.offered_to)
    if reason == "table-closed":
        return close(state)
    if reason == "dice-passed":
        return pass_dice(state)
    if reason == "forfeit":
        return _forfeit(state, e)
    if reason in ("never-accepted", "undecidable"):
        raise Orphan(e)
    raise Disagreement(
        e.version, Phrase(describe(e), f": no command of the engine voids a bet for {reason!r}")
    )


def _passed(state: TableState, e: ev.DicePassed) -> list[ev.Event]:
    if e.reason != "choice":
        raise Orphan(e)
    return pass_dice(state)


COMMANDS: dict[type, Run] = {
    ev.TableOpened: lambda s, e: open_table(e.rules, e.limits, s),
    ev.PlayerSeated: lambda s, e: seat(s, e.player),
    ev.PlayerLeft: lambda s, e: leave(s, e.player),
    ev.TableClosed: lambda s, e: close(s),
    ev.DieCastForCaster: lambda s, e: cast_for_caster(s, e.player, e.die),
    ev.CasterChosen: _orphan,
    ev.DicePassed: _passed,
    ev.CasterForfeited: _forfeit,
    ev.MainCalled: lambda s, e: call_main(s, e.main),
    ev.DiceThrown: lambda s, e: throw(s, e.die1, e.die2),
    ev.ThrowVoided: lambda s, e: void_throw(s, e.reason, e.off, e.standing),
    ev.ServerDiceChosen: lambda s, e: serve_dice(s),
    ev.SeedCommitted: _orphan,
    ev.ClientSeedGiven: lambda s, e: give_seed(s, e.client_seed),
    ev.DiceDrawn: lambda s, e: server_throw(s, e.client_seed, e.die1, e.die2),
    ev.SeedRevealed: _orphan,
    ev.CasterStaked: lambda s, e: stake(s, e.amount),
    ev.StakeLaid: lambda s, e: lay(s, e.bettor, e.amount),
    ev.StakeCovered: _covered,
    ev.OddsLaid: lambda s, e: lay_odds(s, e.bettor, e.on, e.stake),
    ev.SideBetOffered: lambda s, e: offer_side_bet(
        s, e.offerer, e.proposition, e.backs, e.stake, e.asks, e.to
    ),
    ev.SideBetAccepted: lambda s, e: accept_side_bet(s, e.bet_id, e.acceptor),
    ev.BetSettled: _orphan,
    ev.BetVoided: _voided,
    ev.DisputeOpened: _orphan,  # judged by Referee._judge, on the round's record
    ev.DisputeResolved: _orphan,
    ev.BetAdjusted: _orphan,
}
ON_THE_FOLD: dict[type, Callable[[TableState, Any, Folding], list[ev.Event]]] = {
    ev.DiceThrown: lambda s, e, f: throw(s, e.die1, e.die2, f),
    ev.DiceDrawn: lambda s, e, f: server_throw(s, e.client_seed, e.die1, e.die2, f),
}
"""The commands that fold their first events to decide the rest (the throws), run on
the fold the referee keeps open on the state (engine.fold.Folding): the same command
as in `COMMANDS`, without a new copy of the table for every throw."""

if COMMANDS.keys() != set(ev.TABLE_EVENTS):  # as the fold: fail on import, not in a replay
    raise TypeError(
        "engine.events.Event and the referee disagree on "
        + ", ".join(sorted(c.__name__ for c in COMMANDS.keys() ^ set(ev.TABLE_EVENTS)))
    )
