"""The deep check (ledger.books.deep), on SQLite and PostgreSQL: a history played through
the club's commands has read models that are exactly what its events make, and each
read model edited behind the ledger's back is found and named at the row edited."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books import deep
from ledger.books.book import Book
from ledger.service import Club
from ledger.store import snapshots
from ledger.store.eventstore import EventStore, decode_row
from ledger.store.schema import (
    accounts,
    dice_counts,
    postings,
    rounds,
    settlement_parties,
    settlements,
)
from tests.ledger.deepkit import play
from tests.ledger.exportkit import play_disputes
from tests.ledger.tamperkit import Log, set_row, unguarded
from tests.signing import SIGNER


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, signer=SIGNER)
    play(Club(Book(store)))
    yield store
    store.close()


def found(store: EventStore) -> list[deep.Difference]:
    return list(deep.differences(store))


def edit(engine: sa.Engine, statement: Any) -> int:
    """Run `statement` as a database administrator would, past the ledger: the read
    models have no append-only triggers. Returns how many rows it changed."""
    with engine.begin() as conn:
        return int(conn.execute(statement).rowcount)


def a_posting(engine: sa.Engine, account: str) -> Any:
    """The first posting to `account` that moves money from a bet's escrow."""
    with engine.connect() as conn:
        return conn.execute(
            sa.select(postings)
            .where(postings.c.account == account, postings.c.counterparty.like("escrow:%"))
            .order_by(postings.c.position, postings.c.id)
            .limit(1)
        ).one()


def test_a_clean_history_has_no_difference_and_reports_progress(played: EventStore) -> None:
    seen: list[tuple[str, int, int | None]] = []
    assert list(deep.differences(played, progress=lambda *a: seen.append(a))) == []
    with played.engine.connect() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(sa.table("events"))).scalar()
    assert ("events", count, count) in seen
    steps = [step for step, _done, _total in seen]
    assert steps.index("events") < steps.index("postings")
    for table in ("accounts", "postings", "settlements", "settlement_parties", "rounds"):
        assert table in steps


def test_a_balance_edited_is_named_by_account(played: EventStore) -> None:
    assert edit(
        played.engine,
        accounts.update().where(accounts.c.account == "player:bob").values(balance=999_999),
    )
    [difference] = found(played)
    assert (difference.table, difference.row, difference.column) == (
        "accounts",
        "player:bob",
        "balance",
    )
    assert difference.stored == 999_999
    assert difference.expected != 999_999
    assert str(difference).startswith("accounts: player:bob: balance: stored 999999, the events")


def test_a_posting_multiplied_by_ten_is_named_by_position_and_account(
    played: EventStore,
) -> None:
    posting = a_posting(played.engine, "player:ann")
    edit(
        played.engine,
        postings.update().where(postings.c.id == posting.id).values(amount=posting.amount * 10),
    )
    [difference] = found(played)
    assert difference.table == "postings"
    assert difference.key[:3] == (posting.position, "player:ann", posting.counterparty)
    assert (difference.stored, difference.expected) == (posting.amount * 10, posting.amount)
    assert str(difference) == (
        f"postings: position {posting.position}, player:ann (with {posting.counterparty}): "
        f"amount: stored {posting.amount * 10}, the events give {posting.amount}"
    )


def test_a_running_balance_edited_is_named_by_position_and_account(played: EventStore) -> None:
    posting = a_posting(played.engine, "player:bob")
    edit(
        played.engine,
        postings.update().where(postings.c.id == posting.id).values(balance=posting.balance + 1),
    )
    [difference] = found(played)
    assert (difference.table, difference.column) == ("postings", "balance")
    assert difference.key[:3] == (posting.position, "player:bob", posting.counterparty)
    assert (difference.stored, difference.expected) == (posting.balance + 1, posting.balance)


def test_a_posting_deleted_is_named_as_missing(played: EventStore) -> None:
    posting = a_posting(played.engine, "player:bob")
    assert edit(played.engine, postings.delete().where(postings.c.id == posting.id)) == 1
    [difference] = found(played)
    assert difference.table == "postings"
    assert difference.key[:3] == (posting.position, "player:bob", posting.counterparty)
    assert difference.stored is None
    assert difference.expected == {"amount": posting.amount, "balance": posting.balance}
    assert "not stored, the events give amount" in str(difference)


def test_a_posting_added_is_named_as_extra(played: EventStore) -> None:
    posting = a_posting(played.engine, "player:cat")
    edit(
        played.engine,
        postings.insert().values(
            position=posting.position,
            account="player:cat",
            amount=5,
            counterparty="setter",
            balance=posting.balance + 5,
        ),
    )
    [difference] = found(played)
    assert difference.table == "postings"
    assert difference.key[:3] == (posting.position, "player:cat", "setter")
    assert (difference.stored, difference.expected) == (
        {"amount": 5, "balance": posting.balance + 5},
        None,
    )
    assert "the events give no such row" in str(difference)


def test_a_settlement_s_transfers_changed_are_named_by_position(played: EventStore) -> None:
    with played.engine.connect() as conn:
        position, transfers = conn.execute(
            sa.select(settlements.c.position, settlements.c.transfers)
            .where(settlements.c.outcome == "settled")
            .order_by(settlements.c.position.desc())
            .limit(1)
        ).one()
    forged = transfers.replace('"player:cat"', '"player:bob"')
    assert forged != transfers
    edit(
        played.engine,
        settlements.update().where(settlements.c.position == position).values(transfers=forged),
    )
    [difference] = found(played)
    assert (difference.table, difference.key, difference.column) == (
        "settlements",
        (position,),
        "transfers",
    )
    assert (difference.stored, difference.expected) == (forged, transfers)
    assert str(difference).startswith(f"settlements: position {position}: transfers: stored")


def test_a_round_s_result_changed_is_named_by_table_and_round(played: EventStore) -> None:
    edit(
        played.engine,
        rounds.update()
        .where(rounds.c.stream == "table:t1", rounds.c.round == 2)
        .values(result="chance"),
    )
    [difference] = found(played)
    assert (difference.table, difference.key, difference.column) == (
        "rounds",
        ("table:t1", 2),
        "result",
    )
    assert (difference.stored, difference.expected) == ("chance", "out")
    assert str(difference) == (
        'rounds: table:t1 round 2: result: stored "chance", the events give "out"'
    )


def test_a_settlement_party_removed_is_named(played: EventStore) -> None:
    with played.engine.connect() as conn:
        position = conn.execute(
            sa.select(sa.func.min(settlement_parties.c.position)).where(
                settlement_parties.c.party == "player:bob"
            )
        ).scalar_one()
    sp = settlement_parties
    assert edit(
        played.engine, sp.delete().where(sp.c.party == "player:bob", sp.c.position == position)
    )
    [difference] = found(played)
    assert (difference.table, difference.key) == ("settlement_parties", ("player:bob", position))
    assert difference.stored is None
    assert str(difference).startswith(f"settlement_parties: position {position}, player:bob: ")


def test_every_table_edited_at_once_gives_its_first_row_and_a_count(played: EventStore) -> None:
    edit(played.engine, accounts.update().values(credit_limit=accounts.c.credit_limit + 1))
    edit(played.engine, rounds.delete().where(rounds.c.round >= 3))
    differences = {d.table: d for d in found(played)}
    assert set(differences) == {"accounts", "rounds"}
    with played.engine.connect() as conn:
        names = list(conn.execute(sa.select(accounts.c.account)).scalars())
    first, count = min(names), len(names)
    assert (differences["accounts"].row, differences["accounts"].rows) == (first, count)
    assert differences["accounts"].column == "credit_limit"
    assert (differences["rounds"].key, differences["rounds"].rows) == (("table:t1", 3), 2)


def test_a_forged_snapshot_is_named_by_table_and_version(played: EventStore) -> None:
    history = played.load("table:t1")
    snapshots.save(played, "table:t1", hz.fold(history[:20]))
    assert found(played) == []
    at_25 = hz.fold(history[:25])
    snapshots.save(played, "table:t1", dataclasses.replace(at_25, caster="bob"))
    [difference] = found(played)
    assert (difference.table, difference.key, difference.column) == (
        "snapshots",
        ("table:t1", 25),
        "state.caster",
    )
    assert (difference.stored, difference.expected) == ("bob", at_25.caster)


def test_the_replay_reads_every_event_as_the_store_reads_and_decodes_it(
    played: EventStore,
) -> None:
    """The check's own read of the log (each row's event decoded once, by the store's
    fast decode) gives the rows `read_all` gives, and the events `decode_row` makes of
    them, across batches of any size."""
    stored = played.read_all(0, limit=100_000)
    with played.engine.connect() as conn:
        rows = [row for batch in deep.decoded(conn, batch=7) for row in batch]
    assert [tuple(row) for row in rows] == [tuple(row) for row in stored]
    assert [row.event() for row in rows] == [decode_row(row) for row in stored]


def test_an_event_that_cannot_be_read_ends_the_replay_at_its_position(
    played: EventStore, tmp_path: Any
) -> None:
    with played.engine.connect() as conn:
        bet = conn.execute(
            sa.text("SELECT position FROM events WHERE type = 'StakeLaid' ORDER BY position")
        ).first()
    assert bet is not None
    log = Log(played.engine, 0, "", tmp_path)
    with unguarded(log) as conn:
        set_row(conn, bet.position, payload='{"bet_id": "b9", "stake": "lots"}')
    [difference] = found(played)
    assert (difference.table, difference.key, difference.row) == (
        "events",
        (bet.position,),
        f"position {bet.position}",
    )
    assert str(difference.stored).startswith(f"event at position {bet.position}: ")


def _spied(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """What the fast comparison (`deep._same`) answered for each read model."""
    answers: dict[str, bool] = {}
    same = deep._same

    def spy(model: Any, source: sa.Connection, replayed: sa.Connection) -> bool:
        answers[model.table.name] = same(model, source, replayed)
        return answers[model.table.name]

    monkeypatch.setattr(deep, "_same", spy)
    return answers


def test_the_fast_comparison_passes_every_read_model_of_a_clean_history(
    played: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = _spied(monkeypatch)
    assert found(played) == []
    assert answers == {model.table.name: True for model in deep.MODELS}


@pytest.mark.parametrize(
    "table, statement",
    [
        ("accounts", accounts.update().where(accounts.c.account == "player:ann").values(balance=1)),
        ("postings", postings.update().where(postings.c.id == 3).values(balance=-1)),
        ("postings", postings.delete().where(postings.c.id == 5)),
        ("settlements", settlements.update().values(recorded_at="2000-01-01T00:00:00.000000Z")),
        ("settlement_parties", settlement_parties.delete()),
        ("rounds", rounds.update().where(rounds.c.round == 2).values(result="caster-won")),
    ],
)
def test_the_fast_comparison_leaves_each_edited_read_model_to_the_row_by_row_one(
    played: EventStore, monkeypatch: pytest.MonkeyPatch, table: str, statement: Any
) -> None:
    """An edited read model is never passed by the fast path: it goes to the row by
    row comparison, which names it; every other read model is passed."""
    assert edit(played.engine, statement)
    answers = _spied(monkeypatch)
    differences = found(played)
    assert [d.table for d in differences] == [table]
    assert answers == {model.table.name: model.table.name != table for model in deep.MODELS}


def _loads(played: EventStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The streams the check loads from the store (each a read and a fold of its own)."""
    loaded: list[str] = []
    load = played.load

    def spy(stream: str, *args: Any, **kwargs: Any) -> list[hz.Event]:
        loaded.append(stream)
        return load(stream, *args, **kwargs)

    monkeypatch.setattr(played, "load", spy)
    return loaded


def test_a_snapshot_the_replay_reaches_is_held_to_its_own_fold(
    played: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each snapshot is held to the state the read models' replay folded at its version,
    not to the table loaded and folded again: the same differences, named alike."""
    history = played.load("table:t1")
    at_25 = hz.fold(history[:25])
    snapshots.save(played, "table:t1", hz.fold(history[:20]))
    snapshots.save(played, "table:t1", dataclasses.replace(at_25, caster="bob"))
    snapshots.save(played, "table:t1", dataclasses.replace(hz.fold(history[:30]), main=12))
    loaded = _loads(played, monkeypatch)
    [difference] = found(played)
    assert (difference.key, difference.column, difference.rows) == (
        ("table:t1", 25),
        "state.caster",
        2,
    )
    assert loaded == []


def test_a_snapshot_past_its_table_s_last_event_is_named(
    played: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = played.load("table:t1")
    past = dataclasses.replace(hz.fold(history), version=len(history) + 3)
    snapshots.save(played, "table:t1", past)
    loaded = _loads(played, monkeypatch)
    [difference] = found(played)
    assert (difference.table, difference.key, difference.column) == (
        "snapshots",
        ("table:t1", len(history) + 3),
        None,
    )
    assert difference.stored == {"version": len(history) + 3}
    assert loaded == ["table:t1"]  # the replay never reached it: loaded to be held


def test_a_throw_corrected_batches_after_it_is_counted_as_the_dice_showed(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dispute's correction moves its throw's count from the dice recorded to the dice
    shown, reading the recorded dice back from the scratch database when the throw was
    replayed in an earlier batch: the throws the scratch database keeps for it are
    enough, on a log replayed two events a batch."""
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)  # t3: its 4+4 corrected to 4+5
    monkeypatch.setattr(deep, "BATCH", 2)
    assert found(store) == []
    assert edit(engine, dice_counts.update().where(dice_counts.c.die1 == 4).values(throws=9))
    assert {d.table for d in found(store)} == {"dice_counts"}
    store.close()
