"""The referee's quick checks: a command of one event held to the rules on the fold's own
copy of the table (engine.fold.Folding.admit), without running the command.

The referee (engine.referee) runs every command a stream records and compares what it
derives with the stream. For the commands that derive nothing but their own event (the
main called, the caster's stake, a stake laid, a stake covered under the refuse
policy, a side bet offered or taken), what the command would derive is the event itself when the
rules let it through: these checks ask the same questions the command asks, of the
table as the fold holds it, and say whether the command, run on the frozen state,
would derive exactly this one event. They look the way the fold's handlers do (one
function an event type, `QUICK`), and, like the fold, never freeze the table.

A check only ever says yes when the command would: when it is unsure (a type the
command would take as equal but not the same, a server table waiting on a throw) it
says no, and the referee runs the command as before, which refuses or accepts the
event with its own words. So a check may be stricter than its command, never looser:
tests/engine/test_referee_quick.py holds each to its command on tables of every rule
set, clean and tampered, and tests/engine/test_referee_fast.py the whole referee to
the plain one. Standard library and engine only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine import events as ev
from engine.betting import MAX_BETS_PER_PLAYER, MAX_OPEN_BETS, PLAYERS_SHARE, _require_decidable
from engine.dice import MAINS
from engine.rules import CoverPolicy, MainMethod
from engine.state import SETTER, BetKind, Phase

_CLOSED, _AWAITING_MAIN, _FIRST_THROW = Phase.CLOSED, Phase.AWAITING_MAIN, Phase.FIRST_THROW
_CALLED, _FORFEIT = MainMethod.CALLED, CoverPolicy.FORFEIT
_CASTER, _LAID, _SIDE = BetKind.CASTER, BetKind.LAID, BetKind.SIDE


def _caster(t: Any) -> str | None:
    """The caster, if the table is open, has rules and a caster, and no client seed
    waits for its throw (`serverdice.require_draw_next`); else None."""
    if t.phase is _CLOSED or t.rules is None or t.client_seed is not None:
        return None
    caster: str | None = t.caster
    return caster


def _stake_ok(t: Any, amount: object) -> bool:
    """`command.require_stake`: a whole, positive amount within the table's limits."""
    if type(amount) is not int or amount <= 0:
        return False
    limits = t.limits
    return amount >= limits.min_stake and (limits.max_stake is None or amount <= limits.max_stake)


def _own_room(t: Any, player: str) -> bool:
    """`betting._require_own_room`."""
    if player == SETTER or t.limits.caps < 2:
        return True
    held = 0
    for b in t.bets.values():
        if b.yes == player or b.no == player:
            held += 1
    return held < MAX_BETS_PER_PLAYER


def _in_turn(t: Any, e: Any) -> bool:
    """The event is the table's next (else the referee says the stream skips one)."""
    return type(e.version) is int and e.version == t.version + 1


def _exposure_ok(t: Any, extra: int) -> bool:
    """`command.require_exposure`: the setter's cap on what it can lose at the table
    (`TableState.exposure`, added up on the table as it stands)."""
    cap: int | None = t.limits.max_exposure
    if cap is None:
        return True
    exposure = 0
    for b in t.bets.values():
        exposure += b.held_by(SETTER)
    return exposure + extra <= cap


def _next_bet_id(t: Any, e: Any) -> bool:
    """The bet placed is numbered by its event's version (`Draft.next_bet_id`)."""
    return type(e.bet_id) is str and e.bet_id == f"b{t.version + 1}"


def main_called(t: Any, e: ev.MainCalled) -> bool:
    """`play.call_main`."""
    return (
        _in_turn(t, e)
        and _caster(t) is not None
        and t.rules.main_method is _CALLED
        and t.phase is _AWAITING_MAIN
        and type(e.main) is int
        and e.main in MAINS
    )


def caster_staked(t: Any, e: ev.CasterStaked) -> bool:
    """`betting.stake`."""
    caster = _caster(t)
    if caster is None or not (t.phase is _AWAITING_MAIN or t.phase is _FIRST_THROW):
        return False
    if not _in_turn(t, e) or not _next_bet_id(t, e):
        return False
    if type(e.caster) is not str or e.caster != caster:
        return False
    if not _stake_ok(t, e.amount):
        return False
    this_round = t.round
    for b in t.bets.values():
        if b.kind is _CASTER and b.round == this_round:
            return False
    return _exposure_ok(t, e.amount) and len(t.bets) < MAX_OPEN_BETS


def stake_laid(t: Any, e: ev.StakeLaid) -> bool:
    """`betting.lay`."""
    caster = _caster(t)
    if caster is None or not (t.phase is _AWAITING_MAIN or t.phase is _FIRST_THROW):
        return False
    bettor = e.bettor
    if not _in_turn(t, e) or type(bettor) is not str or bettor not in t.seats or bettor == caster:
        return False
    if not _next_bet_id(t, e) or not _stake_ok(t, e.amount):
        return False
    return len(t.bets) < MAX_OPEN_BETS and _own_room(t, bettor)


def stake_covered(t: Any, e: ev.StakeCovered) -> bool:
    """`betting.cover` of the one stake the event names, under the refuse policy (under
    hard-core play a cover covers every stake pending: the command's to say)."""
    caster = _caster(t)
    if caster is None or t.rules.cover is _FORFEIT or not _in_turn(t, e):
        return False
    if type(e.bet_id) is not str:  # an id the bets cannot be looked up by: the command's
        return False
    bet = t.bets.get(e.bet_id)
    if bet is None or bet.kind is not _LAID or not bet.pending:
        return False
    amount = bet.no_stake
    return (
        type(amount) is int
        and amount >= 0
        and type(e.amount) is int
        and e.amount == amount
        and e.bet_id == bet.id
        and type(e.caster) is str
        and e.caster == caster
    )


def side_bet_offered(t: Any, e: ev.SideBetOffered) -> bool:
    """`betting.offer_side_bet`: its proposition asked of the table by the command's own
    check (`_require_decidable`, which reads only the caster and the phase)."""
    if t.phase is _CLOSED or t.rules is None or t.client_seed is not None:
        return False
    if not _in_turn(t, e) or not _next_bet_id(t, e):
        return False
    offerer, to = e.offerer, e.to
    if type(offerer) is not str or (offerer != SETTER and offerer not in t.seats):
        return False
    if to is not None and (
        type(to) is not str or (to != SETTER and to not in t.seats) or to == offerer
    ):
        return False
    if type(e.backs) is not bool or type(e.proposition) is not ev.Proposition:
        return False
    try:
        _require_decidable(t, e.proposition)
    except Exception:  # refused, or a proposition it cannot read: the command's to say
        return False
    if not _stake_ok(t, e.stake) or not _stake_ok(t, e.asks):
        return False
    if offerer == SETTER and not _exposure_ok(t, e.stake):
        return False
    # `betting._require_room`, not reserved: players fill the table to their share only.
    held = len(t.bets)
    if held >= MAX_OPEN_BETS:
        return False
    if t.limits.caps >= 2 and offerer != SETTER and held >= PLAYERS_SHARE:
        return False
    return _own_room(t, offerer)


def side_bet_accepted(t: Any, e: ev.SideBetAccepted) -> bool:
    """`betting.accept_side_bet`."""
    if t.phase is _CLOSED or t.rules is None or t.client_seed is not None:
        return False
    if not _in_turn(t, e) or type(e.bet_id) is not str:
        return False
    bet = t.bets.get(e.bet_id)
    if bet is None or bet.kind is not _SIDE or not bet.pending:
        return False
    acceptor = e.acceptor
    if type(acceptor) is not str or (acceptor != SETTER and acceptor not in t.seats):
        return False
    if acceptor == bet.yes or acceptor == bet.no:  # among bet.parties
        return False
    if bet.offered_to is not None and bet.offered_to != acceptor:
        return False
    amount = bet.yes_stake if bet.yes is None else bet.no_stake
    return (
        type(amount) is int
        and type(e.amount) is int
        and e.amount == amount
        and e.bet_id == bet.id
        and (acceptor != SETTER or _exposure_ok(t, amount))
        and _own_room(t, acceptor)
    )


QUICK: dict[type, Callable[[Any, Any], bool]] = {
    ev.MainCalled: main_called,
    ev.CasterStaked: caster_staked,
    ev.StakeLaid: stake_laid,
    ev.StakeCovered: stake_covered,
    ev.SideBetOffered: side_bet_offered,
    ev.SideBetAccepted: side_bet_accepted,
}
"""The events a quick check can let through, by type: each a command of one event."""
