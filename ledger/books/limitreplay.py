"""Players' limits and breaks replayed over the log, to find a bet or a deposit that
was accepted past a limit in force, or during a break: what the deep check
(ledger.audit.limits) and the export's offline check (ledger.exports.offline) say of
an insider who wrote past the check in ledger.books.limits.

The replay reads the events alone, in the log's order, with their recording times,
and judges each write as the enforcing write did: at its time, with the limits the
events put in force then (ledger.books.limitrules, the same fold), the deposits of the
24 hours and 7 days before it, and the player's net at the tables this evening and
over the 7 days before it, this write's money included. A write is its events up to
its seal (LogSealed), or, where the seals are not there, its run of events of one
stream at one time.

It also finds a limit event that cannot have been written by the command: a raise
recorded as binding at once, a time in force before its recording, a break that ends
before it begins.

Memory is each player's last 7 days of deposits and table postings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import sqlalchemy as sa

from ledger.books.limitrules import Standing, shifted
from ledger.books.limits import DAY, ESCROW, PLAYER, WEEK, WORDS
from ledger.store.evenings_events import EveningClosed, EveningOpened
from ledger.store.eventstore import decode_row
from ledger.store.limits_events import BreakTaken, LimitSet
from ledger.store.schema import events
from ledger.store.vocabulary import (
    ACCOUNT_PREFIX,
    MOVES_MONEY,
    Deposited,
    LogSealed,
    transfers_of,
)

Row = tuple[int, str, str, object]
"""(position, stream, recorded_at, event), in the log's order."""
EveningStart = Callable[[str], str]
"""The first moment (stored UTC) of the evening a stored time falls in."""


@dataclass(frozen=True)
class Breach:
    """A write the limits in force did not allow, or a limit event no command writes."""

    position: int
    account: str
    what: str

    def __str__(self) -> str:
        return f"position {self.position}: {self.account}: {self.what}"


@dataclass
class _Player:
    rules: Standing = field(default_factory=Standing)
    deposits: deque[tuple[str, int]] = field(default_factory=deque)
    nets: deque[tuple[str, int]] = field(default_factory=deque)
    """(recorded_at, net) of each table posting of the last 7 days."""

    def forget_before(self, moment: str) -> None:
        for kept in (self.deposits, self.nets):
            while kept and kept[0][0] <= moment:
                kept.popleft()


class Replay:
    """Feed it the log's rows (`see`), then `end()`; `breaches` holds what it found."""

    def __init__(self, evening_start: EveningStart | None) -> None:
        self.evening_start = evening_start
        """The stand-in's evening (the club's calendar day) a stored time falls in, until
        the log records an evening; None: the stand-in's evenings are not judged (an
        export alone does not say the club's time zone)."""
        self.evenings_recorded = False
        """Whether an evening the setter opened has been seen: from then on, this
        evening is the one open (from its opening), and none while none is open, as
        ledger.books.evenings.current has it for the enforcing write."""
        self.evening_opened: str | None = None
        """When the evening open now was opened (its stored time); None: none is."""
        self.players: dict[str, _Player] = {}
        self.breaches: list[Breach] = []
        self._write: list[Row] = []

    def see(self, row: Row) -> None:
        _, stream, recorded_at, event = row
        if isinstance(event, LogSealed):
            self._judge()
            return
        if isinstance(event, EveningOpened | EveningClosed):
            self._judge()
            self.evenings_recorded = True
            self.evening_opened = recorded_at if isinstance(event, EveningOpened) else None
            return
        if self._write and (self._write[-1][1], self._write[-1][2]) != (stream, recorded_at):
            self._judge()
        self._write.append(row)

    def end(self) -> list[Breach]:
        self._judge()
        return self.breaches

    def _player(self, account: str) -> _Player:
        found = self.players.get(account)
        if found is None:
            found = self.players[account] = _Player()
        return found

    def _judge(self) -> None:
        write, self._write = self._write, []
        if not write:
            return
        stream, at = write[0][1], write[0][2]
        if stream.startswith(ACCOUNT_PREFIX):
            for position, _, _, event in write:
                self._account_event(position, at, event)
            return
        staked: dict[str, list[int]] = {}
        net: dict[str, int] = {}
        first: dict[str, int] = {}
        for position, _, _, event in write:
            for t in transfers_of(stream, event):  # type: ignore[arg-type]
                if t.source.startswith(PLAYER):
                    net[t.source] = net.get(t.source, 0) - t.amount
                    first.setdefault(t.source, position)
                    if t.target.startswith(ESCROW):
                        staked.setdefault(t.source, []).append(t.amount)
                if t.target.startswith(PLAYER):
                    net[t.target] = net.get(t.target, 0) + t.amount
                    first.setdefault(t.target, position)
        for account, amounts in staked.items():
            self._stakes(first[account], account, at, amounts, net[account])
        for account, moved in net.items():
            self._player(account).nets.append((at, moved))

    def _account_event(self, position: int, at: str, event: object) -> None:
        if isinstance(event, LimitSet | BreakTaken):
            self._limit_event(position, at, event)
        elif isinstance(event, Deposited) and event.account.startswith(PLAYER):
            self._deposit(position, at, event)

    def _limit_event(self, position: int, at: str, event: LimitSet | BreakTaken) -> None:
        player = self._player(event.account)
        if isinstance(event, BreakTaken):
            if event.until <= at:
                self._found(position, event.account, f"a {event.kind} that ends before it begins")
        elif event.effective_at < at:
            self._found(position, event.account, f"a limit on {WORDS[event.kind]} in force "
                        "before it was set")  # fmt: skip
        elif event.effective_at == at:
            held = player.rules.at(at).limit(event.kind)
            if held is not None and (event.limit is None or event.limit > held):
                self._found(
                    position,
                    event.account,
                    f"a raise of the limit on {WORDS[event.kind]} ({held} to "
                    f"{_amount(event.limit)}) recorded as binding at once, with no cooling-off",
                )
        player.rules.apply(event, at)

    def _deposit(self, position: int, at: str, event: Deposited) -> None:
        player = self._player(event.account)
        player.forget_before(shifted(at, -WEEK))
        held = player.rules.at(at)
        if held.break_kind is not None:
            self._found(position, event.account, f"a deposit of {event.amount} during a "
                        f"{held.break_kind} (until {held.break_until})")  # fmt: skip
        for kind, span in (("deposit_24h", DAY), ("deposit_7d", WEEK)):
            limit = held.limit(kind)
            if limit is None:
                continue
            since = shifted(at, -span)
            paid = sum(amount for when, amount in player.deposits if when > since)
            if paid + event.amount > limit:
                what = f"limit on {WORDS[kind]} of {limit} ({paid} paid in before it)"
                self._found(position, event.account, f"a deposit of {event.amount} past the {what}")
        player.deposits.append((at, event.amount))

    def _stakes(self, position: int, account: str, at: str, amounts: list[int], net: int) -> None:
        player = self._player(account)
        player.forget_before(shifted(at, -WEEK))
        held = player.rules.at(at)
        if held.break_kind is not None:
            self._found(position, account, f"a stake of {max(amounts)} during a "
                        f"{held.break_kind} (until {held.break_until})")  # fmt: skip
        largest = held.limit("stake")
        if largest is not None and max(amounts) > largest:
            self._found(position, account, f"a stake of {max(amounts)} past the limit on "
                        f"the largest stake of {largest}")  # fmt: skip
        spans: list[tuple[str, str, bool]] = [("loss_week", shifted(at, -WEEK), False)]
        if self.evenings_recorded:
            # none open: nothing lost yet this evening but this write's own
            spans.append(("loss_evening", self.evening_opened or at, True))
        elif self.evening_start is not None:
            spans.append(("loss_evening", self.evening_start(at), True))
        for kind, since, inclusive in spans:
            limit = held.limit(kind)
            if limit is None:
                continue
            before = sum(
                moved for when, moved in player.nets if when >= since if inclusive or when > since
            )
            lost = -(before + net)
            if lost > limit:
                self._found(position, account, f"a stake past the limit on {WORDS[kind]} of "
                            f"{limit} ({lost} lost with it, open stakes counted)")  # fmt: skip

    def _found(self, position: int, account: str, what: str) -> None:
        self.breaches.append(Breach(position, account, what))


def _amount(limit: int | None) -> str:
    return "none" if limit is None else str(limit)


def breaches(rows: Iterable[Row], evening_start: EveningStart | None) -> Iterator[Breach]:
    """Every breach in `rows` (the log, or an export's events, in order)."""
    replay = Replay(evening_start)
    for row in rows:
        replay.see(row)
    yield from replay.end()


READ = sorted(
    MOVES_MONEY
    | {c.__name__ for c in (LimitSet, BreakTaken, LogSealed, EveningOpened, EveningClosed)}
)
"""The events a replay reads: those that move money or set a limit, the seals, and the
evenings' openings and closings."""
BATCH = 10_000


def log_rows(conn: sa.Connection) -> Iterator[Row]:
    """The rows of the database's log a replay reads, in position order, a batch at a
    time."""
    e = events.c
    after = 0
    while True:
        rows = conn.execute(
            sa.select(e.position, e.stream, e.type, e.schema_version, e.version, e.payload,
                      e.recorded_at)
            .where(e.position > after, e.type.in_(READ))
            .order_by(e.position)
            .limit(BATCH)
        ).all()  # fmt: skip
        if not rows:
            return
        for row in rows:
            yield row.position, row.stream, row.recorded_at, decode_row(row)
        after = rows[-1].position
