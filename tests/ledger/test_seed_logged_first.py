"""A last look at server dice (issue 25), on SQLite and PostgreSQL: the bank can read the
turn's server seed, so it knows the dice the moment a client seed arrives. Were the
seed and the dice written in one write, it could fail that write once it had seen them,
the caster would try again with a fresh seed at the same nonce, and the refused seed
would leave no trace. So the seed is logged first, in a write of its own, and the
throw is drawn from it: a draw whose write fails is drawn again from the logged seed,
which stays in the log, and another seed for that throw is refused and writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from engine import events as ev
from engine import serverdice
from ledger.books.book import Book
from ledger.commands import Caller, Role, tables
from ledger.exports import offline
from ledger.exports.scope import scope_of
from ledger.service import Club, StaleVersion
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.schema import server_seeds
from ledger.store.vocabulary import Deposited
from ledger.unit_of_work import UnitOfWork
from tests.ledger.exportkit import export, ticking
from tests.ledger.serverdicekit import fixed_seeds
from tests.signing import SIGNER, VERIFIER

ANN = Caller(Role.PLAYER, "ann")
CECIL = Caller(Role.CROUPIER, "cecil")


@pytest.fixture
def club(engine: sa.Engine) -> Iterator[Club]:
    """Table t: server dice, ann the caster with 50 staked, her turn's first throw due."""
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    with fixed_seeds():
        club = Club(Book(store))
        club.account_command(hz.SETTER, Deposited, 100_000, "setter")
        for name in ("ann", "bob"):
            club.create_player(name, "setter")
            club.account_command(name, Deposited, 5000, "setter")
        tables.open_table(club, "t", CECIL, ruleset="club", dice=serverdice.SERVER)
        for name in ("ann", "bob"):
            tables.seat(club, "t", CECIL, name)
        tables.cast(club, "t", CECIL, "ann", 1)
        tables.cast(club, "t", CECIL, "bob", 4)
        tables.stake(club, "t", ANN, 50)
        yield club
    store.close()


def rows(club: Club) -> list[Recorded]:
    return club.store.read("table:t")


def of_type(found: list[Recorded], kind: str) -> list[Recorded]:
    return [r for r in found if r.type == kind]


def turn_seed(club: Club) -> bytes:
    with club.store.engine.connect() as conn:
        return bytes(conn.execute(sa.select(server_seeds.c.seed)).scalar_one())


def fail_the_draw(monkeypatch: pytest.MonkeyPatch, times: int = 1) -> list[tuple[int, int]]:
    """Make the first `times` writes that record dice fail, as a fault in their
    transaction would: the dice each would have written are kept in the list returned."""
    seen: list[tuple[int, int]] = []
    play = UnitOfWork.play

    def failing(self: UnitOfWork, stream: str, before: Any, events: Any, *args: Any) -> Any:
        drawn = [e for e in events if isinstance(e, ev.DiceDrawn)]
        if drawn and len(seen) < times:
            seen.append((drawn[0].die1, drawn[0].die2))
            raise sa.exc.OperationalError("INSERT INTO events", {}, Exception("disk I/O error"))
        return play(self, stream, before, events, *args)

    monkeypatch.setattr(UnitOfWork, "play", failing)
    return seen


def test_a_draw_whose_write_fails_is_drawn_again_from_the_seed_it_logged(
    club: Club, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = fail_the_draw(monkeypatch)
    with pytest.raises(sa.exc.OperationalError):
        tables.throw(club, "t", ANN, client_seed="A")
    assert seen, "the draw's write was never made"
    # The failed attempt left its seed in the log, for throw 0, and no dice.
    logged = rows(club)
    (given,) = of_type(logged, "ClientSeedGiven")
    assert json.loads(given.payload) == {"client_seed": "A", "nonce": 0}
    assert given.version == logged[-1].version and not of_type(logged, "DiceDrawn")
    assert club.state("t").client_seed == "A"

    # Another seed for that throw is refused and writes nothing; so is anything else.
    for refused, rule in (
        (lambda: tables.throw(club, "t", ANN, client_seed="B"), hz.Rule.SEED_ALREADY_GIVEN),
        (lambda: tables.lay(club, "t", CECIL, "bob", 10), hz.Rule.DRAW_PENDING),
        (lambda: tables.close(club, "t", CECIL), hz.Rule.DRAW_PENDING),
    ):
        with pytest.raises(hz.RuleBroken) as info:
            refused()
        assert info.value.rule is rule
        assert "'A'" in info.value.detail and "throw 0" in info.value.detail
        assert rows(club) == logged

    # Sent again with the same seed, the throw is drawn from it: the same dice.
    answer = tables.throw(club, "t", ANN, client_seed="A")
    drawn = answer["events"][0]
    assert drawn["type"] == "DiceDrawn"
    assert drawn["payload"] == {
        "client_seed": "A",
        "nonce": 0,
        "die1": seen[0][0],
        "die2": seen[0][1],
    }
    assert serverdice.draw(turn_seed(club), "A", 0) == seen[0]
    # The answer holds the receipt of the failed attempt's write, which logged the seed.
    seed_given = answer["seed_given"]
    assert [e["position"] for e in seed_given["events"]] == [given.position]
    assert seed_given["receipt"]["positions"][0] == given.position
    assert max(seed_given["receipt"]["positions"]) < drawn["position"]
    assert seed_given["receipt"]["checkpoint"] != answer["receipt"]["checkpoint"]
    assert club.state("t").client_seed is None and club.state("t").nonce == 1


def test_a_throw_logs_its_seed_in_a_write_before_the_draws(club: Club) -> None:
    before = club.state("t").version
    answer = tables.throw(club, "t", ANN, client_seed="A", key="k1", if_match=before)
    given = answer["seed_given"]["events"][0]
    assert (given["type"], given["version"]) == ("ClientSeedGiven", before + 1)
    assert answer["events"][0]["version"] == before + 2
    # The seed's write: the seed alone, then its seal; the draw's write after it.
    assert answer["seed_given"]["receipt"]["positions"] == [given["position"]]
    assert answer["events"][0]["position"] == given["position"] + 2
    # A repeat under the key is answered as the first was, and writes nothing.
    written = rows(club)
    again = tables.throw(club, "t", ANN, client_seed="A", key="k1", if_match=before)
    assert again == answer and rows(club) == written


def test_if_match_names_the_table_before_the_seed_or_after_it(
    club: Club, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The throw sent again after its draw failed, with the If-Match it was first sent
    with or with the version the seed's write left: either is the same throw."""
    before = club.state("t").version
    fail_the_draw(monkeypatch, times=2)
    for _ in range(2):  # its draw fails: not a stale version
        with pytest.raises(sa.exc.OperationalError):
            tables.throw(club, "t", ANN, client_seed="A", if_match=before)
    with pytest.raises(StaleVersion):
        tables.throw(club, "t", ANN, client_seed="A", if_match=before - 1)
    answer = tables.throw(club, "t", ANN, client_seed="A", if_match=before + 1)
    assert answer["events"][0]["payload"]["client_seed"] == "A"


def test_an_export_with_a_seed_waiting_for_its_throw_verifies_and_says_so(
    club: Club, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A draw that failed (or that the bank holds back) leaves its seed in the log: the
    export verifies, and says which throw waits, and for which seed."""
    fail_the_draw(monkeypatch)
    with pytest.raises(sa.exc.OperationalError):
        tables.throw(club, "t", ANN, client_seed="A")
    (given,) = of_type(rows(club), "ClientSeedGiven")
    for scope in (scope_of(everything=True), scope_of(table="t")):
        verified = offline.verify(export(club.store.engine, scope).splitlines(True), VERIFIER)
        said = " ".join(verified.trusted)
        assert (
            f"table:t: the client seed 'A' is logged for throw 0 of the turn in play "
            f"(version {given.version}), and that throw is not in the file" in said
        )
