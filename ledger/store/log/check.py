"""Verification of the log as stored: one streaming pass over the events in position
order that re-derives everything the database claims about them.

It checks that positions start at 1 with no gap; each stream's hash chain (what
EventStore.verify checks, with the same words); that no event is recorded before the
one before it, and no checkpoint signed before the events it covers (ledger.store.log.
times); each event's leaf against the stored
level-0 hash, and every stored hash of the tree against the tree recomputed from the
events (naming the first position whose stored hashes differ); that no stored hash
lies beyond the events; and every stored checkpoint: signed by the *trusted* key
(given by the caller, never read from the database), within the log, and with the
root of the recomputed tree at its size. At server-dice tables (engine.serverdice) each
revealed seed is held to its turn's commitment and draws every throw of its turn again:
one HMAC per throw, and of each table only the throws of the turn in play are kept.

Memory stays bounded: events, stored hashes and checkpoints are read a batch at a
time, and of the tree only its frontier is kept (at most 64 hashes), from which the
root at each checkpoint's size is computed as the pass reaches it. The stream heads
(one per stream) are the only other state.

A pass can start part-way (`resume`): from a frontier verified earlier (an
incremental run) or read from the stored tree (a bounded page of /audit/verify).
Events before the start are then not re-read: the caller says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import sqlalchemy as sa

from engine import serverdice
from ledger.store import codec, db
from ledger.store.eventstore import GENESIS
from ledger.store.log import merkle, parting, quorum, sealing, times, tree
from ledger.store.log.checkpoint import Checkpoint, NoteError, open_checkpoint
from ledger.store.log.heads import SEALS
from ledger.store.log.keys import Verifier
from ledger.store.log.policy import Policy

BATCH = 5_000
"""Events read per query: large enough that a query's cost is spread thin, small
enough that memory stays a few megabytes."""

Progress = Callable[[int, int], None]
"""Called after each batch with (events checked so far, events the pass expects)."""


@dataclass(frozen=True)
class Finding:
    """One problem, at the first position it concerns."""

    position: int
    what: str
    event: str = ""
    """Which event, when it is one stream's (`stream vN`)."""

    def __str__(self) -> str:
        label = f" ({self.event})" if self.event else ""
        return f"position {self.position}{label}: {self.what}"


@dataclass
class Report:
    """What a pass checked and what it found."""

    start: int
    """The pass read the events after this position (0: the whole log)."""
    size: int = 0
    """The last position read: the tree checked is the tree of this many events."""
    root: bytes = merkle.EMPTY_ROOT
    frontier: list[bytes] = field(default_factory=list)
    checkpoints: int = 0
    """Stored checkpoints checked."""
    complete: bool = True
    """Whether the pass reached the end of the log (a bounded pass may stop before)."""
    findings: list[Finding] = field(default_factory=list)
    more: int = 0
    """Findings beyond `limit_findings`, counted but not kept."""
    first_leaf_differs: int | None = None
    """The first position whose event's leaf differs from its stored level-0 hash."""
    tree_departs: int | None = None
    """The first position where any stored hash of the tree differs from the events'
    (before it, the events' tree is the stored one)."""
    first_missing: int | None = None
    """The first position missing."""
    first_broken: tuple[int, str] | None = None
    """The first event that breaks its stream's hash chain: its position, and why."""
    roots: dict[int, bytes] = field(default_factory=dict)
    """The recomputed root at each size asked for (`watch`)."""
    limit_findings: int = 100
    unsigned: int = 0
    """Stored checkpoints not signed by the trusted key."""
    differ: int = 0
    """Stored checkpoints, signed by it, whose root is not the events'."""
    unsigned_at: int | None = None
    early: int = 0
    """Stored checkpoints, signed by it, dated before the newest event they cover."""
    differ_at: int | None = None
    tree_at: int | None = None
    early_at: int | None = None
    """Indexes in `findings` of the first of each kind."""

    @property
    def events(self) -> int:
        return self.size - self.start

    @property
    def ok(self) -> bool:
        return not self.findings

    def add(self, position: int, what: str, event: str = "") -> int | None:
        """Add a finding; its index in `findings`, None if beyond the limit."""
        # Two problems of one event (a chain and a leaf) are one line about it.
        if self.findings and self.findings[-1].position == position:
            last = self.findings[-1]
            self.findings[-1] = Finding(position, f"{last.what}; {what}", last.event or event)
            return len(self.findings) - 1
        if len(self.findings) >= self.limit_findings:
            self.more += 1
            return None
        self.findings.append(Finding(position, what, event))
        return len(self.findings) - 1


snapshot = db.snapshot
"""Make the transaction just begun read one state of the log throughout, so that a
write committed during a pass (its events, hashes and checkpoint) is seen whole or not
at all (ledger.store.db.snapshot)."""


def _mark(conn: sa.Connection) -> str:
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


_SEEDED = frozenset({"SeedCommitted", "DiceDrawn", "SeedRevealed"})
"""The event types of a server-dice turn: what the seed check reads (a payload parse
for these alone)."""


@dataclass
class _Turn:
    """A server-dice table's turn in play, as far as the pass has read it."""

    commitment: str
    committed_at: int
    throws: list[tuple[int, str, Any, Any, Any, Any]] = field(default_factory=list)
    """(position, version label, client seed, nonce, die 1, die 2) of each throw."""


def _check_turn(
    report: Report, turns: dict[str, _Turn], position: int, stream: str, version: int,
    type_: str, payload: str,
) -> None:  # fmt: skip
    """Hold a revealed seed to its turn's commitment and the turn's throws to the seed.
    A turn whose commitment the pass did not read (it started part-way) is passed over."""
    try:
        data = json.loads(payload)
    except ValueError:
        return  # its leaf and hash say what is wrong with it
    if not isinstance(data, dict):
        return
    label = f"{stream} v{version}"
    if type_ == "SeedCommitted":
        turns[stream] = _Turn(str(data.get("commitment")), position)
        return
    turn = turns.get(stream)
    if turn is None:
        return
    if type_ == "DiceDrawn":
        turn.throws.append(
            (position, label, data.get("client_seed"), data.get("nonce"), data.get("die1"),
             data.get("die2"))
        )  # fmt: skip
        return
    del turns[stream]
    seed = data.get("seed")
    if not serverdice.is_seed(seed) or serverdice.commit_to(seed) != turn.commitment:
        report.add(
            position,
            f"the seed revealed does not hash to its turn's commitment (position "
            f"{turn.committed_at})",
            label,
        )
        return
    key = bytes.fromhex(seed)
    for at, which, client_seed, nonce, die1, die2 in turn.throws:
        try:
            drawn = serverdice.draw(key, client_seed, nonce)
        except (TypeError, ValueError):
            drawn = None
        if drawn != (die1, die2):
            report.add(
                at,
                f"the seed revealed at position {position} does not draw the dice recorded "
                "for this throw's client seed and nonce",
                which,
            )


def check_log(
    conn: sa.Connection,
    verifier: Verifier | None,
    *,
    resume: merkle.Frontier | None = None,
    limit: int | None = None,
    watch: Iterable[int] = (),
    progress: Progress | None = None,
    batch: int = BATCH,
    limit_findings: int = 100,
) -> Report:
    """Check the log in `conn` (one read transaction, so that it is one state of it).

    `verifier` is the trusted key (None: none, and every checkpoint is reported as
    not signed by it). From `resume`, the frontier of the tree of the events before,
    if given, else from position 1; at most `limit` events if given. `watch`: sizes
    at which to keep the recomputed root in `Report.roots` (a receipt's size, the
    witnessed checkpoint's)."""
    check = _Pass(conn, verifier, resume, set(watch), limit_findings)
    total = _count_after(conn, check.report.start)
    if limit is not None:
        total = min(total, limit)
    done = 0
    while limit is None or done < limit:
        rows = check.read(batch if limit is None else min(batch, limit - done))
        if not rows:
            break
        check.batch(rows)
        done += len(rows)
        del rows  # let go before the next is read: one batch of rows in memory, not two
        if progress is not None:
            progress(done, total)
    return check.finish()


class _Quoted(codec.Quoted):
    """The texts a pass quotes, fewer kept: its streams, actors and types are a few
    thousand, but nearly every write has its own time (and idempotency key), and
    100,000 of them held for the whole pass are a dozen megabytes."""

    __slots__ = ()
    LIMIT = 8_192


class _Pass:
    """One pass in position order: the report it fills, the tree recomputed so far
    (its frontier), each stream's head and each server-dice table's turn."""

    def __init__(
        self,
        conn: sa.Connection,
        verifier: Verifier | None,
        resume: merkle.Frontier | None,
        watched: set[int],
        limit_findings: int,
    ) -> None:
        self.conn, self.mark = conn, _mark(conn)
        self.frontier = resume.copy() if resume else merkle.Frontier()
        start = self.frontier.size
        self.report = Report(start=start, size=start, limit_findings=limit_findings)
        self.watched = watched
        self.verifiers = [verifier] if verifier is not None else []
        self.after = start
        """The last position read."""
        self.next_position = start + 1
        self.heads: dict[str, tuple[int, str]] = {}
        self.broken: set[str] = set()
        """Streams whose chain broke: named once, then no longer followed."""
        self.turns: dict[str, _Turn] = {}
        self.quoted = _Quoted()
        self.tree_differs = False
        self.folding = sealing.Folding() if resume is None else None
        """The heads, folded from the first event to hold every seal to them (a pass
        resumed from a frontier has no heads to start from: a full pass checks them)."""
        self.last_at = self.newest_at = _recorded_at(conn, start)
        """The time of the last event read, and the latest time read (the events
        before the start: the one at the start, whose pass held it to those before)."""

    def read(self, want: int) -> list[Any]:
        """The next `want` events in position order, every column as stored."""
        rows = db.fetch(
            self.conn,
            "SELECT position, stream, version, type, schema_version, payload, actor,"
            " idempotency_key, recorded_at, prev_hash, hash FROM events"
            f" WHERE position > {self.mark} ORDER BY position LIMIT {self.mark}",
            (self.after, want),
        )
        if rows:
            self.after = rows[-1][0]
        return rows

    def batch(self, rows: list[Any]) -> None:
        """Check a batch of events, with the stored hashes and checkpoints of the
        trees they make, each read in one query."""
        first = self.frontier.size
        have = self._stored_hashes(first, first + len(rows))
        check_at = {
            int(size): (root, note)
            for size, root, note in db.fetch(
                self.conn,
                "SELECT size, root, note FROM checkpoints"
                f" WHERE size > {self.mark} AND size <= {self.mark} ORDER BY size",
                (first, first + len(rows)),
            )
        }
        _unknown_heads(self.conn, rows, self.heads, self.report.start)
        self._events(rows, have, check_at)
        self.report.size = self.frontier.size

    def _stored_hashes(self, first: int, last: int) -> list[bytes]:
        """The stored hashes the records first..last-1 make, in order; an empty hash
        where one is missing, so that none is equal."""
        base, end = merkle.stored_hash_count(first), merkle.stored_hash_count(last)
        stored = db.fetch(
            self.conn,
            f"SELECT idx, hash FROM tree_hashes WHERE idx >= {self.mark} AND idx < {self.mark}"
            " ORDER BY idx",
            (base, end),
        )
        if len(stored) == end - base and (not stored or stored[0][0] == base):
            return [bytes(h) for _, h in stored]
        by_index = {int(i): bytes(h) for i, h in stored}
        return [by_index.get(i, b"") for i in range(base, end)]

    def _events(
        self, rows: list[Any], have: list[bytes], check_at: dict[int, tuple[str, str]]
    ) -> None:
        """Each event of a batch: its place, its turn's seed, its chain, and its leaf
        and the subtrees it completes, held to the stored hashes `have`; then, at each
        size, the root a receipt asks for and the stored checkpoint."""
        report, heads, broken, frontier = self.report, self.heads, self.broken, self.frontier
        stack, size, next_position, at = frontier.hashes, frontier.size, self.next_position, 0
        last_at, newest_at, out_of_order = self.last_at, self.newest_at, times.out_of_order
        # codec.frame, codec.chain_hash and merkle.Frontier.append, written out: through
        # them a pass over bench.seed's 200,000 events ran 8% slower (169,000 events a
        # second against 185,000 so, medians of 9); test_tree's test_the_checks_own_
        # frame_chain_and_frontier_are_codec_and_merkle holds this copy to them.
        get, q, sha256 = self.quoted.get, self.quoted.__missing__, hashlib.sha256
        for row in rows:
            position, stream, version, type_, schema, payload, actor, key, when, prev, digest = row
            if position != next_position:
                # Named once; the tree goes on counting the events as they are.
                report.add(next_position, f"missing: the next event stored is at {position}")
                if report.first_missing is None:
                    report.first_missing = next_position
            next_position = position + 1
            if type_ in _SEEDED:
                _check_turn(report, self.turns, position, stream, version, type_, payload)
            if out_of_order(when, last_at):
                wrong = times.problem(when, last_at)
                if wrong is not None:
                    report.add(position, wrong, f"{stream} v{version}")
            last_at = when
            if when > newest_at:
                newest_at = when
            try:
                data = (
                    f'{{"actor":{get(actor) or q(actor)},"idempotency_key":'
                    f'{get(key) or q(key)},"payload":{payload},"position":{position:d},'
                    f'"recorded_at":{get(when) or q(when)},"schema_version":{schema:d},'
                    f'"stream":{get(stream) or q(stream)},"type":{get(type_) or q(type_)},'
                    f'"version":{version:d}}}'
                ).encode()
            except (TypeError, ValueError):
                report.add(position, "its columns are not of the types an event's are")
                data = repr(row).encode()
            if stream not in broken:  # the chain, as EventStore.verify checks it
                head_version, head_hash = heads.get(stream, (0, GENESIS))
                problem = None
                if version != head_version + 1:
                    problem = f"version {version} follows {head_version}" + self._dropped(
                        stream, head_version, version
                    )
                elif prev != head_hash:
                    problem = "its previous hash is not the hash of the event before it"
                elif sha256(prev.encode() + b"\n" + data).hexdigest() != digest:
                    problem = "its hash does not match its contents"
                if problem is not None:
                    broken.add(stream)
                    report.add(position, problem, f"{stream} v{version}")
                    if report.first_broken is None:
                        report.first_broken = (position, f"{stream} v{version}: {problem}")
                heads[stream] = (version, digest)
            if self.folding is not None:
                self._fold(position, stream, version, type_, schema, payload, digest, check_at)
            # The tree: the leaf, then each subtree it completes, as they are stored.
            made = sha256(b"\x00" + data).digest()
            first, differs = at, have[at] != made
            leaf_differs, n = differs, size
            at += 1
            while n & 1:
                made = sha256(b"\x01" + stack.pop() + made).digest()
                differs = differs or have[at] != made
                at += 1
                n >>= 1
            stack.append(made)
            size += 1
            if differs or size in self.watched or size in check_at:
                frontier.size = size
                if differs:
                    self._differs(size, have[first], leaf_differs)
                self._at_size(size, check_at, newest_at)
        frontier.size, self.next_position = size, next_position
        self.last_at, self.newest_at = last_at, newest_at

    def _fold(
        self,
        position: int,
        stream: str,
        version: int,
        type_: str,
        schema: int,
        payload: str,
        digest: str,
        check_at: dict[int, tuple[str, str]],
    ) -> None:
        """The heads moved by one event, and a seal held to them and to its checkpoint;
        after the first finding, no more (what follows is folded from a wrong start)."""
        assert self.folding is not None
        problem = self.folding.event(position, stream, version, type_, schema, payload, digest)
        if problem is None and stream == SEALS and position not in check_at:
            problem = (
                f"checkpoint {version} (size {position}) is missing: the seal at position "
                f"{position} numbers it, and the log holds no checkpoint of that size"
            )
        if problem is not None:
            self.report.add(position, problem, f"{stream} v{version}")
            self.folding = None

    def _at_size(self, size: int, check_at: dict[int, tuple[str, str]], newest_at: str) -> None:
        """The tree of `size` events, the latest of them recorded at `newest_at`: its
        root, if a receipt asks for it, and the stored checkpoint of that size, if there
        is one."""
        report = self.report
        if size in self.watched:
            report.roots[size] = self.frontier.root()
        if size in check_at:
            root_hex, note = check_at.pop(size)
            _check_checkpoint(
                report, self.verifiers, size, root_hex, note, self.frontier.root(), newest_at
            )

    def _dropped(self, stream: str, head: int, version: int) -> str:
        """When `version` skips versions of its stream, which are missing and where they
        stood: after the stream's stored event before it (read from the log, so that a
        pass that began part-way names it too), and before this one."""
        if version <= head + 1:
            return ""  # a version repeated or gone back: nothing is missing before it
        found = db.fetch(
            self.conn,
            f"SELECT version, position FROM events WHERE stream = {self.mark} AND version <"
            f" {self.mark} ORDER BY version DESC LIMIT 1",
            (stream, version),
        )
        before = int(found[0][0]) if found else 0
        if before + 1 == version:
            return ""
        missing = f"v{before + 1}" + (f"..v{version - 1} are" if version > before + 2 else " is")
        if not found:
            return f": {missing} missing, dropped before this event"
        return (
            f": {missing} missing, dropped after position {found[0][1]} (where v{before} is) "
            "and before this event"
        )

    def _differs(self, number: int, stored_leaf: bytes, leaf_differs: bool) -> None:
        """Record number (a position, were no event missing) makes hashes other than
        the stored ones: the first such is a finding, and the first leaf is noted."""
        report = self.report
        if leaf_differs and report.first_leaf_differs is None:
            report.first_leaf_differs = number
        if self.tree_differs:
            return
        self.tree_differs = True
        report.tree_departs = number
        if not stored_leaf:
            what = "the tree has no stored hash for this event"
        elif leaf_differs:
            what = "its leaf is not the tree's stored leaf hash"
        else:
            what = "a stored hash of a subtree it completes is not the tree's"
        report.tree_at = report.add(number, what + " (the first stored hash that differs)")

    def finish(self) -> Report:
        """What the pass found, with what lies beyond the last event if it read to
        the end."""
        report, frontier = self.report, self.frontier
        report.size = frontier.size
        report.frontier = list(frontier.hashes)
        report.root = frontier.root()
        more = db.fetch(
            self.conn,
            f"SELECT position FROM events WHERE position > {self.mark} LIMIT 1",
            (self.after,),
        )
        report.complete = not more
        if report.complete:
            _check_beyond(self.conn, report, self.verifiers, self.mark)
        _finish(report)
        return report


def _recorded_at(conn: sa.Connection, position: int) -> str:
    """The time of the event at `position` ("" for none)."""
    if position < 1:
        return ""
    found = db.fetch(
        conn, f"SELECT recorded_at FROM events WHERE position = {_mark(conn)}", (position,)
    )
    return str(found[0][0]) if found else ""


def _count_after(conn: sa.Connection, start: int) -> int:
    rows = db.fetch(conn, f"SELECT count(*) FROM events WHERE position > {_mark(conn)}", (start,))
    return int(rows[0][0])


def _unknown_heads(
    conn: sa.Connection, rows: list[Any], heads: dict[str, tuple[int, str]], start: int
) -> None:
    """A pass that starts part-way meets streams whose earlier events it did not read:
    their heads are the stored event before (checked by the pass that read it)."""
    if start == 0:
        return
    mark = _mark(conn)
    seen: set[str] = set()
    for row in rows:
        stream, version = row[1], row[2]
        if stream in heads or stream in seen:
            continue
        seen.add(stream)  # its first event in this batch says where it stood
        if version <= 1:
            continue
        found = db.fetch(
            conn,
            f"SELECT version, hash FROM events WHERE stream = {mark} AND version = {mark}",
            (stream, version - 1),
        )
        if found:
            heads[stream] = (int(found[0][0]), found[0][1])


def _check_checkpoint(
    report: Report,
    verifiers: list[Verifier],
    size: int,
    root_hex: str,
    note: str,
    root: bytes,
    newest_at: str = "",
) -> None:
    # A change usually fails every checkpoint after it in the same way: the first is a
    # finding, the rest are counted in it (`_finish`), so the first problems listed
    # are different ones.
    report.checkpoints += 1
    try:
        opened = open_checkpoint(note, verifiers)
    except (NoteError, ValueError) as exc:
        report.unsigned += 1
        if report.unsigned == 1:
            report.unsigned_at = report.add(
                size,
                f"the stored checkpoint of size {size} is not signed by the trusted key ({exc})",
            )
        return
    if opened.size != size or opened.root.hex() != root_hex:
        report.add(size, f"the stored checkpoint of size {size} says otherwise in its signed note")
        return
    early = times.checkpoint_early(opened, newest_at)
    if early is not None:
        report.early += 1
        if report.early == 1:
            report.early_at = report.add(size, early)
    if opened.root != root:
        report.differ += 1
        if report.differ == 1 and report.tree_at is None:
            report.differ_at = report.add(
                size,
                f"the checkpoint of size {size} signs root {opened.root.hex()}, but the events "
                f"give {root.hex()}",
            )


def _finish(report: Report) -> None:
    """Count the checkpoints that failed like the first into its finding."""
    notes = [
        (report.unsigned_at, report.unsigned - 1, "later", "not signed by it either"),
        (report.differ_at, report.differ - 1, "later", "not of the events' roots either"),
        (report.early_at, report.early - 1, "later", "dated before the newest event covered"),
    ]
    if report.tree_at is not None:
        notes.append(
            (report.tree_at, report.differ, "later", "signed over a root the events do not give")
        )
    for index, count, later, what in notes:
        if index is None or count <= 0:
            continue
        finding = report.findings[index]
        which = " ".join(filter(None, [str(count), later, "stored checkpoint"]))
        said = f"{which} is {what}" if count == 1 else f"{which}s are {what}"
        report.findings[index] = Finding(finding.position, f"{finding.what}; {said}", finding.event)


def _check_beyond(
    conn: sa.Connection, report: Report, verifiers: list[Verifier], mark: str
) -> None:
    """After the last event: no stored hash, no checkpoint beyond it, and the newest
    events covered by a signed checkpoint (every write signs one)."""
    size = report.size
    extra = db.fetch(
        conn,
        f"SELECT min(idx) FROM tree_hashes WHERE idx >= {mark}",
        (merkle.stored_hash_count(size),),
    )
    if extra and extra[0][0] is not None:
        report.add(
            size + 1,
            f"the tree stores hash {extra[0][0]} beyond the {size} events of the log "
            f"(events cut from the end?)",
        )
    beyond = db.fetch(
        conn, f"SELECT size FROM checkpoints WHERE size > {mark} ORDER BY size", (size,)
    )
    if beyond:
        top = int(beyond[-1][0])
        # Cut at its end, only when the stored tree proves what is left the first events
        # of the newest checkpoint signed; else events may have gone from anywhere, the
        # rest renumbered.
        how = "events were taken out, from its end or before it"
        note = db.fetch(conn, f"SELECT note FROM checkpoints WHERE size = {mark}", (top,))
        try:
            newest_signed = open_checkpoint(note[0][0], verifiers)
        except (NoteError, ValueError):
            newest_signed = None
        if (
            size
            and newest_signed is not None
            and parting.prefix_proven(conn, size, report.root, newest_signed)
        ):
            how = (
                f"the stored tree proves its {size} events the first of the {top} the newest "
                "signs: the log was cut here"
            )
        report.add(
            size + 1,
            f"{len(beyond)} stored checkpoint(s) cover the log up to {top} events, but it has "
            f"{size}: {how}",
        )
    newest = db.fetch(conn, "SELECT max(size) FROM checkpoints", ())
    signed = int(newest[0][0] or 0) if newest else 0
    if signed < size:
        report.add(
            signed + 1,
            f"events {signed + 1}..{size} are covered by no stored checkpoint "
            f"(every write signs one)",
        )


@dataclass(frozen=True)
class State:
    """What an incremental run keeps between runs: the tree it verified (size, root and
    frontier) and the key it trusted."""

    size: int
    root: bytes
    frontier: tuple[bytes, ...]
    key: str

    def text(self) -> str:
        return json.dumps(
            {
                "size": self.size,
                "root": self.root.hex(),
                "frontier": [h.hex() for h in self.frontier],
                "key": self.key,
            },
            indent=2,
        )

    @classmethod
    def parse(cls, text: str) -> State:
        """A state as `text` wrote it, or ValueError saying why not."""
        try:
            data = json.loads(text)
            state = cls(
                int(data["size"]),
                bytes.fromhex(data["root"]),
                tuple(bytes.fromhex(h) for h in data["frontier"]),
                str(data["key"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"not a verify state ({exc})") from None
        if state.size < 0 or merkle.Frontier(state.size, state.frontier).root() != state.root:
            raise ValueError("not a verify state (its frontier does not give its root)")
        if len(state.frontier) != state.size.bit_count():
            raise ValueError("not a verify state (its frontier is not of its size)")
        return state


def still_stored(conn: sa.Connection, state: State) -> bool:
    """Whether the stored tree of `state.size` events still has the root verified then:
    what lets an incremental run trust the events before it without reading them."""
    try:
        return tree.load_frontier(conn, state.size).hashes == list(state.frontier)
    except merkle.MerkleError:
        return False


# -- a whole check, as `hazard verify` runs it ------------------------------------------


class Restart(Enum):
    """Why a check given a state (an incremental run) read the whole log again."""

    OTHER_KEY = "other-key"
    """The state was verified with another key than the one trusted now."""
    RECEIPT_WITHIN = "receipt-within"
    """The receipt is of a size the state covers: only a pass from position 1 keeps
    the root at that size to hold it against."""
    TREE_REWRITTEN = "tree-rewritten"
    """The stored tree of the state's events no longer has the root verified then."""


@dataclass
class Verified:
    """A whole check: the pass, why it did not resume from the state it was given, where
    the log parts from the receipt, what the caller's policy makes of the witnesses'
    cosignatures, and the state to keep for the next run."""

    report: Report
    restart: Restart | None
    parting: parting.Parting | None
    """Each checkpoint kept elsewhere held to the log, and where the log parts from them."""
    state: State
    witnessing: quorum.Witnessing | None = None

    @property
    def ok(self) -> bool:
        return (
            self.report.ok
            and (self.parting is None or self.parting.agrees)
            and (self.witnessing is None or self.witnessing.ok)
        )


def open_receipt(note: bytes, verifier: Verifier) -> Checkpoint:
    """A checkpoint kept elsewhere (a receipt), opened with the trusted key; NoteError
    or ValueError when it is not a checkpoint signed by that key."""
    # A note ends with one newline; `jq -r` or an editor may have added more.
    return open_checkpoint(note.rstrip(b"\r\n") + b"\n", [verifier])


def verify(
    engine: sa.Engine,
    verifier: Verifier,
    *,
    receipts: Sequence[parting.Kept] = (),
    state: State | None = None,
    policy: Policy | None = None,
    progress: Progress | None = None,
    limit_findings: int = 100,
) -> Verified:
    """Check the log in one state of it (`snapshot`), from position 1 or, given the
    `state` an earlier check kept, from the tree it verified when that still stands;
    hold it against `receipts`, checkpoints kept elsewhere, when given (ledger.store.
    log.parting); and, given the caller's `policy`, hold the newest checkpoint a quorum
    of its witnesses cosigned to the events (ledger.store.log.quorum)."""
    restart = None
    if state is not None and state.key != verifier.text():
        restart = Restart.OTHER_KEY
    elif state is not None and any(r.size <= state.size for r in receipts):
        restart = Restart.RECEIPT_WITHIN
    with engine.connect() as conn, conn.begin():
        snapshot(conn)
        resume = None
        if state is not None and restart is None:
            if still_stored(conn, state):
                resume = merkle.Frontier(state.size, state.frontier)
            else:
                restart = Restart.TREE_REWRITTEN
        watch = [r.size for r in receipts]
        found = quorum.stored(conn, policy) if policy is not None else None
        witnessed = found.size if found is not None else None
        if witnessed is not None and (resume is None or witnessed > resume.size):
            watch.append(witnessed)  # the pass keeps the events' root there
        report = check_log(
            conn, verifier, resume=resume, watch=watch, progress=progress,
            limit_findings=limit_findings,
        )  # fmt: skip
        witnessing = None
        if found is not None and policy is not None:
            root = _events_root(conn, report, resume, witnessed)
            witnessing = quorum.hold(found, policy, root, report.size)
        parted = _parting(conn, verifier, receipts, report) if receipts else None
    kept = State(report.size, report.root, tuple(report.frontier), verifier.text())
    return Verified(report, restart, parted, kept, witnessing)


def _parting(
    conn: sa.Connection, verifier: Verifier, receipts: Sequence[parting.Kept], report: Report
) -> parting.Parting:
    """Each receipt held to the pass's roots, and where the log parts from the smallest
    it does not agree with, as far as the receipts, the pass and the stored tree prove."""
    held = parting.held_to(receipts, report.size, report.roots)
    target = min((h.kept for h in held if not h.agrees), key=lambda k: k.size, default=None)
    if target is None:
        return parting.part(held, report.size, parting.Evidence())
    tree_from, tree_at = parting.tree_bounds(
        conn, target.checkpoint, report.size, report.tree_departs, report.first_leaf_differs
    )
    evidence = parting.Evidence(
        missing=report.first_missing,
        broken=report.first_broken,
        tree_from=tree_from,
        tree_at=tree_at,
        signed=parting.signed_root(conn, verifier, target.size),
    )
    return parting.part(held, report.size, evidence)


def _events_root(
    conn: sa.Connection, report: Report, resume: merkle.Frontier | None, size: int | None
) -> bytes | None:
    """The root of the first `size` events: kept by the pass, or, within the tree an
    incremental run resumed from (verified by the run before, and still stored), the
    stored tree's root at `size` once a consistency proof from the stored tree ties it
    to the verified one. None when the log has fewer events, or the stored tree cannot
    prove it (a full run then reads the events)."""
    if size is None or size > report.size:
        return None
    if size == 0:
        return merkle.EMPTY_ROOT
    if size in report.roots:
        return report.roots[size]
    if resume is None or size > resume.size:
        return None
    read = tree.reader(conn)
    try:
        stored = merkle.tree_hash(size, read)
        proof = merkle.prove_tree(resume.size, size, read)
        merkle.check_tree(proof, resume.size, resume.root(), size, stored)
    except merkle.MerkleError:
        return None
    return stored
