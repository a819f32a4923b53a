"""What a witness remembers, in an SQLite file of its own: each log it follows, the
keys it trusts for it and the newest tree it cosigned; and the evidence it refused.

Checking a checkpoint against the newest cosigned tree and storing the new one are one
transaction, begun IMMEDIATE: it takes the write lock before it reads, so submissions
are judged one after the other, never two against one state. Otherwise tlog-witness's
race: A (size N) and B (size N+K) both checked, B stored and cosigned, then A stored,
rolling back K leaves; the witness would then cosign a fork of what it had vouched for.

WAL, and `synchronous = FULL`: a cosignature is answered only once the new state is on
disk (the spec asks it), and a witness that forgot its last tree after a power cut
could be led to cosign a tree that contradicts it.

Evidence is bounded: the first MAX_REFUSALS distinct refusals are kept whole (a log
that sends the same refused checkpoint again only counts up its `times`); the ones
after are counted, not kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ledger.witness.judge import Breach, Cosigned

SCHEMA_VERSION = 1
MAX_REFUSALS = 10_000
BUSY_TIMEOUT_S = 2.0
"""How long a submission waits for another's transaction (each holds it a millisecond
or two) before it is answered 503: never a long wait."""

SCHEMA = """
CREATE TABLE logs (
    origin      TEXT PRIMARY KEY,
    origin_hash TEXT NOT NULL UNIQUE,   -- SHA-256 of the origin, lowercase hex: its URL
    size        INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
    root        BLOB,                   -- NULL until the first cosignature
    note        TEXT,                   -- the log's note and this witness's cosignature
    cosigned_at INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE TABLE log_keys (
    origin     TEXT NOT NULL REFERENCES logs (origin),
    vkey       TEXT NOT NULL,
    trusted_at INTEGER NOT NULL,
    PRIMARY KEY (origin, vkey)
) STRICT;
CREATE TABLE refusals (
    id            INTEGER PRIMARY KEY,
    digest        BLOB NOT NULL UNIQUE, -- one row per breach, cosigned tree and refused note
    origin        TEXT NOT NULL,
    breach        TEXT NOT NULL,
    reason        TEXT NOT NULL,
    status        INTEGER NOT NULL,
    cosigned_note TEXT,                 -- what the witness had cosigned then
    refused_note  TEXT NOT NULL,
    old           INTEGER NOT NULL,
    proof         TEXT NOT NULL,        -- the proof lines as sent
    first_at      INTEGER NOT NULL,
    last_at       INTEGER NOT NULL,
    times         INTEGER NOT NULL DEFAULT 1
) STRICT;
CREATE TABLE not_kept (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    refused INTEGER NOT NULL            -- refusals past MAX_REFUSALS, not kept
) STRICT;
INSERT INTO not_kept VALUES (1, 0);
"""


class StateError(Exception):
    """A state file this witness cannot use; the message says why."""


class Busy(Exception):
    """Another submission held the state past BUSY_TIMEOUT_S: nothing was changed."""


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A checkpoint signed by the log that the witness refused, kept as evidence."""

    origin: str
    breach: Breach
    reason: str
    status: int
    cosigned_note: str | None
    refused_note: str
    old: int
    proof: tuple[str, ...]
    first_at: int
    last_at: int
    times: int = 1


@dataclasses.dataclass(frozen=True)
class Followed:
    """A log this witness follows: its keys and the newest tree it cosigned."""

    origin: str
    keys: tuple[str, ...]
    cosigned: Cosigned


def origin_hash(origin: str) -> str:
    """Where a log's newest cosigned checkpoint is served: SHA-256(origin), lowercase hex."""
    return hashlib.sha256(origin.encode("utf-8")).hexdigest()


class State:
    """The witness's state file, with a connection per thread (sqlite3's connections
    are not to be shared between threads, nor across a fork: open it after forking)."""

    def __init__(self, path: Path | str, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._local = threading.local()

    @classmethod
    def create(cls, path: Path | str) -> State:
        """A new state file at `path`, which must not exist."""
        state = cls(path)
        try:
            conn = state._open("rwc")
        except sqlite3.Error as exc:
            raise StateError(f"cannot create {path}: {exc}") from None
        if conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]:
            conn.close()
            raise StateError(f"{path} already holds a database; a witness's state is never reused")
        conn.executescript(f"BEGIN; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")
        state._local.conn = conn
        return state

    def _open(self, mode: str) -> sqlite3.Connection:
        conn = sqlite3.connect(
            f"file:{self.path}?mode={mode}",
            uri=True,
            timeout=self.busy_timeout,
            isolation_level=None,  # transactions are begun here, explicitly
            check_same_thread=True,
        )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = self._open("rw")
                version = conn.execute("PRAGMA user_version").fetchone()[0]
            except sqlite3.Error as exc:
                raise StateError(f"cannot open the witness's state {self.path}: {exc}") from None
            if version != SCHEMA_VERSION:
                conn.close()
                raise StateError(
                    f"{self.path} is not a witness's state (schema {version}, not {SCHEMA_VERSION})"
                )
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection, if it has one."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A transaction holding the write lock from its first read; committed unless
        the block raises."""
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise Busy(str(exc)) from None
            raise
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- the logs it follows ---------------------------------------------------------

    def follow(self, origin: str, vkey: str, at: int) -> bool:
        """Trust `vkey` for the log `origin` (which is followed from now on, if it was
        not). Whether the key is new to it. A key with the name and id of one trusted
        already, but another key, is refused: signed-note tells keys apart by those two,
        so the witness could not tell which of the two had signed."""
        named = _name_and_id(vkey)
        with self.writing() as conn:
            for (other,) in conn.execute("SELECT vkey FROM log_keys WHERE origin = ?", (origin,)):
                if other != vkey and _name_and_id(other) == named:
                    raise StateError(f"{origin} already trusts another key named {named}")
            conn.execute(
                "INSERT INTO logs (origin, origin_hash) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (origin, origin_hash(origin)),
            )
            added = conn.execute(
                "INSERT INTO log_keys (origin, vkey, trusted_at) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (origin, vkey, at),
            )
            return added.rowcount == 1

    def retire(self, origin: str, vkey: str) -> bool:
        """Trust `vkey` no more for `origin`; what it cosigned is kept. Whether it was trusted."""
        with self.writing() as conn:
            gone = conn.execute(
                "DELETE FROM log_keys WHERE origin = ? AND vkey = ?", (origin, vkey)
            )
            return gone.rowcount == 1

    def trusted(self, origin: str) -> tuple[str, ...] | None:
        """The keys trusted for `origin`; None when no log of that origin is followed."""
        rows = (
            self.connection()
            .execute(
                "SELECT logs.origin, vkey FROM logs LEFT JOIN log_keys USING (origin) "
                "WHERE logs.origin = ? ORDER BY trusted_at, vkey",
                (origin,),
            )
            .fetchall()
        )
        if not rows:
            return None
        return tuple(vkey for _, vkey in rows if vkey is not None)

    def followed(self) -> list[Followed]:
        conn = self.connection()
        logs = conn.execute("SELECT origin FROM logs ORDER BY origin").fetchall()
        return [
            Followed(origin, self.trusted(origin) or (), cosigned(conn, origin))
            for (origin,) in logs
        ]

    def newest_note(self, hashed: str) -> str | None:
        """The newest cosigned note of the log whose origin hashes to `hashed`."""
        row = (
            self.connection()
            .execute("SELECT note FROM logs WHERE origin_hash = ?", (hashed,))
            .fetchone()
        )
        return None if row is None else row[0]

    def refusals(self) -> tuple[list[Refusal], int]:
        """The evidence kept, oldest first, and how many refusals came after it was full."""
        conn = self.connection()
        rows = conn.execute(
            "SELECT origin, breach, reason, status, cosigned_note, refused_note, old, proof, "
            "first_at, last_at, times FROM refusals ORDER BY id"
        ).fetchall()
        kept = [
            Refusal(o, Breach(b), r, s, c, n, old, tuple(p.split()), f, la, t)
            for o, b, r, s, c, n, old, p, f, la, t in rows
        ]
        dropped = conn.execute("SELECT refused FROM not_kept").fetchone()[0]
        return kept, dropped


def _name_and_id(vkey: str) -> str:
    """`<name>+<key id>` of a vkey (its base64 may hold a `+` too)."""
    return "+".join(vkey.split("+", 2)[:2])


# -- inside a transaction (State.writing) ---------------------------------------------


def cosigned(conn: sqlite3.Connection, origin: str) -> Cosigned:
    row = conn.execute(
        "SELECT size, root, note, cosigned_at FROM logs WHERE origin = ?", (origin,)
    ).fetchone()
    if row is None or row[1] is None:
        return Cosigned()
    size, root, note, at = row
    return Cosigned(size, root, note, at)


def advance(conn: sqlite3.Connection, origin: str, newest: Cosigned) -> None:
    conn.execute(
        "UPDATE logs SET size = ?, root = ?, note = ?, cosigned_at = ? WHERE origin = ?",
        (newest.size, newest.root, newest.note, newest.at, origin),
    )


def keep(conn: sqlite3.Connection, refusal: Refusal) -> None:
    """Keep `refusal` as evidence: counted again if the same was refused before, kept
    if there is room, else only counted."""
    digest = hashlib.sha256(
        "\n\0".join(
            [refusal.breach.value, refusal.cosigned_note or "", refusal.refused_note]
        ).encode("utf-8")
    ).digest()
    again = conn.execute(
        "UPDATE refusals SET last_at = ?, times = times + 1 WHERE digest = ?",
        (refusal.last_at, digest),
    )
    if again.rowcount:
        return
    if conn.execute("SELECT count(*) FROM refusals").fetchone()[0] >= MAX_REFUSALS:
        conn.execute("UPDATE not_kept SET refused = refused + 1")
        return
    conn.execute(
        "INSERT INTO refusals (digest, origin, breach, reason, status, cosigned_note, "
        "refused_note, old, proof, first_at, last_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            digest,
            refusal.origin,
            refusal.breach.value,
            refusal.reason,
            refusal.status,
            refusal.cosigned_note,
            refusal.refused_note,
            refusal.old,
            "\n".join(refusal.proof),
            refusal.first_at,
            refusal.last_at,
        ),
    )
