"""Heavy reads: what scans much of the log, limited per token and per worker.

The heavy reads are the exports (`GET /export`, and the console's downloads, which are
the same code), the replays of a session or a round, the recalls of a table or a
player, the dice-fairness report, the log's check (`GET /audit/verify`) and its head
(`GET /audit/head`, a digest over every stream's newest event). Each reads much of the
log and answers in seconds rather than milliseconds; sixteen exports of one player's
statement at once once pushed everyone's p50 to 3.6 s, /healthz included. So:

  - one token runs at most PER_TOKEN of them at once, on every worker of every server
    of the database together: more is a 429 (`urn:hazard:too-many-requests`) with
    Retry-After, at once, having read nothing;
  - one worker works on at most `at_once` of them at once, whoever asks (half of its
    threads under `hazard serve`), so that the light requests of others keep threads:
    more is a 503 (`urn:hazard:overloaded`) with Retry-After.

A read holds both from before its query is parsed. The worker's slot goes when no
thread works on it any more: its answer made and handed to the kernel, or its client
gone. The token's goes when the client has read the answer (an export's stream too) to
its end, or gone: a slow reader holds its own token's slot, and no thread or anyone
else's (ledger.api.slowclients watches what the kernel still holds for it, under
`hazard serve`).

Why the per-token slots are locks the database's machine or server keeps, rather than
a count in each process: gunicorn's workers are processes, and the kernel hands
connections to them unevenly, so a per-worker share of the cap (1 of 2 on each of two
workers) would refuse a caller's second read or let a third through by chance; and
several servers may serve one database. So a token's slots are:

  - on SQLite, `flock` on files beside the database (`<database>.reads/`): the file is
    on one machine, and every process that opens it (the workers of one server, and
    any other server on the same file) sees the same locks, as the writers' queue does
    (ledger.store.writers). The kernel lets go of a lock when its holder ends, SIGKILL
    included, so a killed worker never leaves a slot taken. Not the run directory
    `hazard serve` makes for its metrics: that is one server's, and plain gunicorn
    has none;
  - on PostgreSQL, session advisory locks (`pg_try_advisory_lock`), each on a
    connection of its own for as long as the read runs: every server on the database
    sees them, and the server lets go when the connection ends, however its process
    ended. Not rows in a table: a row outlives a killed holder, and would need leases.
  - and, first, in every case, counts in this process (the only ones for an SQLite
    database in memory, which no other process opens).
The per-worker bound is a semaphore in the process: it is about this worker's threads.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from flask import Response, current_app, g, make_response, request

from ledger.store import db
from ledger.web.tokens import Holder

PER_TOKEN = 2
"""Heavy reads one token may run at once, on all servers of a database together."""
AT_ONCE = 4
"""Heavy reads one worker runs at once, unless told (`hazard serve`: half its threads)."""
RETRY_AFTER = "2"
"""Seconds a refused heavy read is asked to wait: one takes seconds."""
SUFFIX = ".reads"
MARK = "x-hazard-heavy"
"""What `read` leaves in an operation's doc, for the contract to document its 429 and
503 (ledger.api.contract), and removes there."""
NAMESPACE = 0x48415A52  # "HAZR": the first key of every heavy-read advisory lock
log = logging.getLogger("hazard.api")


class TooManyReads(Exception):
    """This token already runs PER_TOKEN heavy reads: a 429."""


class Overloaded(Exception):
    """This worker already runs as many heavy reads as it takes: a 503."""


Release = Callable[[], None]


class _Local:
    """Slots counted in this process: every token's first, and the only ones for a
    database no other process can open."""

    def __init__(self, per_token: int) -> None:
        self.per_token = per_token
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, token: str) -> Release | None:
        with self._lock:
            if self._held.get(token, 0) >= self.per_token:
                return None
            self._held[token] = self._held.get(token, 0) + 1

        def release() -> None:
            with self._lock:
                self._held[token] -= 1

        return release


class _Files:
    """A token's slots as files beside an SQLite database, each locked with flock by
    the read holding it (flock locks belong to the open file: two threads of one
    process that open a slot each are refused each other's, as two processes are)."""

    def __init__(self, folder: Path, per_token: int) -> None:
        self.folder = folder
        self.per_token = per_token
        self._fallback: _Local | None = None

    def take(self, token: str) -> Release | None:
        if self._fallback is not None:
            return self._fallback.take(token)
        try:
            self.folder.mkdir(exist_ok=True)
            return self._take(token)
        except OSError as exc:
            # A folder this server may not make or open (a read-only directory): the
            # cap holds in this process alone, rather than refusing every heavy read.
            log.warning("heavy reads counted per process: %s", exc)
            self._fallback = _Local(self.per_token)
            return self._fallback.take(token)

    def _take(self, token: str) -> Release | None:
        for slot in range(self.per_token):
            fd = _open(self.folder / f"{token}.{slot}")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            return functools.partial(os.close, fd)  # the lock goes with the descriptor
        return None


def _open(path: Path) -> int:
    # flock needs only an open descriptor: a slot file another user's server made, that
    # this one may read but not write, serves as well (as in ledger.store.writers).
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


class _AdvisoryLocks:
    """A token's slots as PostgreSQL session advisory locks, each held on a connection
    of its own (not the pool's: a pooled connection goes back with its locks)."""

    def __init__(self, engine: sa.Engine, per_token: int) -> None:
        self.engine = sa.create_engine(engine.url, poolclass=sa.NullPool)
        self.per_token = per_token

    def take(self, token: str) -> Release | None:
        conn = self.engine.connect()
        try:
            for slot in range(self.per_token):
                taken = conn.execute(
                    sa.text("SELECT pg_try_advisory_lock(:namespace, :key)"),
                    {"namespace": NAMESPACE, "key": _key(f"{token}.{slot}")},
                ).scalar_one()
                if taken:
                    conn.commit()  # the lock is the session's; nothing else is open
                    return conn.close  # the connection ends, and its locks with it
        except BaseException:
            conn.close()
            raise
        conn.close()
        return None


def _key(text: str) -> int:
    """A signed 32-bit key for `text` (two tokens that share one only share a cap)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big", signed=True)


def _shared(engine: sa.Engine, per_token: int) -> _Files | _AdvisoryLocks | None:
    """The slots every process of the database sees; None for a database in memory."""
    if engine.dialect.name == "postgresql":
        return _AdvisoryLocks(engine, per_token)
    where = db.sqlite_file(engine.url)
    return None if where is None else _Files(Path(str(where) + SUFFIX), per_token)


class HeavyReads:
    """The slots of one app (one worker): PER_TOKEN per token, `at_once` in all."""

    def __init__(self, engine: sa.Engine, at_once: int = AT_ONCE, per_token: int = PER_TOKEN):
        self.at_once = at_once
        self.per_token = per_token
        self._worker = threading.BoundedSemaphore(at_once)
        self._here = _Local(per_token)
        self._shared = _shared(engine, per_token)

    def hold(self, who: Holder) -> Held:
        """The slots of `who`'s heavy read; TooManyReads or Overloaded if there are none.

        The token's slot comes first, counted in this process and then among all: a
        token's reads beyond its own cap are refused without a lock to ask for, and
        without taking, for an instant, a slot of the worker that another caller's
        read would then be refused."""
        key = hashlib.sha256(who.id.encode()).hexdigest()[:32]
        let_go: list[Release] = []
        try:
            for slots in (self._here, self._shared):
                if slots is None:
                    continue
                taken = slots.take(key)
                if taken is None:
                    raise TooManyReads(
                        f"this token already runs {self.per_token} heavy reads (exports, "
                        "replays, recalls, reports, the log's checks) at once, the most one "
                        "caller may: retry when one has finished"
                    )
                let_go.append(taken)
            if not self._worker.acquire(blocking=False):
                raise Overloaded(
                    f"the server runs as many heavy reads as it takes at once "
                    f"({self.at_once} a worker); nothing was read: retry"
                )
        except BaseException:
            _all(reversed(let_go))
            raise
        return Held(_once(self._worker.release), _once(lambda: _all(reversed(let_go))))


class Held:
    """A heavy read's slots: the worker's, let go when no thread works on it any more;
    the token's, when the client has read its answer (or gone). Each once, however
    often it is asked."""

    def __init__(self, worker: Release, token: Release) -> None:
        self.worker = worker
        self.token = token

    def release(self) -> None:
        try:
            self.worker()
        finally:
            self.token()


def _once(release: Release) -> Release:
    done = threading.Lock()

    def once() -> None:
        if done.acquire(blocking=False):
            release()

    return once


def _all(releases: Iterable[Release]) -> None:
    """Call each, whatever the others raise (the first error is raised after)."""
    failed: BaseException | None = None
    for release in releases:
        try:
            release()
        except BaseException as exc:
            failed = failed or exc
    if failed is not None:
        raise failed


def reads() -> HeavyReads:
    found: HeavyReads = current_app.extensions["hazard.heavy"]
    return found


WhenRead = Callable[[Any, Release], None]
"""`when_read(sock, release)`: call `release` once the client has read what was sent to
it on `sock` (or has gone)."""


def _at_once(sock: Any, release: Release) -> None:
    release()


_when_read: WhenRead = _at_once


def released_by(when_read: WhenRead) -> None:
    """Let go of each token's slot through `when_read`: `hazard serve`'s worker gives its
    own as it starts (ledger.api.slowclients.when_read), which watches what the kernel
    still holds for a client without a thread. Without one (another server, the tests'
    client), a slot goes as soon as its answer is sent."""
    global _when_read
    _when_read = when_read


def until_sent(response: Response, held: Held) -> Response:
    """Let go of `held` as `response` is sent: the worker's slot once its body has been
    iterated to the end, or the client has gone (the response closed); the token's once
    the client has read what the kernel still holds for it, under `hazard serve`
    (`released_by`): a slow reader holds no thread, and only its own token's slot."""
    sock = request.environ.get("gunicorn.socket")
    if sock is None and not response.is_streamed:
        held.release()  # an answer made whole, and no socket to send it on: it is sent
        return response

    @_once
    def sent() -> None:  # at the end of the body, or at close, whichever comes first
        held.worker()
        _when_read(sock, held.token)

    if response.is_streamed:
        response.response = _then(response.response, sent)
    response.call_on_close(sent)
    return response


def _then(body: Iterable[Any], sent: Callable[[], None]) -> Iterator[Any]:
    yield from body
    sent()


F = TypeVar("F", bound=Callable[..., Any])


def read(blp: Any) -> Callable[[F], F]:
    """A view of `blp` that is a heavy read: held, from before its query is parsed (put
    it just under the route) until its answer is sent; documented as such."""

    def decorate(view: F) -> F:
        return documented(blp)(held(view))

    return decorate


def held(view: F) -> F:
    """`view`, a heavy read of the caller's (`g.holder`: the API's token, the console's
    signed-in one), held from its start until its answer is sent."""

    @functools.wraps(view)
    def holding(*args: Any, **kwargs: Any) -> Any:
        who: Holder | None = g.get("holder")
        if who is None:  # the view refuses it (401, or the console's sign-in)
            return view(*args, **kwargs)
        slots = reads().hold(who)
        try:
            response = make_response(view(*args, **kwargs))
        except BaseException:
            slots.release()
            raise
        return until_sent(response, slots)

    return cast(F, holding)


def documented(blp: Any) -> Callable[[F], F]:
    """Only the contract's mark: for a view whose heavy read is held below it."""
    return blp.doc(**{MARK: True})  # type: ignore[no-any-return]
