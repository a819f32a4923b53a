"""`hazard limits`: the setter sets a player's limits and breaks at their request from
the command line, on both databases; a refusal writes nothing."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import events
from ledger.store.vocabulary import Deposited
from tests.signing import SIGNER


@pytest.fixture
def club_url(engine: sa.Engine, database_url: str) -> Iterator[str]:
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    club.create_player("ann", "setter:bank")
    club.account_command("ann", Deposited, 1000, "setter:bank")
    store.close()
    yield database_url


def hazard(url: str, line: str) -> Result:
    return CliRunner().invoke(main, ["limits", *shlex.split(line), "--database-url", url])


def count(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())


def test_the_setter_sets_a_limit_and_a_break_and_reads_them(
    club_url: str, engine: sa.Engine
) -> None:
    done = hazard(club_url, "set ann deposit_24h 500")
    assert done.exit_code == 0, done.output
    assert "ann's limit on deposit_24h is 500 from" in done.output
    raised = hazard(club_url, "set ann deposit_24h none")
    assert raised.exit_code == 0, raised.output
    shown = hazard(club_url, "show ann")
    assert "deposits over 24 hours: 500 (so far 1000); none from" in shown.output
    taken = hazard(club_url, "break ann --time-out 48")
    assert taken.exit_code == 0 and "ann is on a time-out until" in taken.output
    assert "break: a time-out until" in hazard(club_url, "show ann").output


def test_a_refusal_says_why_and_writes_nothing(club_url: str, engine: sa.Engine) -> None:
    before = count(engine)
    for line, said in [
        ("break ann --time-out 12", "a time-out is 24 to 1008 hours"),
        ("break ann", "give one of --time-out HOURS or --self-exclusion MONTHS"),
        ("set ann stake -5", "No such option"),
        ("set ann stake 1" + "0" * 5000, "not a whole number of minor units"),
        ("set ann bets 5", "'bets' is not one of"),
        ("set nobody stake 5", "there is no player 'nobody'"),
    ]:
        result = hazard(club_url, line)
        assert result.exit_code != 0, line
        assert said in result.output, (line, result.output)
    assert count(engine) == before


def _insider_deposit(engine: sa.Engine, amount: int) -> int:
    """A deposit written past the club's check, as an insider with the store would:
    straight into a unit of work, signed and sealed like any write. Its position."""
    from ledger.books.accounts import account_stream
    from ledger.unit_of_work import UnitOfWork

    store = EventStore(engine, signer=SIGNER)
    stream = account_stream("player:ann")
    with UnitOfWork(store) as uow:
        version = store.stream_version(uow.conn, stream)
        event = Deposited(version=version + 1, account="player:ann", amount=amount)
        [row] = uow.record(stream, version, [event], "setter:bank")
        uow.commit()
    store.close()
    return row.position


def test_verify_deep_finds_a_deposit_written_past_a_limit(
    club_url: str, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", club_url)
    assert hazard(club_url, "set ann deposit_7d 1500").exit_code == 0
    clean = CliRunner().invoke(main, ["verify", "--deep"])
    assert clean.exit_code == 0, clean.output
    assert "limits: every deposit and bet was within the player's limits" in clean.output
    position = _insider_deposit(engine, 600)
    found = CliRunner().invoke(main, ["verify", "--deep"])
    assert found.exit_code == 1, found.output
    assert (
        f"  position {position}: player:ann: a deposit of 600 past the limit on deposits "
        "over 7 days of 1500 (1000 paid in before it)"
    ) in found.output
