"""Events and the commands they record, in the game's words: what the referee says
where a stream and the engine disagree (engine.referee), and what a what-if says where
a round could not have gone as the claimant says (engine.whatif). Standard library and
engine only.

Each description is a `Phrase` (engine.phrase): its text says amounts in minor units, as
the API does, and it keeps them as data, so a page says them in the club's money.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from engine import events as ev
from engine.money import ESCROW
from engine.phrase import Phrase, fraction_of_unit
from engine.rules import CoverPolicy
from engine.state import SETTER, TableState

_NEXT_COMMITMENT = "(the next turn's commitment)"
_ENDING_SEED = "(the ending turn's seed)"


def _who(name: str) -> str:
    return "the setter" if name == SETTER else f"player {name}"


def _money(transfers: Sequence[ev.Transfer]) -> Phrase:
    """Transfers out of a bet's escrow in words: "ann is paid 40"."""
    parts = []
    for t in transfers:
        if t.source.startswith(ESCROW):
            parts.append(Phrase(f"{t.target} is paid ", t.amount))
        else:
            parts.append(Phrase(t.amount, f" moves from {t.source} to {t.target}"))
    return _joined(parts, ", ") if parts else Phrase("no money moves")


def _joined(phrases: Sequence[Phrase], between: str) -> Phrase:
    """`between`.join(phrases), keeping their amounts."""
    parts: list[Phrase | str] = []
    for k, phrase in enumerate(phrases):
        parts += [between, phrase] if k else [phrase]
    return Phrase(*parts)


def _fraction(value: Fraction) -> Phrase:
    """A breakage, part of a minor unit: "1/2", "0"."""
    return Phrase(fraction_of_unit(value))


def describe(e: ev.Event) -> Phrase:
    """One event in words (a Phrase: its amounts kept as data)."""
    return Phrase(_describe(e))


def _describe(e: ev.Event) -> Phrase | str:
    name = type(e).__name__
    match e:
        case ev.BetSettled():
            paid = sum(t.amount for t in e.transfers if t.target == e.winner)
            text = Phrase(f"BetSettled {e.bet_id} pays {_who(e.winner)} ", paid)
            if e.breakage:
                text = Phrase(text, " with breakage ", _fraction(e.breakage))
            return text
        case ev.BetVoided():
            returned = _joined([Phrase(t.amount, f" to {t.target}") for t in e.transfers], ", ")
            return Phrase(f"BetVoided {e.bet_id} ({e.reason}) returning ", returned or "nothing")
        case ev.DiceThrown():
            return f"DiceThrown {e.die1}+{e.die2}"
        case ev.DicePassed():
            to = e.caster if e.caster is not None else "nobody"
            return f"DicePassed to {to} ({e.reason})"
        case ev.OddsLaid():
            return Phrase(
                f"OddsLaid {e.bet_id}: {e.bettor} lays ",
                e.stake,
                f" on the {e.on}, payout ",
                e.payout,
                " with breakage ",
                _fraction(e.breakage),
            )
        case ev.StakeCovered():
            return Phrase(f"StakeCovered {e.bet_id}: {e.caster} covers ", e.amount)
        case ev.StakeLaid():
            return Phrase(f"StakeLaid {e.bet_id}: {e.bettor} lays ", e.amount)
        case ev.CasterStaked():
            return Phrase(f"CasterStaked {e.bet_id}: {e.caster} stakes ", e.amount)
        case ev.SideBetAccepted():
            return Phrase(f"SideBetAccepted {e.bet_id}: {e.acceptor} takes it for ", e.amount)
        case ev.SideBetOffered():
            return Phrase(
                f"SideBetOffered {e.bet_id}: {e.offerer} stakes ", e.stake, " against ", e.asks
            )
        case ev.CasterChosen() | ev.PlayerSeated() | ev.PlayerLeft():
            return f"{name} {e.player}"
        case ev.CasterForfeited():
            return f"CasterForfeited {e.caster}"
        case ev.MainCalled():
            return f"MainCalled {e.main}"
        case ev.DieCastForCaster():
            return f"DieCastForCaster {e.player} casts {e.die}"
        case ev.ThrowVoided():
            return f"ThrowVoided ({e.reason}, die {e.off} off)"
        case ev.ClientSeedGiven():
            return f"ClientSeedGiven {e.client_seed!r} for nonce {e.nonce} at version {e.version}"
        case ev.DiceDrawn():
            return (
                f"DiceDrawn {e.die1}+{e.die2} (client seed {e.client_seed!r}, nonce {e.nonce}) "
                f"at version {e.version}"
            )
        case ev.SeedCommitted():
            return f"SeedCommitted {e.commitment or _NEXT_COMMITMENT}"
        case ev.SeedRevealed():
            return f"SeedRevealed {e.seed or _ENDING_SEED}"
        case ev.DisputeOpened():
            dice = f", dice {e.die1}+{e.die2}" if e.die1 is not None else ""
            at = f", throw at version {e.throw}" if e.throw is not None else ""
            return (
                f"DisputeOpened {e.dispute_id} on round {e.round} by {e.role} {e.claimant}"
                f"{at}{dice}"
            )
        case ev.DisputeResolved():
            dice = f" to {e.die1}+{e.die2} at version {e.throw}" if e.die1 is not None else ""
            return f"DisputeResolved {e.dispute_id} {e.resolution}{dice}"
        case ev.BetAdjusted():
            return Phrase(f"BetAdjusted {e.bet_id} ({e.adjustment}): ", _money(e.transfers))
    return name


def command_words(cause: ev.Event | None, state: TableState) -> Phrase:
    """The command a group's first event records, in words, as run on `state` (a Phrase:
    its amounts kept as data)."""
    return Phrase(_command_words(cause, state))


def _command_words(cause: ev.Event | None, state: TableState) -> Phrase | str:
    if cause is None:
        return "the command"
    at = f"at version {cause.version}"
    rules = state.rules.name if state.rules is not None else "no"
    match cause:
        case ev.DiceThrown():
            return f"the throw {cause.die1}+{cause.die2} {at} under {rules} rules"
        case ev.MainCalled():
            return f"the main called ({cause.main}) {at}"
        case ev.TableOpened():
            return f"the table's opening {at}"
        case ev.PlayerSeated():
            return f"{cause.player} sitting down {at}"
        case ev.PlayerLeft():
            return f"{cause.player} leaving {at}"
        case ev.TableClosed():
            return f"the table closing {at}"
        case ev.DieCastForCaster():
            return f"{cause.player}'s cast of {cause.die} for first caster {at}"
        case ev.ThrowVoided():
            return f"the void throw ({cause.reason}) {at}"
        case ev.ClientSeedGiven():
            return f"the client seed {cause.client_seed!r} given for throw {cause.nonce} {at}"
        case ev.DiceDrawn():
            return f"the server throw {cause.die1}+{cause.die2} {at} under {rules} rules"
        case ev.ServerDiceChosen():
            return f"the choice of server dice {at}"
        case ev.CasterStaked():
            return Phrase("the caster's stake of ", cause.amount, f" {at}")
        case ev.StakeLaid():
            return Phrase(f"{cause.bettor}'s stake of ", cause.amount, f" laid {at}")
        case ev.StakeCovered():
            if state.rules is not None and state.rules.cover is CoverPolicy.FORFEIT:
                return f"the caster covering the stakes laid {at} under {rules} rules"
            return f"the caster covering {cause.bet_id} {at}"
        case ev.OddsLaid():
            return Phrase(
                f"{cause.bettor}'s odds of ",
                cause.stake,
                f" on the {cause.on} {at} under {rules} rules (main {state.main}, chance "
                f"{state.chance})",
            )
        case ev.SideBetOffered():
            return f"{cause.offerer}'s side bet offer {at}"
        case ev.SideBetAccepted():
            return f"{cause.acceptor} taking side bet {cause.bet_id} {at}"
        case ev.CasterForfeited():
            return f"the caster forfeiting under {rules} rules {at}"
        case ev.DicePassed():
            return f"the caster passing the dice by choice {at}"
        case ev.DisputeOpened():
            return f"the dispute {cause.dispute_id} over round {cause.round} opened {at}"
        case ev.DisputeResolved():
            return f"the dispute {cause.dispute_id} resolved ({cause.resolution}) {at}"
        case ev.BetVoided():
            bet = state.bets.get(cause.bet_id)
            return {
                "refused": f"the caster refusing {cause.bet_id} {at}",
                "withdrawn": f"side bet {cause.bet_id} withdrawn {at}",
                "caster-left": f"the caster {state.caster} leaving {at}",
                "offeree-left": (
                    f"{bet.offered_to if bet is not None else 'a player'} leaving {at}"
                ),
                "table-closed": f"the table closing {at}",
                "dice-passed": f"the caster passing the dice by choice {at}",
                "forfeit": f"the caster forfeiting under {rules} rules {at}",
            }.get(cause.reason, f"a command {at}")
    return f"{type(cause).__name__} {at}"


def same_kind(got: ev.Event, want: ev.Event, what: str) -> Phrase:
    """Two events of one kind (and one bet) that differ in what they say (`what`, the
    command that derives them, may be a Phrase: its amounts are kept)."""
    match got, want:
        case ev.BetSettled(), ev.BetSettled():
            if got.winner != want.winner or got.transfers != want.transfers:
                return Phrase(
                    describe(got),
                    ", but ",
                    what,
                    f" decides {got.bet_id} for {_who(want.winner)}: ",
                    _money(want.transfers),
                )
            return Phrase(
                f"BetSettled {got.bet_id} records breakage ",
                _fraction(got.breakage),
                ", but ",
                what,
                " gives breakage ",
                _fraction(want.breakage),
            )
        case ev.OddsLaid(), ev.OddsLaid():
            if (got.payout, got.breakage) != (want.payout, want.breakage):
                return Phrase(
                    f"OddsLaid {got.bet_id}: payout ",
                    got.payout,
                    " with breakage ",
                    _fraction(got.breakage),
                    ", the rules give payout ",
                    want.payout,
                    " with breakage ",
                    _fraction(want.breakage),
                    " (",
                    what,
                    ")",
                )
        case ev.BetVoided(), ev.BetVoided():
            return Phrase(describe(got), ", but ", what, " voids it: ", describe(want))
    fields = [
        f"{name} {getattr(got, name)!r} where the engine has {getattr(want, name)!r}"
        for name in got.__dataclass_fields__
        if getattr(got, name) != getattr(want, name)
    ]
    return Phrase(describe(got), " differs from what ", what, " derives: ", "; ".join(fields))
