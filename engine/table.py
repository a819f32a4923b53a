"""Commands for the table itself: opening, seating, choosing the caster, passing the
dice, leaving and closing."""

from __future__ import annotations

from engine import events as ev
from engine.betting import void_all, void_round
from engine.command import (
    Draft,
    left_of,
    open_rules,
    pass_to_left,
    require_caster,
    require_player,
)
from engine.dice import is_die
from engine.errors import Rule, RuleBroken
from engine.fold import INITIAL, contest_for
from engine.money import ESCROW, refund_transfers
from engine.rules import RuleSet
from engine.serverdice import CROUPIER, DICE, SERVER
from engine.state import SETTER, Phase, TableState

MAX_NAME = 64
MAX_SEATS = 50
"""A table seats at most this many players: more than any table of dice, and a bound
on the table's state, its cast for first caster and every write's answer."""


def open_table(
    rules: RuleSet,
    limits: ev.Limits = ev.Limits(),
    state: TableState = INITIAL,
    dice: str = CROUPIER,
) -> list[ev.Event]:
    """Open the table. With `dice` "server" the server throws its dice (engine.serverdice):
    `ServerDiceChosen` follows the `TableOpened`, which is stored as it always was."""
    if state.phase is not Phase.NEW:
        raise RuleBroken(Rule.WRONG_PHASE, "this table is already open")
    _check_limits(limits)
    if dice not in DICE:
        raise RuleBroken(Rule.UNKNOWN_DICE, f"a table's dice are {' or '.join(DICE)}, not {dice!r}")
    draft = Draft(state)
    draft.add(ev.TableOpened, rules=rules, limits=limits)
    if dice == SERVER:
        draft.add(ev.ServerDiceChosen)
    return draft.events


def serve_dice(state: TableState) -> list[ev.Event]:
    """The second half of opening a server-dice table (the referee runs it on its own:
    the `TableOpened` before it does not say which dice the table has)."""
    open_rules(state)
    if state.version != 1 or state.phase is not Phase.SEATING or state.dice == SERVER:
        raise RuleBroken(
            Rule.WRONG_PHASE, "a table's dice are chosen as it opens, before anything else"
        )
    draft = Draft(state)
    draft.add(ev.ServerDiceChosen)
    return draft.events


def _check_limits(limits: ev.Limits) -> None:
    for name in ("min_stake", "max_stake", "max_exposure"):
        value = getattr(limits, name)
        if value is None and name != "min_stake":
            continue
        if type(value) is not int or value < (1 if name != "max_exposure" else 0):
            raise RuleBroken(Rule.INVALID_STAKE, f"{name} must be a whole, positive number")
    if limits.max_stake is not None and limits.max_stake < limits.min_stake:
        raise RuleBroken(Rule.INVALID_STAKE, "max_stake is below min_stake")


def seat(state: TableState, player: str) -> list[ev.Event]:
    open_rules(state)
    if not isinstance(player, str) or not player.strip() or player != player.strip():
        raise RuleBroken(Rule.NOT_SEATED, "a player's name is a non-empty string")
    if len(player) > MAX_NAME or player.startswith(ESCROW):
        raise RuleBroken(
            Rule.NOT_SEATED,
            f"a player's name is at most {MAX_NAME} characters and does not start with {ESCROW!r}",
        )
    if player == SETTER:
        raise RuleBroken(Rule.SETTER_CANNOT_SIT, "the setter banks the table and has no seat")
    if player in state.seats:
        raise RuleBroken(Rule.ALREADY_SEATED, f"{player!r} is already seated")
    if len(state.seats) >= MAX_SEATS:
        raise RuleBroken(
            Rule.TABLE_FULL, f"the table seats at most {MAX_SEATS} players, and all are taken"
        )
    draft = Draft(state)
    draft.add(ev.PlayerSeated, player=player)
    return draft.events


def cast_for_caster(state: TableState, player: str, die: int) -> list[ev.Event]:
    """`player` casts one die to choose the first caster: lowest goes first, and
    those who tie for lowest cast again."""
    open_rules(state)
    if state.phase is not Phase.SEATING:
        raise RuleBroken(Rule.WRONG_PHASE, "the caster has already been chosen")
    require_player(state, player)
    if not is_die(die):
        raise RuleBroken(Rule.INVALID_DIE, f"a die shows 1 to 6, not {die!r}")
    contest, casts = contest_for(state.contest, state.casts, state.seats)
    if player not in contest or player in casts:
        raise RuleBroken(
            Rule.NOT_YOUR_CAST,
            f"{player!r} is not among those still to cast: "
            + ", ".join(p for p in contest if p not in casts),
        )
    draft = Draft(state)
    draft.add(ev.DieCastForCaster, player=player, die=die)
    _choose_if_decided(draft)
    return draft.events


def _choose_if_decided(draft: Draft) -> None:
    """Once everyone in the cast-off has cast, a single lowest die takes the dice."""
    after = draft.folded()
    if after.phase is not Phase.SEATING or not after.contest:
        return
    if len(after.casts) == len(after.contest):
        low = min(after.casts.values())
        lowest = [p for p, d in after.casts.items() if d == low]
        if len(lowest) == 1:
            draft.add(ev.CasterChosen, player=lowest[0])


def pass_dice(state: TableState) -> list[ev.Event]:
    """The caster passes the dice by choice, where the rule set allows it after a win."""
    caster = require_caster(state)
    rules = open_rules(state)
    if not rules.dice_pass.voluntary:
        raise RuleBroken(
            Rule.PASS_NOT_ALLOWED, f"under {rules.name} rules the caster may not pass by choice"
        )
    # The streak resets when the dice pass, so a win on it is this caster's own.
    if state.phase is not Phase.AWAITING_MAIN or state.consecutive_wins == 0:
        raise RuleBroken(
            Rule.PASS_NOT_ALLOWED, "the caster may pass by choice only after winning a round"
        )
    draft = Draft(state)
    void_round(state, draft, "dice-passed")
    pass_to_left(state, draft, caster, "choice")
    return draft.events


def leave(state: TableState, player: str) -> list[ev.Event]:
    """`player` leaves the table. A caster leaving voids the undecided round and
    passes the dice; anyone else must first see their bets resolve."""
    open_rules(state)
    require_player(state, player)
    draft = Draft(state)
    if player == state.caster:
        void_round(state, draft, "caster-left")
    voided = {e.bet_id for e in draft.events if isinstance(e, ev.BetVoided)}
    for bet in state.bets.values():  # offers made to the leaver alone can never be taken
        if bet.pending and bet.offered_to == player and bet.id not in voided:
            draft.add(
                ev.BetVoided, bet_id=bet.id, reason="offeree-left", transfers=refund_transfers(bet)
            )
            voided.add(bet.id)
    still_open = [b.id for b in state.bets.values() if player in b.parties and b.id not in voided]
    if still_open:
        raise RuleBroken(
            Rule.HAS_OPEN_BETS,
            f"{player!r} has open bets ({', '.join(still_open)}); they must resolve or be "
            "withdrawn first",
        )
    draft.add(ev.PlayerLeft, player=player)
    if state.phase is Phase.SEATING and player in state.contest:
        _choose_if_decided(draft)
    if player == state.caster:
        # The dice go to whoever sat to the leaver's left, if anyone is left.
        nxt = left_of(state.seats, player) if len(state.seats) > 1 else None
        draft.add(ev.DicePassed, caster=nxt, reason="caster-left")
    return draft.events


def close(state: TableState) -> list[ev.Event]:
    """Close the table; every open bet and offer is voided and its stakes returned."""
    open_rules(state)
    draft = Draft(state)
    void_all(state, draft, "table-closed")
    draft.add(ev.TableClosed)
    return draft.events
