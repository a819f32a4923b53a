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
  "correction"). Only a correction that stays inside its round is made: the corrected
  round must end at the same throw with the same commands possible, derive the same
  events but for who won and what was paid, and leave the table as the recorded round
  left it for the next (the seats, the caster and the dice, the bets open, and the
  caster's run of wins and losses where the rule set passes the dice on one). Any other
  correction is refused with `Rule.CORRECTION_REACHES_BEYOND_ROUND`: void the round.

Nothing is edited: the round's events stay as recorded, the dispute and its
adjustments come after them. Standard library and engine only; the dice come in as data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from engine import events as ev
from engine.dice import is_die
from engine.errors import HazardError, Rule, RuleBroken
from engine.fold import fold
from engine.money import ESCROW, holds
from engine.state import SETTER, TableState

DISPUTE_WINDOW = 50
"""A round may be disputed until this many more rounds have ended after it. It bounds
what the referee keeps to judge a dispute (the records of the last rounds)."""
MAX_OPEN_DISPUTES = 100
"""A table holds at most this many disputes waiting for the setter."""
MAX_TEXT = 500
MAX_ROUND_EVENTS = 20_000
"""The longest round, in events, the referee keeps to judge a dispute over it: a longer
one (a caster throwing on and on) is let go, and a dispute over it taken on trust."""
"""The longest claim or reason, in characters."""
ROLES = (SETTER, "croupier", "player")
"""How a claimant comes to a dispute: the setter (the bank, whose role and account share
the name), a croupier, or a player who had money in the round."""
RESOLUTIONS = ("upheld", "voided", "corrected")

_SEED_EVENTS = (ev.SeedCommitted, ev.SeedRevealed)
_BET_MONEY = frozenset(cls for cls in ev.TABLE_EVENTS if "bet_id" in cls.__dataclass_fields__) - {
    ev.BetAdjusted
}
"""Events that place, take or close a bet: a round's money (a dispute's adjustments are
the dispute's, not the round's)."""
_CLOSING = (ev.BetSettled, ev.BetVoided)
_DISPUTE_CAUSES = frozenset({ev.DisputeOpened, ev.DisputeResolved})


class Group(NamedTuple):
    """One command's events as recorded, with the table's state either side."""

    events: tuple[ev.Event, ...]
    before: TableState
    after: TableState


@dataclass(frozen=True)
class RoundRecord:
    """A round as its events record it. `groups` are its commands (those run while it
    was the table's round), `before` the state before the first, `after` the state after
    the last. `money` holds, per bet placed in the round, every transfer its events made
    (stakes held, then paid or returned), wherever they lie; `parties` who put money in
    each. `open` lists its bets still open. `mismatch` says where the recorded events
    stop agreeing with the engine (None when they agree throughout): the groups from
    there on are single events, folded as recorded."""

    number: int
    before: TableState
    groups: tuple[Group, ...]
    money: Mapping[str, tuple[ev.Transfer, ...]]
    open: frozenset[str] = frozenset()
    mismatch: str | None = None

    @property
    def after(self) -> TableState:
        return self.groups[-1].after if self.groups else self.before

    @property
    def ended(self) -> bool:
        return self.after.round > self.number

    @property
    def throws(self) -> tuple[ev.DiceThrown, ...]:
        return tuple(e for g in self.groups for e in g.events if isinstance(e, ev.DiceThrown))

    def nets(self) -> dict[str, dict[str, int]]:
        """Per bet of the round, what each party stands up or down on it (escrow aside)."""
        return {bet: net(transfers) for bet, transfers in self.money.items()}

    def had_money(self, name: str) -> bool:
        return any(t.source == name and t.amount > 0 for ts in self.money.values() for t in ts)


class RoundBook:
    """The records of the last rounds a stream of groups went through, as they arrive:
    what the referee keeps to judge a dispute, and what `read_round` builds one from.

    `add` each group in order. A round's record is *whole* only if the book saw the
    round begin: it started on the round's first group (`whole_from` says so), or saw a
    group of an earlier round first. The book keeps each round's state before it and its
    groups' events, not a state per group (the referee adds every group of a stream, so
    what it costs is paid a million times; a record is built, by folding, only for a
    dispute). A round of more than `most` events is let go as it grows past that, so that
    a caster who throws and throws cannot make the book hold a whole session."""

    def __init__(
        self,
        keep: int = DISPUTE_WINDOW + 1,
        whole_from: int | None = None,
        most: int | None = MAX_ROUND_EVENTS,
    ):
        self._keep = keep
        self._most = most
        self._rounds: dict[int, tuple[TableState, list[Sequence[ev.Event]], list[int]]] = {}
        """Per round kept: the state before it, its groups' events, and its event count."""
        self._watch: dict[str, int] = {}
        """Bets of a kept round still open when it ended, by id: their round."""
        self._late: dict[int, list[ev.Event]] = {}
        """Per kept round, the events of its bets that came after it (see `_watch`)."""
        self._whole: set[int] = set()
        self._lowest_seen: int | None = whole_from
        self._let_go = 0
        """The newest round seen whole and let go (too old to dispute)."""
        self.too_long: set[int] = set()
        """Rounds seen whole but let go for their length: a dispute over one cannot be
        judged by this book."""
        self.mismatch: dict[int, str] = {}

    def add(self, events: Sequence[ev.Event], before: TableState, after: TableState) -> None:
        # Run for every command of every stream the referee reads: it only files the
        # events. What the round's bets moved is worked out by `record`, for a dispute.
        number = before.round
        if events and events[0].__class__ in _DISPUTE_CAUSES:
            number = -1  # a dispute is not a command of the round it is played in
        kept = self._rounds.get(number) if number > 0 else None
        if kept is None and number > 0 and number not in self.too_long:
            kept = self._begin_round(number, before, after)
        if self._watch:
            self._follow(events)
        if kept is not None:
            kept[1].append(events)
            kept[2][0] += len(events)
            if self._most is not None and kept[2][0] > self._most:
                self._too_long(number)
        if self._lowest_seen is None and number >= 0:
            self._lowest_seen = number + 1  # rounds after this one are seen from the start

    def _begin_round(
        self, number: int, before: TableState, after: TableState
    ) -> tuple[TableState, list[Sequence[ev.Event]], list[int]]:
        kept = self._rounds[number] = (before, [], [0])
        self._late[number] = []
        if self._lowest_seen is not None and self._lowest_seen <= number:
            self._whole.add(number)
        for bet in before.bets.values():  # bets of earlier rounds that outlive them
            if bet.round in self._rounds and bet.round != number:
                self._watch[bet.id] = bet.round
        self._prune(number, after.disputes.values())
        return kept

    def _follow(self, events: Sequence[ev.Event]) -> None:
        for e in events:
            if e.__class__ in _BET_MONEY:
                owner = self._watch.get(e.bet_id)  # type: ignore[union-attr]
                if owner is not None:
                    self._late[owner].append(e)
                    if e.__class__ in _CLOSING:
                        del self._watch[e.bet_id]

    def _too_long(self, number: int) -> None:
        if number in self._whole:
            self.too_long.add(number)
        self._drop(number)

    def _drop(self, number: int) -> None:
        del self._rounds[number]
        self._late.pop(number, None)
        self._whole.discard(number)
        for bet_id in [b for b, n in self._watch.items() if n == number]:
            del self._watch[bet_id]

    def knows(self, number: int) -> bool:
        """Whether the book saw round `number` whole (it may since have let it go)."""
        return number in self._whole or (
            self._lowest_seen is not None
            and self._lowest_seen <= number <= self._let_go
            and number not in self.too_long
        )

    def _prune(self, newest: int, disputed: Iterable[int]) -> None:
        # Rounds are filed in the order played, so the old ones are first; a round with a
        # dispute open is kept until it is resolved, however old.
        oldest_kept = newest - self._keep
        gone = []
        for old in self._rounds:
            if old > oldest_kept:
                break
            gone.append(old)
        if gone and disputed:
            gone = [n for n in gone if n not in set(disputed)]
        for old in gone:
            if old in self._whole:
                self._let_go = max(self._let_go, old)
            self._drop(old)

    def record(self, number: int, now: TableState) -> RoundRecord | None:
        """Round `number`'s record, its open bets as `now` has them; None unless the book
        holds the whole round. Its states and money are worked out here, by folding."""
        if number not in self._whole:
            return None
        before, kept, _ = self._rounds[number]
        groups = []
        money: dict[str, list[ev.Transfer]] = {}
        state = before
        for events in kept:
            after = fold(events, state)
            groups.append(Group(tuple(events), state, after))
            for e in events:
                if e.__class__ in _BET_MONEY:
                    bet = after.bets.get(e.bet_id) or state.bets.get(e.bet_id)  # type: ignore[union-attr]
                    if bet is not None and bet.round == number:
                        money.setdefault(bet.id, []).extend(holds(e))
            state = after
        for e in self._late.get(number, ()):
            money.setdefault(e.bet_id, []).extend(holds(e))  # type: ignore[union-attr]
        return RoundRecord(
            number,
            before,
            tuple(groups),
            {b: tuple(ts) for b, ts in money.items()},
            frozenset(b for b in money if b in now.bets),
            self.mismatch.get(number),
        )


def net(transfers: Iterable[ev.Transfer]) -> dict[str, int]:
    """What each party (escrow accounts aside) is up or down by over `transfers`."""
    sums: dict[str, int] = {}
    for t in transfers:
        for who, amount in ((t.source, -t.amount), (t.target, t.amount)):
            if not who.startswith(ESCROW):
                sums[who] = sums.get(who, 0) + amount
    return {who: amount for who, amount in sorted(sums.items()) if amount}


def settle_up(delta: Mapping[str, int]) -> tuple[ev.Transfer, ...]:
    """Party-to-party transfers that move each party by `delta` (which sums to zero):
    those down pay those up, in name order."""
    if sum(delta.values()) != 0:
        raise HazardError(f"an adjustment that does not sum to zero: {dict(delta)}")
    payers = [(who, -d) for who, d in sorted(delta.items()) if d < 0]
    payees = [(who, d) for who, d in sorted(delta.items()) if d > 0]
    owed = [d for _, d in payers]
    due = [d for _, d in payees]
    moves = []
    i = j = 0
    while i < len(payers) and j < len(payees):
        amount = min(owed[i], due[j])
        moves.append(ev.Transfer(payers[i][0], payees[j][0], amount))
        owed[i] -= amount
        due[j] -= amount
        if owed[i] == 0:
            i += 1
        if due[j] == 0:
            j += 1
    return tuple(moves)


# -- reading a round back -----------------------------------------------------------------


def read_round(
    number: int, start: TableState, events: Iterable[ev.Event], now: TableState
) -> RoundRecord:
    """Round `number`'s record, from `start` (the table at the end of a command, before
    the round's first event) and the events after it, read until the round has ended
    and each of its bets is closed, or the events end. `now` is the table as it stands.
    Raises RuleBroken(ROUND_NOT_ENDED) if the events never reach the round's end."""
    from engine.referee import Disagreement, Referee

    book = RoundBook(keep=1 << 30, whole_from=start.round, most=None)
    referee = Referee(start, on_group=book.add, judge_disputes=False)
    pending: list[ev.Event] = []
    state = start
    broken: str | None = None
    for e in events:
        if broken is None:
            pending.append(e)
            try:
                referee.check(e)
            except Disagreement as exc:
                broken = f"at version {exc.version}: {exc.reason}"
                state = referee.state
                book.mismatch[number] = broken
                for raw in pending:  # from the last whole command, event by event
                    state = _raw(book, raw, state)
                pending = []
                continue
            if referee.at_boundary:
                pending = []
                state = referee.state
        else:
            state = _raw(book, e, state)
        if (
            state.round > number
            and not any(b.round == number for b in state.bets.values())
            and (broken is not None or referee.at_boundary)
        ):
            break
    record = book.record(number, now)
    if record is None or not record.ended:
        raise RuleBroken(Rule.ROUND_NOT_ENDED, f"round {number} has not ended")
    return record


def _raw(book: RoundBook, e: ev.Event, state: TableState) -> TableState:
    after = fold([e], state)
    book.add((e,), state, after)
    return after


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
    if len(state.disputes) >= MAX_OPEN_DISPUTES:
        raise RuleBroken(
            Rule.TOO_MANY_DISPUTES,
            f"the table has {len(state.disputes)} disputes waiting for the setter, the most "
            "it holds: resolve some first",
        )
    if die1 is not None or die2 is not None or throw is not None:
        throw = _require_throw(record, throw, Rule.NOT_A_THROW_OF_ROUND)
        if (die1 is None) != (die2 is None):
            raise RuleBroken(Rule.INVALID_DIE, "a claim names both dice, or neither")
        for die in (die1, die2):
            if die is not None and not is_die(die):
                raise RuleBroken(Rule.INVALID_DIE, f"a die shows 1 to 6, not {die!r}")
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


def _require_text(text: object, what: str, rule: Rule) -> str:
    if type(text) is not str or not text.strip():
        raise RuleBroken(rule, f"the {what} says in words what happened: it cannot be empty")
    if len(text) > MAX_TEXT:
        raise RuleBroken(rule, f"the {what} is {len(text)} characters, over {MAX_TEXT}")
    if any(ord(c) < 32 and c not in "\n\t" for c in text):
        raise RuleBroken(rule, f"the {what} holds a control character")
    return text


def _require_throw(record: RoundRecord, throw: int | None, rule: Rule) -> int:
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
    `adjustments`)."""

    throw: int
    die1: int
    die2: int
    result: str | None
    main: int | None
    chance: int | None
    bets: tuple[Paid, ...]
    stopped: str | None
    refused: str | None
    adjustments: Mapping[str, tuple[ev.Transfer, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """The service's answer to a dispute: whether the recorded settlements are what the
    engine derives from the round's events, the round as recorded, and a what-if."""

    matches: bool
    mismatch: str | None
    result: str | None
    bets: tuple[Paid, ...]
    what_if: WhatIf | None


def answer(
    record: RoundRecord, throw: int | None = None, die1: int | None = None, die2: int | None = None
) -> Answer:
    """Re-derive the round and, given dice, what it would have been with them. Writes
    nothing."""
    what_if = None
    if die1 is not None and die2 is not None:
        at = _require_throw(record, throw, Rule.NOT_A_THROW_OF_ROUND)
        what_if = _what_if(record, at, die1, die2)
    return Answer(
        record.mismatch is None,
        record.mismatch,
        _result(record.after, record.number),
        _paid(record.groups, record.money, record.open),
        what_if,
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
    for bet_id in sorted(money, key=_bet_order):
        closing = closings.get(bet_id)
        if bet_id in still_open or closing is None:
            paid.append(Paid(bet_id, "open", None, net(money[bet_id])))
        elif isinstance(closing, ev.BetSettled):
            paid.append(Paid(bet_id, "settled", closing.winner, net(money[bet_id])))
        else:
            paid.append(Paid(bet_id, "voided", None, net(money[bet_id])))
    return tuple(paid)


def _bet_order(bet_id: str) -> int:
    return int(bet_id[1:]) if bet_id[1:].isdigit() else 0


# -- deriving the round again with other dice --------------------------------------------------


class _Rederived(NamedTuple):
    groups: list[list[ev.Event]]
    """The round's groups from the corrected throw on, as derived with the new dice."""
    after: TableState
    stopped: str | None
    money: dict[str, tuple[ev.Transfer, ...]]


def _rerun(record: RoundRecord, throw: int, die1: int, die2: int) -> tuple[int, _Rederived]:
    """Run the round's commands again from the one whose throw is `throw`, with the dice
    `die1`, `die2` there. Stops where a recorded command could not have been run, or
    once the corrected round has ended."""
    from engine.referee import command_words, derive, describe

    index = _group_of_throw(record, throw)
    state = record.groups[index].before
    derived: list[list[ev.Event]] = []
    stopped = None
    for i in range(index, len(record.groups)):
        group = record.groups[i]
        cause = group.events[0]
        if i == index:
            cause = _with_dice(cause, die1, die2)
        try:
            events: list[ev.Event] = [
                e for e in derive(state, cause) if not isinstance(e, _SEED_EVENTS)
            ]
        except (HazardError, TypeError, ValueError) as exc:
            detail = exc.detail if isinstance(exc, RuleBroken) else str(exc)
            stopped = (
                f"{command_words(group.events[0], group.before)} ({describe(group.events[0])}) "
                f"could not have happened: {detail}"
            )
            break
        seeds = [e for e in group.events if isinstance(e, _SEED_EVENTS)]
        if seeds:  # the turn's seed events, as recorded, where the command puts them
            first = events[-1].version + 1 if events else state.version + 1
            events += [dataclasses.replace(s, version=first + k) for k, s in enumerate(seeds)]
        derived.append(events)
        state = fold(events, state)
        if state.round > record.number:
            break
    money: dict[str, list[ev.Transfer]] = {}
    for g in record.groups[:index]:
        for e in g.events:
            _collect(money, e, record.money)
    for events in derived:
        for e in events:
            _collect(money, e, record.money)
    return index, _Rederived(derived, state, stopped, {b: tuple(t) for b, t in money.items()})


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


def _what_if(record: RoundRecord, throw: int, die1: int, die2: int) -> WhatIf:
    for die in (die1, die2):
        if not is_die(die):
            raise RuleBroken(Rule.INVALID_DIE, f"a die shows 1 to 6, not {die!r}")
    index, redo = _rerun(record, throw, die1, die2)
    refused = _beyond(record, index, redo, die1, die2)
    groups = [g.events for g in record.groups[:index]] + redo.groups
    still_open = [b for b in redo.money if b in redo.after.bets]
    ended = redo.after.round > record.number
    main = chance = None
    state = record.before
    for events in groups:  # the main and chance the corrected round set, as it went
        for e in events:
            state = fold([e], state)
            if state.round == record.number:
                main = state.main if state.main is not None else main
                chance = state.chance if state.chance is not None else chance
    adjustments = {} if refused else _adjustments(record.money, redo.money)
    return WhatIf(
        throw,
        die1,
        die2,
        _result(redo.after, record.number) if ended else None,
        main,
        chance,
        _paid(groups, redo.money, still_open),
        redo.stopped,
        refused,
        adjustments,
    )


def _beyond(record: RoundRecord, index: int, redo: _Rederived, die1: int, die2: int) -> str | None:
    """Why correcting the throw would reach beyond its round (None if it would not)."""
    from engine.referee import describe

    recorded = [list(g.events) for g in record.groups[index:]]
    with_dice = f"with {die1}+{die2} at version {record.groups[index].events[0].version}"
    if redo.stopped is not None:
        return f"{with_dice}, {redo.stopped}"
    if len(redo.groups) < len(recorded):
        ended_at = redo.groups[-1][0]
        return (
            f"{with_dice} the round would have ended at version {ended_at.version} "
            f"({describe(ended_at)}), and what was recorded after it never happened"
        )
    if redo.after.round == record.number:
        return f"{with_dice} the round would not have ended where it did: it would still be in play"
    for k, (got, want) in enumerate(zip(redo.groups, recorded, strict=True)):
        differs = _shape(got, want, corrected=k == 0)
        if differs:
            return f"{with_dice} {differs}"
    if record.open or any(b in redo.after.bets for b in redo.money):
        return f"{with_dice} bets of the round would still be open after it"
    carried = _carried(redo.after), _carried(record.after)
    if carried[0] != carried[1]:
        names = [n for n, a, b in zip(_CARRIED, *carried, strict=True) if a != b]
        return (
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
        return (
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


def _shape(got: Sequence[ev.Event], want: Sequence[ev.Event], corrected: bool) -> str | None:
    """How a derived group differs from the recorded one in more than who won and what
    was paid, and (in the `corrected` throw's own group) the dice (None if it does not)."""
    from engine.referee import describe

    for g, w in zip(got, want, strict=False):
        if not _only_money_differs(g, w, corrected) and g != w:
            return (
                f"the engine would derive {describe(g)} at version {g.version} where "
                f"{describe(w)} was recorded"
            )
    if len(got) != len(want):
        longer, which = (got, "derive") if len(got) > len(want) else (want, "not derive")
        e = longer[min(len(got), len(want))]
        return f"the engine would {which} {describe(e)} at version {e.version}"
    return None


def _only_money_differs(got: ev.Event, want: ev.Event, corrected: bool) -> bool:
    """Whether two events differ at most in who won and what was paid (a bet settled
    or voided; the payout of odds laid on a chance the correction moved), or are the
    corrected throw's dice."""
    if isinstance(got, _CLOSING) and isinstance(want, _CLOSING):
        return got.bet_id == want.bet_id and got.version == want.version
    if isinstance(got, ev.OddsLaid) and isinstance(want, ev.OddsLaid):
        return dataclasses.replace(got, payout=want.payout, breakage=want.breakage) == want
    if corrected and isinstance(got, ev.DiceThrown | ev.DiceDrawn) and type(got) is type(want):
        return dataclasses.replace(got, die1=want.die1, die2=want.die2) == want
    return False


def _adjustments(
    recorded: Mapping[str, Sequence[ev.Transfer]], corrected: Mapping[str, Sequence[ev.Transfer]]
) -> dict[str, tuple[ev.Transfer, ...]]:
    moves = {}
    for bet_id in sorted(set(recorded) | set(corrected), key=_bet_order):
        was, should = net(recorded.get(bet_id, ())), net(corrected.get(bet_id, ()))
        delta = {p: should.get(p, 0) - was.get(p, 0) for p in sorted(set(was) | set(should))}
        transfers = settle_up({p: d for p, d in delta.items() if d})
        if transfers:
            moves[bet_id] = transfers
    return moves


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
        raise RuleBroken(
            Rule.DISPUTE_RESOLVED,
            f"dispute {dispute_id} was resolved already ({earlier}): a dispute is resolved once",
        )
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
    if number in state.adjusted:
        raise RuleBroken(
            Rule.ROUND_ADJUSTED,
            f"round {number} was voided or corrected already: a round is adjusted once",
        )
    if record.open:
        raise RuleBroken(
            Rule.ROUND_NOT_ENDED, f"bets {', '.join(sorted(record.open))} are still open"
        )
    if resolution == "voided":
        moves = {
            bet_id: settle_up({p: -d for p, d in net(record.money[bet_id]).items()})
            for bet_id in sorted(record.money, key=_bet_order)
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
    if state.dice == "server":
        raise RuleBroken(
            Rule.SERVER_DICE,
            "the server drew this table's dice, and anyone can draw them again from the "
            "revealed seed: there is no mis-entered throw to correct; void the round instead",
        )
    if throw is None or die1 is None or die2 is None:
        raise RuleBroken(
            Rule.INVALID_RESOLUTION, "a correction names the throw (its version) and both dice"
        )
    if record.mismatch is not None:
        raise RuleBroken(
            Rule.CORRECTION_REACHES_BEYOND_ROUND,
            f"the round's recorded events do not agree with the engine ({record.mismatch}): "
            "it cannot be derived again; void the round instead",
        )
    _require_throw(record, throw, Rule.NOT_A_THROW_OF_ROUND)
    for die in (die1, die2):
        if not is_die(die):
            raise RuleBroken(Rule.INVALID_DIE, f"a die shows 1 to 6, not {die!r}")
    recorded_dice = next((t.die1, t.die2) for t in record.throws if t.version == throw)
    if recorded_dice == (die1, die2):
        raise RuleBroken(
            Rule.INVALID_RESOLUTION,
            f"the throw at version {throw} is recorded as {die1}+{die2} already: uphold instead",
        )
    what = _what_if(record, throw, die1, die2)
    if what.refused is not None:
        raise RuleBroken(
            Rule.CORRECTION_REACHES_BEYOND_ROUND, f"{what.refused}: void the round instead"
        )
    return dict(what.adjustments)


__all__ = [
    "DISPUTE_WINDOW",
    "MAX_OPEN_DISPUTES",
    "Answer",
    "Group",
    "Paid",
    "RoundBook",
    "RoundRecord",
    "WhatIf",
    "answer",
    "net",
    "open_dispute",
    "read_round",
    "resolve",
    "settle_up",
]
