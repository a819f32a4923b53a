"""Events in, state out: the only place that knows what each event does to the table.

The fold works on a private mutable copy and freezes it once at the end, because
building a new frozen state per event is ten times slower than the rules themselves
(see bench/). Nothing outside this module sees the mutable copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from engine import events as ev
from engine.errors import ReplayError
from engine.rules import MainMethod, Outcome, RuleSet
from engine.state import ROUND_PHASES, SETTER, Bet, BetKind, Phase, RoundResult, TableState

_WIN = (RoundResult.NICK, RoundResult.CHANCE)
# Enum members bound once: the throw handler runs a million times a second and an
# attribute lookup on an enum class is a dict lookup each time.
_CHANCE_PHASE, _FIRST_THROW, _AWAITING_MAIN = Phase.CHANCE, Phase.FIRST_THROW, Phase.AWAITING_MAIN
_IS_CHANCE, _IS_NICK = Outcome.CHANCE, Outcome.NICK
_CHANCE_WON, _MAIN_LOST = RoundResult.CHANCE, RoundResult.MAIN
_NICKED, _THREW_OUT = RoundResult.NICK, RoundResult.OUT


_new_state = object.__new__


_NO_CASTS: Mapping[str, int] = MappingProxyType({})
"""The casts when no cast-off is under way: one mapping that every such state shares."""


def _proxy(casts: Mapping[str, int]) -> Mapping[str, int]:
    """Casts a state can keep: a read-only view of a copy no one else holds."""
    return MappingProxyType(dict(casts))


if len(TableState.__dataclass_fields__) != 29 or hasattr(TableState, "__post_init__"):
    raise TypeError("_Table.freeze fills every field of TableState: update it with them")


class _Table:
    __slots__ = (
        "abandoned",
        "adjusted",
        "bets",
        "caster",
        "casts",
        "chance",
        "client_seed",
        "commitment",
        "consecutive_losses",
        "consecutive_wins",
        "contest",
        "dice",
        "disputed_by",
        "disputes",
        "first_throw",
        "last_result",
        "last_total",
        "limits",
        "logs_seeds",
        "losses",
        "main",
        "nonce",
        "phase",
        "round",
        "rules",
        "seats",
        "standing",
        "throws",
        "version",
        "wins",
    )
    version: int
    phase: Phase
    rules: RuleSet | None
    seats: tuple[str, ...]
    caster: str | None
    round: int
    main: int | None
    chance: int | None
    throws: int
    consecutive_losses: int
    consecutive_wins: int
    last_result: RoundResult | None
    wins: int
    losses: int
    abandoned: int
    contest: tuple[str, ...]
    casts: Mapping[str, int]
    standing: tuple[int, int] | None
    last_total: int | None
    bets: dict[str, Bet]
    first_throw: tuple[Outcome, ...]
    dice: str
    commitment: str | None
    nonce: int
    client_seed: str | None
    logs_seeds: bool
    disputes: Mapping[str, int]
    disputed_by: Mapping[str, tuple[str, str]]
    adjusted: frozenset[int]

    def __init__(self, s: TableState) -> None:
        self.version, self.phase, self.rules, self.limits = s.version, s.phase, s.rules, s.limits
        # The seats and the casts change a few times a table: taken as they are, and
        # replaced, never changed in place, when they do (a state frozen from this
        # copy shares them, and `Folding` goes on applying events to it).
        self.seats, self.caster, self.round = s.seats, s.caster, s.round
        self.main, self.chance, self.throws = s.main, s.chance, s.throws
        self.consecutive_losses, self.consecutive_wins = s.consecutive_losses, s.consecutive_wins
        self.last_result, self.wins, self.losses = s.last_result, s.wins, s.losses
        self.abandoned, self.contest, self.casts = s.abandoned, s.contest, s.casts
        self.standing, self.last_total, self.bets = s.standing, s.last_total, dict(s.bets)
        self.dice, self.commitment, self.nonce = s.dice, s.commitment, s.nonce
        self.client_seed, self.logs_seeds = s.client_seed, s.logs_seeds
        # Disputes change a few times a session: shared, and copied only when they do.
        self.disputes, self.disputed_by, self.adjusted = s.disputes, s.disputed_by, s.adjusted
        self.first_throw = (
            s.rules.first_throw[s.main] if s.rules is not None and s.main is not None else ()
        )

    def freeze(self) -> TableState:
        # Every command folds its draft, and the referee folds every command's events:
        # a frozen dataclass's __init__ sets its 29 fields one object.__setattr__ at a
        # time, three times slower than filling the new state's __dict__ at once.
        # TableState has no __post_init__ to skip; the result is the same state.
        state = _new_state(TableState)
        state.__dict__.update(
            version=self.version,
            phase=self.phase,
            rules=self.rules,
            limits=self.limits,
            seats=seats if type(seats := self.seats) is tuple else tuple(seats),
            caster=self.caster,
            round=self.round,
            main=self.main,
            chance=self.chance,
            throws=self.throws,
            consecutive_losses=self.consecutive_losses,
            consecutive_wins=self.consecutive_wins,
            last_result=self.last_result,
            wins=self.wins,
            losses=self.losses,
            abandoned=self.abandoned,
            contest=self.contest,
            casts=casts if type(casts := self.casts) is MappingProxyType else _proxy(casts),
            standing=self.standing,
            last_total=self.last_total,
            dice=self.dice,
            commitment=self.commitment,
            nonce=self.nonce,
            client_seed=self.client_seed,
            logs_seeds=self.logs_seeds,
            bets=MappingProxyType(dict(self.bets)),
            disputes=self.disputes,
            disputed_by=self.disputed_by,
            adjusted=self.adjusted,
        )
        return state

    def set_main(self, main: int) -> None:
        self.main = main
        self.first_throw = self.rules.first_throw[main]  # type: ignore[union-attr]
        self.phase = Phase.FIRST_THROW

    def end_round(self, result: RoundResult) -> None:
        if result in _WIN:
            self.wins += 1
            self.consecutive_wins += 1
            self.consecutive_losses = 0
        elif result is RoundResult.ABANDONED:
            self.abandoned += 1
        else:
            self.losses += 1
            self.consecutive_losses += 1
            self.consecutive_wins = 0
        self.last_result = result
        self.round += 1
        self.main = self.chance = None
        self.throws = 0
        self.phase = Phase.AWAITING_MAIN


def _gap(t: _Table, e: Any) -> ReplayError:
    return ReplayError(
        f"event {type(e).__name__} has version {e.version}, "
        f"expected {t.version + 1}: the stream skips or repeats an event"
    )


def _next_version(t: _Table, e: Any) -> None:
    if e.version != t.version + 1:
        raise _gap(t, e)
    t.version = e.version


def _dice_thrown(t: _Table, e: ev.DiceThrown) -> None:
    # The hot path of every replay: kept free of calls it does not need.
    if e.version != t.version + 1:
        raise _gap(t, e)
    t.version = e.version
    total = e.die1 + e.die2
    t.last_total = total
    t.standing = None
    phase = t.phase
    if phase is _CHANCE_PHASE:
        t.throws += 1
        if total == t.chance:
            t.end_round(_CHANCE_WON)
        elif total == t.main:
            t.end_round(_MAIN_LOST)
        return
    if phase is _FIRST_THROW:
        t.throws += 1
        outcome = t.first_throw[total]
        if outcome is _IS_CHANCE:
            t.chance = total
            t.phase = _CHANCE_PHASE
        elif outcome is _IS_NICK:
            t.end_round(_NICKED)
        else:
            t.end_round(_THREW_OUT)
        return
    if phase is _AWAITING_MAIN:
        # Only thrown mains reach here; the command refuses a throw for a called main.
        if 5 <= total <= 9:
            t.set_main(total)
        elif t.rules is not None and t.rules.main_method is MainMethod.FIRST_ROLL:
            t.end_round(RoundResult.NO_MAIN)
        return
    raise ReplayError(f"event {e.version}: dice thrown while the table is {phase.value}")


def _main_called(t: _Table, e: ev.MainCalled) -> None:
    if e.version != t.version + 1:  # as _next_version, inline: one in five events
        raise _gap(t, e)
    t.version = e.version
    t.set_main(e.main)


def _throw_voided(t: _Table, e: ev.ThrowVoided) -> None:
    _next_version(t, e)
    t.standing = (e.off, e.standing) if e.standing is not None else None


def _table_opened(t: _Table, e: ev.TableOpened) -> None:
    _next_version(t, e)
    t.rules, t.limits, t.phase = e.rules, e.limits, Phase.SEATING


def _player_seated(t: _Table, e: ev.PlayerSeated) -> None:
    _next_version(t, e)
    t.seats = (*t.seats, e.player)


def _player_left(t: _Table, e: ev.PlayerLeft) -> None:
    _next_version(t, e)
    if e.player not in t.seats:
        raise ReplayError(f"event {e.version}: {e.player!r} left without a seat")
    seats = list(t.seats)
    seats.remove(e.player)
    t.seats = tuple(seats)
    if e.player in t.contest:
        t.contest = tuple(p for p in t.contest if p != e.player)
        t.casts = MappingProxyType({p: d for p, d in t.casts.items() if p != e.player})
    if e.player == t.caster:
        # The leaver's round ends with them, and they hold the dice no longer: until the
        # DicePassed that follows names the next caster, no round is in play.
        _abandon(t)
        t.caster = None


def _abandon(t: _Table) -> None:
    """The round ends undecided and counts for nobody, whatever part of it was played:
    before the main as after it, its bets were voided, and a round has one caster."""
    t.end_round(RoundResult.ABANDONED)
    t.standing = None


def _table_closed(t: _Table, e: ev.TableClosed) -> None:
    _next_version(t, e)
    # A closed table has no round left open. With no caster holding the dice (the
    # table seating, before the first caster or after the last one left) no round is in
    # play, and there is none to abandon: `round` is only the next round's number.
    if t.caster is not None and t.phase in ROUND_PHASES:
        _abandon(t)
    t.phase = Phase.CLOSED


def _die_cast(t: _Table, e: ev.DieCastForCaster) -> None:
    _next_version(t, e)
    t.contest, casts = contest_for(t.contest, t.casts, t.seats)
    casts[e.player] = e.die  # a new dict, not the one a state shares
    t.casts = MappingProxyType(casts)


def contest_for(
    contest: tuple[str, ...], casts: Mapping[str, int], seats: Iterable[str]
) -> tuple[tuple[str, ...], dict[str, int]]:
    """Who is casting for first caster now, and what they have cast so far.

    A finished cast-off that is still undecided was a tie for lowest: those tied cast
    again. With no cast-off under way, everyone seated casts.
    """
    if contest and len(casts) < len(contest):
        return contest, dict(casts)
    if casts:
        low = min(casts.values())
        tied = tuple(p for p, d in casts.items() if d == low)
        if len(tied) > 1:
            return tied, {}
    return tuple(seats), {}


def _caster_chosen(t: _Table, e: ev.CasterChosen) -> None:
    _next_version(t, e)
    t.caster = e.player
    t.contest, t.casts = (), _NO_CASTS
    t.round = max(t.round, 1)
    t.phase = Phase.AWAITING_MAIN


def _dice_passed(t: _Table, e: ev.DicePassed) -> None:
    _next_version(t, e)
    t.caster = e.caster
    t.consecutive_losses = t.consecutive_wins = 0
    t.standing = None
    if e.caster is None:
        t.phase = Phase.SEATING


def _caster_forfeited(t: _Table, e: ev.CasterForfeited) -> None:
    _next_version(t, e)
    _abandon(t)


def _server_dice_chosen(t: _Table, e: ev.ServerDiceChosen) -> None:
    _next_version(t, e)
    t.dice = "server"


def _seed_committed(t: _Table, e: ev.SeedCommitted) -> None:
    _next_version(t, e)
    t.commitment, t.nonce, t.client_seed = e.commitment, 0, None


def _client_seed_given(t: _Table, e: ev.ClientSeedGiven) -> None:
    # Its throw is drawn next, from this seed (the referee holds the DiceDrawn to it).
    _next_version(t, e)
    t.client_seed, t.logs_seeds = e.client_seed, True


def _dice_drawn(t: _Table, e: ev.DiceDrawn) -> None:
    # The DiceThrown after it plays the dice; this only counts the turn's throws.
    _next_version(t, e)
    t.nonce += 1
    t.client_seed = None


def _seed_revealed(t: _Table, e: ev.SeedRevealed) -> None:
    _next_version(t, e)
    t.commitment, t.nonce, t.client_seed = None, 0, None


def _caster_staked(t: _Table, e: ev.CasterStaked) -> None:
    _next_version(t, e)
    t.bets[e.bet_id] = Bet(
        e.bet_id,
        BetKind.CASTER,
        t.round,
        ev.CASTER_WINS,
        e.caster,
        SETTER,
        e.amount,
        e.amount,
        pending=False,
    )


def _stake_laid(t: _Table, e: ev.StakeLaid) -> None:
    _next_version(t, e)
    t.bets[e.bet_id] = Bet(
        e.bet_id,
        BetKind.LAID,
        t.round,
        ev.CASTER_WINS,
        None,
        e.bettor,
        e.amount,
        e.amount,
        pending=True,
    )


def _stake_covered(t: _Table, e: ev.StakeCovered) -> None:
    _next_version(t, e)
    bet = _pending(t, e.bet_id, e.version)
    t.bets[e.bet_id] = _taken(bet, e.caster, bet.no)


def _odds_laid(t: _Table, e: ev.OddsLaid) -> None:
    _next_version(t, e)
    on_chance = e.on == "chance"
    t.bets[e.bet_id] = Bet(
        e.bet_id,
        BetKind.ODDS,
        t.round,
        ev.CHANCE_BEFORE_MAIN,
        e.bettor if on_chance else SETTER,
        SETTER if on_chance else e.bettor,
        e.stake if on_chance else e.payout,
        e.payout if on_chance else e.stake,
        pending=False,
        breakage=e.breakage,
    )


def _side_offered(t: _Table, e: ev.SideBetOffered) -> None:
    _next_version(t, e)
    yes, no = (e.offerer, None) if e.backs else (None, e.offerer)
    yes_stake, no_stake = (e.stake, e.asks) if e.backs else (e.asks, e.stake)
    t.bets[e.bet_id] = Bet(
        e.bet_id,
        BetKind.SIDE,
        t.round,
        e.proposition,
        yes,
        no,
        yes_stake,
        no_stake,
        pending=True,
        offered_to=e.to,
    )


def _side_accepted(t: _Table, e: ev.SideBetAccepted) -> None:
    _next_version(t, e)
    bet = _pending(t, e.bet_id, e.version)
    if bet.yes is None:
        t.bets[e.bet_id] = _taken(bet, e.acceptor, bet.no)
    else:
        t.bets[e.bet_id] = _taken(bet, bet.yes, e.acceptor)


def _bet_closed(t: _Table, e: ev.BetSettled | ev.BetVoided) -> None:
    _next_version(t, e)
    if t.bets.pop(e.bet_id, None) is None:
        raise ReplayError(f"event {e.version}: bet {e.bet_id} is not open")


def _dispute_opened(t: _Table, e: ev.DisputeOpened) -> None:
    _next_version(t, e)
    t.disputes = MappingProxyType({**t.disputes, e.dispute_id: e.round})
    t.disputed_by = MappingProxyType({**t.disputed_by, e.dispute_id: (e.claimant, e.role)})


def _dispute_resolved(t: _Table, e: ev.DisputeResolved) -> None:
    _next_version(t, e)
    if e.dispute_id not in t.disputes:
        raise ReplayError(f"event {e.version}: dispute {e.dispute_id} is not open")
    t.disputes = MappingProxyType({d: n for d, n in t.disputes.items() if d != e.dispute_id})
    t.disputed_by = MappingProxyType(
        {d: who for d, who in t.disputed_by.items() if d != e.dispute_id}
    )
    if e.resolution != "upheld":
        t.adjusted = t.adjusted | {e.round}


def _bet_adjusted(t: _Table, e: ev.BetAdjusted) -> None:
    # Money only: the bet closed long ago, and the table plays on as it stood.
    _next_version(t, e)


def _bet(t: _Table, bet_id: str, version: int) -> Bet:
    try:
        return t.bets[bet_id]
    except KeyError:
        raise ReplayError(f"event {version}: bet {bet_id} is not open") from None


def _pending(t: _Table, bet_id: str, version: int) -> Bet:
    bet = _bet(t, bet_id, version)
    if not bet.pending:
        raise ReplayError(f"event {version}: bet {bet_id} was already taken")
    return bet


def _taken(bet: Bet, yes: str | None, no: str | None) -> Bet:
    """The bet once its other side is taken (positional: this runs per bet taken)."""
    return Bet(
        bet.id,
        bet.kind,
        bet.round,
        bet.proposition,
        yes,
        no,
        bet.yes_stake,
        bet.no_stake,
        False,
        bet.offered_to,
        bet.breakage,
    )


_APPLY: dict[type, Callable[[_Table, Any], None]] = {
    ev.DiceThrown: _dice_thrown,
    ev.MainCalled: _main_called,
    ev.ThrowVoided: _throw_voided,
    ev.TableOpened: _table_opened,
    ev.PlayerSeated: _player_seated,
    ev.PlayerLeft: _player_left,
    ev.TableClosed: _table_closed,
    ev.DieCastForCaster: _die_cast,
    ev.CasterChosen: _caster_chosen,
    ev.DicePassed: _dice_passed,
    ev.CasterForfeited: _caster_forfeited,
    ev.ServerDiceChosen: _server_dice_chosen,
    ev.SeedCommitted: _seed_committed,
    ev.ClientSeedGiven: _client_seed_given,
    ev.DiceDrawn: _dice_drawn,
    ev.SeedRevealed: _seed_revealed,
    ev.CasterStaked: _caster_staked,
    ev.StakeLaid: _stake_laid,
    ev.StakeCovered: _stake_covered,
    ev.OddsLaid: _odds_laid,
    ev.SideBetOffered: _side_offered,
    ev.SideBetAccepted: _side_accepted,
    ev.BetSettled: _bet_closed,
    ev.BetVoided: _bet_closed,
    ev.DisputeOpened: _dispute_opened,
    ev.DisputeResolved: _dispute_resolved,
    ev.BetAdjusted: _bet_adjusted,
}
# Each event of the vocabulary has a handler, and only those: an event type added to
# `engine.events.Event` alone fails here, on import, not on the first replay to meet it.
if _APPLY.keys() != set(ev.TABLE_EVENTS):
    raise TypeError(
        "engine.events.Event and the fold's handlers disagree on "
        + ", ".join(sorted(c.__name__ for c in _APPLY.keys() ^ set(ev.TABLE_EVENTS)))
    )


INITIAL = TableState()


def fold(events: Iterable[ev.Event], state: TableState = INITIAL) -> TableState:
    """Apply `events`, in order, to `state`. Same events in, same state out."""
    t = _Table(state)
    _apply(t, events)
    return t.freeze()


def _apply(t: _Table, events: Iterable[ev.Event]) -> None:
    apply = _APPLY
    try:
        for e in events:
            apply[e.__class__](t, e)
    except KeyError as exc:
        if isinstance(exc.args[0], type):
            raise ReplayError(f"unknown event type {exc.args[0].__name__}") from None
        raise


class Folding:
    """The fold kept open over a stream read a command at a time (the referee): each
    command's events applied to the same private copy of the table, and `state` frozen
    after them, the same state `fold` gives. `fold` copies the table before it applies
    anything, which cost the referee as much as the freeze, for every command.

    `admit` applies one event that a check finds right on the copy itself (the
    referee's quick checks, engine.quick), and leaves `state` to be frozen when it is
    next asked for: a run of commands checked that way freezes the table once, not once
    a command."""

    __slots__ = ("_state", "_table")

    def __init__(self, state: TableState = INITIAL) -> None:
        self._state: TableState | None = state
        self._table: _Table | None = None

    @property
    def state(self) -> TableState:
        """The table as the events applied so far leave it."""
        state = self._state
        if state is None:
            assert self._table is not None  # stale only after `admit`, which made it
            state = self._state = self._table.freeze()
        return state

    def fold(self, events: Iterable[ev.Event]) -> TableState:
        """Apply `events` to `state`, and keep the result as the new `state`."""
        t = self._table
        if t is None:
            t = self._table = _Table(self.state)
        elif self._state is None:  # frozen now that `admit` left it to be: a failure
            self._state = t.freeze()  # below loses nothing
        try:
            _apply(t, events)
        except BaseException:
            self._table = None  # applied in part: copied afresh from `state` next time
            raise
        state = self._state = t.freeze()
        return state

    def admit(self, event: ev.Event, check: Callable[[Any, Any], bool]) -> bool:
        """Apply `event` if `check(table, event)` says it is right on the table as it
        stands (the private copy, never frozen for it), and say whether it did. A check
        lets through only an event whose handler cannot refuse it."""
        t = self._table
        if t is None:
            t = self._table = _Table(self.state)
        if not check(t, event):
            return False
        try:
            _APPLY[event.__class__](t, event)
        except BaseException:
            self._table = None  # a check that let through what its handler refuses: a bug
            raise
        self._state = None
        return True
