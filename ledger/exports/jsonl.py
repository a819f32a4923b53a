"""The verifiable export: a scope's history as Hazard JSON Lines (docs/export-format.md).

`prepare` resolves the scope in one short read of the log and raises NotFound or
ScopeError before a byte is written. That read fixes the file's head: the newest signed
checkpoint, whose size n the file is tied to; and with it the newest checkpoint at or
below n that a witness cosigned, with the cosignatures kept for it then, which the
closing carries for its readers' policies (cosignatures come seconds after their
checkpoints: one that arrives while the file is written is not in it). `Prepared.chunks`
then reads everything else a page at a time, each page in a short read transaction of
its own, ended before a byte of it is handed on: a client that takes an hour to read its
file holds nothing in the database between pages (no snapshot pinning SQLite's WAL, no
PostgreSQL transaction holding back its xmin). What it reads is fixed by n and never
changes: the events up to n, the tree's hashes of subtrees within them, the checkpoints
of sizes up to n, the postings of those events (a rebuild of the read models rewrites
them in one transaction, the same), the cached table states (any one folds to the same
state). So a write committed meanwhile is not in the file, which is the log at n byte
for byte, and memory stays bounded whatever the size of the log: of the tree only its
frontier is kept (at most 64 hashes), and of the events one page.

Each event line is written by hand around the stored payload text, which the store
keeps canonical already (codec.frame does the same for the hashed bytes), because
parsing and re-encoding every payload cost more than everything else together. The
file holds nothing of the moment it was made: the same log, with the same cosignatures
kept, exports to the same bytes.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring  # what the canonical encoder uses
from typing import Any

import sqlalchemy as sa

import engine as hz
from ledger.books.accounts import CASH, TABLE_PREFIX, account_stream, player_account, transfers_of
from ledger.exports.scope import NotFound, Scope
from ledger.exports.verdict import figures_view
from ledger.store import codec, db, snapshots
from ledger.store.eventstore import decode_rows
from ledger.store.log import heads, merkle, quorum, sealing, tree
from ledger.store.log.keys import Verifier

MEDIA_TYPE = "application/jsonl"
FORMAT = "hazard-export"
FORMAT_VERSION = 2
FIRST_FORMAT = 1
"""The format before seals, still written for a table's or a player's file of a log
whose head is not a seal (upgraded, and not written since): it proves nothing whole."""
CHUNK = 64 * 1024
"""Bytes a chunk holds (about): what a response or a file write takes at once."""
BATCH = 5_000
"""Events read per query."""
MERGED = 16
"""Streams a windowed export reads each on its own and merges; more are read together,
in position order, the others' events dropped (memory stays one page either way)."""
IN_LIST = 500
"""Values per `IN (...)` list, well within SQLite's oldest limit of 999."""

Progress = Callable[[int], None]
"""Called as the body is written with how many more positions it has covered (an
increment, as click's progress bar takes it); the total is `Prepared.total`."""

_COLUMNS = (
    "position, stream, version, type, schema_version, payload, actor, idempotency_key,"
    " recorded_at, prev_hash, hash"
)


class NoKey(LookupError):
    """No public key to put in the header: the service has no signing key."""


@dataclass
class _Window:
    """The part of one stream in a table's or a player's export."""

    stream: str
    start: int
    """The position of its first exported event."""
    start_version: int
    end: int
    end_version: int


@dataclass
class _Plan:
    scope: Scope
    first: int
    last: int
    windows: list[_Window] | None
    """The streams in the file, each from its start to its end; None for a contiguous
    export (all, range), which holds every event from first to last."""
    checkpoint: tuple[int, str, str, str]
    """The newest stored checkpoint: (size, root hex, issued_at, note)."""
    key: Verifier
    cosigned: tuple[int, str] | None = None
    """The newest checkpoint at or below it that a witness cosigned: (size, its note
    with every cosignature line stored then)."""
    tables: dict[str, int] = field(default_factory=dict)
    """Every table stream in the file, by the version of its first exported event."""
    edges: tuple[bool, bool] = (False, False)
    """A range's: whether `first` is the edge before it and `last` the edge after."""
    seals: dict[str, int] = field(default_factory=dict)
    """A table's or a player's: the positions of its `start` and `end` seals and of the
    seal after the end one (`next`), those it has (docs/export-format.md)."""
    proven: list[tuple[str, str]] = field(default_factory=list)
    """A table's or a player's: the heads its closing proves, (kind, name)."""
    opened: dict[str, Any] | None = None
    """A file from position 1: the rule sets of its tables' openings, read with
    `tables` in the same pass (`_openings`); None where `_write` reads them."""


def _mark(conn: sa.Connection) -> str:
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"


def _first_column(row: Any) -> int:
    return int(row[0])


def _within(window: tuple[int, int] | None, position: int) -> bool:
    return window is not None and window[0] <= position <= window[1]


def _chunks_of(values: list[Any], size: int = IN_LIST) -> Iterator[list[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


# -- Resolving the scope ------------------------------------------------------------------


def prepare(engine: sa.Engine, scope: Scope, key: Verifier | None = None) -> Prepared:
    """Resolve `scope` in a snapshot of the log, fixing its head, and make ready to
    write it.

    `key` is the public key that signed the log's checkpoints, for the header; by
    default the public half of the service's signing key (HAZARD_KEY). Raises NotFound
    (no such table or player, or nothing written yet), NoKey, or ValueError if the key
    did not sign the newest checkpoint, before anything is written."""
    with db.short_read(engine) as conn:
        plan = _plan(conn, scope, key)
    return Prepared(engine, plan)


def _default_key() -> Verifier:
    from ledger.bootstrap import load_key

    signer = load_key()
    if signer is None:
        raise NoKey("no signing key (HAZARD_KEY, or hazard.key): no public key for the header")
    return signer.verifier


def _plan(conn: sa.Connection, scope: Scope, key: Verifier | None) -> _Plan:
    newest = db.fetch(
        conn, "SELECT size, root, issued_at, note FROM checkpoints ORDER BY size DESC LIMIT 1"
    )
    if not newest:
        raise NotFound("the log is empty: nothing has been written to it yet")
    size, root, issued_at, note = newest[0]
    checkpoint = (int(size), str(root), str(issued_at), str(note))
    key = key if key is not None else _default_key()
    from ledger.store.log.checkpoint import NoteError, open_checkpoint

    try:
        open_checkpoint(checkpoint[3], [key])
    except NoteError as exc:
        raise ValueError(
            f"the key {key.text()} did not sign the log's newest checkpoint: {exc}"
        ) from None
    n = checkpoint[0]
    windows: list[_Window] | None = None
    edges = (False, False)
    seals: dict[str, int] = {}
    proven: list[tuple[str, str]] = []
    if scope.kind == "all":
        first, last = 1, n
    elif scope.kind == "range":
        first, last = _time_span(conn, n, scope.since, scope.until)
        # The events either side of the cuts, which prove them (docs/export-format.md).
        before = scope.since is not None and 1 <= first - 1 <= n
        after = scope.until is not None and 1 <= last + 1 <= n
        first, last = first - before, last + after
        edges = (before, after)
    elif scope.kind == "table":
        stream = TABLE_PREFIX + str(scope.table)
        if not _exists(conn, stream, n):
            raise NotFound(f"there is no table {scope.table!r}")
        windows = _windows(conn, [stream], n, scope)
        proven = [(heads.STREAM, stream)]
    elif scope.kind == "player":
        account = player_account(str(scope.player))
        own = account_stream(account)
        if not _exists(conn, own, n):
            raise NotFound(f"there is no player {scope.player!r}")
        tables = [
            str(s)
            for (s,) in db.fetch(
                conn,
                "SELECT DISTINCT e.stream FROM postings p JOIN events e ON e.position = p.position"
                " WHERE p.account = ? AND p.position <= ? AND e.stream LIKE ?",
                (account, n, TABLE_PREFIX + "%"),
            )
        ]
        windows = _windows(conn, [own, *sorted(tables)], n, scope)
        proven = [(heads.ACCOUNT, account), (heads.STREAM, own)]
    else:
        raise ValueError(f"no scope of kind {scope.kind!r}")
    if windows is not None:
        seals = _seals(conn, n, scope)
        if "end" in seals:
            proven += [
                (heads.STREAM, w.stream) for w in windows if (heads.STREAM, w.stream) not in proven
            ]
            windows += [_Window(heads.SEALS, p, v, p, v) for p, v in _seal_versions(conn, seals)]
        else:
            proven = []
        first = min((w.start for w in windows), default=n + 1)
        last = max((w.end for w in windows), default=n)
    if first > last:  # nothing in scope: the file still ties the (empty) range to the log
        first, last, windows = n + 1, n, []
    # Read with the head, in the same snapshot: the cosignatures stored as the export
    # begins are the ones it carries, whatever arrives while it is written.
    plan = _Plan(scope, first, last, windows, checkpoint, key, quorum.newest_within(conn, n))
    plan.edges, plan.seals, plan.proven = edges, seals, proven
    if windows is None and first + edges[0] == 1:
        plan.tables, plan.opened = _openings(conn, last - edges[1])
    elif windows is None:
        plan.tables = _tables_between(conn, first + edges[0], last - edges[1])
    else:
        plan.tables = {
            w.stream: w.start_version for w in windows if w.stream.startswith(TABLE_PREFIX)
        }
    return plan


def _exists(conn: sa.Connection, stream: str, n: int) -> bool:
    return bool(
        db.fetch(
            conn,
            "SELECT 1 FROM events WHERE stream = ? AND version = 1 AND position <= ?",
            (stream, n),
        )
    )


def _time_span(
    conn: sa.Connection, n: int, since: str | None, until: str | None
) -> tuple[int, int]:
    """The first position recorded at or after `since` and the last before `until`,
    within the tree of `n` events: everything between them is the range's."""
    first, last = 1, n
    if since is not None:
        row = db.fetch(
            conn,
            "SELECT MIN(position) FROM events WHERE recorded_at >= ? AND position <= ?",
            (since, n),
        )
        first = n + 1 if row[0][0] is None else int(row[0][0])
    if until is not None:
        row = db.fetch(
            conn,
            "SELECT MAX(position) FROM events WHERE recorded_at < ? AND position <= ?",
            (until, n),
        )
        last = 0 if row[0][0] is None else int(row[0][0])
    return first, last


def _seals(conn: sa.Connection, n: int, scope: Scope) -> dict[str, int]:
    """The seals a table's or a player's file is proven against, within the tree of
    `n` events: `end`, the last recorded before `until` (the head's, without one) and
    `next`, the one after it; `start`, the last recorded before `since`. None on a log
    whose head is not a seal (written before seals, and not since)."""
    found: dict[str, int] = {}
    last = "SELECT position, version FROM events WHERE stream = ? AND position <= ?"
    if scope.until is None:
        head = db.fetch(conn, last + " AND position = ?", (heads.SEALS, n, n))
        if not head:
            return {}
        found["end"] = n
    else:
        end = db.fetch(
            conn,
            last + " AND recorded_at < ? ORDER BY version DESC LIMIT 1",
            (heads.SEALS, n, scope.until),
        )
        if not end:
            return {}
        found["end"] = int(end[0][0])
        after = db.fetch(
            conn,
            last + " AND version = ?",
            (heads.SEALS, n, int(end[0][1]) + 1),
        )
        if after:
            found["next"] = int(after[0][0])
    if scope.since is not None:
        start = db.fetch(
            conn,
            last + " AND recorded_at < ? ORDER BY version DESC LIMIT 1",
            (heads.SEALS, n, scope.since),
        )
        if start:
            found["start"] = int(start[0][0])
        else:  # the log's first seal, after since, shows there is no start seal
            found["first"] = int(
                db.fetch(
                    conn,
                    last + " AND version = 1",
                    (
                        heads.SEALS,
                        n,
                    ),
                )[0][0]
            )
    return found


def _seal_versions(conn: sa.Connection, seals: dict[str, int]) -> list[tuple[int, int]]:
    """(position, version) of each of the seals, in position order, each once."""
    positions = sorted(set(seals.values()))
    marks = ", ".join(["?"] * len(positions))
    rows = db.fetch(
        conn, f"SELECT position, version FROM events WHERE position IN ({marks})", tuple(positions)
    )
    return sorted((int(p), int(v)) for p, v in rows)


def _windows(conn: sa.Connection, streams: list[str], n: int, scope: Scope) -> list[_Window]:
    """Each stream from its first event (at or after `since`) to its last (before
    `until`), within the tree of `n` events; streams with none left out."""
    out = []
    for stream in streams:
        ends = []
        for pick, bound, op in (("MIN", scope.since, ">="), ("MAX", scope.until, "<")):
            sql = f"SELECT {pick}(position) FROM events WHERE stream = ? AND position <= ?"
            params: tuple[Any, ...] = (stream, n)
            if bound is not None:
                sql += f" AND recorded_at {op} ?"
                params += (bound,)
            ends.append(db.fetch(conn, sql, params)[0][0])
        start, end = ends
        if start is None or end is None or start > end:
            continue
        versions = dict(
            db.fetch(
                conn, "SELECT position, version FROM events WHERE position IN (?, ?)", (start, end)
            )
        )
        out.append(_Window(stream, int(start), int(versions[start]), int(end), int(versions[end])))
    return out


def _tables_between(conn: sa.Connection, first: int, last: int) -> dict[str, int]:
    """Every table stream with events between `first` and `last`, by the version of
    its first there."""
    if first > last:
        return {}
    rows = db.fetch(
        conn,
        "SELECT stream, MIN(version) FROM events WHERE position >= ? AND position <= ?"
        " AND stream LIKE ? GROUP BY stream",
        (first, last, TABLE_PREFIX + "%"),
    )
    return {str(s): int(v) for s, v in rows}


def _openings(conn: sa.Connection, last: int) -> tuple[dict[str, int], dict[str, Any] | None]:
    """What the file needs of `_tables_between(conn, 1, last)`, and the rule sets
    `_opened_rules` would read of those tables, in one pass along the index of the
    tables' openings (ix_events_table_opened), each opening read once and in position
    order. A scan of every event up to `last` held the first byte of a whole log's file
    back by most of a second at a million events; reading the tables, then their
    openings again by stream, read each twice, through two indexes, and held it to
    410 ms at 10^7 events. From position 1 every table's first version in the file is
    1, which `_write` reads the rules of from its TableOpened (and a table stream whose
    first event is not one has no rules to give): so the tables opened by `last`, at
    version 1, give the same header and the same snapshots (none) as the scan."""
    tables: dict[str, int] = {}
    rule_sets: dict[str, Any] = {}
    # Most tables open alike, to the byte: each payload is decoded once.
    decoded: dict[str, Any] = {}
    for stream, payload in db.fetch(
        conn,
        "SELECT stream, payload FROM events WHERE type = 'TableOpened' AND position <= ?"
        " AND version = 1 AND stream LIKE ? ORDER BY position",
        (last, TABLE_PREFIX + "%"),
    ):
        tables[str(stream)] = 1
        rules = decoded.get(payload)
        if rules is None:
            rules = decoded[payload] = codec.loads(payload)["rules"]
        rule_sets[rules["name"]] = rules
    return tables, rule_sets


# -- Writing --------------------------------------------------------------------------------


class Prepared:
    """An export resolved and ready to write: `chunks()` once, then `close()` (which
    `chunks` also does when it ends, or is closed early because the client went away)."""

    media_type = MEDIA_TYPE

    def __init__(self, engine: sa.Engine, plan: _Plan) -> None:
        self._engine: sa.Engine | None = engine
        self._plan = plan
        self.first = plan.first
        self.last = plan.last
        self.total = plan.last - plan.first + 1
        """Positions the body covers, for a progress bar."""
        self.filename = plan.scope.filename("jsonl")

    def close(self) -> None:
        """Nothing more is read: between pages the export holds no connection."""
        self._engine = None

    def chunks(self, progress: Progress | None = None) -> Generator[bytes, None, None]:
        """The file, about CHUNK bytes at a time. Closing the generator early (a client
        gone) ends it, as `close` does."""
        engine = self._engine
        if engine is None:
            raise RuntimeError("this export is closed")
        try:
            out = _Out()
            yield from _write(engine, self._plan, out, progress)
            yield from out.flush(force=True)
        finally:
            self.close()


class _Out:
    """Lines gathered into chunks of about CHUNK bytes."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def add(self, line: str) -> None:
        self.parts.append(line)
        self.size += len(line)

    def flush(self, force: bool = False) -> Iterator[bytes]:
        if self.parts and (force or self.size >= CHUNK):
            yield "".join(self.parts).encode()
            self.parts.clear()
            self.size = 0


def _line(document: dict[str, Any]) -> str:
    return codec.canonical(document).decode() + "\n"


def _write(engine: sa.Engine, plan: _Plan, out: _Out, progress: Progress | None) -> Iterator[bytes]:
    # Every read below is of the head fixed by the plan, each in a short read of its
    # own, and none is open while the generator yields (the client may take its time).
    first, last = plan.first, plan.last
    with db.short_read(engine) as conn:
        start = tree.load_frontier(conn, first - 1)
        states = _snapshots(conn, plan)
        opened = plan.opened
        if opened is None:
            opened = _opened_rules(conn, [s for s, v in plan.tables.items() if v == 1])
    rule_sets: dict[str, Any] = {}
    for _, _, state in states:
        rule_sets[state["rules"]["name"]] = state["rules"]
    rule_sets.update(opened)
    out.add(
        _line(
            {
                "first": first,
                "format": FORMAT,
                # A table's or a player's file of a log with no seal at its head has no
                # heads to prove: it is what format 1 was, and says so.
                "format_version": (
                    FORMAT_VERSION if plan.windows is None or plan.seals else FIRST_FORMAT
                ),
                "key": plan.key.text(),
                "last": last,
                "origin": plan.checkpoint[3].split("\n", 1)[0],  # the checkpoints' first line
                "record": "header",
                "rule_sets": dict(sorted(rule_sets.items())),
                "scope": plan.scope.view(),
                "tree_start": {"hashes": [h.hex() for h in start.hashes], "size": start.size},
            }
        )
    )
    for stream, (position, version, digest), state in states:
        out.add(
            _line(
                {
                    "hash": digest,
                    "position": position,
                    "record": "snapshot",
                    "state": state,
                    "stream": stream,
                    "version": version,
                }
            )
        )
    # Handed on now, before the body's first page is read: the first byte waits for the
    # head's few reads only, not for a page of events and a chunk of their lines.
    yield from out.flush(force=True)
    body = _Body(engine, plan, start)
    yield from body.run(out, progress)
    size, _root, issued_at, note = plan.checkpoint
    proof: list[bytes] = []
    witnessed: dict[str, Any] = {}
    with db.short_read(engine) as conn:
        if 0 < last < size:
            proof = merkle.prove_tree(size, last, tree.reader(conn))
        if plan.cosigned is not None:
            witnessed = _cosigned(plan.cosigned, size, tree.reader(conn))
        proven = _head_proofs(conn, plan)
    out.add(
        _line(
            {
                "checkpoint": {"issued_at": issued_at, "note": note, "size": size},
                "consistency": [h.hex() for h in proof],
                **witnessed,
                **proven,
                "events": body.events,
                "money": body.money_view(),
                "record": "closing",
                "root": body.frontier.root().hex(),
                "size": last,
                "skipped": body.skipped,
                "types": dict(sorted(body.types.items())),
            }
        )
    )


def _head_proofs(conn: sa.Connection, plan: _Plan) -> dict[str, Any]:
    """The closing's `heads`: for a table's or a player's file, the proof of each head
    it is held to in its end seal's heads tree (and its start seal's, if it has one),
    and where the seal after the end one is. None for a log without seals, or a file
    that is not a table's or a player's."""
    if "end" not in plan.seals:
        return {}
    proofs: dict[str, Any] = {}
    for which in ("start", "end"):
        position = plan.seals.get(which)
        if position is None:
            continue
        at = sealing.heads_at(conn, position)  # its write's heads are kept at its position
        listed = []
        for kind, name in plan.proven:
            i = at.index.get((kind, name))
            if i is None:
                continue  # not begun at the start seal: the file holds it from its first
            listed.append(
                {
                    "head": at.heads[i].view(),
                    "index": i,
                    "path": [h.hex() for h in at.prove(i)],
                }
            )
        proofs[which] = {"position": position, "proofs": listed}
    for which in ("next", "first"):
        if which in plan.seals:
            proofs[which] = plan.seals[which]
    return {"heads": proofs}


def _cosigned(cosigned: tuple[int, str], size: int, read: merkle.HashReader) -> dict[str, Any]:
    """The closing's `cosigned`: the checkpoint witnesses cosigned, with every
    cosignature line, and the consistency proof from it to the closing's checkpoint
    of `size` (never the other way: it is at or below the head the file is fixed at).
    A log no witness cosigned has none, and its file reads as before witnesses were."""
    at, note = cosigned
    proof = merkle.prove_tree(size, at, read) if 0 < at < size else []
    return {"cosigned": {"consistency": [h.hex() for h in proof], "note": note, "size": at}}


def _opened_rules(conn: sa.Connection, streams: list[str]) -> dict[str, Any]:
    """The rule sets of the tables opened in the file, from their TableOpened events."""
    found: dict[str, Any] = {}
    for part in _chunks_of(sorted(streams)):
        marks = ", ".join(["?"] * len(part))
        rows = db.fetch(
            conn,
            f"SELECT stream, type, payload FROM events WHERE version = 1 AND stream IN ({marks})"
            " ORDER BY position",
            tuple(part),
        )
        for _, type_, payload in rows:
            if type_ == "TableOpened":
                rules = codec.loads(payload)["rules"]
                found[rules["name"]] = rules
    return found


def _snapshots(
    conn: sa.Connection, plan: _Plan
) -> list[tuple[str, tuple[int, int, str], dict[str, Any]]]:
    """(stream, (position, version, chain hash) of the event before the first exported,
    the table's state there as snapshots.encode_state writes it) for every table whose
    stream starts before the file does, in the order of those positions."""
    out = []
    for stream, version in sorted(plan.tables.items()):
        if version == 1:
            continue
        before = version - 1
        row = db.fetch(
            conn,
            "SELECT position, hash FROM events WHERE stream = ? AND version = ?",
            (stream, before),
        )
        position, digest = row[0]
        state = codec.loads(snapshots.encode_state(_fold(conn, stream, before)))
        out.append((stream, (int(position), before, str(digest)), state))
    out.sort(key=lambda item: item[1][0])
    return out


def _fold(conn: sa.Connection, stream: str, version: int) -> hz.TableState:
    """The table folded to `version`, from its newest readable cached snapshot at or
    before it (snapshots.load's way) and the events after, a page at a time."""
    state = hz.INITIAL
    for cached_version, blob in db.fetch(
        conn,
        "SELECT version, state FROM snapshots WHERE stream = ? AND version <= ?"
        " ORDER BY version DESC LIMIT 3",
        (stream, version),
    ):
        cached = snapshots.decode_state(bytes(blob))
        if cached is not None and cached.version == cached_version:
            state = cached
            break
    while state.version < version:
        rows = db.fetch(
            conn,
            "SELECT type, schema_version, version, payload FROM events"
            " WHERE stream = ? AND version > ? AND version <= ? ORDER BY version LIMIT ?",
            (stream, state.version, version, BATCH),
        )
        if not rows:
            break
        state = hz.fold(decode_rows(rows, lambda v: _position(conn, stream, v)), state)
    return state


def _position(conn: sa.Connection, stream: str, version: int) -> int:
    rows = db.fetch(
        conn, "SELECT position FROM events WHERE stream = ? AND version = ?", (stream, version)
    )
    return int(rows[0][0]) if rows else 0


class _Body:
    """The body's lines, and what the closing record counts: events, skipped positions,
    types, money, and the tree (its frontier) they build."""

    def __init__(self, engine: sa.Engine, plan: _Plan, start: merkle.Frontier) -> None:
        self.engine = engine
        self.plan = plan
        self.frontier = start
        """The tree of the events up to the last line written (the size so far)."""
        self.events = 0
        self.skipped = 0
        self.types: dict[str, int] = {}
        self.money: dict[str, list[int]] = {}

    def money_view(self) -> dict[str, dict[str, int]]:
        # Never `cash`: it is the world outside, whose every move is some account's
        # deposit or withdrawal, already counted there.
        return {account: figures_view(figures) for account, figures in sorted(self.money.items())}

    def run(self, out: _Out, progress: Progress | None) -> Iterator[bytes]:
        """Write the body into `out`, yielding its chunks as they fill."""
        plan = self.plan
        contiguous = plan.windows is None
        for page in self._pages():
            done = self.frontier.size
            checks: dict[int, tuple[str, str]] = {}
            with db.short_read(self.engine) as conn:
                skips = self._skips(conn, page)
                if contiguous and page:
                    checks = {
                        int(s): (str(i), str(n))
                        for s, i, n in db.fetch(
                            conn,
                            "SELECT size, issued_at, note FROM checkpoints"
                            " WHERE size >= ? AND size <= ? ORDER BY size",
                            (page[0][0], page[-1][0]),
                        )
                    }
            yield from self._page(page, skips, checks, out)
            if not contiguous:
                self._count_money(page)
            if progress is not None:
                progress(self.frontier.size - done)
        if contiguous:
            before, after = plan.edges
            with db.short_read(self.engine) as conn:
                self.money = _money_between(conn, plan.first + before, plan.last - after)

    def _page(
        self,
        page: list[Any],
        skips: dict[int, bytes],
        checks: dict[int, tuple[str, str]],
        out: _Out,
    ) -> Iterator[bytes]:
        """`_lines`, with a range's edges (its first and last positions, when it has
        them) written as `edge` lines, outside its counts."""
        plan = self.plan
        before, after = plan.edges
        if before and page and page[0][0] == plan.first:
            yield from self._lines(page[:1], skips, checks, out, "edge")
            page = page[1:]
        tail = []
        if after and page and page[-1][0] == plan.last:
            page, tail = page[:-1], page[-1:]
        yield from self._lines(page, skips, checks, out)
        if tail:
            yield from self._lines(tail, skips, checks, out, "edge")

    def _pages(self) -> Iterator[list[Any]]:
        """The events in the file, in position order, a page at a time."""
        plan, windows = self.plan, self.plan.windows
        if plan.first > plan.last:
            return
        if windows is not None and len(windows) <= MERGED:
            # A few streams (a table, a player at a few tables): each read on its own,
            # by its key, and merged; memory is a page shared among them.
            share = max(BATCH // len(windows), 100)
            merged = heapq.merge(*(self._stream(w, share) for w in windows), key=_first_column)
            page: list[Any] = []
            for row in merged:
                page.append(row)
                if len(page) >= BATCH:
                    yield page
                    page = []
            if page:
                yield page
            return
        # The whole range in position order; for many streams (a player at many tables,
        # the bank), each page kept to the rows of a stream in the file, within its window.
        keep, sealed = None, set()
        if windows is not None:
            keep = {w.stream: (w.start, w.end) for w in windows if w.stream != heads.SEALS}
            sealed = {w.start for w in windows if w.stream == heads.SEALS}
        after = plan.first - 1
        while after < plan.last:
            with db.short_read(self.engine) as conn:
                rows = db.fetch(
                    conn,
                    f"SELECT {_COLUMNS} FROM events WHERE position > ? AND position <= ?"
                    " ORDER BY position LIMIT ?",
                    (after, plan.last, BATCH),
                )
            if not rows:
                return
            after = rows[-1][0]
            if keep is not None:
                rows = [r for r in rows if _within(keep.get(r[1]), r[0]) or r[0] in sealed]
            if rows:
                yield rows

    def _stream(self, window: _Window, batch: int) -> Iterator[Any]:
        after = window.start_version - 1
        while after < window.end_version:
            with db.short_read(self.engine) as conn:
                rows = db.fetch(
                    conn,
                    f"SELECT {_COLUMNS} FROM events"
                    " WHERE stream = ? AND version > ? AND version <= ? ORDER BY version LIMIT ?",
                    (window.stream, after, window.end_version, batch),
                )
            if not rows:
                return
            after = rows[-1][2]
            yield from rows

    def _skips(self, conn: sa.Connection, page: list[Any]) -> dict[int, bytes]:
        """The stored hashes of every subtree the page's gaps need, in a few queries."""
        wanted: list[int] = []
        before = self.frontier.size
        for row in page:
            if row[0] > before + 1:
                wanted.extend(
                    merkle.stored_hash_index(lv, n) for lv, n in merkle.cover(before, row[0] - 1)
                )
            before = row[0]
        found: dict[int, bytes] = {}
        for part in _chunks_of(wanted):
            found.update(tree.read_hashes(conn, part))
        if len(found) != len(set(wanted)):
            raise merkle.BadRead("the stored tree is missing hashes of positions the export skips")
        return found

    def _skip(self, to: int, found: dict[int, bytes], out: _Out) -> None:
        frontier = self.frontier
        start = frontier.size
        hashes = []
        for level, number in merkle.cover(start, to):
            digest = found[merkle.stored_hash_index(level, number)]
            hashes.append(digest.hex())
            frontier.append_subtree(level, digest)
        listed = ",".join('"' + h + '"' for h in hashes)
        out.add(f'{{"from":{start + 1},"hashes":[{listed}],"record":"skip","to":{to}}}\n')
        self.skipped += to - start

    def _lines(
        self,
        page: list[Any],
        skips: dict[int, bytes],
        checks: dict[int, tuple[str, str]],
        out: _Out,
        record: str = "event",
    ) -> Iterator[bytes]:
        """The page's lines into `out` (with the skips before its events), yielding a
        chunk each time `out` fills: the hot loop of an export. An `edge` (`record`)
        is written as an event is, and not counted."""
        types = self.types
        quote = encode_basestring
        quoted = codec.Quoted()  # per page: recorded_at changes each write
        get, q = quoted.get, quoted.__missing__  # as quoted[text], without its slower lookup
        sha256 = hashlib.sha256
        lines = out.parts
        add = lines.append
        frontier = self.frontier
        stack, size = frontier.hashes, frontier.size
        edge = record != "event"
        for row in page:
            position, stream, version, type_, schema, payload, actor, key, at, prev, digest = row
            if position != size + 1:
                frontier.size = size
                self._skip(position - 1, skips, out)
                size = frontier.size
            qa, qk, qt = get(actor) or q(actor), get(key) or q(key), get(at) or q(at)
            qs, qy = get(stream) or q(stream), get(type_) or q(type_)
            # codec.frame, merkle.leaf_hash and merkle.Frontier.append written out, each
            # text quoted once for the frame and the line: through them bench.exports'
            # export ran 8% slower (149,600 events a second against 162,900 so, at
            # 200,000 events); test_export's test_the_exports_own_frame_and_frontier_are_
            # codec_and_merkle holds this copy to them.
            made = sha256(
                b"\x00"
                + (
                    f'{{"actor":{qa},"idempotency_key":{qk},"payload":{payload},'
                    f'"position":{position:d},"recorded_at":{qt},"schema_version":{schema:d},'
                    f'"stream":{qs},"type":{qy},"version":{version:d}}}'
                ).encode()
            ).digest()
            line = (
                f'{{"actor":{qa},"hash":{quote(digest)},"idempotency_key":{qk},'
                f'"leaf":"{made.hex()}","payload":{payload},"position":{position:d},'
                f'"prev_hash":{quote(prev)},"record":"{record}","recorded_at":{qt},'
                f'"schema_version":{schema:d},"stream":{qs},"type":{qy},"version":{version:d}}}\n'
            )
            add(line)
            out.size += len(line)
            number = size
            while number & 1:  # each subtree the record completes
                made = sha256(b"\x01" + stack.pop() + made).digest()
                number >>= 1
            stack.append(made)
            size = position
            if not edge:
                types[type_] = types.get(type_, 0) + 1
            if position in checks:
                issued_at, note = checks[position]
                line = (
                    f'{{"issued_at":{quote(issued_at)},"note":{quote(note)},'
                    f'"record":"checkpoint","size":{position:d}}}\n'
                )
                add(line)
                out.size += len(line)
            if out.size >= CHUNK:
                frontier.size = size
                yield from out.flush()
        frontier.size = size
        if not edge:
            self.events += len(page)

    def _count_money(self, page: list[Any]) -> None:
        """Add what the page's events moved to `money`: (deposited, paid, staked,
        withdrawn) per ledger account, from accounts.transfers_of, each stream's events
        decoded together (the store's fast path for a stream's rows)."""
        streams: dict[str, list[Any]] = {}
        for row in page:
            streams.setdefault(row[1], []).append(row)
        money = self.money
        for stream, rows in streams.items():
            where = {row[2]: row[0] for row in rows}
            decoded = decode_rows(
                [(row[3], row[4], row[2], row[5]) for row in rows], where.__getitem__
            )
            for event in decoded:
                for account, index, amount in _moves(transfers_of(stream, event)):
                    figures = money.get(account)
                    if figures is None:
                        figures = money[account] = [0, 0, 0, 0, 0]
                    figures[index] += amount


_DEPOSITED, _PAID, _STAKED, _WITHDRAWN, _ADJUSTED = range(5)
_ESCROW = "escrow:"
"""How accounts.book_account names a bet's escrow in the ledger."""


def _moves(transfers: Iterable[Any]) -> tuple[tuple[str, int, int], ...]:
    """(account, which figure, amount) for each transfer's non-escrow, non-cash side:
    staked into an escrow, paid out of one, deposited from cash, withdrawn to it; and
    for both sides of one party to party (a dispute's adjustment, the only such), what
    it moved in (+) or out (-)."""
    out = []
    for t in transfers:
        source, target, amount = t.source, t.target, t.amount
        if source == CASH:
            out.append((target, _DEPOSITED, amount))
        elif target == CASH:
            out.append((source, _WITHDRAWN, amount))
        elif target.startswith(_ESCROW) and not source.startswith(_ESCROW):
            out.append((source, _STAKED, amount))
        elif source.startswith(_ESCROW):
            if not target.startswith(_ESCROW):
                out.append((target, _PAID, amount))
        elif not target.startswith(_ESCROW):
            out.append((source, _ADJUSTED, -amount))
            out.append((target, _ADJUSTED, amount))
    return tuple(out)


def _money_between(conn: sa.Connection, first: int, last: int) -> dict[str, list[int]]:
    """What `_moves` adds up over every event from `first` to `last`, from their
    postings (the read model written from the same transfers) in one aggregate: a
    contiguous export need not decode a single event for it."""
    if first > last:
        return {}
    rows = db.fetch(
        conn,
        "SELECT account,"
        " SUM(CASE WHEN counterparty = ? AND amount > 0 THEN amount ELSE 0 END),"
        " SUM(CASE WHEN counterparty LIKE ? AND amount > 0 THEN amount ELSE 0 END),"
        " SUM(CASE WHEN counterparty LIKE ? AND amount < 0 THEN -amount ELSE 0 END),"
        " SUM(CASE WHEN counterparty = ? AND amount < 0 THEN -amount ELSE 0 END),"
        " SUM(CASE WHEN counterparty <> ? AND counterparty NOT LIKE ? THEN amount ELSE 0 END)"
        " FROM postings WHERE position >= ? AND position <= ?"
        " AND account <> ? AND account NOT LIKE ?"
        " GROUP BY account",
        (CASH, _ESCROW + "%", _ESCROW + "%", CASH, CASH, _ESCROW + "%", first, last, CASH,
         _ESCROW + "%"),
    )  # fmt: skip
    return {str(a): [int(d), int(p), int(s), int(w), int(j)] for a, d, p, s, w, j in rows}
