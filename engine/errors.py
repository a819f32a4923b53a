"""Errors the engine raises.

Every refusal names the rule it enforces: `RuleBroken.rule` is a `Rule` whose value
is a stable, URL-safe code (the REST API uses it as the problem `type`), and the
message says in words what was wrong.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction


class HazardError(Exception):
    """Base class of every error the engine raises on purpose."""


class RuleSetError(HazardError, ValueError):
    """A rule set is malformed. `field` is the dotted path of the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ReplayError(HazardError):
    """An event stream cannot be folded: a gap, a repeat, or an unknown event."""


class Rule(enum.Enum):
    """The table rules a command can break. The value is the stable error code."""

    TABLE_CLOSED = "table-closed"
    """Nothing happens at a closed table."""
    NOT_SEATED = "not-seated"
    """Only seated players (and the setter) play and bet."""
    ALREADY_SEATED = "already-seated"
    """A player has one seat at a table."""
    TABLE_FULL = "table-full"
    """A table seats at most `engine.table.MAX_SEATS` players."""
    SETTER_CANNOT_SIT = "setter-cannot-sit"
    """The setter is the bank, not a player at the table."""
    HAS_OPEN_BETS = "has-open-bets"
    """A player with bets still open cannot leave until they resolve."""
    WRONG_PHASE = "wrong-phase"
    """The command does not belong to this part of the round."""
    NOT_YOUR_CAST = "not-your-cast"
    """Only the players still in the cast for first caster cast a die now."""
    INVALID_DIE = "invalid-die"
    """A die shows 1 to 6."""
    INVALID_MAIN = "invalid-main"
    """A main is 5, 6, 7, 8 or 9."""
    MAIN_IS_ROLLED = "main-is-rolled"
    """Under this rule set the main is thrown, not called."""
    THROW_BEFORE_MAIN = "throw-before-main"
    """The caster calls a main before throwing for it."""
    RECAST_MUST_KEEP_STANDING_DIE = "recast-must-keep-standing-die"
    """After one die went off and the caster chose to recast only it, the other die stands."""
    STANDING_DIE_NOT_OFF = "standing-die-not-off"
    """While a die stands only the other is cast, so only the other can go off."""
    INVALID_VOID = "invalid-void"
    """A void throw is cocked or wild and names which die was off."""
    PASS_NOT_ALLOWED = "pass-not-allowed"
    """The caster may pass the dice only where the rule set lets them."""
    INVALID_STAKE = "invalid-stake"
    """A stake is a whole, positive number of minor units."""
    STAKE_BELOW_MINIMUM = "stake-below-minimum"
    """The table has a minimum stake."""
    STAKE_ABOVE_MAXIMUM = "stake-above-maximum"
    """The table has a maximum stake."""
    BETTING_CLOSED = "betting-closed"
    """Stakes on the round are placed before its first throw."""
    CASTER_ALREADY_STAKED = "caster-already-staked"
    """The caster has one stake against the setter each round."""
    CASTER_CANNOT_LAY = "caster-cannot-lay"
    """Players lay stakes against the caster, not the caster against themself."""
    STAKE_NOT_COVERED = "stake-not-covered"
    """The caster must be able to match every stake they cover."""
    STAKES_PENDING = "stakes-pending"
    """Every stake laid against the caster is covered or refused before the throw."""
    REFUSAL_NOT_ALLOWED = "refusal-not-allowed"
    """Under hard-core play the caster covers every stake or forfeits the dice."""
    UNKNOWN_BET = "unknown-bet"
    """The bet does not exist or is no longer open."""
    ODDS_BEFORE_CHANCE = "odds-before-chance"
    """Odds are laid only once a chance is set."""
    ODDS_WITHOUT_STAKE = "odds-without-stake"
    """Odds back an original stake on this round."""
    ODDS_LIMIT = "odds-limit"
    """Odds are limited to a multiple of the original stake."""
    PAYOUT_NOT_PAYABLE = "payout-not-payable"
    """The odds would pay a fraction of a minor unit."""
    EXPOSURE_LIMIT = "exposure-limit"
    """The setter caps what it can lose on the table's open bets."""
    TOO_MANY_OPEN_BETS = "too-many-open-bets"
    """A table holds at most `engine.betting.MAX_OPEN_BETS` open bets and offers; players'
    offers and odds fill it to `engine.betting.PLAYERS_SHARE`, the rest is kept for the
    caster's stake, the lays and the setter's offers."""
    TOO_MANY_OWN_BETS = "too-many-own-bets"
    """A player is party to at most `engine.betting.MAX_BETS_PER_PLAYER` open bets and
    offers at a table (the caster's stake and covers aside)."""
    INVALID_PROPOSITION = "invalid-proposition"
    """A side bet names a proposition the engine can resolve."""
    PROPOSITION_DECIDED = "proposition-decided"
    """A side bet cannot be made on something already decided."""
    SELF_BET = "self-bet"
    """A bet is between two different participants."""
    NOT_OFFERED_TO_YOU = "not-offered-to-you"
    """An offer made to one participant is accepted by that participant only."""
    NOT_YOUR_BET = "not-your-bet"
    """Only the one who made an offer withdraws it."""
    SERVER_DICE = "server-dice"
    """At a server-dice table the server throws: the croupier enters no dice, and the
    caster gives a client seed with each throw."""
    CROUPIER_DICE = "croupier-dice"
    """At a croupier table the croupier enters the dice: there is no client seed."""
    UNKNOWN_DICE = "unknown-dice"
    """A table's dice are "croupier" or "server"."""
    INVALID_CLIENT_SEED = "invalid-client-seed"
    """A client seed is 1 to 64 printable ASCII characters."""
    SEED_MISMATCH = "seed-mismatch"
    """A revealed server seed hashes to the turn's commitment."""
    SEED_ALREADY_GIVEN = "seed-already-given"
    """A server throw is drawn from the first client seed logged for it: another seed
    for the same throw is refused (the logged one, sent again, draws it)."""
    DRAW_PENDING = "draw-pending"
    """Once a client seed is logged for a throw, that throw is drawn from it before
    anything else happens at the table."""
    SEED_NOT_GIVEN = "seed-not-given"
    """At a table that logs its client seeds, a server throw is drawn only from a seed
    logged for it first (`ClientSeedGiven`)."""

    ROUND_NOT_ENDED = "round-not-ended"
    """A round is disputed once it has ended and every bet of it is decided."""
    ROUND_TOO_OLD = "round-too-old"
    """A round is disputed within `engine.disputes.DISPUTE_WINDOW` rounds of its end."""
    NOT_IN_ROUND = "not-in-round"
    """A player disputes only a round they had money in."""
    INVALID_CLAIM = "invalid-claim"
    """A dispute says what went wrong, in 1 to 500 characters, and names its claimant."""
    NOT_A_THROW_OF_ROUND = "not-a-throw-of-round"
    """A disputed or corrected throw is one of the round's own recorded throws."""
    NO_SUCH_DISPUTE = "no-such-dispute"
    """The dispute does not exist at this table."""
    DISPUTE_RESOLVED = "dispute-resolved"
    """A dispute is resolved once."""
    INVALID_RESOLUTION = "invalid-resolution"
    """A resolution is "upheld", "voided" or "corrected", with the setter's reason."""
    ROUND_ADJUSTED = "round-adjusted"
    """A round is voided or corrected at most once."""
    CORRECTION_REACHES_BEYOND_ROUND = "correction-reaches-beyond-round"
    """A correction changes only what its round paid: one that would have ended the round
    at another throw, or passed the dice differently, is refused; void the round instead."""
    TOO_MANY_DISPUTES = "too-many-disputes"
    """A table holds at most `engine.disputes.MAX_OPEN_DISPUTES` open disputes; players'
    fill it to `engine.disputes.PLAYERS_SHARE`, the rest is kept for the setter and
    croupiers."""
    ALREADY_DISPUTED = "already-disputed"
    """A claimant holds one open dispute per round."""
    TOO_MANY_OWN_DISPUTES = "too-many-own-disputes"
    """A claimant holds at most `engine.disputes.MAX_DISPUTES_PER_CLAIMANT` open disputes
    at a table."""


@dataclass(frozen=True)
class Between:
    """An amount that falls between minor units (what odds would pay): `exact` minor
    units, written for the API with its unit ("105/2 minor units", "1/2 of a minor
    unit"), or with none, where the words say it (a breakage: "breakage 1/2")."""

    exact: Fraction
    unit: str = "minor units"

    def __str__(self) -> str:
        fraction = f"{self.exact.numerator}/{self.exact.denominator}"
        return f"{fraction} {self.unit}" if self.unit else fraction


Amount = int | Between
"""An amount a refusal names: whole minor units, or a payout between them."""


def minor_units(amount: Amount) -> str:
    """An amount as the engine, which knows no currency, writes it: 1250, "105/2 minor
    units"."""
    return str(amount)


class RuleBroken(HazardError):
    """A command broke a rule of the table; no event was produced.

    A refusal that names amounts keeps them as data: `detail` is then a template whose
    named fields ("the stake of {stake} is below ...") are `amounts`, and reads them in
    minor units (the API's words); `said` writes them in any other money, as the console
    writes them in the club's."""

    def __init__(
        self, rule: Rule, detail: str, amounts: Mapping[str, Amount] | None = None
    ) -> None:
        self.rule = rule
        self.template = detail
        self.amounts: Mapping[str, Amount] = dict(amounts or {})
        self.detail = self.said(minor_units)
        super().__init__(self.detail)

    @property
    def code(self) -> str:
        return self.rule.value

    def said(self, money: Callable[[Amount], str]) -> str:
        """The refusal with each of its amounts written by `money`."""
        if not self.amounts:
            return self.template
        return self.template.format_map({name: money(a) for name, a in self.amounts.items()})


class Disagreement(HazardError):
    """The file's stream and the engine disagree. `version` is the version of the
    event in the file that differs, or where an event the engine derives is missing;
    `reason` says in the game's words what differs (it is also the message)."""

    def __init__(self, version: int, reason: str) -> None:
        super().__init__(reason)
        self.version = version
        self.reason = reason
