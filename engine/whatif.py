"""What a round would have been with other dice at one of its throws, and whether a
correction to them stays inside the round (engine.disputes says what that takes).

The round's commands are run again from that throw on, as the referee runs them; the
answer a dispute gets at once (`answer`) says whether the recorded settlements match and,
given dice, what each bet would have done. Writes nothing. Standard library and engine
only.

What the what-if says (`stopped`, `refused`) is a `Phrase` (engine.phrase): the API's
words, in minor units, with the amounts they name kept as data, so that a page says them
in the club's money.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from engine import events as ev
from engine.causes import derive
from engine.dice import require_dice
from engine.errors import HazardError, Rule, RuleBroken
from engine.fold import fold
from engine.money import holds
from engine.phrase import Phrase, of_refusal
from engine.rounds import Group, RoundRecord, net, settle_up
from engine.state import TableState
from engine.words import command_words, describe

_SEED_EVENTS = (ev.SeedCommitted, ev.SeedRevealed)
_CLOSING = (ev.BetSettled, ev.BetVoided)


def require_throw(record: RoundRecord, throw: int | None, rule: Rule) -> int:
    """`throw`, a version of one of the round's throws (its last, when None)."""
    throws = record.throws
    if not throws:
        raise RuleBroken(rule, f"round {record.number} has no throw")
    if throw is None:
        return throws[-1].version
    if type(throw) is not int or throw not in {t.version for t in throws}:
        listed = ", ".join(str(t.version) for t in throws)
        raise RuleBroken(
            rule,
            f"version {throw!r} is not a throw of round {record.number}: its throws are at "
            f"versions {listed}",
        )
    return throw


# -- the answer -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Paid:
    """What one bet of the round did: `outcome` "settled" (to `winner`), "voided", or
    "open"; `net`, each party up or down on it."""

    bet_id: str
    outcome: str
    winner: str | None
    net: Mapping[str, int]


@dataclass(frozen=True)
class WhatIf:
    """The round with other dice at one throw: its result (None if it would not have
    ended at its recorded commands), main and chance, and what each bet would have done.
    `stopped` says why the what-if stops short (a recorded command that could not have
    happened); `refused` why the correction would not be made (None: it would be, moving
    `adjustments`), and `refused_rule` the rule it would be refused under. Here that is
    only whether the correction stays inside its round; engine.disputes.answer judges it
    as the setter's resolution would, at the table as it stands."""

    throw: int
    die1: int
    die2: int
    result: str | None
    main: int | None
    chance: int | None
    bets: tuple[Paid, ...]
    stopped: Phrase | None
    refused: Phrase | None
    adjustments: Mapping[str, tuple[ev.Transfer, ...]] = field(default_factory=dict)
    refused_rule: Rule | None = None


@dataclass(frozen=True)
class Answer:
    """The service's answer to a dispute: whether the recorded settlements are what the
    engine derives from the round's events, the round as recorded, and a what-if."""

    matches: bool
    mismatch: Phrase | None
    result: str | None
    bets: tuple[Paid, ...]
    what_if: WhatIf | None


def answer(
    record: RoundRecord, throw: int | None = None, die1: int | None = None, die2: int | None = None
) -> Answer:
    """Re-derive the round and, given dice, what it would have been with them. Writes
    nothing."""
    found = None
    if die1 is not None and die2 is not None:
        at = require_throw(record, throw, Rule.NOT_A_THROW_OF_ROUND)
        found = what_if(record, at, die1, die2)
    return Answer(
        record.mismatch is None,
        record.mismatch,
        _result(record.after, record.number),
        _paid(record.groups, record.money, record.open),
        found,
    )


def _result(after: TableState, number: int) -> str | None:
    return after.last_result.value if after.round == number + 1 and after.last_result else None


def _paid(
    groups: Iterable[Group] | Iterable[Sequence[ev.Event]],
    money: Mapping[str, Sequence[ev.Transfer]],
    still_open: Iterable[str] = (),
) -> tuple[Paid, ...]:
    closings: dict[str, ev.BetSettled | ev.BetVoided] = {}
    for g in groups:
        for e in g.events if isinstance(g, Group) else g:
            if isinstance(e, _CLOSING):
                closings[e.bet_id] = e
    paid = []
    for bet_id in sorted(money, key=bet_order):
        closing = closings.get(bet_id)
        if bet_id in still_open or closing is None:
            paid.append(Paid(bet_id, "open", None, net(money[bet_id])))
        elif isinstance(closing, ev.BetSettled):
            paid.append(Paid(bet_id, "settled", closing.winner, net(money[bet_id])))
        else:
            paid.append(Paid(bet_id, "voided", None, net(money[bet_id])))
    return tuple(paid)


def bet_order(bet_id: str) -> int:
    return int(bet_id[1:]) if bet_id[1:].isdigit() else 0


# -- deriving the round again with other dice --------------------------------------------------


class _Rederived(NamedTuple):
    groups: list[list[ev.Event]]
    """The round's groups from the corrected throw on, as derived with the new dice."""
    after: TableState
    stopped: Phrase | None
    money: dict[str, tuple[ev.Transfer, ...]]
    main: int | None
    chance: int | None
    """The main and the chance the corrected round set (the last of each, if it set
    several: a main rolled again after a re-toss)."""


def _rerun(record: RoundRecord, throw: int, die1: int, die2: int) -> tuple[int, _Rederived]:
    """Run the round's commands again from the one whose throw is `throw`, with the dice
    `die1`, `die2` there. Stops where a recorded command could not have been run, or
    once the corrected round has ended.

    Each command is run at its recorded place in the stream, whatever the commands
    before it derived there: a bet decided a throw earlier or later moves the events
    between along, but not the commands (a bet offered after it keeps its id, which is
    its version), nor another round's dispute recorded between two of them."""
    index = _group_of_throw(record, throw)
    state = record.groups[index].before
    main, chance = _set(state, record.number, None, None)
    derived: list[list[ev.Event]] = []
    stopped = None
    for i in range(index, len(record.groups)):
        group = record.groups[i]
        if i > index and (then := record.groups[i - 1].then):
            # Another round's dispute, recorded between two of this round's commands:
            # it happened, whatever the dice.
            state = fold(then, _at(state, then[0].version))
        state = _at(state, group.events[0].version)
        cause = group.events[0]
        if i == index:
            cause = _with_dice(cause, die1, die2)
        try:
            events: list[ev.Event] = [
                e for e in derive(state, cause) if not isinstance(e, _SEED_EVENTS)
            ]
        except (HazardError, TypeError, ValueError) as exc:
            detail = of_refusal(exc) if isinstance(exc, RuleBroken) else str(exc)
            stopped = Phrase(
                command_words(group.events[0], group.before),
                " (",
                describe(group.events[0]),
                ") could not have happened: ",
                detail,
            )
            break
        seeds = [e for e in group.events if isinstance(e, _SEED_EVENTS)]
        if seeds:  # the turn's seed events, as recorded, where the command puts them
            first = events[-1].version + 1 if events else state.version + 1
            events += [dataclasses.replace(s, version=first + k) for k, s in enumerate(seeds)]
        derived.append(events)
        for e in events:
            state = fold([e], state)
            main, chance = _set(state, record.number, main, chance)
        if state.round > record.number:
            break
    money: dict[str, list[ev.Transfer]] = {}
    for g in record.groups[:index]:
        for e in g.events:
            _collect(money, e, record.money)
    for events in derived:
        for e in events:
            _collect(money, e, record.money)
    moved = {b: tuple(t) for b, t in money.items()}
    return index, _Rederived(derived, state, stopped, moved, main, chance)


def _at(state: TableState, version: int) -> TableState:
    """`state`, for the event recorded at `version` to follow it (_rerun)."""
    if state.version == version - 1:
        return state
    return dataclasses.replace(state, version=version - 1)


def _set(
    state: TableState, number: int, main: int | None, chance: int | None
) -> tuple[int | None, int | None]:
    """The main and chance of round `number` as far as `state`: the throw that ends it
    clears them, so they are kept from before."""
    if state.round != number:
        return main, chance
    return (
        state.main if state.main is not None else main,
        state.chance if state.chance is not None else chance,
    )


def _collect(
    money: dict[str, list[ev.Transfer]], e: ev.Event, of_round: Mapping[str, object]
) -> None:
    bet_id = getattr(e, "bet_id", None)
    if bet_id is not None and bet_id in of_round and not isinstance(e, ev.BetAdjusted):
        money.setdefault(bet_id, []).extend(holds(e))


def _group_of_throw(record: RoundRecord, throw: int) -> int:
    for i, group in enumerate(record.groups):
        for e in group.events:
            if isinstance(e, ev.DiceThrown) and e.version == throw:
                return i
    raise RuleBroken(Rule.NOT_A_THROW_OF_ROUND, f"version {throw} is not a throw of the round")


def _with_dice(cause: ev.Event, die1: int, die2: int) -> ev.Event:
    if isinstance(cause, ev.DiceThrown | ev.DiceDrawn):
        return dataclasses.replace(cause, die1=die1, die2=die2)
    raise RuleBroken(Rule.NOT_A_THROW_OF_ROUND, "the throw is not a command of its own")


def what_if(record: RoundRecord, throw: int, die1: int, die2: int) -> WhatIf:
    require_dice(die1, die2)
    index, redo = _rerun(record, throw, die1, die2)
    refused = _beyond(record, index, redo, die1, die2)
    groups = [g.events for g in record.groups[:index]] + redo.groups
    still_open = [b for b in redo.money if b in redo.after.bets]
    ended = redo.after.round > record.number
    adjustments = {} if refused else _adjustments(record.money, redo.money)
    beyond = Rule.CORRECTION_REACHES_BEYOND_ROUND if refused else None
    return WhatIf(
        throw,
        die1,
        die2,
        _result(redo.after, record.number) if ended else None,
        redo.main,
        redo.chance,
        _paid(groups, redo.money, still_open),
        redo.stopped,
        refused and Phrase(refused, ": void the round instead"),
        adjustments,
        beyond,
    )


# -- whether the correction stays inside its round ------------------------------------------


def _beyond(
    record: RoundRecord, index: int, redo: _Rederived, die1: int, die2: int
) -> Phrase | None:
    """Why correcting the throw would reach beyond its round (None if it would not).

    What is compared is what the round settles and how the table goes on from it, not
    where in the round each thing happens: the same commands, each doing what it did
    but for the round's own bets it decides; the round ending at the same command; the
    bets of other rounds it decides, decided as recorded; and the table after it as the
    recorded round left it. Which throw of the round decides one of its bets, and so the
    order of its events, may change."""
    recorded = [g.events for g in record.groups[index:]]
    with_dice = f"with {die1}+{die2} at version {record.groups[index].events[0].version}"
    if redo.stopped is not None:
        return Phrase(f"{with_dice}, ", redo.stopped)
    if len(redo.groups) < len(recorded):
        ended_at = redo.groups[-1][0]
        return Phrase(
            f"{with_dice} the round would have ended at version {ended_at.version} (",
            describe(ended_at),
            "), and what was recorded after it never happened",
        )
    if redo.after.round == record.number:
        return Phrase(
            f"{with_dice} the round would not have ended where it did: it would still be in play"
        )
    for k, (got, want) in enumerate(zip(redo.groups, recorded, strict=True)):
        differs = _acts(got, want, corrected=k == 0)
        if differs:
            return Phrase(f"{with_dice} ", differs)
    differs = _others_decided(redo.groups, recorded, record.money)
    if differs:
        return Phrase(f"{with_dice} ", differs)
    if record.open or any(b in redo.after.bets for b in redo.money):
        return Phrase(f"{with_dice} bets of the round would still be open after it")
    carried = _carried(redo.after), _carried(record.after)
    if carried[0] != carried[1]:
        names = [n for n, a, b in zip(_CARRIED, *carried, strict=True) if a != b]
        return Phrase(
            f"{with_dice} the table would have gone on from the round differently "
            f"({', '.join(names)} would differ)"
        )
    rules = record.after.rules
    runs = rules is not None and (
        rules.dice_pass.after_losses is not None
        or rules.dice_pass.after_wins is not None
        or rules.dice_pass.voluntary
    )
    got_run = (redo.after.consecutive_losses, redo.after.consecutive_wins)
    want_run = (record.after.consecutive_losses, record.after.consecutive_wins)
    if runs and got_run != want_run:
        return Phrase(
            f"{with_dice} the caster's run would be {got_run[0]} losses and {got_run[1]} wins, "
            f"not {want_run[0]} and {want_run[1]}: under {rules.name} rules that decides when "  # type: ignore[union-attr]
            "the dice pass, so later rounds could have been played by another caster"
        )
    return None


_CARRIED = (
    "phase",
    "seats",
    "caster",
    "round",
    "main",
    "chance",
    "throws",
    "standing",
    "contest",
    "casts",
    "dice",
    "commitment",
    "nonce",
    "bets",
)


def _carried(state: TableState) -> tuple[object, ...]:
    return tuple(
        dict(v) if isinstance(v := getattr(state, name), Mapping) else v for name in _CARRIED
    )


def _acts(got: Sequence[ev.Event], want: Sequence[ev.Event], corrected: bool) -> Phrase | None:
    """How a derived command differs from the recorded one in what it did, the bets it
    closed aside (None if it does not): the same events, wherever they fall, but for the
    payout of odds laid on a chance the correction moved and, in the `corrected` throw's
    own command, the dice."""
    did = [e for e in got if not isinstance(e, _CLOSING)]
    was = [e for e in want if not isinstance(e, _CLOSING)]
    for g, w in zip(did, was, strict=False):
        if not _same_act(g, w, corrected):
            return Phrase(
                "the engine would derive ",
                describe(g),
                " where ",
                describe(w),
                f" was recorded at version {w.version}",
            )
    if len(did) != len(was):
        longer, which = (did, "derive") if len(did) > len(was) else (was, "not derive")
        e = longer[min(len(did), len(was))]
        return Phrase(f"the engine would {which} ", describe(e), f" at version {e.version}")
    return None


def _same_act(got: ev.Event, want: ev.Event, corrected: bool) -> bool:
    got = dataclasses.replace(got, version=want.version)
    if isinstance(got, ev.OddsLaid) and isinstance(want, ev.OddsLaid):
        return dataclasses.replace(got, payout=want.payout, breakage=want.breakage) == want
    if corrected and isinstance(got, ev.DiceThrown | ev.DiceDrawn) and type(got) is type(want):
        return dataclasses.replace(got, die1=want.die1, die2=want.die2) == want
    return got == want


def _others_decided(
    got: Sequence[Sequence[ev.Event]],
    want: Sequence[Sequence[ev.Event]],
    of_round: Mapping[str, object],
) -> Phrase | None:
    """How the bets of other rounds that the round decides would be decided otherwise
    (None if as recorded): a correction pays only the round's own bets."""

    def closings(groups: Sequence[Sequence[ev.Event]]) -> dict[str, ev.Event]:
        return {
            e.bet_id: e
            for g in groups
            for e in g
            if isinstance(e, _CLOSING) and e.bet_id not in of_round
        }

    did, was = closings(got), closings(want)
    for bet_id in sorted(set(did) | set(was), key=bet_order):
        g, w = did.get(bet_id), was.get(bet_id)
        if g is None or w is None or dataclasses.replace(g, version=w.version) != w:
            derived = describe(g) if g is not None else f"{bet_id} left open"
            recorded = describe(w) if w is not None else "it left open"
            return Phrase(
                f"bet {bet_id}, of another round, would be decided otherwise (",
                derived,
                ", where the round recorded ",
                recorded,
                "): a correction pays again only the bets placed in its round",
            )
    return None


def _adjustments(
    recorded: Mapping[str, Sequence[ev.Transfer]], corrected: Mapping[str, Sequence[ev.Transfer]]
) -> dict[str, tuple[ev.Transfer, ...]]:
    moves = {}
    for bet_id in sorted(set(recorded) | set(corrected), key=bet_order):
        was, should = net(recorded.get(bet_id, ())), net(corrected.get(bet_id, ()))
        delta = {p: should.get(p, 0) - was.get(p, 0) for p in sorted(set(was) | set(should))}
        transfers = settle_up({p: d for p, d in delta.items() if d})
        if transfers:
            moves[bet_id] = transfers
    return moves
