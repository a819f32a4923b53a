"""The issue's attacks on time, on SQLite and PostgreSQL, each on a copy of a played log
forged as an insider would (the append's trigger dropped, everything made again and
signed with the bank's real key: tests.ledger.attackkit): `hazard verify` and the
offline check of an export of it name where time went back, or where a checkpoint is
dated before its events; and a time-range file holds only events inside its times."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.exports import jsonl, offline
from ledger.exports.scope import scope_of
from ledger.store import codec
from ledger.store.eventstore import EventStore
from ledger.store.log import check
from tests.ledger import attackkit
from tests.ledger.clockkit import stamp
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


def _export(log: Log, **scope: Any) -> list[bytes]:
    prepared = jsonl.prepare(log.engine, scope_of(**scope), key=VERIFIER)
    return b"".join(prepared.chunks()).splitlines(keepends=True)


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


@pytest.mark.parametrize("attack", GONE_BACK, ids=lambda f: f.__name__)
def test_a_copy_gone_back_in_time_is_named_where_by_the_offline_check(
    log: Log, attack: Callable[[Log], str]
) -> None:
    attack(log)
    where = attackkit.stepped_back_at(log)
    with pytest.raises(offline.Disagreement, match=f"position {where}: recorded at .* earlier"):
        offline.verify(_export(log, everything=True), key=VERIFIER)


def test_checkpoints_dated_before_their_events_are_named_by_verify_and_offline(log: Log) -> None:
    attackkit.checkpoints_back_dated(log)
    first = attackkit.first_checkpoint(log)
    (finding,) = _check(log).findings
    assert finding.position == first
    assert f"the checkpoint of size {first} is signed at" in finding.what
    assert "before the events it covers" in finding.what
    assert "later stored checkpoints are dated before the newest event covered" in finding.what
    result = hazard_verify(log)
    assert result.exit_code == 1 and f"the first at position {first}:" in result.output
    with pytest.raises(
        offline.Disagreement, match=f"the checkpoint of size {first} is dated .* before the events"
    ):
        offline.verify(_export(log, everything=True), key=VERIFIER)


def _first_second(log: Log) -> tuple[str, str]:
    """The evening's first second: [since, until)."""
    start = log.rows()[0].recorded_at
    return start, stamp(datetime.fromisoformat(start) + timedelta(seconds=1))


def test_a_range_file_holds_exactly_the_events_recorded_in_its_range(log: Log) -> None:
    since, until = _first_second(log)
    lines = _export(log, since=since, until=until)
    offline.verify(lines, key=VERIFIER)
    held = [r for r in map(json.loads, lines) if r["record"] == "event"]
    inside = [r for r in log.rows() if since <= r.recorded_at < until]
    assert [e["position"] for e in held] == [r.position for r in inside] != []


def test_a_range_file_of_a_back_dated_copy_is_refused_at_its_first_event_outside(
    log: Log,
) -> None:
    """The issue's back-dating: one late deposit given the evening's first time, so that
    the range of that second spans the whole evening."""
    attackkit.back_dated(log)
    since, until = _first_second(log)
    outside = next(r.position for r in log.rows() if r.recorded_at >= until)
    with pytest.raises(
        offline.Disagreement, match=f"position {outside} was recorded at .*, outside the file's"
    ):
        offline.verify(_export(log, since=since, until=until), key=VERIFIER)


def test_a_range_file_whose_header_claims_another_range_is_refused(log: Log) -> None:
    since, until = _first_second(log)
    lines = _export(log, since=since, until=until)
    header = json.loads(lines[0])
    header["scope"]["since"] = until
    lines[0] = codec.canonical(header) + b"\n"
    with pytest.raises(offline.Disagreement, match="outside the file's time range"):
        offline.verify(lines, key=VERIFIER)


def test_a_range_file_whose_header_times_are_not_times_is_refused(log: Log) -> None:
    since, until = _first_second(log)
    lines = _export(log, since=since, until=until)
    header = json.loads(lines[0])
    header["scope"]["until"] = "tomorrow"
    lines[0] = codec.canonical(header) + b"\n"
    with pytest.raises(offline.Disagreement, match=r"line 1: the header's scope\.until"):
        offline.verify(lines, key=VERIFIER)
