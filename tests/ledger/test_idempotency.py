"""Idempotency keys on SQLite and PostgreSQL: repeats write nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.store.eventstore import EventStore
from ledger.store.idempotency import IdempotencyConflict
from ledger.unit_of_work import UnitOfWork

STREAM = "table:1"


def run_once(
    store: EventStore,
    key: str,
    request: dict[str, object],
    handler: Callable[[sa.Connection], dict[str, object]],
) -> dict[str, object]:
    """`handler` in a unit of work under `key`, as the club's commands run."""
    uow = UnitOfWork(store, key, request)
    if (earlier := uow.earlier()) is not None:
        return earlier
    with uow:
        uow.commit(handler(uow.conn))
    return uow.answer


def _open(store: EventStore, conn: sa.Connection) -> dict[str, object]:
    events = hz.open_table(hz.BUILTIN["english"])
    rows = store.append(conn, STREAM, 0, events, actor="setter", idempotency_key="k1")
    return {"version": rows[-1].version, "positions": [r.position for r in rows]}


def test_a_repeat_returns_the_first_response_and_writes_nothing(store: EventStore) -> None:
    request = {"command": "open", "ruleset": "english"}
    first = run_once(store, "k1", request, lambda conn: _open(store, conn))
    again = run_once(store, "k1", request, lambda conn: _open(store, conn))
    assert again == first == {"version": 1, "positions": [1]}
    assert len(store.read_all()) == 1


def test_the_same_key_with_another_body_is_refused(store: EventStore) -> None:
    run_once(store, "k1", {"ruleset": "english"}, lambda conn: _open(store, conn))
    with pytest.raises(IdempotencyConflict, match="k1"):
        run_once(store, "k1", {"ruleset": "french"}, lambda conn: _open(store, conn))
    assert len(store.read_all()) == 1


def test_a_failed_command_stores_no_key(store: EventStore) -> None:
    def fails(conn: sa.Connection) -> dict[str, object]:
        _open(store, conn)
        raise hz.RuleBroken(hz.Rule.WRONG_PHASE, "refused after appending")

    with pytest.raises(hz.RuleBroken):
        run_once(store, "k1", {"x": 1}, fails)
    assert store.read_all() == []  # the events rolled back with it
    assert run_once(store, "k1", {"x": 1}, lambda conn: _open(store, conn))["version"] == 1


def test_racing_repeats_commit_once(store: EventStore) -> None:
    request = {"command": "open"}
    results: list[dict[str, object]] = []
    barrier = threading.Barrier(4)

    def attempt() -> None:
        barrier.wait()
        results.append(run_once(store, "race", request, lambda conn: _open(store, conn)))

    threads = [threading.Thread(target=attempt) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.read_all()) == 1
    assert results == [{"version": 1, "positions": [1]}] * 4
