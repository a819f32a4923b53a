"""The queue SQLite's writers wait in: woken the moment the writer ahead commits.

SQLite has one writer at a time. A connection that finds the write lock taken waits in
its busy handler, which sleeps and tries again in growing steps (1, 2, 5, 10, ... up to
100 ms): the lock is often free for most of a sleep while every waiter dozes, and under
load a write's p99 was five times a bare insert's (bench.api; docs/reliability.md,
"The HTTP path"). PostgreSQL's writers wait in the server for the append lock, and
wake as it is let go; this gives SQLite's the same.

Before its BEGIN IMMEDIATE, a write takes its turn here:
  - among the threads of one process, a `threading.Lock`, waited on for at most the
    lock timeout (then Busy, as a write that waited in SQLite's busy handler);
  - across processes (gunicorn's workers, a `hazard` command beside them), `flock` on a
    file beside the database (`<database>.writers`), waited on in the kernel, which
    wakes the next waiter as the lock is let go. The kernel lets go of it when its
    holder dies, SIGKILL included, so a killed worker never leaves it taken. At most
    one thread of each process waits there, so that wait is bounded by the other
    processes' single writes ahead of it (each bounded by the busy timeout itself).
A writer that does not take its turn here (an old server, the `sqlite3` shell) is
still kept out by SQLite's own lock: this orders writers, it does not guard the data.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from ledger.store import db

SUFFIX = ".writers"
log = logging.getLogger("hazard.store")


class QueueTimeout(Exception):
    """The writers of this process ahead of it held the queue past the lock timeout."""


class WriterQueue:
    """Turns at writing one SQLite file, for the threads and processes that share it.
    One per file in a process (`for_engine`), whichever stores and engines write it,
    so that a thread that holds its turn and asks again (a transaction within one)
    times out in `_turn` rather than waiting on itself in the kernel."""

    def __init__(self, path: Path) -> None:
        self.path = Path(str(path) + SUFFIX)
        self._turn = threading.Lock()
        self._fd = -1
        self._pid = -1  # the process that opened _fd: a forked child opens its own

    @contextmanager
    def turn(self, timeout: float) -> Iterator[None]:
        if not self._turn.acquire(timeout=timeout):
            raise QueueTimeout(f"no turn to write within {timeout:g} s")
        try:
            fd = self._file()
            if fd < 0:  # no file to queue on: SQLite's own lock and busy handler
                yield
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._turn.release()

    def _file(self) -> int:
        # Called holding _turn. A descriptor inherited across a fork shares its lock
        # with the parent's (flock locks belong to the open file): each process opens
        # the file itself. flock needs only an open descriptor, so a file this user may
        # read but not write (another user's server made it) still serves; one that
        # cannot be opened at all leaves the writes to SQLite's own lock, as before
        # this queue, rather than refuse them.
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._fd = -1
            for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
                try:
                    self._fd = os.open(self.path, flags | os.O_CLOEXEC, 0o644)
                    break
                except OSError as exc:
                    failure = exc
            else:
                log.warning("writers queue on SQLite's lock alone: %s", failure)
        return self._fd


_queues: dict[Path, WriterQueue] = {}
_queues_lock = threading.Lock()


def for_engine(engine: sa.Engine) -> WriterQueue | None:
    """This process's queue for the SQLite file `engine` writes, or None: another
    database, or an SQLite that is not a plain file (in memory, a URI)."""
    where = db.sqlite_file(engine.url)
    if where is None:
        return None
    with _queues_lock:
        return _queues.setdefault(where, WriterQueue(where))
