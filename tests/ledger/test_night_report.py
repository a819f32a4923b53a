"""The night report (ledger.books.nightreport) of an evening played through the
commands, on SQLite and PostgreSQL: takings per table and player, the cage, the cash-up
as recorded, the largest exposure, the play, and the checkpoint that covers it."""

from __future__ import annotations

from ledger.books import evenings, nightreport
from ledger.store.eventstore import EventStore
from ledger.store.log.checkpoint import open_checkpoint
from tests.ledger.nightkit import closed_evening


def test_the_night_report_of_a_played_evening(store: EventStore) -> None:
    closed_evening(store)
    with store.engine.connect() as conn:
        [evening] = evenings.recorded(conn)
        night = nightreport.report(conn, evening)
    assert night["evening"] == 1 and night["open"] is False
    assert night["opened_by"] == night["closed_by"] == "setter:boss"
    assert night["takings"] == {
        "total": -100,
        "tables": [{"table": "t1", "net": -100}],
        "players": [{"player": "ann", "net": -100}],
    }
    assert night["cage"] == {"deposits": 300, "withdrawals": 0}
    assert [(line["place"], line["expected"], line["difference"]) for line in night["cash_up"]] == [
        ("t1", 4900, -10),
        ("cage", 1300, 0),
    ]
    assert night["difference"] == -10
    assert night["exposure"]["largest"] == 200
    assert night["exposure"]["recorded_at"] is not None
    totals = night["play"]["totals"]
    assert (totals["rounds"], totals["throws"], totals["throws_voided"]) == (2, 2, 1)
    assert (totals["disputes_opened"], totals["disputes_resolved"]) == (1, 1)
    assert totals["adjustments"] >= 1 and totals["bets_voided"] == 0
    assert night["play"]["resolutions"] == {"upheld": 0, "voided": 1, "corrected": 0}


def test_the_checkpoint_printed_covers_the_evening_and_is_signed(store: EventStore) -> None:
    closed_evening(store)
    with store.engine.connect() as conn:
        [evening] = evenings.recorded(conn)
        night = nightreport.report(conn, evening)
    checkpoint = night["checkpoint"]
    assert checkpoint is not None and checkpoint["size"] >= night["through"]
    assert store.signer is not None
    opened = open_checkpoint(checkpoint["note"], [store.signer.verifier])
    assert opened.size == checkpoint["size"]
