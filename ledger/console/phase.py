"""What the table lets the person signed in do now: the controls its page shows, and
only those.

Asked of the code that would refuse them, never guessed: each control is a dry run of
its engine command on the table's state (an engine command is pure: it returns the
events it would write, or raises RuleBroken, and writes nothing), and of the checks the
table's command makes of who sends it (ledger.commands: `require_role`, `require_self`,
`caster_only`, and at a server-dice table `require_thrower`). So the table's state as
GET /tables/{t} gives it decides, as the API would decide the write itself.

A control is shown when the table refuses it only for its values (an amount under the
table's minimum, the setter's exposure cap, lays still to cover before the throw):
that refusal is said beside it when it is sent. A refusal that means "not now" or "not
this player" (NOT_NOW) hides it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import engine as hz
from engine import play, serverdice
from engine.events import Proposition, PropositionKind
from ledger.commands import Caller, caster_only, require_role, require_self, tables
from ledger.commands.serverdice import require_thrower
from ledger.service import Forbidden

R = hz.Rule
NOT_NOW = frozenset(
    {
        R.TABLE_CLOSED,
        R.WRONG_PHASE,
        R.BETTING_CLOSED,
        R.CASTER_ALREADY_STAKED,
        R.THROW_BEFORE_MAIN,
        R.MAIN_IS_ROLLED,
        R.ODDS_BEFORE_CHANCE,
        R.ODDS_WITHOUT_STAKE,
        R.PASS_NOT_ALLOWED,
        R.NOT_YOUR_CAST,
        R.NOT_SEATED,
        R.ALREADY_SEATED,
        R.TABLE_FULL,
        R.CASTER_CANNOT_LAY,
        R.SELF_BET,
        R.NOT_OFFERED_TO_YOU,
        R.SERVER_DICE,
        R.CROUPIER_DICE,
        R.DRAW_PENDING,
        R.REFUSAL_NOT_ALLOWED,
        R.UNKNOWN_BET,
    }
)
"""Refusals that say the act does not belong to the table as it stands, or not to this
player: the control is not shown. Any other refusal is about the values sent."""

ANY_FUNDS = 10**15
"""What a dry run of a cover takes the caster to hold: whether they can is the write's
to say (stake-not-covered), not whether covering belongs to the phase."""


@dataclass(frozen=True)
class Controls:
    """The table's controls for one person, now."""

    seat: bool = False
    """Seat players."""
    casts: tuple[str, ...] = ()
    """The players still to cast a die for first caster."""
    main: bool = False
    """Call the main."""
    throw: bool = False
    """Enter the dice (or give the caster's seed, at a server-dice table)."""
    preliminary: bool = False
    """The throw due is the roll for the main."""
    pending: tuple[str, ...] = ()
    """Lays the caster covers or refuses before the throw."""
    void: bool = False
    """Record a cocked or wild throw."""
    stake: bool = False
    """The caster's stake against the setter."""
    lays: tuple[str, ...] = ()
    """Who may lay a stake against the caster (from this person's hand)."""
    everyone_lays: bool = False
    """Every seated player but the caster may lay at once, the croupier entering it."""
    covers: tuple[hz.Bet, ...] = ()
    """Lays waiting for the caster, which this person may cover."""
    refuse: bool = False
    """The waiting lays may be refused."""
    odds: tuple[str, ...] = ()
    """Who may lay odds."""
    pass_dice: bool = False
    """The caster may pass the dice by choice."""
    offers: tuple[str, ...] = ()
    """Who may offer a side bet."""
    accepts: tuple[tuple[hz.Bet, tuple[str, ...]], ...] = ()
    """Side bets offered, and who may take each."""
    close: bool = False
    """Close the table."""

    @property
    def betting(self) -> bool:
        """Stakes, lays or odds may be placed (covers are beside the lays they cover)."""
        return bool(self.stake or self.lays or self.odds)


def controls(state: hz.TableState, who: Caller) -> Controls:
    """The controls `who` has at the table in `state`."""
    if state.rules is None or state.phase is hz.Phase.CLOSED:
        return Controls()
    runs = _passes(require_role, who, *tables.RUN)
    bets = _passes(require_role, who, *tables.BET)
    caster = bets and _passes(caster_only, who, state)
    least = state.limits.min_stake
    seated = state.seats
    everyone = (hz.SETTER, *seated)

    def may(act: Callable[..., list[hz.Event]], *values: object) -> bool:
        return _allows(state, act, state, *values)

    def mine(names: Sequence[str]) -> tuple[str, ...]:
        """Those of `names` `who` may act for: a player themselves alone."""
        return tuple(n for n in names if bets and _passes(require_self, who, n))

    pending = tuple(b for b in state.open_bets if b.kind is hz.BetKind.LAID and b.pending)
    offered = [b for b in state.open_bets if b.kind is hz.BetKind.SIDE and b.pending]
    takers = [(b, mine([p for p in everyone if may(hz.accept_side_bet, b.id, p)])) for b in offered]
    throw = _may_throw(state, who, runs)
    lays = mine([p for p in seated if may(hz.lay, p, least)])
    return Controls(
        seat=runs and may(hz.seat, _stranger(seated)),
        casts=tuple(p for p in seated if runs and may(hz.cast_for_caster, p, 1)),
        main=runs and may(hz.call_main, 7),
        throw=throw,
        preliminary=throw and state.phase is hz.Phase.AWAITING_MAIN,
        pending=tuple(b.id for b in pending),
        void=runs and state.dice == serverdice.CROUPIER and may(_void),
        stake=caster and may(hz.stake, least),
        lays=lays,
        everyone_lays=runs and len(lays) > 1 and len(lays) == len(seated) - 1,
        covers=tuple(b for b in pending if caster and may(hz.cover, ANY_FUNDS, [b.id])),
        refuse=bool(pending) and caster and may(hz.refuse, pending[0].id),
        odds=mine([p for p in seated if may(hz.lay_odds, p, "chance", least)]),
        pass_dice=caster and may(hz.pass_dice),
        offers=mine([p for p in everyone if may(_offer, p, least)]),
        accepts=tuple((b, names) for b, names in takers if names),
        close=runs and may(hz.close),
    )


def _passes(check: Callable[..., object], *values: object) -> bool:
    """Whether `check` (a command's check of who sends it) lets the caller through."""
    try:
        check(*values)
    except Forbidden:
        return False
    return True


def _allows(state: hz.TableState, act: Callable[..., list[hz.Event]], *values: object) -> bool:
    """Whether the table allows `act(*values)` now, whatever its values: its events, if it
    has any, may also come next at a server-dice table waiting for its draw."""
    try:
        events = act(*values)
        if events:
            serverdice.require_draw_next(state, events[0])
    except hz.RuleBroken as exc:
        return exc.rule not in NOT_NOW
    return True


def _may_throw(state: hz.TableState, who: Caller, runs: bool) -> bool:
    """The throw is due, and `who` may send it: at a croupier table the croupier (or the
    setter) enters the dice (ledger.commands.tables.require_enterer); at a server-dice
    table the caster gives their seed, or the croupier for them
    (ledger.commands.serverdice.require_thrower)."""
    if state.dice == serverdice.SERVER:
        may = _passes(require_role, who, *tables.BET) and _passes(require_thrower, who, state)
        return may and _allows(state, _server_throw, state)
    if not (runs and _passes(tables.require_enterer, who)):
        return False
    return _allows(state, hz.throw, state, *_dice(state))


def _dice(state: hz.TableState) -> tuple[int, int]:
    """Dice a throw could show now: a die left standing by a void throw stands."""
    if state.standing is None:
        return 1, 1
    off, value = state.standing
    return (1, value) if off == 1 else (value, 1)


def _server_throw(state: hz.TableState) -> list[hz.Event]:
    play.require_server_throw(state, "probe")
    return []


def _void(state: hz.TableState) -> list[hz.Event]:
    off, standing = (0, None) if state.standing is None else (state.standing[0], None)
    return hz.void_throw(state, "cocked", off, standing)


def _offer(state: hz.TableState, player: str, least: int) -> list[hz.Event]:
    seven = Proposition(PropositionKind.NEXT_TOTAL, frozenset({7}))
    return hz.offer_side_bet(state, player, seven, True, least, least)


def _stranger(seated: Sequence[str]) -> str:
    """A name no one seated has, to ask whether one more may sit."""
    name = "someone"
    while name in seated:
        name += "-else"
    return name
