"""The evenings under `hazard verify --deep` (ledger.books.deep, ledger.books.cashup) and
the export's offline check (ledger.exports.offline), on SQLite and PostgreSQL: a clean
evening has no difference and its exports verify; a cash-up edited in the database by
an insider, to hide a shortfall, is named by evening, place and figure, and so is one
forged and signed with the bank's own key, in the export's file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.books import deep, evenings, nightreport
from ledger.books.book import Book
from ledger.commands.evenings import open_evening
from ledger.exports import offline, restore
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import merkle, tree
from ledger.store.schema import events
from ledger.store.vocabulary import EVENINGS
from tests.ledger.exportkit import export
from tests.ledger.nightkit import SETTER, closed_evening
from tests.ledger.tamperkit import Log, rehash_stream, reseal, set_row, unguarded
from tests.signing import SIGNER, VERIFIER


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


# -- the export's offline check -----------------------------------------------------------


def _lines(engine: sa.Engine, **scope: object) -> list[bytes]:
    return export(engine, scope_of(**scope)).splitlines(keepends=True)  # type: ignore[arg-type]


def test_every_export_of_an_evening_verifies(engine: sa.Engine) -> None:
    store = EventStore(engine, signer=SIGNER)
    closed_evening(store)
    store.close()
    whole = offline.verify(_lines(engine, everything=True), VERIFIER)
    assert whole.cash_ups == 2  # t1's line and the cage's
    assert (
        "evenings: 2 cash-up lines, each expected and difference the file's own events give"
        in whole.lines()
    )
    for scope in ({"table": "t1"}, {"player": "ann"}):
        offline.verify(_lines(engine, **scope), VERIFIER)


def test_a_cash_up_the_bank_forged_and_signed_is_named_in_the_file(
    engine: sa.Engine, tmp_path: Path
) -> None:
    """An insider holding the bank's key rewrites t1's line to hide 10 short, and makes
    everything after it again (its chain, the seals, the tree, every checkpoint signed):
    every hash in the export holds, and the check still finds the line out, at the
    evening's closing, because the events in the file give another figure."""
    store = EventStore(engine, signer=SIGNER)
    closed_evening(store)
    store.close()
    position, payload = _cash_line(engine, "t1")
    log = Log(engine, 0, "", tmp_path)
    with unguarded(log) as conn:
        text = json.dumps({**payload, "expected": 4890, "difference": 0}, sort_keys=True,
                          separators=(",", ":"))  # fmt: skip
        set_row(conn, position, payload=text)
        version = conn.execute(
            sa.select(events.c.version).where(events.c.position == position)
        ).scalar_one()
        rehash_stream(conn, EVENINGS, version)
        reseal(conn)
        issued = conn.execute(sa.text("SELECT size, issued_at FROM checkpoints ORDER BY size"))
        issued = issued.all()
        conn.execute(sa.text("DELETE FROM checkpoints"))
        conn.execute(sa.text("DELETE FROM tree_hashes"))
        tree.build(conn)
        for size, at in issued:
            tree.issue(conn, SIGNER, size, merkle.tree_hash(size, tree.reader(conn)), at)
    lines = _lines(engine, everything=True)
    with pytest.raises(offline.Disagreement) as caught:
        offline.verify(lines, VERIFIER)
    closing = json.loads(lines[caught.value.line - 1])
    assert closing["type"] == "EveningClosed"
    assert str(caught.value).endswith(
        "evening 1, table t1: the cash-up records expected 4890, the events give 4900"
    )


def test_an_evening_restored_from_its_export_reads_the_same(
    engine: sa.Engine, target: sa.Engine
) -> None:
    """`hazard import` of a whole log with an evening: the night report on the copy is
    the original's, and the copy takes the next evening."""
    store = EventStore(engine, signer=SIGNER)
    closed_evening(store)
    store.close()
    restore.restore(target, _lines(engine, everything=True), key=VERIFIER)
    with engine.connect() as conn:
        [before] = evenings.recorded(conn)
        night = nightreport.report(conn, before)
    with target.connect() as conn:
        [after] = evenings.recorded(conn)
        assert nightreport.report(conn, after) == night
    copy = EventStore(target, signer=SIGNER)
    assert open_evening(Club(Book(copy)), SETTER, {}, 0)["evening"] == 2
    copy.close()
