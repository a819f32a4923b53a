"""A player's statement in the game's own words: each entry (ledger.books.statements)
as a person reads it, "won the odds on the chance at t3, round 5 (the chance thrown)",
"laid a stake against the caster at t1, round 2", "deposit", never an event's name or
a bare number of minor units. Money in the words is the club's (ledger.house, handed
in by whoever shows them).

Every event that can post to a player's account (ledger.store.vocabulary.MOVES_MONEY)
has its words here: a test holds it so. Any page, sheet or answer that shows a
statement to a person says it with `describe`, or `sentence` with the amount after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Protocol

from ledger.books.limits import WORDS
from ledger.books.statements import Entry


class House(Protocol):
    """How the club writes money (ledger.house.House, which sits above the books)."""

    def money(self, minor: int, *, signed: bool = False) -> str: ...

    def when(self, recorded_at: str) -> str: ...


RESULTS = {
    "nick": "nicked",
    "out": "thrown out",
    "chance": "the chance thrown",
    "main": "the main thrown",
    "no-main": "no main",
    "abandoned": "abandoned",
}
"""How a round ended (engine.state.RoundResult), as a settlement says why."""

VOIDS = {
    "refused": "refused by the caster",
    "withdrawn": "withdrawn",
    "never-accepted": "never taken",
    "undecidable": "the round could not decide it",
    "dice-passed": "the dice passed",
    "caster-left": "the caster left",
    "offeree-left": "the player it was offered to left",
    "forfeit": "the caster forfeited",
    "table-closed": "the table closed",
}
"""Why a bet was voided (engine.betting, engine.table), as its refund says."""

PROPOSITIONS = {
    "caster-wins": ("the caster wins the round", "the caster does not win the round"),
    "chance-before-main": (
        "the chance comes before the main",
        "the chance does not come before the main",
    ),
    "nick-first-throw": ("the first throw nicks", "the first throw does not nick"),
}
"""What a side bet is on (engine.events.PropositionKind), backed and laid against."""

ROUND_SCOPED = {"caster", "laid", "odds"}
"""Kinds of bet a round's result decides (a side bet may be on the next total)."""


def describe(entry: Entry, house: House) -> str:
    """The entry in words, without its amount (which a page shows beside it)."""
    words = _WORDS.get(entry.type)
    if words is None:  # no event outside MOVES_MONEY posts to an account
        return f"an entry of the log at position {entry.position}"
    return words(entry, house)


def sentence(entry: Entry, house: House) -> str:
    """The entry in words with what it moved: "deposit: +£10.00"; a bet lost, which
    moved nothing then, without."""
    said = describe(entry, house)
    return said if entry.amount == 0 else f"{said}: {house.money(entry.amount, signed=True)}"


# -- the words, event by event ----------------------------------------------------------


def _at(entry: Entry) -> str:
    """Where: "at t1, round 2", or "at t1" for what is of no round."""
    return f"at {entry.table}" + (f", round {entry.round}" if entry.round is not None else "")


def _odds(placed: Mapping[str, Any] | None) -> str:
    """An odds bet's price as the setter lays it: "at 2 to 1"."""
    if not placed or not placed.get("stake"):
        return ""
    ratio = Fraction(int(placed["payout"]), int(placed["stake"]))
    return f", at {ratio.numerator} to {ratio.denominator}"


def _proposition(placed: Mapping[str, Any] | None, backs: bool) -> str:
    """What a side bet is on, from the side `backs` takes: "that the first throw nicks"."""
    if not placed or not isinstance(placed.get("proposition"), Mapping):
        return ""
    on = placed["proposition"]
    if on.get("kind") == "next-total":
        totals = [str(t) for t in sorted(on.get("totals", []))]
        listed = totals[0] if len(totals) == 1 else ", ".join(totals[:-1]) + f" or {totals[-1]}"
        verb = "totals" if backs else "does not total"
        return f" that the next throw {verb} {listed}"
    yes, no = PROPOSITIONS.get(on.get("kind", ""), ("it comes true", "it does not"))
    return f" that {yes if backs else no}"


def _side(entry: Entry) -> str:
    """A side bet, as the side the player is on: its offerer backs what it offered, its
    taker the opposite."""
    placed = entry.bet.placed if entry.bet is not None else None
    if not placed:
        return "the side bet"
    backs = bool(placed.get("backs", True))
    return "the side bet" + _proposition(
        placed, backs if placed.get("offerer") == entry.player else not backs
    )


def _bet(entry: Entry) -> str:
    """The bet an entry is about: "the stake", "the odds on the chance", ..."""
    bet = entry.bet
    if bet is None:
        return "the bet"
    match bet.kind:
        case "caster":
            return "the stake"
        case "laid":
            return "the laid stake"
        case "odds":
            return f"the odds on the {(bet.placed or {}).get('on', 'chance')}"
        case "side":
            return _side(entry)
    return f"bet {bet.bet_id}"


def _why(entry: Entry) -> str:
    """Why a bet that its round decides went as it did: how the round ended."""
    bet = entry.bet
    if bet is None:
        return ""
    on = (bet.placed or {}).get("proposition")
    next_total = isinstance(on, Mapping) and on.get("kind") == "next-total"
    said = RESULTS.get(entry.result or "")
    return f" ({said})" if said and (bet.kind in ROUND_SCOPED or not next_total) else ""


def _deposit(entry: Entry, house: House) -> str:
    return "deposit"


def _withdrawal(entry: Entry, house: House) -> str:
    return "withdrawal"


def _caster_staked(entry: Entry, house: House) -> str:
    return f"staked as caster against the setter {_at(entry)}"


def _laid(entry: Entry, house: House) -> str:
    return f"laid a stake against the caster {_at(entry)}"


def _covered(entry: Entry, house: House) -> str:
    return f"covered a stake laid against you {_at(entry)}"


def _odds_laid(entry: Entry, house: House) -> str:
    on = entry.payload.get("on", "chance")
    return f"laid odds on the {on} {_at(entry)}{_odds(entry.payload)}"


def _offered(entry: Entry, house: House) -> str:
    p = entry.payload
    stakes = f"{house.money(int(p['stake']))} against {house.money(int(p['asks']))}"
    to = f", to {p['to']}" if isinstance(p.get("to"), str) else ""
    on = _proposition(p, bool(p.get("backs", True)))
    return f"offered a side bet{on} {_at(entry)}, {stakes}{to}"


def _accepted(entry: Entry, house: House) -> str:
    placed = entry.bet.placed if entry.bet is not None else None
    whose = f"{placed['offerer']}'s" if placed and isinstance(placed.get("offerer"), str) else "a"
    taken = _proposition(placed, not bool(placed.get("backs", True))) if placed else ""
    return f"took {whose} side bet{taken} {_at(entry)}"


def _settled(entry: Entry, house: House) -> str:
    won = entry.payload.get("winner") == entry.player
    return f"{'won' if won else 'lost'} {_bet(entry)} {_at(entry)}{_why(entry)}"


def _voided(entry: Entry, house: House) -> str:
    reason = VOIDS.get(str(entry.payload.get("reason")), "voided")
    return f"{_bet(entry)} returned {_at(entry)} ({reason})"


def _adjusted(entry: Entry, house: House) -> str:
    """A dispute's adjustment: a voided round reverses each bet, a corrected throw
    adjusts each bet by what it should have paid."""
    p = entry.payload
    dispute = entry.dispute or {}
    dice = dispute.get("dice")
    said = f"dispute {p.get('dispute_id')} {_at(entry)}"
    if p.get("adjustment") != "correction":
        return f"{said}: the round voided, {_bet(entry)} reversed"
    throw = f"the throw corrected to {dice[0]}+{dice[1]}" if dice else "the throw corrected"
    return f"{said}: {throw}, adjusting {_bet(entry)}"


_WORDS: dict[str, Callable[[Entry, House], str]] = {
    "Deposited": _deposit,
    "Withdrawn": _withdrawal,
    "CasterStaked": _caster_staked,
    "StakeLaid": _laid,
    "StakeCovered": _covered,
    "OddsLaid": _odds_laid,
    "SideBetOffered": _offered,
    "SideBetAccepted": _accepted,
    "BetSettled": _settled,
    "BetVoided": _voided,
    "BetAdjusted": _adjusted,
}
"""The words of each event that posts to a player's account, by its type."""

WORDED = frozenset(_WORDS)


# -- the player's other events, as a receipt names them ----------------------------------

OTHERS: dict[str, Callable[[Mapping[str, Any], str, House], str]] = {
    "AccountOpened": lambda p, at, house: "your account opened",
    "CreditLimitSet": lambda p, at, house: f"your credit limit set to {house.money(p['limit'])}",
    "PlayerSeated": lambda p, at, house: f"sat down at {at}",
    "PlayerLeft": lambda p, at, house: f"left {at}",
    "DieCastForCaster": lambda p, at, house: f"cast a {p['die']} for first caster at {at}",
    "CasterChosen": lambda p, at, house: f"chosen to cast first at {at}",
    "DicePassed": lambda p, at, house: f"the dice passed to you at {at}",
    "CasterForfeited": lambda p, at, house: f"forfeited the dice at {at}",
    "ClientSeedGiven": lambda p, at, house: f"gave your seed for throw {p['nonce']} at {at}",
    "DisputeOpened": lambda p, at, house: (
        f"opened dispute {p['dispute_id']} over round {p['round']} at {at}"
    ),
    "LimitSet": lambda p, at, house: (
        f"your limit on {WORDS[p['kind']]} set to "
        + ("none" if p["limit"] is None else house.money(p["limit"]))
        + f", from {house.when(p['effective_at'])}"
    ),
    "BreakTaken": lambda p, at, house: f"took a {p['kind']} until {house.when(p['until'])}",
}
"""The events naming a player that move no money of theirs, in words: what a receipt of
one says it is."""


def event_words(kind: str, payload: Mapping[str, Any], table: str, house: House) -> str | None:
    """An event of the player's that is no entry of their statement, in words (None
    for one without words here); `table` is where, for a table's event."""
    words = OTHERS.get(kind)
    try:
        return None if words is None else words(payload, table, house)
    except (KeyError, TypeError):  # a payload without what its words need
        return None
