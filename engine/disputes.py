"""Disputed rounds: opened, answered at once, and resolved by events that point back.

A round is read back as its *record*: the commands recorded in it (each a group of
events, the first saying which command it was, as `engine.referee` reads a stream),
the state before it and after it, and the money of every bet placed in it. The
record is built by the referee, so building it re-derives the round from its events
under the table's recorded rule set: a round whose recorded settlements differ from
the engine's is read as far as it agrees, and says where it stops agreeing.

The setter resolves a dispute in one of three ways, each a `DisputeResolved` with the
setter's reason:

- **upheld:** nothing moves.
- **voided:** every bet of the round is reversed, party to party (`BetAdjusted`
  "reversal"): each party ends where it stood before the round's bets. A voided bet
  moved no money and needs no reversal.
- **corrected:** a throw of the round showed other dice than recorded. The round is
  derived again with them, from that throw to its end, and each bet's difference
  between what was paid and what should have been is posted (`BetAdjusted`
  "correction"). Only a correction that stays inside its round is made, judged by what
  the round settles and how the table goes on from it: every recorded command of the
  round still possible, each doing what it did but for the round's own bets it decides
  (who wins them, and what is paid); the round ending at the same throw; the bets of
  other rounds it decides, decided as recorded; and the table left as the recorded round
  left it for the next (the seats, the caster and the dice, the bets open, and the
  caster's run of wins and losses where the rule set passes the dice on one). Which
  throw of the round decides one of its bets may change. Any other correction is
  refused with `Rule.CORRECTION_REACHES_BEYOND_ROUND`: void the round.

A dispute is answered at once (`answer`): the round derived again and, given dice, what
it would have been with them, and whether the setter's correction to them would be made
now, judged by the checks `resolve` makes, in its order (so the answer never offers a
correction that the resolution then refuses, and names the rule it would).

Nothing is edited: the round's events stay as recorded, the dispute and its
adjustments come after them. Standard library and engine only; the dice come in as data.
"""

from __future__ import annotations

import dataclasses

from engine import events as ev
from engine import whatif
from engine.dice import require_dice
from engine.errors import Rule, RuleBroken
from engine.phrase import Phrase, of_refusal
from engine.rounds import (
    DISPUTE_WINDOW,
    Group,
    RoundBook,
    RoundRecord,
    net,
    settle_up,
)
from engine.state import SETTER, TableState
from engine.whatif import Answer, Paid, WhatIf, bet_order, require_throw, what_if

MAX_OPEN_DISPUTES = 100
"""A table holds at most this many disputes waiting for the setter."""
STAFF_RESERVE = 20
"""Places of `MAX_OPEN_DISPUTES` kept for the setter and croupiers: players' disputes
fill the table to `PLAYERS_SHARE` only, so players can never shut the staff out."""
PLAYERS_SHARE = MAX_OPEN_DISPUTES - STAFF_RESERVE
MAX_DISPUTES_PER_CLAIMANT = 10
"""The most disputes one claimant (a name in a role) may hold open at a table, each over
a round of its own: one claimant cannot fill the table for the others."""
MAX_TEXT = 500
"""The longest claim or reason, in characters."""
ROLES = (SETTER, "croupier", "player")
"""How a claimant comes to a dispute: the setter (the bank, whose role and account share
the name), a croupier, or a player who had money in the round."""
RESOLUTIONS = ("upheld", "voided", "corrected")


# -- opening --------------------------------------------------------------------------------


def open_dispute(
    state: TableState,
    record: RoundRecord | None,
    round: int,
    claimant: str,
    role: str,
    claim: str,
    throw: int | None = None,
    die1: int | None = None,
    die2: int | None = None,
) -> list[ev.Event]:
    """Open a dispute over round `round`. `record` is the round's (None when it cannot
    be read back: it has not ended). `role` is how the claimant comes to it ("setter",
    "croupier" or "player"); a player must have had money in the round. `throw`, the
    version of a throw of the round, and the dice the claimant says it showed are
    optional; dice without a throw are about the round's last throw."""
    if state.rules is None:
        raise RuleBroken(Rule.WRONG_PHASE, "no table has been opened")
    if type(round) is not int or round < 1:
        raise RuleBroken(Rule.ROUND_NOT_ENDED, f"rounds are numbered from 1, not {round!r}")
    if round < state.round - DISPUTE_WINDOW:
        raise RuleBroken(
            Rule.ROUND_TOO_OLD,
            f"round {round} ended more than {DISPUTE_WINDOW} rounds ago: the table is in "
            f"round {state.round}",
        )
    if round >= state.round or record is None or not record.ended:
        raise RuleBroken(
            Rule.ROUND_NOT_ENDED,
            f"round {round} has not ended: a round is disputed once it is over"
            if round <= state.round
            else f"round {round} has not been played: the table's round is {state.round}",
        )
    if record.open:
        raise RuleBroken(
            Rule.ROUND_NOT_ENDED,
            f"bets {', '.join(sorted(record.open))} of round {round} are still open: "
            "dispute the round once they are decided",
        )
    if role not in ROLES:
        raise RuleBroken(Rule.INVALID_CLAIM, f"a claimant is a {', '.join(ROLES)}, not {role!r}")
    if type(claimant) is not str or not claimant:
        raise RuleBroken(Rule.INVALID_CLAIM, "a dispute names its claimant")
    if role == "player" and not record.had_money(claimant):
        raise RuleBroken(
            Rule.NOT_IN_ROUND,
            f"{claimant!r} had no money in round {round}: only the setter, a croupier, or a "
            "player with a stake in it may dispute it",
        )
    _require_text(claim, "claim", Rule.INVALID_CLAIM)
    _require_room(state, round, claimant, role)
    if die1 is not None or die2 is not None or throw is not None:
        throw = require_throw(record, throw, Rule.NOT_A_THROW_OF_ROUND)
        if (die1 is None) != (die2 is None):
            raise RuleBroken(Rule.INVALID_DIE, "a claim names both dice, or neither")
        require_dice(*(die for die in (die1, die2) if die is not None))
    version = state.version + 1
    return [
        ev.DisputeOpened(
            version=version,
            dispute_id=f"d{version}",
            round=round,
            claimant=claimant,
            role=role,
            claim=claim,
            throw=throw,
            die1=die1,
            die2=die2,
        )
    ]


def _require_room(state: TableState, round: int, claimant: str, role: str) -> None:
    """Room for `claimant`'s dispute over `round`: none of theirs over it open already,
    fewer than their cap open, and room at the table (players within their share). A
    table opened under the first caps (`Limits.caps`) has only the table's."""
    if state.limits.caps < 2:
        if len(state.disputes) >= MAX_OPEN_DISPUTES:
            raise RuleBroken(
                Rule.TOO_MANY_DISPUTES,
                f"the table has {len(state.disputes)} disputes waiting for the setter, the "
                "most it holds: resolve some first",
            )
        return
    mine = [d for d, who in state.disputed_by.items() if who == (claimant, role)]
    same = next((d for d in mine if state.disputes.get(d) == round), None)
    if same is not None:
        raise RuleBroken(
            Rule.ALREADY_DISPUTED,
            f"{claimant!r} has dispute {same} over round {round} open already: one open "
            "dispute per claimant and round; the setter resolves it first",
        )
    if len(mine) >= MAX_DISPUTES_PER_CLAIMANT:
        raise RuleBroken(
            Rule.TOO_MANY_OWN_DISPUTES,
            f"{claimant!r} has {len(mine)} disputes open at this table, the most one "
            "claimant may: wait for the setter to resolve some",
        )
    cap = PLAYERS_SHARE if role == "player" else MAX_OPEN_DISPUTES
    if len(state.disputes) >= cap:
        kept = f" ({STAFF_RESERVE} of them kept for the setter and croupiers)"
        raise RuleBroken(
            Rule.TOO_MANY_DISPUTES,
            f"the table has {len(state.disputes)} disputes waiting for the setter, the most "
            f"it holds{kept if role == 'player' else ''}: resolve some first",
        )


def _require_text(text: object, what: str, rule: Rule) -> str:
    if type(text) is not str or not text.strip():
        raise RuleBroken(rule, f"the {what} says in words what happened: it cannot be empty")
    if len(text) > MAX_TEXT:
        raise RuleBroken(rule, f"the {what} is {len(text)} characters, over {MAX_TEXT}")
    if any(ord(c) < 32 and c not in "\n\t" for c in text):
        raise RuleBroken(rule, f"the {what} holds a control character")
    return text


# -- resolving ------------------------------------------------------------------------------


def resolve(
    state: TableState,
    record: RoundRecord | None,
    dispute_id: str,
    resolution: str,
    reason: str,
    throw: int | None = None,
    die1: int | None = None,
    die2: int | None = None,
    earlier: str | None = None,
) -> list[ev.Event]:
    """The setter's decision on dispute `dispute_id`: "upheld", "voided" or "corrected"
    (naming the throw, by version, and the dice it showed). `record` is the disputed
    round's; `earlier`, how the dispute was resolved, if it was (the state keeps open
    disputes only: the ledger's read model says). Returns the `DisputeResolved` and a
    `BetAdjusted` per bet whose money moves."""
    number = state.disputes.get(dispute_id) if isinstance(dispute_id, str) else None
    if number is None and earlier is not None:
        raise _resolved_already(dispute_id, earlier)
    if number is None:
        raise RuleBroken(
            Rule.NO_SUCH_DISPUTE,
            f"there is no open dispute {dispute_id!r} at this table: it was never opened, or "
            "it is resolved already",
        )
    if resolution not in RESOLUTIONS:
        raise RuleBroken(
            Rule.INVALID_RESOLUTION,
            f"a dispute is resolved {', '.join(RESOLUTIONS)}, not {resolution!r}",
        )
    _require_text(reason, "reason", Rule.INVALID_RESOLUTION)
    if resolution != "corrected" and (throw, die1, die2) != (None, None, None):
        raise RuleBroken(
            Rule.INVALID_RESOLUTION, "only a correction names a throw and the dice it showed"
        )
    if record is None:
        raise RuleBroken(Rule.ROUND_NOT_ENDED, f"round {number} cannot be read back")
    draft: list[ev.Event] = [
        ev.DisputeResolved(
            version=state.version + 1,
            dispute_id=dispute_id,
            round=number,
            resolution=resolution,
            reason=reason,
            throw=throw,
            die1=die1,
            die2=die2,
        )
    ]
    if resolution == "upheld":
        return draft
    broken = _not_adjustable(state, record)
    if broken is not None:
        raise broken
    if resolution == "voided":
        moves = {
            bet_id: settle_up({p: -d for p, d in net(record.money[bet_id]).items()})
            for bet_id in sorted(record.money, key=bet_order)
        }
        kind = "reversal"
    else:
        moves = _correction(state, record, throw, die1, die2)
        kind = "correction"
    for bet_id, transfers in moves.items():
        if transfers:
            draft.append(
                ev.BetAdjusted(
                    version=state.version + 1 + len(draft),
                    bet_id=bet_id,
                    dispute_id=dispute_id,
                    round=number,
                    adjustment=kind,
                    transfers=transfers,
                )
            )
    return draft


def _correction(
    state: TableState,
    record: RoundRecord,
    throw: int | None,
    die1: int | None,
    die2: int | None,
) -> dict[str, tuple[ev.Transfer, ...]]:
    if throw is None or die1 is None or die2 is None:
        raise RuleBroken(
            Rule.INVALID_RESOLUTION, "a correction names the throw (its version) and both dice"
        )
    require_throw(record, throw, Rule.NOT_A_THROW_OF_ROUND)
    require_dice(die1, die2)
    what = what_if(record, throw, die1, die2)
    broken = _not_correctable(state, record, what)
    if broken is not None:
        raise broken
    return dict(what.adjustments)


# -- the answer -----------------------------------------------------------------------------


def answer(
    state: TableState,
    record: RoundRecord,
    throw: int | None = None,
    die1: int | None = None,
    die2: int | None = None,
    dispute_id: str | None = None,
    earlier: str | None = None,
) -> Answer:
    """The service's answer to a dispute over `record`'s round, with the table at
    `state`: the round derived again and, given dice, what it would have been with them
    (engine.whatif), and whether the setter's correction to those dice would be made, as
    `resolve` judges it now: when it would not, the what-if's `refused` says why and
    `refused_rule` under which rule, and it posts no `adjustments`. `dispute_id` and
    `earlier` say how the dispute was resolved, if it was. Writes nothing."""
    found = whatif.answer(record, throw, die1, die2)
    what = found.what_if
    if what is None:
        return found
    # In the order `resolve` asks: the first rule broken is the one named.
    resolved = None
    if dispute_id is not None and earlier is not None:
        resolved = _resolved_already(dispute_id, earlier)
    broken = resolved or _not_adjustable(state, record) or _not_correctable(state, record, what)
    if broken is None:
        return found
    refused = dataclasses.replace(
        what, refused=of_refusal(broken), refused_rule=broken.rule, adjustments={}
    )
    return dataclasses.replace(found, what_if=refused)


def _resolved_already(dispute_id: str, earlier: str) -> RuleBroken:
    return RuleBroken(
        Rule.DISPUTE_RESOLVED,
        f"dispute {dispute_id} was resolved already ({earlier}): a dispute is resolved once",
    )


def _not_adjustable(state: TableState, record: RoundRecord) -> RuleBroken | None:
    """Why the round can be neither voided nor corrected (None if it can)."""
    if record.number in state.adjusted:
        return RuleBroken(
            Rule.ROUND_ADJUSTED,
            f"round {record.number} was voided or corrected already: a round is adjusted once",
        )
    if record.open:
        return RuleBroken(
            Rule.ROUND_NOT_ENDED, f"bets {', '.join(sorted(record.open))} are still open"
        )
    return None


def _not_correctable(state: TableState, record: RoundRecord, what: WhatIf) -> RuleBroken | None:
    """Why the round's throw `what.throw` cannot be corrected to `what`'s dice (None if it
    can, posting `what.adjustments`)."""
    if state.dice == "server":
        return RuleBroken(
            Rule.SERVER_DICE,
            "the server drew this table's dice, and anyone can draw them again from the "
            "revealed seed: there is no mis-entered throw to correct; void the round instead",
        )
    if record.mismatch is not None:
        return Phrase(
            "the round's recorded events do not agree with the engine (",
            record.mismatch,
            "): it cannot be derived again; void the round instead",
        ).refusal(Rule.CORRECTION_REACHES_BEYOND_ROUND)
    recorded = next((t.die1, t.die2) for t in record.throws if t.version == what.throw)
    if recorded == (what.die1, what.die2):
        return RuleBroken(
            Rule.INVALID_RESOLUTION,
            f"the throw at version {what.throw} is recorded as {what.die1}+{what.die2} "
            "already: uphold instead",
        )
    if what.refused_rule is not None and what.refused is not None:
        return what.refused.refusal(what.refused_rule)  # its amounts kept, as the answer's
    return None


__all__ = [
    "DISPUTE_WINDOW",
    "MAX_DISPUTES_PER_CLAIMANT",
    "MAX_OPEN_DISPUTES",
    "PLAYERS_SHARE",
    "STAFF_RESERVE",
    "Answer",
    "Group",
    "Paid",
    "RoundBook",
    "RoundRecord",
    "WhatIf",
    "answer",
    "net",
    "open_dispute",
    "resolve",
    "settle_up",
]
