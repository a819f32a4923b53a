"""Every table in an export replayed through the engine's referee (engine.referee),
from its opening or its snapshot, under the rule set the header lists for it: each
command run again and what it derives held to the file.

`hazard verify --deep` runs the tables of the database through the same code
(ledger.audit.refereed): a table at a time, each event numbered by its position where
a file's is by its line, and under the rule set its own TableOpened names (a database
has no header to list them)."""

from __future__ import annotations

import zlib
from array import array
from collections import deque
from collections.abc import Collection, Mapping
from typing import Any

from engine import events as ev
from engine.errors import Disagreement as Differs
from engine.errors import RuleSetError
from engine.fold import INITIAL
from engine.referee import Referee
from engine.rules import RuleSet
from engine.state import TableState
from ledger.books.accounts import TABLE_PREFIX
from ledger.exports.offline.fields import hex_hash, is_int
from ledger.exports.verdict import Disagreement, Snapshot
from ledger.store import codec, snapshots


class _Table:
    """A table stream in the file: its referee, and the lines of its recent events so
    that a disagreement about an earlier event of a command names that event's line;
    at a server-dice table also the lines of the turn's throws, which its revealed seed
    can find at fault long after them."""

    __slots__ = ("drawn", "recent", "referee")

    def __init__(self, state: TableState, source: str, disputes: bool) -> None:
        self.referee = Referee(state, source=source, disputes=disputes)
        self.recent: deque[tuple[int, int]] = deque(maxlen=64)
        self.drawn: dict[int, int] = {}

    def line_of(self, version: int, default: int) -> int:
        for v, line in self.recent:
            if v == version:
                return line
        return self.drawn.get(version, default)


class _Closed:
    """A table closed in the file, its referee at rest: what a later line about it is
    judged by and what the verdict counts of it. A club's log holds table after table,
    most closed at the end of their evening: their referees are not kept to the end.
    Kept instead, compressed: its state and the state before its closing, as a snapshot
    encodes them, and the lines of its recent events; besides them its closing's events
    (`Referee.orphan`'s words). A later line revives the referee as it was (`table`),
    so that line's verdict, its line and words, is the one it would have had."""

    __slots__ = (
        "bets",
        "closing",
        "ended_before",
        "recent",
        "rounds",
        "source",
        "states",
        "trusted",
    )

    unrevealed: tuple[int, ...] = ()
    at_boundary = True

    def __init__(self, table: _Table, source: str) -> None:
        referee = table.referee
        rest = referee.at_rest()
        assert rest is not None
        cause, due, before, self.ended_before = rest
        self.closing = (cause, due)
        # Canonical JSON holds no raw newline: the two documents part at one.
        documents = [snapshots.encode_state(referee.state)]
        if before is not None:
            documents.append(snapshots.encode_state(before))
        self.states = zlib.compress(b"\n".join(documents))
        self.recent = zlib.compress(
            array("q", (n for pair in table.recent for n in pair)).tobytes()
        )
        self.rounds, self.bets, self.trusted = referee.rounds, referee.bets, referee.trusted
        self.source = source

    @property
    def referee(self) -> _Closed:
        """What the verdict reads of its referee: itself (its rounds, bets, state)."""
        return self

    @property
    def state(self) -> TableState:
        return self._states()[0]

    def finish(self) -> None:
        """Nothing waits at a closed table."""

    def table(self) -> _Table:
        """The table as it was when it closed, to read a later line about it."""
        cause, due = self.closing
        state, *before = self._states()
        table = _Table.__new__(_Table)
        table.referee = Referee.resumed(
            state,
            (cause, due, before[0] if before else None, self.ended_before),
            self.bets,
            self.trusted,
            self.source,
        )
        recent = array("q", zlib.decompress(self.recent))
        table.recent = deque(zip(recent[::2], recent[1::2], strict=True), maxlen=64)
        table.drawn = {}
        return table

    def _states(self) -> list[TableState]:
        return [_decoded(d) for d in zlib.decompress(self.states).split(b"\n")]


def _decoded(document: bytes) -> TableState:
    state = snapshots.decode_state(document)
    assert state is not None
    return state


class Tables:
    def __init__(
        self,
        rule_sets: Mapping[str, RuleSet] | None,
        source: str = "the file",
        disputed: Collection[str] | None = None,
    ) -> None:
        self.rule_sets = rule_sets
        """The header's, by name: the only rule sets a table may play under (None: the
        one each table's TableOpened names, as in the database)."""
        self.source = source
        """Where the events come from, in the referee's words: "the file" or "the log"."""
        self.disputed = disputed
        """The tables a dispute may come on (ledger.exports.offline.disputed); None: any.
        The referee of any other keeps no rounds to judge one."""
        self.tables: dict[str, _Table | _Closed] = {}
        self.snapshotted: dict[str, Snapshot] = {}
        self.settlements = 0

    def snapshot(self, number: int, s: dict[str, Any], first: int) -> Snapshot:
        """A snapshot line: a table's state before the file's first position `first`,
        from which its events replay."""
        stream, position, version, digest = (
            s.get(k) for k in ("stream", "position", "version", "hash")
        )
        if not isinstance(stream, str) or not stream.startswith(TABLE_PREFIX):
            raise Disagreement(number, f"a snapshot of {stream!r}, which is not a table's stream")
        if stream in self.snapshotted:
            raise Disagreement(number, f"a second snapshot of {stream}")
        if not (is_int(position) and is_int(version) and version >= 1):
            raise Disagreement(number, "the snapshot's position and version are not numbers")
        if not 1 <= position < first:
            raise Disagreement(
                number,
                f"the snapshot is at position {position}, which is not before the file's first "
                f"({first})",
            )
        if hex_hash(digest) is None:
            raise Disagreement(number, "the snapshot's hash is not 64 hex digits")
        state_doc = s.get("state")
        if not isinstance(state_doc, dict):
            raise Disagreement(number, "the snapshot's state is not an object")
        document = codec.canonical(state_doc)
        try:
            state = snapshots.decode_state(document)
        except (RuleSetError, TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise Disagreement(number, f"the snapshot's state cannot be read: {exc!r}") from None
        if state is None:
            raise Disagreement(
                number,
                f"the snapshot's state is in format {state_doc.get('format')!r}, "
                f"not {snapshots.FORMAT}",
            )
        if state.version != version:
            raise Disagreement(
                number, f"the snapshot's state is at version {state.version}, not {version}"
            )
        self._rules(number, stream, state.rules, "the snapshot's")
        self.tables[stream] = _Table(state, self.source, self._disputes(stream))
        snapshot = Snapshot(number, stream, position, version, str(digest), state, document)
        self.snapshotted[stream] = snapshot
        return snapshot

    def open(self, stream: str) -> None:
        """The table's stream begins in the file: it replays from no state."""
        self.tables[stream] = _Table(INITIAL, self.source, self._disputes(stream))

    def _disputes(self, stream: str) -> bool:
        return self.disputed is None or stream in self.disputed

    def event(self, number: int, stream: str, event: ev.Event) -> None:
        """Run the table's next event (line `number`) through its referee."""
        table = self.tables[stream]
        if isinstance(table, _Closed):  # a line after its closing: judged as ever
            table = self.tables[stream] = table.table()
        table.recent.append((event.version, number))
        if isinstance(event, ev.TableOpened):
            self._rules(number, stream, event.rules, "its TableOpened's")
        if isinstance(event, ev.DiceDrawn):
            table.drawn[event.version] = number
        try:
            table.referee.check(event)
        except Differs as exc:
            raise Disagreement(table.line_of(exc.version, number), at(stream, exc)) from None
        if isinstance(event, ev.SeedRevealed):  # the turn's throws are drawn again
            table.drawn.clear()
        if isinstance(event, ev.BetSettled):
            self.settlements += 1
        if (
            isinstance(event, ev.TableClosed | ev.SeedRevealed)
            and not self._disputes(stream)
            and not table.drawn
            and table.referee.at_rest() is not None
        ):
            self.tables[stream] = _Closed(table, self.source)

    def finish(self, number: int, where: str) -> None:
        """At the closing record (line `number`): what each referee still waits for."""
        for stream, table in self.tables.items():
            try:
                table.referee.finish()
            except Differs as exc:
                raise Disagreement(number, f"{where}: {at(stream, exc)}") from None

    def referees(self) -> list[Referee | _Closed]:
        return [t.referee for t in self.tables.values()]

    def snapshots_trusted(self) -> list[str]:
        """What the snapshots stand for and was not replayed."""
        return [
            f"{stream}'s state at version {snap.version} (position {snap.position}) is "
            "the snapshot's: its events before that were not replayed"
            for stream, snap in self.snapshotted.items()
        ]

    def referees_trusted(self) -> list[str]:
        """What the referees could not judge: server throws of a turn still in play, a
        throw whose client seed is logged but which the file does not hold (a draw that
        failed, or that the bank holds back), and disputes about rounds the file does
        not hold whole."""
        unrevealed, disputed = [], []
        for stream, table in self.tables.items():
            referee = table.referee
            waiting = referee.state
            if waiting.client_seed is not None:
                unrevealed.append(
                    f"{stream}: the client seed {waiting.client_seed!r} is logged for throw "
                    f"{waiting.nonce} of the turn in play (version {waiting.version}), and "
                    "that throw is not in the file: not drawn yet when it was written, it "
                    "can only be drawn from that seed"
                )
            if referee.unrevealed:
                first, last, count = (
                    referee.unrevealed[0],
                    referee.unrevealed[-1],
                    len(referee.unrevealed),
                )
                unrevealed.append(
                    f"{stream}: {count} server throw(s) of the turn in play (versions {first} "
                    f"to {last}) cannot be drawn again until the turn ends and its seed is "
                    f"revealed: their dice are as {self.source} gives them"
                )
            if referee.trusted:
                disputed.append(
                    f"{stream}: {len(referee.trusted)} dispute event(s) (versions "
                    f"{', '.join(map(str, referee.trusted))}) concern a round {self.source} "
                    "does not hold whole, so the referee could not read it back to judge "
                    f"them: they fold, and their money is counted, as {self.source} gives "
                    "them, but they are not verified"
                )
        return unrevealed + disputed

    def _rules(self, number: int, stream: str, rules: RuleSet | None, whose: str) -> None:
        if rules is None:
            raise Disagreement(number, f"{stream}: {whose} state has no rule set")
        if self.rule_sets is None:
            return
        listed = self.rule_sets.get(rules.name)
        if listed is None:
            raise Disagreement(
                number,
                f"{stream} plays under rule set {rules.name!r}, which the header does not list",
            )
        if listed != rules:
            raise Disagreement(
                number,
                f"{stream} plays under a rule set {rules.name!r} that is not the header's "
                f"{rules.name!r}",
            )


def at(stream: str, exc: Differs) -> str:
    """Where the referee differs from the file, and why."""
    return f"at table {stream.removeprefix(TABLE_PREFIX)} version {exc.version}, {exc.reason}"
