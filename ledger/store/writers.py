"""The queue SQLite's writers wait in: woken the moment the writer ahead commits, and
never past the write's deadline.

SQLite has one writer at a time. A connection that finds the write lock taken waits in
its busy handler, which sleeps and tries again in growing steps (1, 2, 5, 10, ... up to
100 ms): the lock is often free for most of a sleep while every waiter dozes, and under
load a write's p99 was five times a bare insert's (bench.api; docs/reliability.md,
"The HTTP path"). PostgreSQL's writers wait in the server for the append lock, and
wake as it is let go; this gives SQLite's the same.

Before its BEGIN IMMEDIATE, a write takes its turn here, by a deadline (the lock
timeout from when the write began: ledger.store.eventstore), and every wait, this
one's and then SQLite's busy handler's, spends from the same deadline:
  - among the threads of one process, a `threading.Lock`, waited on until the deadline;
  - across processes (gunicorn's workers, a `hazard` command beside them), `flock` on a
    file beside the database (`<database>.writers`). The kernel lets go of it when its
    holder dies, SIGKILL included, so a killed worker never leaves it taken.

flock itself has no timeout, so it is first tried without waiting (the usual case: no
cost but the call). When another process holds it, the wait in the kernel is handed to
this process's broker, a thread with a descriptor of its own, while the writer waits on
a condition until its deadline. The kernel wakes the broker the moment the holder lets
go; the broker hands the lock to the writer waiting then, or lets go of it at once if
that writer gave up meanwhile (then answered `Busy`) and no other has come.

A writer that does not take its turn here (an old server, the `sqlite3` shell) is
still kept out by SQLite's own lock: this orders writers, it does not guard the data.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from ledger.store import db

SUFFIX = ".writers"
log = logging.getLogger("hazard.store")


class QueueTimeout(Exception):
    """The writers ahead of it held the queue past the write's deadline."""


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
        self._broker: _Broker | None = None

    @contextmanager
    def turn(self, deadline: float) -> Iterator[bool]:
        """This thread's turn to write, taken by `deadline` (time.monotonic) or
        QueueTimeout; yields whether it had to wait for it, so that the caller gives
        SQLite's busy handler only what is left (nothing to change when it did not)."""
        waited = not self._turn.acquire(blocking=False)
        if waited and not self._turn.acquire(timeout=max(deadline - time.monotonic(), 0)):
            raise QueueTimeout("no turn to write within the lock timeout")
        try:
            fd = self._file()
            if fd < 0:  # no file to queue on: SQLite's own lock and busy handler
                yield waited
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process's turn: wait for it by the deadline
                if self._broker is None:
                    self._broker = _Broker(self.path)
                fd = self._broker.wait(deadline)
                waited = True
            try:
                yield waited
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._turn.release()

    def _file(self) -> int:
        # Called holding _turn. A descriptor inherited across a fork shares its lock
        # with the parent's (flock locks belong to the open file): each process opens
        # the file itself (and a child closes what it inherited: `_forked`). flock
        # needs only an open descriptor, so a file this user may read but not write
        # (another user's server made it) still serves; one that cannot be opened at
        # all leaves the writes to SQLite's own lock, as before this queue, rather
        # than refuse them.
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._fd = _open(self.path)
        return self._fd

    def _forked(self) -> None:
        """In a child just forked: a fresh lock (a thread of the parent may have held
        this one, and no thread of the child will let it go), no broker (its thread
        was not forked), and the parent's descriptors closed. Closing them lets go of
        nothing the parent holds, but keeps a lock taken through them from outliving
        the parent in the child (a parent killed while writing)."""
        self._turn = threading.Lock()
        if self._fd >= 0:
            os.close(self._fd)
        self._fd, self._pid = -1, -1
        if self._broker is not None:
            os.close(self._broker.fd)
        self._broker = None


def _open(path: Path) -> int:
    failure: OSError | None = None
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        try:
            return os.open(path, flags | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            failure = exc
    log.warning("writers queue on SQLite's lock alone: %s", failure)
    return -1


class _Broker:
    """Waits in the kernel for the queue's flock on behalf of this process's writer,
    on a descriptor of its own (two open files of one process exclude each other, so
    a writer's try without waiting and the broker's wait never mistake one another's
    lock for their own).

    The process's threads come here one at a time (they hold WriterQueue._turn), so
    there is at most one writer waiting: `wanted`. `asked` is the broker's wait in the
    kernel, which outlives a writer that gave up; `granted`, the lock got for `wanted`.
    All three change under one condition, so the lock is handed to a writer still
    waiting, or let go of at once, never both and never neither."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # the writers' own opened it
        self._changed = threading.Condition()
        self._wanted = False
        self._asked = False
        self._granted = False
        self._failure: OSError | None = None
        threading.Thread(target=self._run, name="hazard-writers", daemon=True).start()

    def wait(self, deadline: float) -> int:
        """The descriptor holding the lock, got by `deadline`, or QueueTimeout."""
        with self._changed:
            self._wanted = True
            try:
                if not self._asked:
                    self._asked = True
                    self._changed.notify_all()
                while not self._granted and self._failure is None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise QueueTimeout("another process held its turn past the lock timeout")
                    self._changed.wait(left)
                if self._failure is not None:
                    failure, self._failure = self._failure, None
                    raise failure
                self._granted = False
                return self.fd
            finally:
                self._wanted = False

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._asked:
                    self._changed.wait()
            failure = None
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX)  # the kernel wakes it as the lock is let go
            except OSError as exc:
                failure = exc
            with self._changed:
                self._asked = False
                if failure is not None:
                    self._failure = failure
                elif self._wanted:
                    self._granted = True
                else:  # the writer gave up while the broker waited: nobody to hand it to
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                self._changed.notify_all()


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


def _after_fork_in_child() -> None:
    global _queues_lock
    _queues_lock = threading.Lock()  # a parent's thread may have held it at the fork
    for queue in _queues.values():
        queue._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)
