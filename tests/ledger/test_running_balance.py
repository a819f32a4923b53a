"""Each posting's running balance (postings.balance), on SQLite and PostgreSQL: written
by the write path as the sum of its account's postings up to it, the same by a rebuild,
backfilled by migration 0007 for postings stored before it, and what a balance as of
any position (ledger.books.asof.balance_at) reads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic import command

from ledger.books import asof, deep, projections
from ledger.books.book import Book
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.schema import accounts, postings
from ledger.store.vocabulary import CreditLimitSet, Deposited, Withdrawn
from tests.ledger.deepkit import play
from tests.ledger.plankit import capture, full_scan_or_sort, plan
from tests.signing import SIGNER


def mixed(club: Club) -> None:
    """test_deep's four rounds at t1, then a withdrawal, credit granted and drawn on."""
    play(club)
    club.account_command("ann", Withdrawn, 700, "setter")
    club.account_command("cat", CreditLimitSet, 2000, "setter")
    club.account_command("cat", Withdrawn, club_balance(club, "player:cat") + 1500, "setter")
    club.account_command("bob", Deposited, 250, "setter")


def club_balance(club: Club, account: str) -> int:
    with club.book.store.engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(accounts.c.balance).where(accounts.c.account == account)
            ).scalar_one()
        )


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, signer=SIGNER)
    mixed(Club(Book(store)))
    yield store
    store.close()


def stored(engine: sa.Engine) -> list[tuple[int, int, str, int, str, int]]:
    """Every posting, in ledger order: (id, position, account, amount, counterparty,
    balance)."""
    p = postings.c
    with engine.connect() as conn:
        return [
            tuple(row)  # type: ignore[misc]
            for row in conn.execute(
                sa.select(
                    p.id, p.position, p.account, p.amount, p.counterparty, p.balance
                ).order_by(p.position, p.id)
            )
        ]


def test_each_posting_holds_the_sum_of_its_account_s_postings_up_to_it(
    played: EventStore,
) -> None:
    rows = stored(played.engine)
    running: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    for _id, _position, account, amount, _counterparty, balance in rows:
        running[account] += amount
        assert balance == running[account], (account, _position)
        seen.add(account)
    assert {"player:ann", "player:bob", "player:cat", "setter", "cash"} <= seen
    assert any(r[2].startswith("escrow:") for r in rows)
    assert running["player:cat"] < 0  # credit drawn on: running balances go below zero
    with played.engine.connect() as conn:
        now = {r.account: r.balance for r in conn.execute(sa.select(accounts))}
    assert {a: now[a] for a in running} == dict(running)


def test_a_balance_as_of_every_position_is_the_sum_of_the_postings_up_to_it(
    played: EventStore,
) -> None:
    rows = stored(played.engine)
    last = rows[-1][1]
    with played.engine.connect() as conn:
        for account in sorted({r[2] for r in rows}):
            for position in range(0, last + 2):
                expected = asof.balance_by_sum_before(conn, account, position)
                assert asof.balance_at(conn, account, position) == expected, (account, position)
                assert asof.balance_by_minus_after(conn, account, position) == expected
        assert asof.balance_at(conn, "player:nobody", last) == 0


def test_a_balance_as_of_a_position_is_one_probe_of_the_account_s_index(
    played: EventStore,
) -> None:
    statements = capture(played.engine)
    with played.engine.connect() as conn:
        asof.balance_at(conn, "player:ann", 20)
        [(statement, params)] = statements
        found = plan(conn, statement, params)
    assert "ix_postings_account_position" in found, found
    assert not full_scan_or_sort(found) and "SCAN postings" not in found, found


def test_a_rebuild_writes_the_same_running_balances_and_the_deep_check_agrees(
    played: EventStore,
) -> None:
    before = [r[1:] for r in stored(played.engine)]
    assert list(deep.differences(played)) == []
    projections.rebuild(played, batch=7)  # batches that split rounds and commands
    assert [r[1:] for r in stored(played.engine)] == before
    assert list(deep.differences(played)) == []


def test_migration_0007_backfills_the_running_balance_of_postings_stored_before_it(
    played: EventStore,
) -> None:
    engine = played.engine
    before = stored(engine)
    with db.serialised(engine, db.UPGRADE_LOCK) as conn:
        command.downgrade(db._alembic_config(conn), "0006")
    with engine.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("postings")}
    assert "balance" not in columns  # as a database from before 0007 holds them
    db.upgrade(engine)
    assert stored(engine) == before
    with engine.connect() as conn:
        [balance] = [c for c in sa.inspect(conn).get_columns("postings") if c["name"] == "balance"]
    assert balance["nullable"] is False
    assert list(deep.differences(played)) == []
