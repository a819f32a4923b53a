"""`hazard db upgrade` and `hazard verify`, against the database in DATABASE_URL."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

import engine as hz
from ledger import db
from ledger.cli import main
from ledger.store import EventStore


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    monkeypatch.setenv("DATABASE_URL", value)
    return value


def test_the_embedded_default_upgrades_itself(url: str) -> None:
    result = CliRunner().invoke(main, ["verify"])
    assert result.exit_code == 0, result.output
    engine = db.make_engine(url)
    current, head = db.schema_status(engine)
    assert current == head
    engine.dispose()


def test_upgrade_then_verify_a_good_and_a_tampered_chain(url: str) -> None:
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    engine = db.make_engine(url)
    assert f"database schema at {db.schema_status(engine)[1]}" in result.output
    store = EventStore(engine)
    events = hz.open_table(hz.BUILTIN["english"])
    with store.transaction() as conn:
        store.append(conn, "table:1", 0, events, actor="setter")
        store.append(conn, "table:1", 1, hz.seat(hz.fold(events), "ann"), actor="setter")
    ok = CliRunner().invoke(main, ["verify"])
    assert ok.exit_code == 0
    assert "every hash chain verifies" in ok.output
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER events_refuse_update")
        conn.execute(sa.text("UPDATE events SET actor = 'eve' WHERE position = 2"))
    bad = CliRunner().invoke(main, ["verify"])
    assert bad.exit_code == 1
    assert "position 2 (table:1 v2)" in bad.output
    engine.dispose()


def test_projections_rebuild_reports_the_events_it_read(url: str) -> None:
    from ledger.book import Book

    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    engine = db.make_engine(url)
    book = Book(EventStore(engine))
    book.deposit("player:ann", 700, actor="setter")
    book.withdraw("player:ann", 200, actor="setter")
    with engine.begin() as conn:  # a read model gone wrong: rebuild must fix it
        conn.execute(sa.text("UPDATE accounts SET balance = 1"))
    result = CliRunner().invoke(main, ["projections", "rebuild"])
    assert result.exit_code == 0, result.output
    assert "from 2 events" in result.output
    assert book.balances() == {"player:ann": 500, "cash": -500}
    engine.dispose()
