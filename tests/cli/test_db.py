"""`hazard db upgrade`, `hazard projections rebuild` and `hazard verify` against the
database in DATABASE_URL, and what every command says of a database it cannot use
(not there, busy, cut short)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

import engine as hz
from ledger.cli import main
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.unit_of_work import UnitOfWork
from tests.signing import SIGNER


def test_the_embedded_default_upgrades_itself(url: str, tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "cli.sqlite3").close()  # there, but never upgraded
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
    store = EventStore(engine, signer=SIGNER)
    events = hz.open_table(hz.BUILTIN["english"])
    # Through a unit of work, as every write goes: it adds the events to the tree and
    # signs a checkpoint, which verify now checks too.
    with UnitOfWork(store) as uow:
        uow.record("table:1", 0, events, "setter")
        uow.record("table:1", 1, hz.seat(hz.fold(events), "ann"), "setter")
        uow.commit({})
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
    from ledger.books.book import Book
    from ledger.service import Club
    from ledger.store.vocabulary import Deposited

    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    engine = db.make_engine(url)
    book = Book(EventStore(engine, signer=SIGNER))
    club = Club(book)
    club.create_player("ann", "setter")
    club.account_command("ann", Deposited, 500, "setter")
    with engine.begin() as conn:  # a read model gone wrong: rebuild must fix it
        conn.execute(sa.text("UPDATE accounts SET balance = 1"))
    result = CliRunner().invoke(main, ["projections", "rebuild"])
    assert result.exit_code == 0, result.output
    assert f"from {2 * 2} events" in result.output  # two writes, each an event and its seal
    assert book.balances() == {"player:ann": 500, "cash": -500}
    engine.dispose()


COMMANDS_ON_A_DATABASE = [
    ["verify"],
    ["projections", "rebuild"],
    ["token", "list"],
    ["token", "create", "--role", "setter"],
    ["token", "revoke", "3f9c0a12b4d5e6f7"],
]


@pytest.mark.parametrize("args", COMMANDS_ON_A_DATABASE, ids=" ".join)
def test_a_command_refuses_a_database_that_is_not_there(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in the wrong directory, a command says where it looked; it does not make an
    empty hazard.sqlite3 there and report on that."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert f"no database at {tmp_path / 'hazard.sqlite3'}" in result.output
    assert "hazard db upgrade" in result.output
    assert list(tmp_path.iterdir()) == []


def test_database_url_option_is_checked_too(tmp_path: Path) -> None:
    missing = tmp_path / "elsewhere" / "h.sqlite3"
    result = CliRunner().invoke(main, ["token", "list", "--database-url", f"sqlite:///{missing}"])
    assert result.exit_code != 0
    assert f"no database at {missing}" in result.output
    assert not missing.parent.exists()


def test_db_upgrade_makes_the_database(url: str, tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    assert (tmp_path / "cli.sqlite3").exists()
    assert CliRunner().invoke(main, ["token", "list"]).exit_code == 0


@pytest.mark.parametrize(
    "args", [["token", "create", "--role", "auditor"], ["db", "upgrade"], ["verify"]]
)
def test_a_command_behind_a_long_writer_says_the_database_is_busy(
    url: str, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """Behind another writer (a rebuild, a server's append), a command that waits out
    the lock timeout says so and exits 1, rather than printing a traceback."""
    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    monkeypatch.setenv("HAZARD_LOCK_TIMEOUT", "0.2")
    holder = db.make_engine(url)
    with holder.connect().execution_options(writes=True) as conn, conn.begin():
        result = CliRunner().invoke(main, args)
    holder.dispose()
    assert result.exit_code == 1, result.output
    assert "the database is busy" in result.output
    assert "Traceback" not in result.output and result.exception is not None
    assert isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    "args", [["verify"], ["token", "list"], ["projections", "rebuild"], ["db", "upgrade"]]
)
def test_a_database_file_cut_short_is_a_clear_error(
    url: str, tmp_path: Path, args: list[str]
) -> None:
    """A file that is not a whole SQLite database (copied half-way, a disk that filled)
    is named as unreadable, not met with a traceback, and is left as it was."""
    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    path = tmp_path / "cli.sqlite3"
    with sqlite3.connect(path) as conn:  # everything into the file, none in the WAL
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    whole = path.read_bytes()
    assert len(whole) > 8192
    path.write_bytes(whole[: len(whole) // 2])
    cut = path.read_bytes()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "cannot open the database" in result.output
    assert "malformed" in result.output
    assert isinstance(result.exception, SystemExit)
    assert path.read_bytes() == cut
