"""The table as the events leave it: a frozen snapshot, built by `engine.fold`."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from engine.events import Limits, Proposition
from engine.rules import RuleSet

SETTER = "setter"
"""The bank's account at every table. Player names may not take it."""


class Phase(enum.Enum):
    """Where the table is."""

    NEW = "new"
    """No table has been opened on this stream yet."""
    SEATING = "seating"
    """Players sit and cast a die each to choose the first caster."""
    AWAITING_MAIN = "awaiting-main"
    """The caster calls or throws for the main; stakes on the round are placed."""
    FIRST_THROW = "first-throw"
    """The main is set; the next throw nicks, throws out or sets the chance."""
    CHANCE = "chance"
    """The chance is set: the chance wins, the main loses, anything else throws again."""
    CLOSED = "closed"
    """The table is closed; nothing more happens."""


ROUND_PHASES = frozenset({Phase.AWAITING_MAIN, Phase.FIRST_THROW, Phase.CHANCE})
"""The phases of a round in play."""


class RoundResult(enum.Enum):
    """How a round ended."""

    NICK = "nick"
    """The first throw nicked: the caster wins."""
    OUT = "out"
    """The first throw threw out: the caster loses."""
    CHANCE = "chance"
    """The chance came before the main: the caster wins."""
    MAIN = "main"
    """The main came before the chance: the caster loses."""
    NO_MAIN = "no-main"
    """The main was thrown outside 5 to 9 where that loses (first-roll mains)."""
    ABANDONED = "abandoned"
    """The caster left or forfeited, or the table closed, before the round in play was
    decided (in any phase, before the main as after it): neither win nor loss."""

    @property
    def caster_won(self) -> bool | None:
        if self is RoundResult.ABANDONED:
            return None
        return self in (RoundResult.NICK, RoundResult.CHANCE)


class BetKind(enum.Enum):
    CASTER = "caster"
    """The caster's stake against the setter, at even money."""
    LAID = "laid"
    """A player's stake laid against the caster, matched by the caster."""
    ODDS = "odds"
    """An odds bet against the setter on the chance or the main."""
    SIDE = "side"
    """A side bet between two participants, each naming their own stake."""


@dataclass(frozen=True, slots=True)
class Bet:
    """An open bet or a pending offer.

    `yes` wins if the proposition comes true, `no` if it does not; each holds their
    stake in the bet's escrow. The side not yet taken is None while an offer waits
    (a stake laid against the caster waits for the caster to cover it).
    """

    id: str
    kind: BetKind
    round: int
    proposition: Proposition
    yes: str | None
    no: str | None
    yes_stake: int
    no_stake: int
    pending: bool
    offered_to: str | None = None
    breakage: Fraction = Fraction(0)

    @property
    def parties(self) -> tuple[str, ...]:
        return tuple(p for p in (self.yes, self.no) if p is not None)

    def held_by(self, party: str) -> int:
        """What `party` has in this bet's escrow (and so the most it can lose)."""
        return (self.yes_stake if self.yes == party else 0) + (
            self.no_stake if self.no == party else 0
        )


@dataclass(frozen=True)
class TableState:
    version: int = 0
    phase: Phase = Phase.NEW
    rules: RuleSet | None = None
    limits: Limits = Limits()
    seats: tuple[str, ...] = ()
    caster: str | None = None
    round: int = 0
    """The current round's number, from 1; bets record it."""
    main: int | None = None
    chance: int | None = None
    throws: int = 0
    """Valid throws in the current round."""
    consecutive_losses: int = 0
    consecutive_wins: int = 0
    last_result: RoundResult | None = None
    """How the table's last round ended."""
    wins: int = 0
    losses: int = 0
    abandoned: int = 0
    contest: tuple[str, ...] = ()
    """Players casting a die for first caster; after a tie, only those tied."""
    casts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    standing: tuple[int, int] | None = None
    """After a void throw where only the off die is recast: (off die, standing value)."""
    last_total: int | None = None
    dice: str = "croupier"
    """Who throws the table's dice: "croupier" (entered) or "server" (engine.serverdice)."""
    commitment: str | None = None
    """A server-dice table: the SHA-256 (hex) of the seed of the turn in play, if any."""
    nonce: int = 0
    """A server-dice table: the server throws of the turn so far (the next one's nonce)."""
    client_seed: str | None = None
    """A server-dice table: the caster's client seed logged for the throw `nonce`
    (`ClientSeedGiven`), which that throw is drawn from next; None when none waits."""
    logs_seeds: bool = False
    """A server-dice table that has logged a client seed before its throw: from then
    on every server throw is drawn from a seed logged for it first. A table written
    before the ledger logged seeds has logged none."""
    bets: Mapping[str, Bet] = field(default_factory=lambda: MappingProxyType({}))
    disputes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """Disputes opened and not yet resolved: dispute id -> the round disputed."""
    disputed_by: Mapping[str, tuple[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    """Who opened each open dispute: dispute id -> (claimant, role), which the caps on
    open disputes count (engine.disputes)."""
    adjusted: frozenset[int] = frozenset()
    """Rounds a resolved dispute voided or corrected: none is adjusted twice."""

    @property
    def in_play(self) -> bool:
        """A round is in play: a caster holds the dice (from the main on or waiting for
        it). Not while the table seats, before the first caster or after the dice passed
        to nobody, nor once it is closed: then `round` is only the number the next round
        will take."""
        return self.caster is not None and self.phase in ROUND_PHASES

    @property
    def open_bets(self) -> tuple[Bet, ...]:
        return tuple(self.bets.values())

    def exposure(self, party: str = SETTER) -> int:
        """The most `party` stands to lose if every open bet goes against it."""
        return sum(b.held_by(party) for b in self.bets.values())
