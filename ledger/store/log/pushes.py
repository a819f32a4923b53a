"""Where the ledger's pushes to its witnesses stand, as every server of the database
reads it: each witness's state, the last error it gave, and the largest checkpoint it
cosigned here.

One process of all those that serve a database pushes (ledger.pusher), and the
others answer /readyz too: so the pusher leaves each witness's state in the database
as it changes (never on every push: a witness that stays up or stays down writes
nothing more), and the sizes come from the cosignatures themselves.

Which process pushes is whichever holds the pusher's lock (`Leadership`), as the
writers' queue (ledger.store.writers) and the heavy reads' slots (ledger.web.heavy)
hold theirs: `flock` on a file beside an SQLite database (`<database>.pusher`), which
every process on its machine sees; a session advisory lock on PostgreSQL, held on a
connection of its own, which every server of the database sees. Either is let go by
the kernel or the server when its holder ends, however it ended, so a killed worker
never leaves the witnesses without a pusher.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path

import sqlalchemy as sa

from ledger.store import db
from ledger.store.schema import cosignatures, witness_states

SUFFIX = ".pusher"
PUSHER_LOCK = 0x48415A505553  # "HAZPUS": the advisory lock the pushing process holds
MAX_ERROR = 500
"""The longest error kept: a witness's answer is quoted in it, and a witness is not ours."""


@dataclasses.dataclass(frozen=True)
class Standing:
    state: str
    last_error: str | None
    since: str


def save(conn: sa.Connection, witness: str, standing: Standing) -> None:
    """Keep `standing` as the state of the witness whose vkey is `witness`."""
    values = {
        "state": standing.state,
        "last_error": None if standing.last_error is None else standing.last_error[:MAX_ERROR],
        "since": standing.since,
    }
    where = witness_states.c.witness == witness
    if conn.execute(sa.update(witness_states).where(where).values(**values)).rowcount == 0:
        conn.execute(witness_states.insert().values(witness=witness, **values))


def standings(conn: sa.Connection) -> dict[str, Standing]:
    """Every witness's last saved state, by its vkey."""
    rows = conn.execute(sa.select(witness_states)).all()
    return {row.witness: Standing(row.state, row.last_error, row.since) for row in rows}


def cosigned_sizes(conn: sa.Connection, witnesses: Iterable[str]) -> dict[str, int]:
    """The largest size each of `witnesses` (vkeys) cosigned here; 0 for none."""
    keys = sorted(set(witnesses))
    found = dict.fromkeys(keys, 0)
    if keys:
        query = (
            sa.select(cosignatures.c.witness, sa.func.max(cosignatures.c.size))
            .where(cosignatures.c.witness.in_(keys))
            .group_by(cosignatures.c.witness)
        )
        found.update({witness: int(size) for witness, size in conn.execute(query).all()})
    return found


# -- which process pushes ------------------------------------------------------------

log = logging.getLogger("hazard.store")
_in_memory = threading.Lock()
"""The lock for an SQLite database in memory, which no other process opens."""


class Leadership:
    """The pusher's lock for the database of `engine`, taken without waiting (`take`,
    asked again every interval by the process that does not hold it) and held until
    `let_go` or the process's end."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.postgres = engine.dialect.name == "postgresql"
        where = None if self.postgres else db.sqlite_file(engine.url)
        self.path = None if where is None else Path(str(where) + SUFFIX)
        self._fd = -1
        self._pid = -1
        self._conn: sa.Connection | None = None
        self._memory = False
        self._sessions: sa.Engine | None = None
        self._inherited: list[sa.Connection] = []

    def take(self) -> bool:
        """Whether this holds the lock now: taken if it was free, kept if it was held
        (on PostgreSQL, checked: a connection the server dropped took the lock with it)."""
        if self._pid != os.getpid():
            self._forked()
        if self.postgres:
            return self._advisory()
        if self.path is None:
            self._memory = self._memory or _in_memory.acquire(blocking=False)
            return self._memory
        if self._fd < 0:
            try:
                self._fd = _open(self.path)
            except OSError as exc:
                # A file this server may not make (a read-only directory): one pusher
                # in this process, rather than none.
                log.warning("the pusher's lock is this process's alone: %s", exc)
                self.path = None
                return self.take()
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                self._fd = -1
        return self._fd >= 0

    def _forked(self) -> None:
        """In a child just forked (or at first): hold none of the parent's locks. Its
        descriptor is closed here, which lets go of nothing the parent holds but keeps
        the lock from outliving the parent in the child; its session is the parent's,
        and is left alone (closing it would end it for the parent)."""
        if self._fd >= 0:
            os.close(self._fd)
        if self._conn is not None:
            self._inherited.append(self._conn)
        self._fd, self._conn, self._sessions, self._memory = -1, None, None, False
        self._pid = os.getpid()

    def _advisory(self) -> bool:
        if self._conn is not None:
            try:
                self._conn.execute(sa.text("SELECT 1")).scalar()
                self._conn.commit()
                return True
            except sa.exc.SQLAlchemyError as exc:
                log.warning("the pusher's lock went with its connection: %s", exc)
                self._close()
        if self._sessions is None:  # not the pool's: a pooled connection goes back with it
            self._sessions = sa.create_engine(self.engine.url, poolclass=sa.NullPool)
        conn = self._sessions.connect()
        try:
            taken = conn.execute(
                sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": PUSHER_LOCK}
            ).scalar_one()
            conn.commit()  # the lock is the session's; nothing else is open
        except BaseException:
            conn.close()
            raise
        if not taken:
            conn.close()
            return False
        self._conn = conn
        return True

    def let_go(self) -> None:
        if self._pid != os.getpid():
            return
        if self._fd >= 0:
            os.close(self._fd)  # the lock goes with the descriptor
            self._fd = -1
        if self._memory:
            self._memory = False
            _in_memory.release()
        self._close()

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                self._conn.close()  # the session ends, and its lock with it
            self._conn = None


def _open(path: Path) -> int:
    # flock needs only an open descriptor: a file another user's server made, that
    # this one may read but not write, serves as well (as in ledger.store.writers).
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
