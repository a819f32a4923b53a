"""Import as a verified restore: a whole-log export, checked line by line as it is read,
written into an empty database in one transaction.

    restored = restore(engine, open("hazard-all.jsonl", "rb"), key=verifier)

The file is read through `offline.read`, which hands over each line only once it is
checked (the chain, the leaf, the replay of the table's commands) and the closing
record only once the whole file ties to its signed checkpoint. Everything is written
as it comes, a batch at a time, in the one transaction, which commits only after the
closing record: a file that disagrees anywhere, on its last line as on its first,
rolls back and leaves the database as empty as it was (`offline.Disagreement` names
the line). On PostgreSQL the file is read and checked a few thousand lines ahead, in
a thread of its own, while the server takes each batch (`_read_ahead`); what it hands
on, and where it stops, is the same.

What is written is what the service itself would have written, by the same code:
the events exactly as in the file (positions, versions, payload text, recorded_at,
both hashes), the Merkle tree's stored hashes (grown from the leaves the verifier
hashed from the lines, each checkpoint's root held to the tree so grown), every
checkpoint the file carries (the signed notes as they were handed out),
and every read model through `projections.replay`, which `hazard projections
rebuild` runs: accounts and balances, postings, settlements and their parties,
rounds. Snapshots are a cache: one is written per table, of its state after its last
event, so that the next command at a long table need not fold it from the start.

What the check folded is not folded again (`_checked`): each table's state at the end
of every command, as its referee folded it, goes to the tables' read models with the
row (tableviews.FOLDED), and the heads each seal commits, as the check held the seal to
them, to `heads_log` (restoring.TakenSeals); only the events inside a command are
folded again, for the state between them. And as `hazard verify FILE` does, a file on
disk is first read for the tables a dispute comes on, so that the referees of the
others keep no rounds to judge one.

Given the reader's policy, the file's cosigned checkpoint is held to it before the
closing is handed on (so a file that fails it writes nothing), and the cosignatures of
the policy's witnesses are kept in `cosignatures`, each verified again as the ledger
verifies one a witness returns (`witnessed.record`); without a policy there is no key
to check them with, and none is kept.

Not in an export, so not restored: API tokens (make new ones with `hazard token
create`), the idempotency keys' stored answers (`commands`), and the signing key. The
export holds only the public key; for the service to go on appending to the restored
log, the key file that signed it must travel with the export (`hazard serve` refuses
any other key: ledger.bootstrap.ensure_key).

Only a whole log restores a log: an export that starts after the first event, or
skips positions (a table's or a player's), is refused as partial.

A store keeps the tree's right edge in memory only once it has written
(EventStore.frontier, of the size it was committed at), and a restore fills only a
database with no events: so no store's cache can be stale after one. A store on the
restored database reads the edge on its first write, or takes `Restored.frontier`.
"""

from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import sqlalchemy as sa

from engine.state import TableState
from ledger.books import projections, tableviews
from ledger.books.accounts import TABLE_PREFIX
from ledger.exports import offline
from ledger.exports.offline import disputed
from ledger.exports.offline.lines import Check
from ledger.store import db, restoring, snapshots
from ledger.store.eventstore import APPEND_LOCK, Known, Recorded, utc_now
from ledger.store.log import merkle, tree, witnessed
from ledger.store.log.checkpoint import parse_note
from ledger.store.log.heads import SEALS, Head
from ledger.store.log.keys import Verifier
from ledger.store.log.policy import Policy

BATCH = 2500
"""Events written (and replayed into the read models) at a time: each held with its
event and its table's state until written, so a batch is most of what a restore holds
(at 10^6 events, 5,000 a batch peaked at 113 MB, 2,500 at 106 MB, for no more CPU)."""

Progress = Callable[[int, int], None]
"""Called after each batch: (events written, events the file holds)."""


class RestoreError(Exception):
    """Why a file cannot be restored into this database; nothing was written."""


class NotEmpty(RestoreError):
    """The database already holds a log (or read models): a restore only fills an empty one."""


class Partial(RestoreError):
    """An export of part of the log (a table's, a player's, a range after the start)."""


@dataclass
class Restored:
    """What a restore wrote."""

    events: int = 0
    checkpoints: int = 0
    accounts: int = 0
    tables: int = 0
    snapshots: int = 0
    size: int = 0
    root: str = ""
    """The tree's root (hex) at `size`, as the newest checkpoint signs it."""
    note: str | None = None
    """The newest checkpoint restored (a signed note)."""
    key: str = ""
    """The public key that signed the checkpoints (the header's)."""
    frontier: merkle.Frontier = field(default_factory=merkle.Frontier)
    """The tree's right edge at `size`: EventStore.frontier may start from it."""
    cosigned: offline.CosignedLine | None = None
    """The file's cosigned checkpoint, as checked (under the policy, if one was given)."""
    cosignatures: list[str] = field(default_factory=list)
    """The policy's witnesses whose cosignatures of it were restored (verified first)."""


def restore(
    engine: sa.Engine,
    lines: Iterable[bytes],
    key: Verifier | None = None,
    progress: Progress | None = None,
    policy: Policy | None = None,
) -> Restored:
    """Restore the whole-log export `lines` into the empty database behind `engine`
    (migrated to the code's head), trusting `key` (default: the file's own key, as
    `offline.read` takes it) and, given the reader's `policy`, holding the file's
    cosigned checkpoint to it and restoring its witnesses' cosignatures. Raises
    offline.Disagreement, Partial or NotEmpty having written nothing."""
    db.require_current(engine)
    with engine.connect().execution_options(writes=True) as conn, conn.begin(), _no_collector():
        if conn.dialect.name == "postgresql":  # no append may slip in beside the restore
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": APPEND_LOCK})
        _require_empty(conn)
        writer = _Writer(conn, progress)
        tables = tableviews.Replay(conn)
        items = _checked(lines, key, policy)
        if conn.dialect.name == "postgresql":
            # Not on SQLite: its driver lets go of the interpreter at every row it
            # steps, and waits for it back behind the reading thread (bench.exports:
            # a fifth slower, where PostgreSQL's restore is a fourteenth faster).
            items = _read_ahead(items)
        try:
            with restoring.checked_once(conn):
                projections.replay(conn, writer.batches(items), tables)
                restored = writer.finish(tables.states, policy)
        except restoring.Earlier as exc:
            raise RestoreError(f"{exc}: nothing was restored") from None
        return restored


class Checked(Known):
    """An event row as the offline check handed it on, with what the check folded
    from it, so that the restore need not fold it again: `after`, its table's state
    after it when it ends a command (the referee's, tableviews.FOLDED); `moved`, at a
    seal, the heads moved since the seal before it (restoring.TakenSeals)."""

    after: TableState | None = None
    moved: list[tuple[int, Head]] | None = None


class _Event(NamedTuple):
    """An event line checked, its row a `Checked`."""

    line: int
    row: Checked
    leaf: bytes


def _checked(lines: Iterable[bytes], key: Verifier | None, policy: Policy | None) -> Iterator[Any]:
    """The file's items as `offline.read` hands them on, each event's as an `_Event`
    with what the check folded from it. The check is told first which tables a
    dispute comes on (offline.disputed, a file on disk read ahead): the referees of the
    others keep no rounds to judge one (at 10^6 events, most of a restore's memory)."""
    check = Check(key, policy=policy, disputed=disputed.tables(lines))
    seen = restoring.HeadsSeen()
    for item in check.run(lines):
        if not isinstance(item, offline.EventLine):
            yield item
            continue
        row = cast(Checked, Checked.of(item.row, item.event))
        stream = row.stream
        if stream.startswith(TABLE_PREFIX):
            referee = check.tables.tables[stream].referee
            if referee.at_boundary:  # the command's last event: its state, folded
                row.after = referee.state
        elif stream == SEALS and check.complete is not None and check.complete.heads is not None:
            row.moved = seen.moved(check.complete.heads)
        yield _Event(item.line, row, item.leaf)


def require_empty_database(engine: sa.Engine) -> None:
    """Refuse a database that holds events, before it is migrated (it may be new, or
    at any revision): `hazard import` upgrades only a database it may fill."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("events"):
            return
        count = restoring.event_count(conn)
    if count:
        raise NotEmpty(_holds(count))


def _cosignatures(conn: sa.Connection, policy: Policy, cosigned: offline.CosignedLine) -> list[str]:
    """Keep the cosignatures of the restored checkpoint by the policy's witnesses, each
    verified again by `witnessed.record` over the checkpoint as restored; the names
    of those kept. Lines by witnesses the policy does not name are not kept: there is
    no key to check them with."""
    text, lines = parse_note(cosigned.note)
    received_at = utc_now()
    kept = []
    for witness in policy.witnesses.values():
        for line in lines:
            if witness.key.matches(line) and witness.key.timestamp(text, line) is not None:
                witnessed.record(conn, cosigned.size, witness.key, line, received_at)
                kept.append(witness.name)
                break
    return kept


def _holds(count: int) -> str:
    return (
        f"the database already holds a log of {count} events: a restore fills only an "
        "empty database (a new SQLite file, or a new PostgreSQL database)"
    )


def _require_empty(conn: sa.Connection) -> None:
    count = restoring.event_count(conn)
    if count:
        raise NotEmpty(_holds(count))
    filled = restoring.first_filled(conn)
    if filled is not None:
        raise NotEmpty(
            f"the database holds no events but its {filled} table is not empty: "
            "a restore fills only an empty database"
        )


@contextmanager
def _no_collector() -> Iterator[None]:
    """The cyclic collector held off: a restore allocates millions of rows and events,
    none in a cycle, and the collector's passes over them cost time for nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


READ_AHEAD = 1000
"""Lines the verifier hands on at a time when it reads ahead of the writes."""


def _read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """`items`, read and checked in a thread of their own, a few thousand lines ahead:
    while the restore waits for PostgreSQL to take a COPY (a quarter of its time, the
    server checking each posting's key), the verifier goes on reading. The items come
    in the same order, and what the verifier raises is raised here, after every item
    before it (the same exception: the same line and words). The database is used by
    the caller's thread alone."""
    ready: queue.Queue[list[Any] | BaseException | None] = queue.Queue(maxsize=4)
    stop = threading.Event()

    def give(chunk: list[Any] | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                ready.put(chunk, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        chunk: list[Any] = []
        try:
            for item in items:
                chunk.append(item)
                if len(chunk) >= READ_AHEAD:
                    if not give(chunk):
                        return
                    chunk = []
        except BaseException as exc:  # handed on after the items before it, raised there
            if give(chunk):
                give(exc)
            return
        if give(chunk):
            give(None)

    reader = threading.Thread(target=read, name="restore-read-ahead", daemon=True)
    reader.start()
    try:
        while (got := ready.get()) is not None:
            if isinstance(got, BaseException):
                raise got
            yield from got
    finally:
        stop.set()
        reader.join()


class _Writer:
    """The file's checked items, written a batch at a time, and handed on as batches of
    rows for `projections.replay` to make the read models from."""

    def __init__(self, conn: sa.Connection, progress: Progress | None) -> None:
        self.conn, self.progress = conn, progress
        self.growth = tree.Growth(merkle.Frontier())
        self.sealing = restoring.TakenSeals(conn)
        """The heads each seal committed (the offline check has held every seal to
        them already, and hands them on), written into heads_log as the events are."""
        self.rows: list[Known] = []
        self.ready: list[tuple[int, str, str, str]] = []
        """Checkpoints held to the tree, with their roots, to write once their events are."""
        self.stored: set[int] = set()
        self.total = 0
        self.last = 0
        self.out = Restored()
        self.closed = False

    def batches(self, items: Iterator[Any]) -> Iterator[list[Known]]:
        for item in items:
            if isinstance(item, _Event | offline.EventLine):
                self._event(item)
                if len(self.rows) >= BATCH:
                    yield self._flush()
            elif isinstance(item, offline.CheckpointLine):
                self._checkpoint(item.line, item.size, item.root, item.issued_at, item.note)
            elif isinstance(item, offline.Header):
                self._header(item)
            elif isinstance(item, offline.EdgeLine):
                if item.row.position != self.last or self.growth.size == 0:
                    raise Partial(
                        f"line {item.line}: the range starts after position "
                        f"{item.row.position} (an edge): only a whole-log export restores a log"
                    )
                # A range from the first event ends with the event after it, which
                # proves where it ends: the restored log is the range, up to that event.
                self.last -= 1
            elif isinstance(item, offline.SkipLine):
                raise Partial(
                    f"line {item.line}: positions {item.start} to {item.end} are skipped (a "
                    "part of the log): only a whole-log export restores a log"
                )
            elif isinstance(item, offline.Snapshot):
                raise Partial(
                    f"line {item.line}: the export starts inside a table's stream (a "
                    "snapshot): only a whole-log export restores a log"
                )
            elif isinstance(item, offline.Closing):
                if self.rows:
                    yield self._flush()
                self._closing(item)
        if self.rows:
            yield self._flush()

    def _header(self, header: Any) -> None:
        kind = header.scope["kind"] if isinstance(header.scope, dict) else header.scope.kind
        if kind not in ("all", "range"):
            raise Partial(
                f"line 1: a {kind}'s export holds only part of the log: only a whole-log "
                "export (`hazard export --all`) restores a log"
            )
        if header.first != 1:
            raise Partial(
                f"line 1: the export starts at position {header.first}, not at the log's "
                "first event: only a whole-log export (`hazard export --all`) restores a log"
            )
        self.total = header.last - header.first + 1
        self.last = header.last
        key = header.key
        self.out.key = key if isinstance(key, str) else key.text()

    def _event(self, item: Any) -> None:
        # With its event as the verifier decoded it: the read models' replay asks for
        # it twice (postings and the tables' views), and it need not be decoded again.
        row = item.row if isinstance(item, _Event) else Known.of(item.row, item.event)
        frontier = self.growth.frontier
        if row.position != frontier.size + 1:
            raise Partial(
                f"line {item.line}: position {row.position} follows {frontier.size}: the "
                "positions between are skipped (a part of the log): only a whole-log "
                "export restores a log"
            )
        # The leaf as the verifier hashed it from the line (the event's document, which
        # is the row's frame: offline.events), not framed and hashed a second time.
        index = merkle.stored_hash_count(frontier.size)
        made = self.growth.made
        for digest in frontier.append(item.leaf):
            made[index] = digest
            index += 1
        self.rows.append(row)

    def _checkpoint(self, line: int, size: int, root: Any, issued_at: str, note: str) -> None:
        """A checkpoint the file carries, held to the tree restored: its root at `size`,
        which the verifier held the file's tree to already; written once its events are."""
        if size in self.stored:
            return
        frontier = self.growth.frontier
        if size > frontier.size:
            raise Partial(
                f"line {line}: a checkpoint of {size} events, past the export's last event"
            )
        if size == frontier.size:
            made = frontier.root().hex()
        else:  # a checkpoint line after later events: its root from the hashes stored
            self._flush_tree()
            made = merkle.tree_hash(size, tree.reader(self.conn)).hex()
        given = root.hex() if isinstance(root, bytes | bytearray) else root
        if given is not None and given != made:
            raise tree.LogError(f"the checkpoint of {size} events does not sign the tree restored")
        self.stored.add(size)
        self.ready.append((size, made, issued_at, note))

    def _closing(self, closing: Any) -> None:
        """The closing record: the whole file is verified. Its checkpoint is stored if it
        is of exactly the restored log (in an export of the whole log it is the one
        the last checkpoint line carries already)."""
        checkpoint = closing.checkpoint

        def get(name: str) -> Any:
            if isinstance(checkpoint, dict):
                return checkpoint[name]
            return getattr(checkpoint, name)

        if self.growth.size != self.last:  # a skip at the end: no event line to say so
            raise Partial(
                f"line {closing.line}: the file's events end at position {self.growth.size}, "
                f"its header says {self.last}: only a whole-log export restores a log"
            )
        size = int(get("size"))
        if size == self.growth.size and size > 0:
            self._checkpoint(closing.line, size, None, get("issued_at"), get("note"))
        # Every checkpoint not yet written: the closing's, and a checkpoint line that
        # came after the last batch of events was written.
        self._write_checkpoints()
        self.out.cosigned = getattr(closing, "cosigned", None)
        self.closed = True

    def _flush(self) -> list[Known]:
        rows, self.rows = self.rows, []
        db.insert_tuples(self.conn, "events", Recorded._fields, rows)
        self._flush_tree()
        self.sealing.feed(rows)
        self._write_checkpoints()
        self.out.events += len(rows)
        if self.progress is not None:
            self.progress(self.out.events, self.total)
        return rows

    def _flush_tree(self) -> None:
        """The tree's stored hashes made since the last write (by index, in order)."""
        made = self.growth.made
        if self.conn.dialect.name == "postgresql":  # COPY: arrays of bytea cost more
            db.insert_tuples(self.conn, "tree_hashes", ("idx", "hash"), list(made.items()))
        else:
            self.growth.insert(self.conn)
        made.clear()

    def _write_checkpoints(self) -> None:
        """The checkpoints whose events are all written, in one statement."""
        ready, self.ready = self.ready, []
        if not ready:
            return
        restoring.write_checkpoints(self.conn, ready)
        self.out.checkpoints += len(ready)
        newest = max(ready)
        if newest[0] >= self.out.size:
            self.out.size, self.out.root, self.out.note = newest[0], newest[1], newest[3]

    def finish(self, states: dict[str, Any], policy: Policy | None = None) -> Restored:
        """After the replay: a snapshot of every table's last state, the cosignatures
        the policy's witnesses made of the file's cosigned checkpoint, and the counts."""
        if not self.closed:  # offline.read raises first; this is the belt to its braces
            raise RestoreError("the file ended without its closing record: nothing was restored")
        cosigned = self.out.cosigned
        if policy is not None and cosigned is not None and cosigned.size in self.stored:
            self.out.cosignatures = _cosignatures(self.conn, policy, cosigned)
        for stream, state in sorted(states.items()):
            if state.rules is not None:
                snapshots.save_in(self.conn, stream, state)
                self.out.snapshots += 1
        self.sealing.finish()
        self.out.accounts = restoring.account_count(self.conn)
        self.out.tables = len(states)
        self.out.frontier = self.growth.frontier.copy()
        return self.out
