"""Writing the log of significant events (ledger.store.significant_events).

Two ways in. What happens rarely and must never be lost is written in the same
transaction as the change itself (`append_in`): a token made or revoked is one write
with its row in the tokens table, so that neither is there without the other, and the
club's settings as the service starts (`record_settings`). What a stranger can do as
often as they like (a sign-in refused) or what the load brings in floods (a write the
lock refused) is counted in memory by a `Tally` and written at most once a window
(HAZARD_SIGNIFICANT_WINDOW seconds, 10 by default): a flood of a thousand refused
sign-ins is one event with a count of a thousand, and costs the log one write a window.

What a window counted is written with the first count or write after the window ends,
and when the service stops cleanly (`Tally.close`, at exit). A process killed with
SIGKILL loses what it had counted and not yet written: the counts since its last write
of them.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa

from ledger.books import significant as book
from ledger.house import House
from ledger.store import tokens as stored
from ledger.store.eventstore import EventStore, StoreError
from ledger.store.log.policy import Policy
from ledger.store.significant_events import (
    STREAM,
    SettingChanged,
    SignificantEvent,
    SignIns,
    TokensFound,
    WritesRefused,
)
from ledger.unit_of_work import UnitOfWork

log = logging.getLogger("hazard.significant")

WINDOW_ENV = "HAZARD_SIGNIFICANT_WINDOW"
WINDOW = 10.0
"""Seconds a tally counts before it writes what it counted: one event per kind a window."""

CONSOLE = "anyone:console"
"""The actor of a refused sign-in: nobody the ledger knows typed it."""
STORE = "hazard:store"
"""The actor of the writes the lock refused: the store counted them, not a person."""

SIGNED_IN, REFUSED, SIGNED_OUT = "signed in", "refused", "signed out"


def append_in(uow: UnitOfWork, actor: str, *events: SignificantEvent) -> None:
    """Append `events` (their `version` is numbered here) to `club:significant` in the
    unit of work's transaction, as `actor`. The stream's first event says which tokens
    the tokens table held before the log began (TokensFound), so that every token row
    is accounted for by an event (ledger.books.significant.token_differences)."""
    version = uow.store.stream_version(uow.conn, STREAM)
    if version == 0:
        named = {getattr(e, "token", None) for e in events}
        found = [r for r in stored.every(uow.conn) if r.id not in named]
        if found:
            held = " ".join(r.id for r in found)
            revoked = " ".join(r.id for r in found if r.revoked_at is not None)
            events = (TokensFound(0, held, revoked), *events)
    numbered = [dataclasses.replace(e, version=version + i + 1) for i, e in enumerate(events)]
    uow.record(STREAM, version, numbered, actor)


# -- the club's settings, as the service starts -------------------------------------------


def last_settings(conn: sa.Connection) -> dict[str, str | None]:
    """Each setting's value as last recorded, read in `conn`'s transaction."""
    found: dict[str, str | None] = {}
    for event in book.stream_events(conn, ("SettingChanged",)):
        assert isinstance(event, SettingChanged)
        found[event.setting] = event.after
    return found


POLICY = "HAZARD_POLICY"
"""The witnesses' policy, recorded as its text (with the witnesses' URLs)."""


def settings_of(house: House, policy: Policy | None, lock_timeout: float) -> dict[str, str | None]:
    """The club's settings as recorded: what ledger.house reads, the witnesses' policy
    and the lock timeout. A part that adds a club setting adds its line here."""
    return {
        "HAZARD_CURRENCY": house.currency,
        "HAZARD_MINOR_UNITS": str(house.minor_units),
        "HAZARD_TIMEZONE": house.zone,
        "HAZARD_FAIRNESS_LEVEL": str(house.fairness_level),
        "HAZARD_LIMIT_COOLING_OFF": f"{house.cooling_off.total_seconds() // 3600:g}",
        "HAZARD_REALITY_CHECK": f"{house.reality_check.total_seconds() // 60:g}",
        POLICY: None if policy is None else policy.text(),
        "HAZARD_LOCK_TIMEOUT": f"{lock_timeout:g}",
    }


def record_settings(store: EventStore, settings: Mapping[str, str | None], actor: str) -> int:
    """Record each of the club's `settings` whose value differs from the last one
    recorded (every one, the first time): one SettingChanged each, in one write. The
    read and the write are one transaction, so servers started at once record a change
    once between them. How many were recorded."""
    uow = UnitOfWork(store)
    with uow:
        last = last_settings(uow.conn)
        changed = [
            SettingChanged(0, name, last.get(name), value)
            for name, value in sorted(settings.items())
            if name not in last or last[name] != value
        ]
        if changed:
            append_in(uow, actor, *changed)
            uow.commit()
    return len(changed)


# -- floods, counted -----------------------------------------------------------------------


@dataclasses.dataclass
class _Count:
    count: int
    first_at: str
    last_at: str


class Tally:
    """Counts sign-ins and refused writes, and writes what it counted at most once a
    window: with the count or the write (any write of the store) that comes when the
    window has passed since its last, and at a clean stop. No thread of its own: what
    it writes is written by a request that was writing or counting anyway.
    Thread-safe."""

    def __init__(
        self, store: EventStore, window: float = WINDOW, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store, self.window, self._clock = store, window, clock
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, tuple[Any, ...]], _Count] = {}
        self._written = clock()  # the first window runs from the start
        self._writing = False
        atexit.register(_close_at_exit, weakref.ref(self))

    def sign_in(self, outcome: str, actor: str, token: tuple[str, str, str] | None) -> None:
        """A console sign-in or sign-out with `outcome`, by `actor`, with the token
        (id, role, name) it named, if any."""
        self._count("sign-in", (outcome, actor, token))

    def refused_write(self) -> None:
        """A write the lock refused (the store's Busy). Counted only: writing now would
        wait for the very lock that was not had."""
        self._count("busy", (), write=False)

    def wrote(self) -> None:
        """The store has just written: what was counted goes with it if the window is up.
        Never raises: the write it follows has committed, and its caller is answered."""
        if self._counts and self._due():
            try:
                self.flush()
            except Exception:  # a fault of its own, said; the counts wait for the next
                log.exception("significant events not written after a write")

    def _due(self) -> bool:
        return self._clock() - self._written >= self.window

    def _count(self, kind: str, key: tuple[Any, ...], write: bool = True) -> None:
        at = self.store.clock()
        with self._lock:
            found = self._counts.get((kind, key))
            if found is None:
                self._counts[kind, key] = _Count(1, at, at)
            else:
                found.count += 1
                found.last_at = at
        if write and self._due():
            self.flush()

    def flush(self) -> None:
        """Write what was counted, one event per kind and key, in one write. A write
        refused (the lock again, a database gone) puts the counts back for the next."""
        with self._lock:
            if self._writing:  # this flush's own write, telling `wrote`
                return
            counts, self._counts = self._counts, {}
            self._written, self._writing = self._clock(), bool(counts)
        if not counts:
            return
        try:
            uow = UnitOfWork(self.store)
            with uow:
                for (kind, key), c in counts.items():
                    if kind == "busy":
                        append_in(uow, STORE, WritesRefused(0, c.count, c.first_at, c.last_at))
                    else:
                        outcome, actor, token = key
                        token_id, role, name = token or (None, None, None)
                        event = SignIns(
                            0, outcome, token_id, role, name, c.count, c.first_at, c.last_at
                        )
                        append_in(uow, actor, event)
                uow.commit()
        except (StoreError, sa.exc.SQLAlchemyError) as exc:
            log.warning("significant events not written yet (%s): kept for the next window", exc)
            with self._lock:
                for k, c in counts.items():
                    now = self._counts.setdefault(k, _Count(0, c.first_at, c.last_at))
                    now.count += c.count
                    now.first_at = min(now.first_at, c.first_at)
        finally:
            with self._lock:
                self._writing = False

    def close(self) -> None:
        """Write what was counted (a clean stop)."""
        try:
            self.flush()
        except Exception as exc:  # at exit, with the database perhaps gone: said, not raised
            log.warning("significant events lost at exit: %s", exc)


def _close_at_exit(ref: weakref.ref[Tally]) -> None:
    """At a clean stop, the tally (if it is still there) writes what it counted."""
    tally = ref()
    if tally is not None:
        tally.close()


def window_setting(text: str | None) -> float:
    """HAZARD_SIGNIFICANT_WINDOW as typed: seconds, more than 0 and at most an hour."""
    if text is None or text == "":
        return WINDOW
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        from ledger.store.db import BadSetting

        raise BadSetting(f"{WINDOW_ENV}: {text!r} is not a number of seconds, more than 0 "
                         "and at most 3600")  # fmt: skip
    return seconds
