"""Where the money goes: holds when a bet is placed, payouts when it resolves.

Each bet has its own escrow account. Placing a bet moves each side's stake into it;
settling pays the whole escrow to the winner, voiding returns each stake, so every
bet's escrow ends at zero and every set of transfers sums to zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from fractions import Fraction
from math import ceil, floor

from engine import events as ev
from engine.errors import Amount, Between, Rule, RuleBroken
from engine.odds import odds_ratio
from engine.rules import Rounding
from engine.state import SETTER, Bet

ESCROW = "escrow:"
_EXACT = Fraction(0)
"""No breakage: a Fraction made once, as every settlement and every exact odds payout
names it (a Fraction is immutable, so one serves them all)."""


def escrow(bet_id: str) -> str:
    return ESCROW + bet_id


def holds(event: ev.Event) -> tuple[ev.Transfer, ...]:
    """The stakes an event puts into escrow (empty for events that hold nothing)."""
    match event:
        case ev.CasterStaked(bet_id=b, caster=caster, amount=amount):
            return (ev.Transfer(caster, escrow(b), amount), ev.Transfer(SETTER, escrow(b), amount))
        case (
            ev.StakeLaid(bet_id=b, bettor=who, amount=amount)
            | ev.StakeCovered(bet_id=b, caster=who, amount=amount)
            | ev.SideBetAccepted(bet_id=b, acceptor=who, amount=amount)
        ):
            return (ev.Transfer(who, escrow(b), amount),)
        case ev.OddsLaid(bet_id=b, bettor=bettor, stake=stake, payout=payout):
            return (ev.Transfer(bettor, escrow(b), stake), ev.Transfer(SETTER, escrow(b), payout))
        case ev.SideBetOffered(bet_id=b, offerer=offerer, stake=stake):
            return (ev.Transfer(offerer, escrow(b), stake),)
        case (
            ev.BetSettled(transfers=transfers)
            | ev.BetVoided(transfers=transfers)
            | ev.BetAdjusted(transfers=transfers)
        ):
            return transfers
    return ()


def postings(events: Iterable[ev.Event]) -> tuple[ev.Transfer, ...]:
    """Every transfer the events make, holds and payouts alike, in order."""
    return tuple(t for e in events for t in holds(e))


def balances(transfers: Iterable[ev.Transfer]) -> Counter[str]:
    """Net movement per account. Its values always sum to zero."""
    net: Counter[str] = Counter()
    for t in transfers:
        net[t.source] -= t.amount
        net[t.target] += t.amount
    return net


def payout_transfers(bet: Bet, winner: str) -> tuple[ev.Transfer, ...]:
    """Pay the bet's whole escrow to the winner."""
    return (ev.Transfer(escrow(bet.id), winner, bet.yes_stake + bet.no_stake),)


def settled_breakage(bet: Bet, winner: str) -> Fraction:
    """What rounding took off the payment that settles `bet` to `winner`.

    Only the setter's side of an odds bet is ever rounded (down, to the payout it
    holds), and it is paid only to a winning bettor: the setter taking back its own
    stake, with the bettor's, is paid exactly.
    """
    return bet.breakage if winner != SETTER else _EXACT


def refund_transfers(bet: Bet) -> tuple[ev.Transfer, ...]:
    """Return each stake held to whoever put it up."""
    return tuple(
        ev.Transfer(escrow(bet.id), party, stake)
        for party, stake in ((bet.yes, bet.yes_stake), (bet.no, bet.no_stake))
        if party is not None
    )


def odds_payout(
    main: int, chance: int, on_chance: bool, stake: int, rounding: Rounding, most: int | None = None
) -> tuple[int, Fraction]:
    """What the setter lays against an odds stake, and what rounding took off.

    Hoyle's odds rarely divide a stake into whole minor units. The default policy
    refuses such a stake and names the nearest stakes that pay exactly; the
    round-down policy pays the whole units and records the rest as breakage, but
    refuses a stake whose whole payout would round down to nothing. `most` is the
    largest stake the bettor may lay now: the stakes a refusal names are never above it.
    """
    ratio = odds_ratio(main, chance, on_chance)
    exact = ratio * stake
    if exact.denominator == 1:
        return int(exact), _EXACT
    # The amounts are named fields of the refusal (RuleBroken.amounts): the engine writes
    # them in minor units, and a page in the club's money.
    odds = f"odds of {ratio.numerator}/{ratio.denominator} on a stake of " + "{stake} would pay "
    amounts: dict[str, Amount] = {"stake": stake}
    if most is not None:
        amounts["most"] = most
    if rounding is Rounding.ROUND_DOWN:
        paid = floor(exact)
        if paid > 0:
            return paid, exact - paid
        smallest = ceil(1 / ratio)
        raise RuleBroken(
            Rule.PAYOUT_NOT_PAYABLE,
            odds
            + "{payout}, which rounds down to nothing; "
            + (
                "the smallest stake that pays is {smallest}"
                if most is None or smallest <= most
                else "no stake that may be laid (at most {most}) pays anything"
            ),
            amounts | {"payout": Between(exact, "of a minor unit"), "smallest": smallest},
        )
    step = ratio.denominator  # stakes that are multiples of it pay whole units
    lower = stake - stake % step
    nearest = [s for s in (lower, lower + step) if s > 0]
    named = "the nearest stakes that pay exactly are "
    if most is not None and any(s > most for s in nearest):
        # Name only what the bettor may lay: the highest payable stake within `most`.
        nearest = sorted(
            {s for s in (min(lower, most - most % step), lower + step) if 0 < s <= most}
        )
        many = len(nearest) > 1
        named = (
            f"the nearest {'stakes' if many else 'stake'} that pay{'' if many else 's'} "
            + "exactly and may be laid (at most {most}) "
            + f"{'are' if many else 'is'} "
            if nearest
            else "no stake that may be laid (at most {most}) pays exactly"
        )
    payable = {f"payable{i}": s for i, s in enumerate(nearest)}
    raise RuleBroken(
        Rule.PAYOUT_NOT_PAYABLE,
        odds + "{payout}; " + named + " and ".join("{" + name + "}" for name in payable),
        amounts | {"payout": Between(exact)} | payable,
    )
