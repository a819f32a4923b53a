"""The evenings under `hazard verify --deep` (ledger.books.deep, ledger.books.cashup), on
SQLite and PostgreSQL: a clean evening has no difference; a cash-up edited in the
database by an insider, to hide a shortfall, is named by evening, place and figure."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa

from ledger.books import deep
from ledger.store.eventstore import EventStore
from ledger.store.schema import events
from tests.ledger.nightkit import closed_evening
from tests.ledger.tamperkit import Log, set_row, unguarded
from tests.signing import SIGNER


def _cash_line(engine: sa.Engine, place: str | None) -> tuple[int, dict[str, object]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(events.c.position, events.c.payload).where(events.c.type == "CashCounted")
        ).all()
    for position, payload in rows:
        found = json.loads(payload)
        if found["table"] == place:
            return int(position), found
    raise AssertionError(place)


def _edited(engine: sa.Engine, tmp_path: Path, place: str | None, **figures: int) -> None:
    """An insider rewrites a cash-up line's figures in the events table."""
    position, payload = _cash_line(engine, place)
    with unguarded(Log(engine, 0, "", tmp_path)) as conn:
        text = json.dumps({**payload, **figures}, sort_keys=True, separators=(",", ":"))
        set_row(conn, position, payload=text)


def test_a_clean_evening_has_no_difference(engine: sa.Engine) -> None:
    store = EventStore(engine, signer=SIGNER)
    closed_evening(store)
    assert list(deep.differences(store)) == []
    store.close()


def test_a_shortfall_hidden_in_the_cash_up_is_named(engine: sa.Engine, tmp_path: Path) -> None:
    store = EventStore(engine, signer=SIGNER)
    closed_evening(store)  # t1: counted 4890, expected 4900, 10 short
    _edited(engine, tmp_path, "t1", expected=4890, difference=0)
    [found] = list(deep.differences(store))
    assert (found.table, found.row, found.column) == ("evenings", "evening 1, table t1", "expected")
    assert (found.stored, found.expected) == (4890, 4900)
    assert (
        str(found) == "evenings: evening 1, table t1: expected: stored 4890, the events give 4900"
    )
    store.close()


def test_a_difference_that_is_not_counted_less_expected_is_named(
    engine: sa.Engine, tmp_path: Path
) -> None:
    store = EventStore(engine, signer=SIGNER)
    closed_evening(store)
    _edited(engine, tmp_path, None, difference=50)
    [found] = list(deep.differences(store))
    assert (found.row, found.column, found.stored, found.expected) == (
        "evening 1, the cage",
        "difference",
        50,
        0,
    )
    store.close()
