"""A round read back: its commands (each a group of events, as engine.referee reads a
stream), the state before and after, and the money of every bet placed in it.

The referee files every command of the streams it reads in a `RoundBook`, the last
rounds of them, so that a dispute further on can be judged on its round's `RoundRecord`;
`engine.referee.read_round` builds one for the ledger from a stretch of a stored
stream. Building it through the referee re-derives the round under the table's recorded
rule set: a round whose recorded events differ from the engine's is read as far as it
agrees, and says where it stops agreeing. Standard library and engine only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from engine import events as ev
from engine.errors import HazardError
from engine.fold import fold
from engine.money import ESCROW, holds
from engine.phrase import Phrase
from engine.state import TableState

DISPUTE_WINDOW = 50
"""A round may be disputed until this many more rounds have ended after it. It bounds
what the referee keeps to judge a dispute (the records of the last rounds)."""
MAX_ROUND_EVENTS = 20_000
"""The longest round, in events, the referee keeps to judge a dispute over it: a longer
one (a caster throwing on and on) is let go, and a dispute over it taken on trust."""

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
    then: tuple[ev.Event, ...] = ()
    """Events of disputes over other rounds recorded after this command while the round
    was in play: not the round's, so in no group of it, but the next command's `before`
    has them folded in (they move the table's version and its disputes)."""


class _Aside(tuple[ev.Event, ...]):
    """A dispute's events filed with the round in play when they were recorded
    (`Group.then`)."""


@dataclass(frozen=True)
class RoundRecord:
    """A round as its events record it. `groups` are its commands (those run while it
    was the table's round), `before` the state before the first, `after` the state after
    the last. `money` holds, per bet placed in the round, every transfer its events made
    (stakes held, then paid or returned), wherever they lie; `parties` who put money in
    each. `open` lists its bets still open. `mismatch` says where the recorded events
    stop agreeing with the engine (None when they agree throughout), its amounts kept as
    data (engine.phrase): the groups from there on are single events, folded as
    recorded."""

    number: int
    before: TableState
    groups: tuple[Group, ...]
    money: Mapping[str, tuple[ev.Transfer, ...]]
    open: frozenset[str] = frozenset()
    mismatch: Phrase | None = None

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
    what the referee keeps to judge a dispute, and what `engine.referee.read_round` builds
    one from.

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
        self.mismatch: dict[int, Phrase] = {}

    def add(self, events: Sequence[ev.Event], before: TableState, after: TableState) -> None:
        # Run for every command of every stream the referee reads: it only files the
        # events. What the round's bets moved is worked out by `record`, for a dispute.
        number = before.round
        if events and events[0].__class__ in _DISPUTE_CAUSES:
            # A dispute is not a command of the round it is played in, but the round's
            # next command comes after it: filed aside, to be stepped over (Group.then).
            during = self._rounds.get(number) if before.in_play else None
            if during is not None:
                during[1].append(_Aside(events))
            number = -1
        kept = self._rounds.get(number) if number > 0 else None
        if kept is None and number > 0 and number not in self.too_long:
            kept = self._begin_round(number, before, after)
        if self._watch:
            self._follow(events)
        if kept is not None:
            # Filed as a tuple: the command's own list (engine.command.Drafted) is half
            # as big again, and the book holds fifty rounds of them in every table.
            kept[1].append(tuple(events))
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
        groups: list[Group] = []
        money: dict[str, list[ev.Transfer]] = {}
        state = before
        for events in kept:
            if isinstance(events, _Aside):
                state = fold(events, state)
                groups[-1] = groups[-1]._replace(then=groups[-1].then + tuple(events))
                continue
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
