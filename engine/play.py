"""Commands for the round: calling the main, throwing, and void throws."""

from __future__ import annotations

from engine import events as ev
from engine.betting import resolve
from engine.command import Draft, open_rules, pass_to_left, require_caster
from engine.dice import MAINS, is_die, require_dice
from engine.errors import Rule, RuleBroken
from engine.fold import Folding
from engine.rules import DicePass, MainMethod
from engine.serverdice import (
    already_given,
    require_client_seed,
    require_croupier_dice,
    require_logged,
    require_server_dice,
)
from engine.state import BetKind, Phase, TableState

_THROWING = (Phase.AWAITING_MAIN, Phase.FIRST_THROW, Phase.CHANCE)
VOID_REASONS = ("cocked", "wild")


def call_main(state: TableState, main: int) -> list[ev.Event]:
    """The caster calls the main, where the rule set lets the caster choose it."""
    require_caster(state)
    rules = open_rules(state)
    if rules.main_method is not MainMethod.CALLED:
        raise RuleBroken(
            Rule.MAIN_IS_ROLLED, f"under {rules.name} rules the main is thrown, not called"
        )
    if state.phase is not Phase.AWAITING_MAIN:
        raise RuleBroken(Rule.WRONG_PHASE, f"the main is already set at {state.main}")
    if type(main) is not int or main not in MAINS:
        raise RuleBroken(Rule.INVALID_MAIN, f"a main is 5, 6, 7, 8 or 9, not {main!r}")
    draft = Draft(state)
    draft.add(ev.MainCalled, main=main)
    return draft.events


def _require_throwing(state: TableState) -> None:
    require_caster(state)
    rules = open_rules(state)
    if state.phase not in _THROWING:
        raise RuleBroken(
            Rule.WRONG_PHASE, f"no throw is due while the table is {state.phase.value}"
        )
    if state.phase is Phase.AWAITING_MAIN and rules.main_method is MainMethod.CALLED:
        raise RuleBroken(Rule.THROW_BEFORE_MAIN, "the caster must call a main before throwing")


def throw(
    state: TableState, die1: int, die2: int, folding: Folding | None = None
) -> list[ev.Event]:
    """The croupier records a throw. Returns the throw, the settlement of every bet it
    decides and, when the rule set says so, the dice passing to the left. `folding`, a
    fold kept open on `state` (the referee's), is where the throw is folded to decide
    its bets, rather than on a new copy of the table."""
    require_croupier_dice(state)
    _require_throwing(state)
    draft = Draft(state, folding)
    _thrown(state, draft, die1, die2)
    return draft.events


def give_seed(state: TableState, client_seed: str) -> list[ev.Event]:
    """The caster gives the client seed for the next server throw, after the bets on it
    are placed: `ClientSeedGiven`, which the ledger writes alone, with its receipt,
    before drawing anything from it. That throw is then drawn from this seed
    (`server_throw`) before anything else happens at the table. The same seed given
    again is a repeat: nothing more is logged (the throw is drawn next); another seed
    for the same throw is refused."""
    require_server_throw(state, client_seed)
    if state.client_seed is not None:
        if client_seed == state.client_seed:
            return []
        raise already_given(state, client_seed)
    _require_stakes_settled(state)
    draft = Draft(state)
    draft.add(ev.ClientSeedGiven, client_seed=client_seed, nonce=state.nonce)
    return draft.events


def server_throw(
    state: TableState, client_seed: str, die1: int, die2: int, folding: Folding | None = None
) -> list[ev.Event]:
    """The server throws, at a server-dice table: `client_seed` is the caster's, the one
    logged for this throw (`give_seed`; a table written before seeds were logged has
    none), and the dice are what `engine.serverdice.draw` gives for it from the turn's
    server seed and `state.nonce` (the ledger draws them; once the seed is revealed
    anyone can draw them again). Returns `DiceDrawn` and then what `throw` returns for
    those dice (`folding` as for `throw`)."""
    require_server_throw(state, client_seed)
    require_logged(state, client_seed)
    draft = Draft(state, folding)
    draft.add(ev.DiceDrawn, client_seed=client_seed, nonce=state.nonce, die1=die1, die2=die2)
    _thrown(state, draft, die1, die2)
    return draft.events


def require_server_throw(state: TableState, client_seed: str) -> None:
    """Everything `server_throw` checks before the dice: what the ledger asks before it
    draws them."""
    require_server_dice(state)
    _require_throwing(state)
    require_client_seed(client_seed)
    if state.commitment is None:  # every turn commits as it begins: a stream at fault
        raise RuleBroken(Rule.WRONG_PHASE, "no server seed is committed for this turn")


def _thrown(state: TableState, draft: Draft, die1: int, die2: int) -> None:
    require_dice(die1, die2)
    if state.standing is not None:
        off, standing = state.standing
        kept = die2 if off == 1 else die1
        if kept != standing:
            raise RuleBroken(
                Rule.RECAST_MUST_KEEP_STANDING_DIE,
                f"die {3 - off} stands at {standing}: only die {off} was recast",
            )
    _require_stakes_settled(state)
    draft.add(ev.DiceThrown, die1=die1, die2=die2)
    after = draft.folded()
    resolve(state, after, die1 + die2, draft)
    if after.round != state.round and after.last_result is not None:
        rules = open_rules(state)
        reason = must_pass(rules.dice_pass, after.consecutive_losses, after.consecutive_wins)
        if reason is not None:
            assert state.caster is not None
            pass_to_left(state, draft, state.caster, reason)


def _require_stakes_settled(state: TableState) -> None:
    pending = [b.id for b in state.bets.values() if b.kind is BetKind.LAID and b.pending]
    if pending:
        raise RuleBroken(
            Rule.STAKES_PENDING,
            f"the caster must cover or refuse {', '.join(pending)} before the throw",
        )


def must_pass(rule: DicePass, losses: int, wins: int) -> str | None:
    """Why the dice must pass now, or None if the caster keeps them."""
    if rule.after_losses is not None and losses >= rule.after_losses:
        return f"{losses}-losses" if losses > 1 else "loss"
    if rule.after_wins is not None and wins >= rule.after_wins:
        return f"{wins}-wins" if wins > 1 else "win"
    return None


def void_throw(
    state: TableState, reason: str, off: int, standing: int | None = None
) -> list[ev.Event]:
    """A cocked or wild throw does not count and is recast.

    `off` is the die that went off (1 or 2), or 0 for both. If one die went off, the
    caster recasts it alone, giving `standing` (the value of the die that stayed
    true), or recasts both, giving no `standing`.

    While a die stands (an earlier void recast only the other), only the other die was
    thrown, so only it can have gone off: naming the standing die, or both, as off is
    refused (`standing-die-not-off`). Recasting the off die alone again keeps the same
    die standing at the same value (any other `standing` is refused,
    `recast-must-keep-standing-die`); recasting both together ends the standing.
    """
    require_croupier_dice(state)  # the server's dice never cock
    _require_throwing(state)
    if reason not in VOID_REASONS:
        raise RuleBroken(Rule.INVALID_VOID, f"a void throw is cocked or wild, not {reason!r}")
    if off not in (0, 1, 2) or type(off) is not int:
        raise RuleBroken(Rule.INVALID_VOID, "off names die 1, die 2, or 0 for both")
    if standing is not None:
        if off == 0:
            raise RuleBroken(Rule.INVALID_VOID, "when both dice are off, both are recast")
        if not is_die(standing):
            raise RuleBroken(Rule.INVALID_DIE, f"a die shows 1 to 6, not {standing!r}")
    if state.standing is not None:
        _keep_standing(state.standing, off, standing)
    draft = Draft(state)
    draft.add(ev.ThrowVoided, reason=reason, off=off, standing=standing)
    return draft.events


def _keep_standing(current: tuple[int, int], off: int, standing: int | None) -> None:
    """A void while a die stands: the die that was cast went off, and if it alone is
    recast again, the standing die stays as it lay."""
    was_off, value = current
    stands = 3 - was_off
    if off != was_off:
        raise RuleBroken(
            Rule.STANDING_DIE_NOT_OFF,
            f"die {stands} stands at {value} and was not thrown; only die {was_off} can "
            "have gone off",
        )
    if standing is not None and standing != value:
        raise RuleBroken(
            Rule.RECAST_MUST_KEEP_STANDING_DIE,
            f"die {stands} stands at {value}, not {standing}: recasting die {off} alone "
            "leaves it as it lies; recast both to end it",
        )
