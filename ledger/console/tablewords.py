"""The table page's words: a phase, a bet, a round's result, and what a write did, said
to the person who sent it (and to a screen reader, in the page's aria-live region).
Money is the club's (ledger.house), never bare minor units."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import engine as hz
from ledger.books.throws import RESULTS
from ledger.house import House

PHASES = {
    "seating": "Seating",
    "awaiting-main": "Waiting for the main",
    "first-throw": "The first throw after the main",
    "chance": "The chance is set",
    "closed": "Closed",
}

ROUND_RESULTS = {
    "nick": "nick",
    "out": "thrown out",
    "chance": "chance thrown",
    "main": "main before chance",
    "no-main": "no main",
    "abandoned": "abandoned",
}
"""A round's result (engine.RoundResult), as the rounds list writes it."""

SHORT = {
    "nick": "nick",
    "out": "out",
    "chance": "chance",
    "main": "main",
    "no-main": "no main",
    "main-set": "main",
    "no-main-yet": "again",
    "chance-set": "chance set",
    "no-decision": "again",
}
"""A throw's result in the strip of the last throws: a word."""

VOIDED = {
    "never-accepted": "never accepted",
    "undecidable": "undecided when its round ended",
    "refused": "refused",
    "withdrawn": "withdrawn",
    "dice-passed": "the dice passed",
    "caster-left": "the caster left",
    "offeree-left": "the player it was offered to left",
    "forfeit": "the caster forfeited",
    "table-closed": "the table closed",
}


def bet_words(bet: Mapping[str, Any]) -> str:
    """What an open bet is, as state_view gives it."""
    kind, yes, no = bet["kind"], bet["yes"], bet["no"]
    proposition = bet["proposition"]
    if kind == "caster":
        return f"{yes}'s stake against the setter"
    if kind == "laid":
        return f"{no} lays against {yes or 'the caster'}"
    if kind == "odds":  # the bettor backs the chance (yes) or the main (no), the setter the rest
        on_chance = no == hz.SETTER
        return f"{yes if on_chance else no}'s odds on the {'chance' if on_chance else 'main'}"
    what = proposition["kind"].replace("-", " ")
    if proposition["totals"]:
        what += " " + ", ".join(map(str, proposition["totals"]))
    offered = f", offered to {bet['offered_to']}" if bet.get("offered_to") else ""
    return f"side bet on {what}{offered}"


def kind_words(settled: Mapping[str, Any]) -> str:
    """Whose bet a throw closed: "ann's stake", "bob's lay", "ann's odds"."""
    kind, yes, no = settled["kind"], settled["yes"], settled["no"]
    if kind == "caster":
        return f"{yes}'s stake"
    if kind == "laid":
        return f"{no}'s lay"
    if kind == "odds":
        return f"{yes if no == hz.SETTER else no}'s odds"
    return "side bet"


def throw_words(throw: Mapping[str, Any]) -> str:
    """A throw and what it did: "5 and 6, 11: Nick: the caster wins"."""
    said = f"{throw['die1']} and {throw['die2']}, {throw['total']}: {RESULTS[throw['result']]}"
    if throw["result"] == "main-set":
        said += f" at {throw['main']}"
    elif throw["result"] == "chance-set":
        said += f" at {throw['chance']}"
    return said


def said(
    rule: str,
    answer: Mapping[str, Any],
    house: House,
    last: Mapping[str, Any] | None,
    caster: str | None = None,
) -> str:
    """What the write `rule` did, from its answer's events; a throw's from the table's
    last throw as the page now shows it; lays against `caster`, the table's."""
    events: Sequence[Mapping[str, Any]] = answer.get("events", ())
    if rule == "throws" and last is not None and any(e["type"] == "DiceThrown" for e in events):
        return f"Thrown: {throw_words(last)}." + _passed(last)
    laid = [e["payload"] for e in events if e["type"] == "StakeLaid"]
    if rule == "lays/everyone" and laid:  # one amount each, as the form gave it
        names = [p["bettor"] for p in laid]
        who = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
        each = "each lay" if len(names) > 1 else "lays"
        return f"{who} {each} {house.money(laid[0]['amount'])} against {caster or 'the caster'}."
    covered = [e["payload"] for e in events if e["type"] == "StakeCovered"]
    if len(covered) > 1:  # a "cover all"
        bets = [c["bet_id"] for c in covered]
        total = house.money(sum(c["amount"] for c in covered))
        named = f"{', '.join(bets[:-1])} and {bets[-1]}"
        return f"{covered[0]['caster']} covers {named}, {total} in all."
    parts = [_event(e["type"], e["payload"], house) for e in events]
    told = " ".join(p for p in parts if p)
    return told or "Done: nothing changed (the same form was sent before)."


def meanwhile(
    changes: Sequence[Mapping[str, Any]], house: House, last: Mapping[str, Any] | None
) -> str | None:
    """What changed at the table since a page last drew it (a write from another
    screen, the API, a player's phone), from its newest events, in the words a write's
    own answer uses: "bob lays £5.00 against the caster (b3)." None when nothing said."""
    parts = [_event(c["type"], c["payload"], house) for c in changes]
    if last is not None and any(c["type"] == "DiceThrown" for c in changes):
        parts.append(f"Thrown: {throw_words(last)}." + _passed(last))
    told = " ".join(p for p in parts if p)
    return told or None


def _passed(throw: Mapping[str, Any]) -> str:
    if throw["dice_pass"]:
        return f" The dice pass to {throw['passed_to'] or 'nobody'}."
    return ""


def _event(kind: str, p: Mapping[str, Any], house: House) -> str:
    money = house.money
    match kind:
        case "PlayerSeated":
            return f"{p['player']} is seated."
        case "PlayerLeft":
            return f"{p['player']} leaves the table."
        case "DieCastForCaster":
            return f"{p['player']} cast a {p['die']}."
        case "CasterChosen":
            return f"{p['player']} is the first caster."
        case "MainCalled":
            return f"The main is {p['main']}."
        case "ThrowVoided":
            return f"The throw is void ({p['reason']}): throw again."
        case "CasterStaked":
            return f"{p['caster']} stakes {money(p['amount'])} against the setter ({p['bet_id']})."
        case "StakeLaid":
            return f"{p['bettor']} lays {money(p['amount'])} against the caster ({p['bet_id']})."
        case "StakeCovered":
            return f"{p['caster']} covers {p['bet_id']} with {money(p['amount'])}."
        case "OddsLaid":
            return (
                f"{p['bettor']} lays {money(p['stake'])} odds on the {p['on']}, to win "
                f"{money(p['payout'])} ({p['bet_id']})."
            )
        case "SideBetOffered":
            return f"{p['offerer']} offers side bet {p['bet_id']}: {money(p['stake'])}."
        case "SideBetAccepted":
            return f"{p['acceptor']} takes side bet {p['bet_id']}."
        case "BetVoided":
            back = ", ".join(f"{money(t['amount'])} to {t['target']}" for t in p["transfers"])
            return f"{p['bet_id']} is void ({VOIDED.get(p['reason'], p['reason'])}): {back}."
        case "DicePassed":
            return f"The dice pass to {p['caster'] or 'nobody'}."
        case "CasterForfeited":
            return f"{p['caster']} forfeits the dice."
        case "TableClosed":
            return "The table is closed."
    return ""


def settled_words(settled: Mapping[str, Any], house: House) -> str:
    """A bet a throw closed: who was paid what, or what went back."""
    if settled["outcome"] == "voided":
        back = ", ".join(f"{house.money(r['amount'])} to {r['to']}" for r in settled["returned"])
        return (
            f"void ({VOIDED.get(settled['reason'], settled['reason'])}): {back or 'nothing'} back"
        )
    winner = "the setter" if settled["winner"] == hz.SETTER else settled["winner"]
    return (
        f"{winner} is paid {house.money(settled['paid'])} "
        f"({house.money(settled['won'], signed=True)})"
    )
