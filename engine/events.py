"""What happened at the table: small frozen facts, named in the past tense.

Every event carries `version`, its place in the table's stream (1, 2, 3, ...). The
fold refuses a stream that skips or repeats a version. Money never moves without an
event saying so: placing a bet holds stakes in the bet's escrow (see `engine.money`),
and `BetSettled` / `BetVoided` carry the transfers that empty it.
"""

from __future__ import annotations

import enum
import typing
from dataclasses import dataclass
from fractions import Fraction

from engine.rules import RuleSet

CAPS = 2
"""The edition of the house caps a table opened now plays under (`Limits.caps`)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """A table's limits, in minor units."""

    min_stake: int = 1
    max_stake: int | None = None
    max_exposure: int | None = None
    """The most the setter may stand to lose if every open bet went against it."""
    caps: int = CAPS
    """The edition of the house caps on open bets and disputes the table was opened
    under, recorded with it so that a table is always judged by the rules it was played
    under, however they change later: 1, the table's own caps alone (1000 open bets, 100
    open disputes), as every table opened before there was a second; 2, each player's
    too (engine.betting, engine.disputes: one open dispute per claimant and round, 10
    a claimant, 100 open bets a player, and room kept for the round's stakes and the
    staff's disputes)."""


@dataclass(frozen=True, slots=True)
class Transfer:
    """Money moving from one account to another, in integer minor units."""

    source: str
    target: str
    amount: int


class PropositionKind(enum.Enum):
    """What a bet is on. Every bet at the table is on one of these."""

    CASTER_WINS = "caster-wins"
    """The caster wins the current round (nick, or chance before main)."""
    CHANCE_BEFORE_MAIN = "chance-before-main"
    """This round's chance is thrown before its main. Void if no chance is set."""
    NICK_FIRST_THROW = "nick-first-throw"
    """The first throw after the main nicks. Void if the round ends before it."""
    NEXT_TOTAL = "next-total"
    """The next valid throw's total is one of `totals`."""


@dataclass(frozen=True, slots=True)
class Proposition:
    kind: PropositionKind
    totals: frozenset[int] = frozenset()

    @property
    def round_scoped(self) -> bool:
        """Decided by the round it was made in, and void if that round cannot decide it."""
        return self.kind is not PropositionKind.NEXT_TOTAL


CASTER_WINS = Proposition(PropositionKind.CASTER_WINS)
CHANCE_BEFORE_MAIN = Proposition(PropositionKind.CHANCE_BEFORE_MAIN)


# -- the table ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableOpened:
    version: int
    rules: RuleSet
    limits: Limits


@dataclass(frozen=True, slots=True)
class PlayerSeated:
    version: int
    player: str


@dataclass(frozen=True, slots=True)
class PlayerLeft:
    version: int
    player: str


@dataclass(frozen=True, slots=True)
class TableClosed:
    version: int


# -- choosing the caster and passing the dice -------------------------------


@dataclass(frozen=True, slots=True)
class DieCastForCaster:
    """One die cast to choose the first caster: lowest goes first, ties cast again."""

    version: int
    player: str
    die: int


@dataclass(frozen=True, slots=True)
class CasterChosen:
    version: int
    player: str


@dataclass(frozen=True, slots=True)
class DicePassed:
    """The dice go to `caster`, the next seat to the left. `reason` says why."""

    version: int
    caster: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class CasterForfeited:
    """Hard-core play: the caster could not cover every stake and loses the dice."""

    version: int
    caster: str


# -- the round ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MainCalled:
    version: int
    main: int


@dataclass(frozen=True, slots=True)
class DiceThrown:
    version: int
    die1: int
    die2: int


@dataclass(frozen=True, slots=True)
class ThrowVoided:
    """A cocked or wild throw, which does not count.

    `off` is the die that went off (1 or 2) or 0 when both did. When one die went off
    and the caster recasts only it, `standing` is the value of the die that stands;
    when the caster recasts both, `standing` is None.
    """

    version: int
    reason: str
    off: int
    standing: int | None


# -- server dice (engine.serverdice) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerDiceChosen:
    """The table's dice are thrown by the server, not entered by the croupier. Only
    ever the table's second event, written with its TableOpened."""

    version: int


@dataclass(frozen=True, slots=True)
class SeedCommitted:
    """A caster's turn begins: `commitment` is SHA-256 of the turn's server seed, as 64
    lowercase hex digits. The seed stays secret until `SeedRevealed` ends the turn."""

    version: int
    commitment: str


@dataclass(frozen=True, slots=True)
class ClientSeedGiven:
    """The caster's `client_seed` for the turn's throw `nonce`, logged in a write of its
    own, with its receipt, before anything is drawn from it: the `DiceDrawn` of that
    throw comes next and is drawn from this seed, never from another. So a bank that
    knows the server seed, and so the dice, cannot refuse the throw and have the caster
    give another seed for it: the seed it refused stays in the log."""

    version: int
    client_seed: str
    nonce: int


@dataclass(frozen=True, slots=True)
class DiceDrawn:
    """A server throw: the caster's `client_seed`, the throw's `nonce` (its place in the
    turn, from 0) and the dice HMAC-SHA256(server seed, client_seed:nonce:cursor) gave
    (`engine.serverdice.draw`). The `DiceThrown` of the same dice follows. Its seed is
    the one the `ClientSeedGiven` just before it logged (a table written before seeds
    were logged has none)."""

    version: int
    client_seed: str
    nonce: int
    die1: int
    die2: int


@dataclass(frozen=True, slots=True)
class SeedRevealed:
    """A caster's turn ended: `seed` is its server seed (64 lowercase hex digits, 32
    bytes), whose SHA-256 is the turn's commitment. Every throw of the turn can now be
    drawn again from it."""

    version: int
    seed: str


# -- bets -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CasterStaked:
    """The caster's stake against the setter, at even money."""

    version: int
    bet_id: str
    caster: str
    amount: int


@dataclass(frozen=True, slots=True)
class StakeLaid:
    """A player lays a stake against the caster; pending until covered or refused."""

    version: int
    bet_id: str
    bettor: str
    amount: int


@dataclass(frozen=True, slots=True)
class StakeCovered:
    version: int
    bet_id: str
    caster: str
    amount: int


@dataclass(frozen=True, slots=True)
class OddsLaid:
    """An odds bet against the setter once the chance is set.

    `on` is "chance" or "main". The setter holds `payout`, the exact payout or, under
    the round-down policy, the payout rounded down; `breakage` is what was rounded off.
    """

    version: int
    bet_id: str
    bettor: str
    on: str
    stake: int
    payout: int
    breakage: Fraction


@dataclass(frozen=True, slots=True)
class SideBetOffered:
    """`offerer` stakes `stake` that `proposition` is `backs`, against `asks` from the
    taker; `to` names the only participant who may take it, or None for anyone."""

    version: int
    bet_id: str
    offerer: str
    proposition: Proposition
    backs: bool
    stake: int
    asks: int
    to: str | None


@dataclass(frozen=True, slots=True)
class SideBetAccepted:
    version: int
    bet_id: str
    acceptor: str
    amount: int


@dataclass(frozen=True, slots=True)
class BetSettled:
    """A bet resolved: `transfers` pay the whole escrow to `winner`. `breakage` is what
    rounding took off that payment: only an odds bet won by its bettor under the
    round-down policy has any."""

    version: int
    bet_id: str
    winner: str
    transfers: tuple[Transfer, ...]
    breakage: Fraction


@dataclass(frozen=True, slots=True)
class BetVoided:
    """A bet that cannot resolve (refused, withdrawn, never accepted, undecidable, or
    the table closed): `transfers` return every stake held."""

    version: int
    bet_id: str
    reason: str
    transfers: tuple[Transfer, ...]


# -- disputes (engine.disputes) -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DisputeOpened:
    """A dispute over round `round`, which has ended: `claimant` says, in `claim`, what
    went wrong. `role` is how the claimant comes to it: "setter", "croupier", or
    "player" (who had money in the round). `throw` is the version of the throw disputed
    and `die1`, `die2` the dice the claimant says it showed, when given (else None).
    Its id is "d" and its version."""

    version: int
    dispute_id: str
    round: int
    claimant: str
    role: str
    claim: str
    throw: int | None
    die1: int | None
    die2: int | None


@dataclass(frozen=True, slots=True)
class DisputeResolved:
    """The setter's decision on a dispute, with its `reason`: "upheld" (nothing
    changes), "voided" (every bet of the round reversed) or "corrected" (the throw
    `throw` showed `die1`+`die2`, and what each bet should have paid is made good).
    The `BetAdjusted` events that follow move the money."""

    version: int
    dispute_id: str
    round: int
    resolution: str
    reason: str
    throw: int | None
    die1: int | None
    die2: int | None


@dataclass(frozen=True, slots=True)
class BetAdjusted:
    """Money a dispute's resolution moves for one bet of its round, party to party:
    `adjustment` is "reversal" (the round voided: each party back where it stood before
    the bet) or "correction" (the difference between what was paid and what the
    corrected throw pays). The bet's own events stay as they were."""

    version: int
    bet_id: str
    dispute_id: str
    round: int
    adjustment: str
    transfers: tuple[Transfer, ...]


Event = (
    TableOpened
    | PlayerSeated
    | PlayerLeft
    | TableClosed
    | DieCastForCaster
    | CasterChosen
    | DicePassed
    | CasterForfeited
    | MainCalled
    | DiceThrown
    | ThrowVoided
    | ServerDiceChosen
    | SeedCommitted
    | ClientSeedGiven
    | DiceDrawn
    | SeedRevealed
    | CasterStaked
    | StakeLaid
    | StakeCovered
    | OddsLaid
    | SideBetOffered
    | SideBetAccepted
    | BetSettled
    | BetVoided
    | DisputeOpened
    | DisputeResolved
    | BetAdjusted
)
"""Every event a table's stream may hold. This union is the one list of them, kept a
union so that type checkers see it: `TABLE_EVENTS` is read off it, the fold refuses to
load without a handler for each, and the ledger's codec stores exactly these (and its
own account events)."""

TABLE_EVENTS: tuple[type[Event], ...] = typing.get_args(Event)
"""The classes of `Event`, in the order written."""
