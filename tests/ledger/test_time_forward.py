"""Time only goes forward, on SQLite and PostgreSQL: an append whose clock is behind the
log records the log's last time and says so, the database refuses an event recorded
before the one before it (or written in another form than the store writes), and a log
that went back before the database could refuse it upgrades as it is, for `hazard
verify` to name where."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from ledger.books.book import Book
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore, Recorded, utc_now
from ledger.store.vocabulary import Deposited
from tests.ledger import attackkit
from tests.ledger.clockkit import Wall, stamp
from tests.ledger.tamperkit import Log, hazard_verify, play
from tests.signing import SIGNER

MINUTE = timedelta(minutes=1)


class Caught(logging.Handler):
    """The records one logger emits, whatever the logging set-up of the session."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def caught() -> Iterator[Caught]:
    logger, handler = logging.getLogger("hazard.store"), Caught()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _holds(engine: sa.Engine) -> list[tuple[int, str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT position, clock, recorded_at FROM clock_holds ORDER BY position")
        )
        return [(int(p), str(c), str(r)) for p, c, r in rows]


def test_an_append_behind_the_log_records_the_log_s_last_time_and_says_so(
    engine: sa.Engine, caught: Caught
) -> None:
    wall = Wall()
    fast = EventStore(engine, clock=wall.clock(MINUTE), signer=SIGNER)
    slow = EventStore(engine, clock=wall.clock(), signer=SIGNER)
    told: list[tuple[str, str]] = []
    slow.held = lambda clock, recorded_at: told.append((clock, recorded_at))
    clubs = {"fast": Club(Book(fast)), "slow": Club(Book(slow))}
    clubs["fast"].create_player("ann", "setter")
    wrote: dict[str, list[int]] = {"fast": [], "slow": []}
    for i in range(6):
        server = ("slow", "fast")[i % 2]
        answer = clubs[server].account_command("ann", Deposited, 10 + i, "setter")
        wrote[server].append(answer["receipt"]["positions"][0])
    rows = {r.position: r for r in fast.read_all(0)}
    times = [rows[p].recorded_at for p in sorted(rows)]
    assert times == sorted(times), "recorded_at went back"
    holds = _holds(engine)
    held_at = [p for p, _, _ in holds]
    # Every write of the slow server was held back to the time before it, a minute's
    # worth but the second it came after; the fast server's never were.
    assert set(wrote["slow"]) <= set(held_at)
    assert not set(wrote["fast"]) & set(held_at)
    for position, clock, recorded_at in holds:
        assert recorded_at == rows[position].recorded_at == rows[position - 1].recorded_at
        behind = datetime.fromisoformat(recorded_at) - datetime.fromisoformat(clock)
        assert timedelta(0) < behind < MINUTE
    assert told == [(clock, recorded_at) for _, clock, recorded_at in holds]
    said = [r for r in caught.records if getattr(r, "clock", None) is not None]
    assert [(r.position, r.clock, r.recorded_at) for r in said] == holds  # type: ignore[attr-defined]
    assert all(r.levelno == logging.WARNING for r in said)
    fast.close()
    slow.close()


def test_an_append_on_time_holds_nothing(store: EventStore) -> None:
    Club(Book(store)).create_player("ann", "setter")
    Club(Book(store)).account_command("ann", Deposited, 10, "setter")
    assert _holds(store.engine) == []


def _insert(engine: sa.Engine, recorded_at: str) -> None:
    """An event put in by hand after the last, as nothing but the append should."""
    with engine.connect() as conn:
        last = conn.execute(sa.text("SELECT max(position) FROM events")).scalar_one()
    row = Recorded(
        last + 1, "account:player:zed", 1, "AccountOpened", 1, '{"account":"player:zed"}',
        "setter", None, recorded_at, "0" * 64, "0" * 64,
    )  # fmt: skip
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO events VALUES (:position, :stream, :version, :type, "
                ":schema_version, :payload, :actor, :idempotency_key, :recorded_at, "
                ":prev_hash, :hash)"
            ),
            row._asdict(),
        )


@pytest.fixture
def timed(engine: sa.Engine) -> Iterator[EventStore]:
    """A store on the evening's wall clock, with a player and a deposit written."""
    store = EventStore(engine, clock=Wall().clock(), signer=SIGNER)
    Club(Book(store)).create_player("ann", "setter")
    Club(Book(store)).account_command("ann", Deposited, 10, "setter")
    yield store
    store.close()


def test_the_database_refuses_an_event_recorded_before_the_one_before_it(
    timed: EventStore,
) -> None:
    last = timed.read_all(0)[-1].recorded_at
    earlier = stamp(datetime.fromisoformat(last) - timedelta(microseconds=1))
    with pytest.raises(sa.exc.IntegrityError, match="time only goes forward"):
        _insert(timed.engine, earlier)
    _insert(timed.engine, last)  # the same time is not earlier


@pytest.mark.parametrize(
    "written",
    [
        "2026-11-23T21:00:00Z",  # no microseconds: it would sort before 21:00:00.5
        "2026-11-23T21:00:00.000000+00:00",
        "2026-11-23 21:00:00.000000Z",
        "2026-11-23T21:00:00.000000z",
        "12026-11-23T21:00:00.00000Z",
    ],
)
def test_the_database_refuses_a_time_not_written_as_the_store_writes_it(
    timed: EventStore, written: str
) -> None:
    with pytest.raises(sa.exc.IntegrityError, match="recorded_at"):
        _insert(timed.engine, written)


def test_the_store_writes_every_time_in_the_one_form() -> None:
    """What the trigger's form and text order rest on: utc_now writes a four-digit year
    and six digits of microseconds, even when they are 0, and `Z`: 27 characters."""
    form = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
    assert form.fullmatch(utc_now())
    for when in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)):
        assert form.fullmatch(stamp(when))


def test_a_log_that_went_back_before_the_upgrade_upgrades_and_verify_names_where(
    engine: sa.Engine, tmp_path: Path
) -> None:
    """A log written before migration 0013, by a clock that stepped back: the upgrade
    does not fail on it, and `hazard verify` names the first event recorded before the
    one before it. (Played and stepped back by today's code, whose read models a schema
    of 0012 lacks, then taken down to 0012, where nothing holds time forward: the
    database then holds what a server before 0013 could have written.)"""
    store = EventStore(engine, clock=attackkit.clock(), signer=SIGNER)
    play(store)
    store.close()
    log = Log(engine, 0, "", tmp_path)
    attackkit.clock_stepped_back(log)
    with db.serialised(engine, db.UPGRADE_LOCK) as conn:
        command.downgrade(db._alembic_config(conn), "0012")
    where = attackkit.stepped_back_at(log)
    db.upgrade(engine)
    result = hazard_verify(log)
    assert result.exit_code == 1, result.output
    assert f"the first at position {where}:" in result.output, result.output
    assert "earlier than the event before it" in result.output
