"""The offline check shared among processes (`verify(..., jobs=N)`), with the serial
check's verdict.

Every process reads the whole file and runs the serial check (lines.Check) over it,
but checks in full only the events of the streams it is given: their leaves, hash
chains, decoding, money and, for a table, the referee's replay, which is most of a
check's time. Of any other event line it takes only its place, cut out of the line's
tail: its position, its leaf and its time, which every process needs to build the
tree, hold each checkpoint to its signed root and hold time to going forward. The
owner of that line checks that its leaf is the hash of its content, and every
process's tree is held to the same signed roots, so no process can build its tree
from a leaf other than the one its owner checked.

Which process checks a stream is decided by each process alike, from the file: a
stream seen for the first time goes to the process with the fewest event lines so
far. The seals' stream (`log`) is checked by every process: each needs its seals to
hold the checkpoint lines after them. A whole log's seals commit the heads of every
stream and account, so at each seal every other process sends the first (the parent)
what its own events since the last seal move, and the parent folds them all, in
position order, as the serial check does.

At the closing record each process hands the parent what it counted (events by
type, money by account, the streams it saw, what each of its tables' referees left),
and the parent checks the closing with that merged into its own check: the same code
as the serial check, over the same counts, so the same `Verified`.

A file that does not verify so (any process finds a line that disagrees), or cannot
be shared (read from a pipe, or with a line the place cannot be cut from), is
checked again serially: its `Disagreement` is then the serial check's, the first
line in file order that disagrees, with the same words.
"""

from __future__ import annotations

import binascii
import contextlib
import hashlib
import multiprocessing
import os
import threading
from binascii import unhexlify
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from operator import attrgetter
from pathlib import Path
from typing import Any, cast

from ledger.exports.offline import disputed
from ledger.exports.offline.complete import Completeness, _Seal, _Stream
from ledger.exports.offline.events import Read
from ledger.exports.offline.fields import is_int
from ledger.exports.offline.lines import PROGRESS_EVERY, Check, Progress
from ledger.exports.offline.tree import Tree
from ledger.exports.verdict import (
    FIGURES,
    CheckpointLine,
    Closing,
    Disagreement,
    EventLine,
    Header,
    SkipLine,
    Snapshot,
    Verified,
)
from ledger.store.eventstore import Recorded
from ledger.store.log import merkle, times
from ledger.store.log.heads import SEALS, _Posting
from ledger.store.log.keys import Verifier
from ledger.store.log.policy import Policy

EVERY = -1
"""The owner of the seals' stream: every process checks it."""

_RECORD = b'","record":"event","recorded_at":"'
"""Where an event line's tail begins: after its prev_hash, before its time (found from
the line's end, so that a payload holding the same text cannot be taken for it)."""

CHECKED, PLACED = 9, 3
"""What a process spends on an event line it checks in full, and the parent on one
another process checks (its place in the tree and in time, and its share of the
seals' heads), in the same unit: measured by bench.exports' verify x2 with today's
referee, from 20,000 to 100,000 events, about 36 µs and 7 to 11 µs of CPU. The
streams are shared out by these. PLACED was 2 until the checked line got cheaper
(docs/performance.md, "lines"): at 2 the parent then spent 5 to 10% more CPU than
the other process on bench.seed's sealed 100,000 events, at 3 the two are even."""

AHEAD = 20_000
"""The most events the parent keeps of the seals it cannot hold yet: its own since each
seal it has read and not every process has reached, or what a process ahead of it
sent and it has not taken. Past it, the one ahead waits (the parent for the process
behind; a process ahead, on its pipe, for the parent to take), so that a process that
lags costs no more memory than AHEAD events, however long the file: unbounded, a
10^7-event log's largest process grew to 594 MiB (docs/performance.md, "sharemem")."""

_position = attrgetter("position")
_CLOSED = object()
"""What another process takes the closing record for: it is the parent's to check."""


class Unshared(Exception):
    """The file was not verified in shares: it is checked serially instead."""


def _stream(cut: bytes) -> tuple[bytes, int] | None:
    """An event line's stream, and where its tail begins; None if it is not an event
    line (or not one in canonical form, which every process then checks in full)."""
    tail = cut.rfind(_RECORD)
    if tail < 0:
        return None
    start = cut.find(b'"stream":"', tail) + 10
    end = cut.find(b'"', start)
    if start < 10 or end < 0 or b"\\" in cut[start:end]:
        return None
    return cut[start:end], tail


def _place(cut: bytes, tail: int) -> tuple[int, bytes, bytes]:
    """An event line's position, leaf and time, cut out of it: its owner reads them
    from the line whole, and the two are held equal by the owner's digest."""
    comma = cut.rfind(b',"position":', 0, tail)
    leaf = cut.find(b',"leaf":"')
    time = tail + len(_RECORD)
    try:
        position = int(cut[comma + 12 : tail - 78])
    except ValueError:
        raise Unshared("an event line whose position is not cut out") from None
    if comma < 0 or leaf < 0:
        raise Unshared("an event line whose place is not cut out")
    return position, cut[leaf + 9 : leaf + 73], cut[time : cut.find(b'"', time)]


def _said(position: int, leaf: bytes, at: bytes, stream: bytes) -> bytes:
    """What a process's digest takes of each event line it checks in full."""
    return b"%d %s %s %s\n" % (position, leaf, at, stream)


class _Owners:
    """Which process checks each stream, decided alike in every process from the lines
    before: a new stream goes to the process that has spent the least so far (by
    CHECKED and PLACED)."""

    def __init__(self, processes: int) -> None:
        self.spent = [0] * processes
        self.of: dict[bytes, int] = {SEALS.encode(): EVERY}

    def owner(self, stream: bytes) -> int:
        spent = self.spent
        owner = self.of.get(stream)
        if owner is None:
            owner = self.of[stream] = spent.index(min(spent))
        if owner != EVERY:
            spent[owner] += CHECKED
            if owner:
                spent[0] += PLACED
        return owner


@dataclass
class _Waiting:
    """What the trusted list reads of a table's last state."""

    client_seed: Any
    nonce: Any
    version: int


@dataclass
class _Judged:
    """A table's referee as another process left it: finished there, and what the
    verdict reads of it (Tables.referees_trusted, closing.summary)."""

    state: _Waiting
    unrevealed: tuple[int, ...]
    trusted: list[int]
    rounds: int
    bets: int

    def finish(self) -> None:
        """Done in the process that replayed the table."""


@dataclass
class _Table:
    referee: _Judged


@dataclass
class _Left:
    """What a process hands the parent at the closing record."""

    types: dict[str, int]
    figures: dict[str, list[int]]
    streams: list[str]
    mid_chain: list[tuple[int, str]]
    """(line, stream) of each stream it found begun before the file."""
    firsts: dict[str, _Stream]
    """Completeness.streams: each stream's first and last event in the file."""
    posted: list[tuple[int, str]]
    """(position, hash) of the events posting to a player's account."""
    tables: list[tuple[int, str, Any]]
    """(first line, stream, referee) of each table it replayed."""
    settlements: int
    said: bytes
    """The digest of the place of every event line it checked in full."""


@dataclass
class _Complete(Completeness):
    """Completeness in a share: a whole log's seals held by the parent alone, over
    every process's events."""

    at_seal: Callable[[_Seal, list[Any]], None] | None = None
    """Given a seal and this process's events since the one before: the parent holds
    the seal to every process's (`hold`), once it has them; the others send theirs."""
    posted_at: list[int] = field(default_factory=list)
    """The position of each of `posted`."""

    def event(self, number: int, row: Recorded, event: Any, posted: Any = None) -> None:
        before = len(self.posted)
        super().event(number, row, event, posted)
        if len(self.posted) != before:
            self.posted_at.append(row.position)

    def place(self, number: int, row: Recorded) -> None:
        """What an event another process checks asks of the order of lines here."""
        self._seal_checkpointed(number)
        if self.ranged:
            self._in_range(number, row)

    def _fold_ahead(self) -> None:
        """Not in a share: the parent folds every process's events, in position order,
        and has the others' only at a seal (a whole log with no seal keeps its events
        to the end on N processes)."""

    def _hold_seal(self, seal: _Seal) -> None:
        assert self.at_seal is not None
        rows, self.pending.rows = self.pending.rows, []
        self.at_seal(seal, rows)

    def hold(self, seal: _Seal, rows: list[Any]) -> None:
        """The seal held to the heads, folded from every process's events before it
        (in position order)."""
        self.pending.rows = rows
        super()._hold_seal(seal)


class _Unplaced(Tree):
    """Another process's tree: it checks each leaf it is given against its event's
    content, and leaves the tree (positions, skips, checkpoints, roots) to the
    parent."""

    def add(self, number: int, position: int, document: bytes, leaf_hex: str) -> bytes:
        leaf = merkle.leaf_hash(document)
        if leaf.hex() != leaf_hex:
            raise Unshared(f"line {number}: the event does not hash to its leaf")
        return leaf

    def skip(self, number: int, s: dict[str, Any]) -> SkipLine:
        return SkipLine(number, 0, 0, ())

    def checkpoint(self, number: int, c: dict[str, Any]) -> CheckpointLine:
        issued_at = c.get("issued_at")
        if not isinstance(issued_at, str) or not is_int(c.get("size")):
            raise Unshared(f"line {number}: a checkpoint line without its size and time")
        return CheckpointLine(number, c["size"], b"", issued_at, "")


class _Share(Check):
    """One process's share of the check."""

    def __init__(
        self,
        key: Verifier | None,
        me: int,
        processes: int,
        progress: Progress | None = None,
        policy: Policy | None = None,
    ) -> None:
        super().__init__(key, progress, policy)
        self.me = me
        self.owners = _Owners(processes)
        self.elsewhere = self._elsewhere
        self.firsts: dict[str, int] = {}
        """Each table this process replays: the line it begins on."""
        self.mid_lines: list[tuple[int, str]] = []
        self.said = hashlib.sha256()

    def _elsewhere(self, number: int, cut: bytes) -> bool:
        raise NotImplementedError

    def _header(self, number: int, record: dict[str, Any]) -> Header:
        header = super()._header(number, record)
        complete = _Complete.of(header, header.format_version)
        assert isinstance(complete, _Complete)
        complete.at_seal = self._at_seal
        self.complete = complete
        return header

    def _at_seal(self, seal: _Seal, rows: list[Any]) -> None:
        raise NotImplementedError

    def _snapshot(self, number: int, record: dict[str, Any]) -> Snapshot:
        snapshot = super()._snapshot(number, record)
        if self.owners.owner(snapshot.stream.encode()) == self.me:
            self.firsts[snapshot.stream] = number
        else:
            del self.tables.tables[snapshot.stream]  # replayed by its owner
        return snapshot

    def _event(self, number: int, read: Read) -> EventLine:
        row, _, leaf_hex = read
        tables, mid_chain = len(self.tables.tables), len(self.chains.mid_chain)
        line = super()._event(number, read)
        if len(self.tables.tables) != tables:
            self.firsts[row.stream] = number
        if len(self.chains.mid_chain) != mid_chain:
            self.mid_lines.append((number, row.stream))
        if row.stream == SEALS:
            if self.me != 0:
                self.types[row.type] -= 1  # counted by the parent
        else:
            self.said.update(
                _said(
                    row.position, leaf_hex.encode(), row.recorded_at.encode(), row.stream.encode()
                )
            )
        return line

    def _left(self) -> _Left:
        complete = self.complete
        assert isinstance(complete, _Complete)
        return _Left(
            types=dict(self.types),
            figures=dict(self.tally.figures),
            streams=list(self.chains.heads),
            mid_chain=list(self.mid_lines),
            firsts=dict(complete.streams),
            posted=list(zip(complete.posted_at, complete.posted, strict=True)),
            tables=[(self.firsts[s], s, self._judged(t)) for s, t in self.tables.tables.items()],
            settlements=self.tables.settlements,
            said=self.said.digest(),
        )

    def _judged(self, table: Any) -> Any:
        return table


class _Child(_Share):
    """A process other than the parent: it checks its streams' events in full, and
    sends the parent what they move at each seal and what it counted at the end."""

    def __init__(self, key: Verifier | None, me: int, processes: int, parent: Connection) -> None:
        super().__init__(key, me, processes)
        self.parent = parent
        self.tree = _Unplaced()

    def _elsewhere(self, number: int, cut: bytes) -> bool:
        found = _stream(cut)
        if found is None:
            if b'"record":"event"' in cut:
                raise Unshared(f"line {number}: an event line whose stream is not cut out")
            return False  # not an event: every process reads it
        owner = self.owners.owner(found[0])
        if owner == self.me or owner == EVERY:
            return False
        self.body = True
        return True

    def _at_seal(self, seal: _Seal, rows: list[Any]) -> None:
        # As tuples: a dataclass pickles at a fifth of the speed.
        self.parent.send(
            ("seal", [(r.position, r.stream, r.version, r.type, r.hash, r.accounts) for r in rows])
        )
        return None

    def _closing(self, number: int, record: dict[str, Any]) -> Closing:
        self.tables.finish(number, f"closing record (line {number})")
        self.parent.send(("done", self._left()))
        return cast(Closing, _CLOSED)  # never read: the closing is the parent's to check

    def _judged(self, table: Any) -> Any:
        referee = table.referee
        state = referee.state
        return _Table(
            _Judged(
                _Waiting(state.client_seed, state.nonce, state.version),
                tuple(referee.unrevealed),
                list(referee.trusted),
                referee.rounds,
                referee.bets,
            )
        )


class _Parent(_Share):
    """The first process: it checks its streams' events in full, places every other
    event line in the tree and in time, holds each seal to every process's events,
    and checks the closing with every process's counts."""

    def __init__(
        self,
        key: Verifier | None,
        processes: int,
        progress: Progress | None,
        policy: Policy | None,
        inboxes: Sequence[_Inbox],
    ) -> None:
        super().__init__(key, 0, processes, progress, policy)
        self.inboxes = inboxes
        self.sealed: deque[tuple[_Seal, list[Any]]] = deque()
        """The seals read and not yet held, with this process's events before each."""
        self.kept = 0
        """The events in `sealed`: past AHEAD, the parent waits for the others."""
        self.theirs = [hashlib.sha256() for _ in range(processes)]
        """What each process's digest must be, from the places cut out here."""
        self.countdown = PROGRESS_EVERY

    def _elsewhere(self, number: int, cut: bytes) -> bool:
        found = _stream(cut)
        if found is None:
            if b'"record":"event"' in cut:
                raise Unshared(f"line {number}: an event line whose stream is not cut out")
            return False
        stream, tail = found
        owner = self.owners.owner(stream)
        if owner == 0 or owner == EVERY:
            return False
        # Its place, as Check._event takes it; its content is its owner's to check.
        self.body = True
        position, leaf, at = _place(cut, tail)
        self.theirs[owner].update(_said(position, leaf, at, stream))
        tree = self.tree
        frontier = tree.frontier
        if position != frontier.size + 1 or position > tree.last:
            raise Unshared(f"line {number}: out of place")
        try:
            frontier.append(unhexlify(leaf))
            when = at.decode()
        except (binascii.Error, UnicodeDecodeError):
            raise Unshared(f"line {number}: its leaf or time cannot be read") from None
        complete = cast(_Complete, self.complete)
        clock = self.times
        # `place` has something to check only with a seal awaiting its checkpoint line,
        # or in a file with a time range (a whole log's has none), or time gone back.
        if complete.awaiting is not None or complete.ranged or times.out_of_order(when, clock.last):
            row = Recorded(position, stream.decode(), 0, "", 0, "", "", None, when, "", "")
            clock.event(number, row)
            complete.place(number, row)
        clock.last = when
        if self.progress is not None:
            self.countdown -= 1
            if self.countdown == 0:
                self.countdown = PROGRESS_EVERY
                self._progress()
        return True

    def _at_seal(self, seal: _Seal, rows: list[Any]) -> None:
        self.sealed.append((seal, rows))
        self.kept += len(rows)
        self._hold(wait=self.kept > AHEAD)

    def _hold(self, wait: bool) -> None:
        """Hold each seal read so far whose events every process has sent (with `wait`,
        every one, waiting for them): a process that lags behind is not waited for at
        each seal, but only at the closing."""
        complete = self.complete
        assert isinstance(complete, _Complete)
        while self.sealed and (wait or all(inbox.ready() for inbox in self.inboxes)):
            seal, rows = self.sealed.popleft()
            self.kept -= len(rows)
            for inbox in self.inboxes:
                kind, theirs = inbox.take()
                if kind != "seal":
                    raise Unshared(theirs)
                rows.extend(_Posting(*row) for row in theirs)
            rows.sort(key=_position)
            complete.hold(seal, rows)

    def _closing(self, number: int, record: dict[str, Any]) -> Closing:
        self._hold(wait=True)
        lefts = [self._left()]
        for me, inbox in enumerate(self.inboxes, start=1):
            kind, left = inbox.take()
            if kind != "done":
                raise Unshared(left)
            if left.said != self.theirs[me].digest():
                raise Unshared(f"process {me} checked other lines than were placed")
            lefts.append(left)
        self._merge(lefts)
        return super()._closing(number, record)

    def _merge(self, lefts: list[_Left]) -> None:
        """Every process's counts, this one's first, into this check's, as the serial
        check holds them at the closing (in the order it met them, where it keeps one)."""
        types: dict[str, int] = {}
        figures: dict[str, list[int]] = {}
        for left in lefts:
            for type_, count in left.types.items():
                if count:
                    types[type_] = types.get(type_, 0) + count
            for account, given in left.figures.items():
                mine = figures.setdefault(account, [0] * len(FIGURES))
                for i, amount in enumerate(given):
                    mine[i] += amount
        self.types = types
        self.tally.figures = figures
        for left in lefts[1:]:
            for stream in left.streams:  # only which streams the file holds is read now
                self.chains.heads.setdefault(stream, (0, "", 0))
        begun = sorted(m for left in lefts for m in left.mid_chain)
        self.chains.mid_chain = list(dict.fromkeys(stream for _, stream in begun))
        complete = self.complete
        assert complete is not None
        for left in lefts[1:]:
            complete.streams.update(left.firsts)
        complete.posted = [h for _, h in sorted(p for left in lefts for p in left.posted)]
        tables = sorted((t for left in lefts for t in left.tables), key=lambda t: t[0])
        self.tables.tables = {stream: cast(Any, table) for _, stream, table in tables}
        self.tables.settlements = sum(left.settlements for left in lefts)


class _Inbox:
    """What a process sends the parent, received as it comes by a thread of the
    parent's: a process is not held up because the parent has not read what it sent
    (at each seal, more than a pipe holds), until it is AHEAD events ahead of what the
    parent has taken; then the thread waits for the parent to take, and the process,
    its pipe full, for the thread."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.got: deque[tuple[str, Any]] = deque()
        self.kept = 0
        """The events of the seals in `got`."""
        self.closed = False
        self.came = threading.Condition()
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self) -> None:
        kind = ""
        while kind not in ("done", "failed"):
            with self.came:
                self.came.wait_for(lambda: self.kept <= AHEAD or self.closed)
                if self.closed:
                    return
            try:
                kind, what = self.connection.recv()
            except (EOFError, OSError) as exc:
                kind, what = "failed", f"a process ended: {exc!r}"
            with self.came:
                self.got.append((kind, what))
                if kind == "seal":
                    self.kept += len(what)
                self.came.notify_all()

    def close(self) -> None:
        """The check is over: the thread stops waiting for the parent to take."""
        with self.came:
            self.closed = True
            self.came.notify_all()

    def ready(self) -> bool:
        """Whether something came; a process that failed fails the check at once."""
        if self.got and self.got[0][0] == "failed":
            raise Unshared(self.got[0][1])
        return bool(self.got)

    def take(self) -> tuple[str, Any]:
        with self.came:
            self.came.wait_for(lambda: bool(self.got))
            kind, what = self.got.popleft()
            if kind == "seal":
                self.kept -= len(what)
            self.came.notify_all()
        return kind, what


# -- the processes ---------------------------------------------------------------------


MOST_JOBS = 64
"""The most processes `hazard verify FILE --jobs N` starts: past the cores, more only
cost (each reads the whole file), and thousands would run out of file descriptors."""


def cores() -> int:
    """The cores this process may run on (at most MOST_JOBS): `hazard verify FILE`'s
    processes unless told."""
    if hasattr(os, "sched_getaffinity"):
        return min(max(1, len(os.sched_getaffinity(0))), MOST_JOBS)
    return min(os.cpu_count() or 1, MOST_JOBS)


def verify(
    lines: Iterable[bytes],
    key: Verifier | None,
    progress: Progress | None,
    policy: Policy | None,
    processes: int,
) -> Verified | None:
    """The file checked on `processes` processes; None when it is to be checked
    serially (it could not be shared, or does not verify: the serial check names its
    first disagreement). `lines` is not read: the processes read the file themselves."""
    source = _source(lines)
    if source is None:
        return None
    try:
        return shared(source, key, progress, policy, processes)
    except Unshared:
        return None


def shared(
    source: Path | Sequence[bytes],
    key: Verifier | None,
    progress: Progress | None,
    policy: Policy | None,
    processes: int,
) -> Verified:
    """The check in shares of the file at `source` (a path, or its lines); Unshared
    if it does not verify so, or cannot be shared."""
    context = multiprocessing.get_context("fork")
    # Every process's referees keep rounds only for the tables a dispute comes on.
    ahead = disputed.in_file(source) if isinstance(source, Path) else disputed.tables(source)
    children: list[tuple[Any, Connection]] = []
    inboxes: list[_Inbox] = []
    try:
        for me in range(1, processes):
            mine, theirs = context.Pipe(duplex=False)
            child = context.Process(
                target=_child, args=(me, processes, source, key, theirs, ahead), daemon=True
            )
            child.start()
            theirs.close()
            children.append((child, mine))
        inboxes.extend(_Inbox(c) for _, c in children)  # after the last fork: threads
        check = _Parent(key, processes, progress, policy, inboxes)
        check.disputed = ahead
        try:
            with _opened(source) as lines:
                for _ in check.run(lines):
                    pass
        except Disagreement as exc:
            raise Unshared(str(exc)) from None
        return check.verified()
    finally:
        for inbox in inboxes:
            inbox.close()
        for child, _ in children:
            child.join(timeout=0.1)
            if child.is_alive():  # the check failed before it was done
                child.terminate()
                child.join()
        for inbox in inboxes:  # each hears its process's end, if not its last word
            inbox.thread.join()
        for _, connection in children:
            connection.close()


def _child(
    me: int,
    processes: int,
    source: Path | Sequence[bytes],
    key: Verifier | None,
    parent: Connection,
    ahead: frozenset[str] | None,
) -> None:
    try:
        check = _Child(key, me, processes, parent)
        check.disputed = ahead
        with _opened(source) as lines:
            for _ in check.run(lines):
                pass
    except BaseException as exc:  # whatever it is, the serial check will say it
        with contextlib.suppress(OSError):
            parent.send(("failed", f"process {me}: {type(exc).__name__}: {exc}"))
    finally:
        parent.close()


def _source(lines: Iterable[bytes]) -> Path | Sequence[bytes] | None:
    """Where every process can read the file from: a file of its own on disk (read
    from its start), or lines in memory; None for anything else (a pipe)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    if isinstance(lines, list | tuple):
        return lines
    name = getattr(lines, "name", None)
    if not isinstance(name, str) or not os.path.isfile(name):
        return None
    try:
        if not cast(Any, lines).seekable() or cast(Any, lines).tell() != 0:
            return None
    except (AttributeError, OSError):
        return None
    return Path(name)


@contextlib.contextmanager
def _opened(source: Path | Sequence[bytes]) -> Iterator[Iterable[bytes]]:
    if not isinstance(source, Path):
        yield source
        return
    with source.open("rb") as f:
        yield f
