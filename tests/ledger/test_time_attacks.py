"""The issue's attacks on time, on SQLite and PostgreSQL, each on a copy of a played log
forged as an insider would (the append's trigger dropped, everything made again and
signed with the bank's real key: tests.ledger.attackkit): `hazard verify` names where
time went back, or where a checkpoint is dated before its events."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.store.eventstore import EventStore
from ledger.store.log import check
from tests.ledger import attackkit
from tests.ledger.tamperkit import Log, hazard_verify, played_log
from tests.signing import SIGNER, VERIFIER


@pytest.fixture
def log(engine: sa.Engine, tmp_path: Path) -> Iterator[Log]:
    """The evening played on its clock, a write a second."""
    store = EventStore(engine, clock=attackkit.clock(), signer=SIGNER)
    try:
        yield from played_log(store, tmp_path)
    finally:
        store.close()


def _check(log: Log) -> check.Report:
    with log.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        return check.check_log(conn, VERIFIER, batch=7)


GONE_BACK: list[Callable[[Log], str]] = [attackkit.clock_stepped_back, attackkit.back_dated]


@pytest.mark.parametrize("attack", GONE_BACK, ids=lambda f: f.__name__)
def test_a_copy_gone_back_in_time_is_named_where_by_verify(
    log: Log, attack: Callable[[Log], str]
) -> None:
    attack(log)
    where = attackkit.stepped_back_at(log)
    (finding,) = _check(log).findings
    assert finding.position == where
    assert "earlier than the event before it" in finding.what
    result = hazard_verify(log)
    assert result.exit_code == 1, result.output
    assert f"the first at position {where}:" in result.output, result.output


def test_checkpoints_dated_before_their_events_are_named_by_verify(log: Log) -> None:
    attackkit.checkpoints_back_dated(log)
    first = attackkit.first_checkpoint(log)
    (finding,) = _check(log).findings
    assert finding.position == first
    assert f"the checkpoint of size {first} is signed at" in finding.what
    assert "before the events it covers" in finding.what
    assert "later stored checkpoints are dated before the newest event covered" in finding.what
    result = hazard_verify(log)
    assert result.exit_code == 1 and f"the first at position {first}:" in result.output
