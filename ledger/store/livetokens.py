"""The live tokens a server process has looked up lately, remembered until a revocation
anywhere says otherwise.

Every request's token is looked up by its hash (ledger.store.tokens.live): a connection
from the pool, an index probe and the connection back cost 15 to 40 us, more than the
rest of a small request's own hooks (docs/performance.md, issue 27's "http"). A token
changes only by being revoked, so what a lookup found may be kept, on one condition: a
revoked token is refused at its very next request, whichever process revoked it (a
server's, or `hazard token revoke` beside it).

On an SQLite file, every revocation, after its commit, appends a byte to the file
`<database>.tokens` beside the database (`revoked`), and a remembered token is used only
while that file is as it was (same inode, same size) when the token was looked up;
`os.stat` costs about a microsecond. The size is read before the lookup: a revocation
that commits after it has also grown the file, so what the lookup found is not used
again. A token is also looked up afresh after TTL_S, whatever the file says: what a
revocation cannot signal (a revoker killed between its commit and its byte, a row
changed by hand) lasts no longer than that. A token not found is never remembered: a
token just made works at once.

PostgreSQL may be shared by servers on several machines, which no file beside the
database reaches: there, and on an SQLite that is not a plain file, every request looks
its token up, as before.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import sqlalchemy as sa

from ledger.store import db
from ledger.store import tokens as stored

SUFFIX = ".tokens"
TTL_S = 5.0
"""The longest a token is used without being looked up again."""
MOST = 10_000
"""Tokens remembered at most per database (a process serves a club's few hundred);
past it, the memory is emptied and filled again."""

log = logging.getLogger("hazard.store")

Found = tuple[str, str, str, str]
"""(id, name, role, tag): what ledger.store.tokens.live gives."""
Stamp = tuple[int, int]
"""The revocations file's (inode, size) when a token was looked up."""


class _Memory:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: dict[str, tuple[Found, Stamp, float]] = {}
        self.lock = threading.Lock()

    def stamp(self) -> Stamp | None:
        try:
            seen = os.stat(self.path)
        except OSError:
            return None
        return seen.st_ino, seen.st_size


_memories: dict[sa.URL, _Memory | None] = {}
_memories_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _memories_lock
    _memories_lock = threading.Lock()  # a parent's thread may have held it at the fork
    _memories.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _memory(engine: sa.Engine) -> _Memory | None:
    """This process's memory of `engine`'s database, or None where none is kept."""
    url = engine.url
    if url in _memories:
        return _memories[url]
    where = db.sqlite_file(url)
    memory = None
    if where is not None:
        path = Path(str(where) + SUFFIX)
        if _touch(path):
            memory = _Memory(path)
    with _memories_lock:
        return _memories.setdefault(url, memory)


def _touch(path: Path) -> bool:
    """Whether the revocations file exists (made now, if need be)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644))
    except OSError as exc:
        log.warning("tokens looked up on every request: %s", exc)
        return False
    return True


def live(engine: sa.Engine, token_hash: str) -> Found | None:
    """What ledger.store.tokens.live finds for `token_hash`, remembered as above."""
    memory = _memory(engine)
    if memory is None:
        return stored.live(engine, token_hash)
    stamp = memory.stamp()
    if stamp is None:  # the file gone: nothing it said can be trusted
        return stored.live(engine, token_hash)
    now = time.monotonic()
    kept = memory.found.get(token_hash)
    if kept is not None and kept[1] == stamp and now < kept[2]:
        return kept[0]
    found = stored.live(engine, token_hash)
    with memory.lock:
        if found is None:
            memory.found.pop(token_hash, None)
        else:
            if len(memory.found) >= MOST:
                memory.found.clear()
            memory.found[token_hash] = (found, stamp, now + TTL_S)
    return found


def revoked(engine: sa.Engine) -> None:
    """A token of `engine`'s database was revoked (and committed): every process forgets
    the tokens it remembers. Called after the commit, before the revocation returns."""
    where = db.sqlite_file(engine.url)
    if where is None:
        return
    memory = _memory(engine)
    if memory is not None:
        with memory.lock:
            memory.found.clear()
    path = Path(str(where) + SUFFIX)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, b".")
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning(
            "a revocation could not be told to the servers (%s): they may accept the "
            "token for up to %g s more",
            exc,
            TTL_S,
        )
