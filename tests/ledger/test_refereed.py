"""Every table of the database replayed through the engine's referee (ledger.audit.refereed,
what `hazard verify --deep` adds), on SQLite and PostgreSQL: a played evening, with
disputes and server dice, is what the rules derive, and an event rewritten on a copy
with the bank's own key, which every other check passes, is named where it is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.audit import refereed
from ledger.books import deep
from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import check
from tests.ledger import attackkit, exportkit, serverdicekit
from tests.ledger.tamperkit import Log, hazard_verify
from tests.signing import SIGNER, VERIFIER


@pytest.fixture
def played(engine: sa.Engine, tmp_path: Path) -> Iterator[Log]:
    """Tables t1 and t2 played side by side (exportkit), and t3 with three disputes
    resolved, one of them a corrected throw."""
    store = EventStore(engine, signer=SIGNER)
    club = Club(Book(store))
    exportkit.play(club)
    exportkit.play_disputes(club)
    store.close()
    yield Log(engine, 0, "", tmp_path)


def table_events(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM events WHERE stream LIKE 'table:%'")
            ).scalar_one()
        )


def position_of(log: Log, kind: str) -> tuple[int, str, int]:
    row = log.rows(f"type = '{kind}'")[-1]
    return row.position, row.stream, row.version


def every_other_check_passes(log: Log) -> None:
    """The attack's precondition: the log's own checks and the read models find nothing."""
    with log.engine.connect() as conn, conn.begin():
        assert check.check_log(conn, VERIFIER).findings == []
    store = EventStore(log.engine)
    try:
        assert list(deep.differences(store)) == []
    finally:
        store.close()


def test_a_played_evening_is_what_the_rules_derive_a_table_at_a_time(played: Log) -> None:
    seen: list[tuple[int, int, int]] = []
    found = refereed.replay(played.engine, progress=lambda *a: seen.append(a))
    assert found.ok and found.breach is None
    assert found.tables == 3
    assert found.events == table_events(played.engine)
    assert [done for done, _, _ in seen] == [1, 2, 3] and {t for _, t, _ in seen} == {3}
    assert seen[-1][2] == found.events
    assert found.unjudged == []
    # Read a few events at a time, the same replay.
    assert refereed.replay(played.engine, batch=4) == found


def _paid_less(data: dict[str, Any]) -> None:
    data["transfers"][0]["amount"] -= 20


def _adjusted_less(data: dict[str, Any]) -> None:
    data["transfers"][0]["amount"] -= 10


@pytest.mark.parametrize(
    ("kind", "edit", "said"),
    [
        ("BetSettled", _paid_less, "but the throw"),
        # A dispute's resolution is a command too: the correction it derives is run again.
        ("BetAdjusted", _adjusted_less, "BetAdjusted"),
    ],
    ids=["a payout", "a dispute's adjustment"],
)
def test_an_event_rewritten_with_the_bank_s_key_is_named_where_it_is(
    played: Log, kind: str, edit: Any, said: str
) -> None:
    attackkit.payload_rewritten(played, kind, edit)
    every_other_check_passes(played)
    found = refereed.replay(played.engine)
    assert found.breach is not None
    position, stream, version = position_of(played, kind)
    assert (found.breach.position, found.breach.stream, found.breach.version) == (
        position,
        stream,
        version,
    )
    table = stream.removeprefix("table:")
    assert found.breach.reason.startswith(f"at table {table} version {version}, "), found.breach
    assert said in found.breach.reason
    assert str(found.breach) == f"position {position}: {found.breach.reason}"


def test_a_server_dice_table_is_replayed_and_its_turn_in_play_named_as_not_judged(
    store: EventStore,
) -> None:
    with serverdicekit.fixed_seeds():
        serverdicekit.play(Club(Book(store)))
    found = refereed.replay(store.engine)
    assert found.ok, found.breach
    assert found.tables == 1 and found.events == table_events(store.engine)
    [unjudged] = found.unjudged
    assert unjudged.startswith("table:s1: 1 server throw(s) of the turn in play")
    assert unjudged.endswith("their dice are as the log gives them")


def _the_other_caster(data: dict[str, Any]) -> None:
    data["player"] = "bob" if data["player"] == "cat" else "cat"


def test_each_table_at_fault_is_named_the_first_in_the_log_first(played: Log) -> None:
    """t1's last payout and t2's choice of caster, which the log holds earlier though t2
    is replayed after t1: the first named is the first in the log."""
    paid = played.rows("stream = 'table:t1' AND type = 'BetSettled'")[-1].position
    chosen = played.rows("stream = 'table:t2' AND type = 'CasterChosen'")[0].position
    assert chosen < paid
    attackkit.payloads_rewritten(
        played,
        [("BetSettled", _paid_less, paid), ("CasterChosen", _the_other_caster, chosen)],
    )
    found = refereed.replay(played.engine)
    assert [(b.position, b.stream) for b in found.breaches] == [
        (chosen, "table:t2"),
        (paid, "table:t1"),
    ]
    assert found.breach == found.breaches[0]
    assert found.tables == 3  # every table replayed, each up to its first breach
    said = hazard_verify(played, "--deep")
    assert said.exit_code == 1
    assert f"rules: the first event the rules do not allow: position {chosen}: at table t2 " in (
        said.output
    )
    assert f"  1 more table(s) break them too, the first at each:\n  position {paid}: " in (
        said.output
    )
