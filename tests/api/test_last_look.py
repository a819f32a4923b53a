"""The last look at server dice (issue 25, "A last look at server dice"), over HTTP on
SQLite and PostgreSQL, with the log signed by the real key.

The finding: the operator can read the turn's server seed, so it knows the dice the
moment the caster's client seed arrives, before the write is made. It failed that write
(a 503, by holding the write lock), the caster tried again with a fresh seed at the same
nonce, and seed B was recorded at nonce 0 with no event mentioning seed A.

Now the seed is logged in a write of its own before anything is drawn from it, so a
write refused once the dice are known is the draw's: seed A stays in the log, seed B is
refused for that throw, and A, sent again, throws A's dice. What is left to the
operator is refusing to log a seed at all, before it is in the log: a stall, which the
caster outlasts by sending the same seed again (docs/player.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine import serverdice
from ledger.api import create_app
from ledger.books.book import Book
from ledger.store import db
from ledger.store.eventstore import Busy, EventStore
from ledger.unit_of_work import UnitOfWork
from tests.api.conftest import Api, _sqlite_copy, postgres_copy
from tests.api.gamekit import Evening
from tests.signing import SIGNER

LOCK_TIMEOUT = 0.3
"""The app's lock timeout: a write behind a held lock is answered 503 this soon."""


@dataclass
class Scene:
    night: Evening
    """Table t1, server dice: ann the caster, 100 staked, her turn's first throw due."""
    operator: EventStore
    """The operator's own way into the database, to hold the write lock with."""

    def throw(self, client_seed: str) -> Any:
        return self.night.players["ann"].post(
            "/tables/t1/throws", json={"client_seed": client_seed}
        )

    def events(self) -> list[dict[str, Any]]:
        replay = self.night.croupier.ok("get", "/tables/t1/replay?limit=500")
        return [{k: step[k] for k in ("position", "type", "payload")} for step in replay["steps"]]


@pytest.fixture(params=["sqlite", "postgres"])
def scene(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Scene]:
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url = _sqlite_copy(request, tmp_path)
        else:
            server = request.getfixturevalue("postgres_server")
            template = request.getfixturevalue("postgres_migrated")
            url = stack.enter_context(postgres_copy(server, template, "look"))
        engine = db.make_engine(url, lock_timeout=LOCK_TIMEOUT)
        stack.callback(engine.dispose)
        store = EventStore(engine, signer=SIGNER)
        stack.callback(store.close)
        operator = EventStore(db.make_engine(url), signer=SIGNER)
        stack.callback(operator.engine.dispose)
        stack.callback(operator.close)
        api = Api(create_app(book=Book(store), TESTING=True))
        night = Evening(api, "t1", deposits={"ann": 5000, "bob": 5000, "setter": 100_000})
        night.croupier.ok("post", "/tables", {"id": "t1", "ruleset": "club", "dice": "server"})
        for name in ("ann", "bob"):
            night.do(night.croupier, "seats", {"player": name})
        night.do(night.croupier, "casts", {"player": "ann", "die": 1})
        night.do(night.croupier, "casts", {"player": "bob", "die": 5})
        night.do("ann", "stakes", {"amount": 100})
        yield Scene(night, operator)


def _drawn(answer: dict[str, Any]) -> dict[str, Any]:
    (drawn,) = [e for e in answer["events"] if e["type"] == "DiceDrawn"]
    return drawn


def _never_b_at_nonce_0(scene: Scene) -> None:
    """Seed B, sent after A was refused, is refused in its turn, and writes nothing."""
    before = scene.events()
    response = scene.throw("B")
    problem = response.get_json()
    if response.status_code == 201:
        drawn = _drawn(problem)["payload"]
        assert (drawn["client_seed"], drawn["nonce"]) != ("B", 0), (
            "the last look: seed A refused, and seed B's dice recorded at nonce 0 "
            f"({drawn['die1']}+{drawn['die2']}) with no event mentioning A"
        )
    assert response.status_code == 422, problem
    assert problem["type"] == "urn:hazard:rule:seed-already-given"
    assert "'A'" in problem["detail"] and "throw 0" in problem["detail"]
    assert scene.events() == before


def _a_throws_as_a(scene: Scene, dice: tuple[int, int] | None = None) -> None:
    """A, sent again, throws at nonce 0 the dice the seed logged before draws."""
    response = scene.throw("A")
    assert response.status_code == 201, response.get_json()
    answer = response.get_json()
    drawn = _drawn(answer)
    assert (drawn["payload"]["client_seed"], drawn["payload"]["nonce"]) == ("A", 0)
    if dice is not None:
        assert (drawn["payload"]["die1"], drawn["payload"]["die2"]) == dice
    (given,) = answer["seed_given"]["events"]
    assert given["payload"] == {"client_seed": "A", "nonce": 0}
    assert given["position"] < drawn["position"]
    logged = [e for e in scene.events() if e["type"] == "ClientSeedGiven"]
    assert [e["payload"]["client_seed"] for e in logged] == ["A"]  # and none of B


def test_a_draw_refused_once_its_dice_are_seen_gives_seed_a_dice_or_a_refusal(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator lets the server draw seed A's dice, sees them, and fails the write
    that would record them, as a held write lock fails it: 503 busy."""
    seen: list[tuple[int, int]] = []
    draw = serverdice.draw

    def looked(server_seed: bytes, client_seed: str, nonce: int) -> tuple[int, int]:
        dice = draw(server_seed, client_seed, nonce)
        if client_seed == "A" and not seen:
            seen.append(dice)
            raise Busy("the database is busy: another writer held it past the lock timeout")
        return dice

    monkeypatch.setattr(serverdice, "draw", looked)
    refused = scene.throw("A")
    assert refused.status_code == 503, refused.get_json()
    assert refused.get_json()["type"] == "urn:hazard:busy"
    assert seen
    _never_b_at_nonce_0(scene)
    _a_throws_as_a(scene, seen[0])


def test_the_write_lock_held_once_the_seed_is_logged_gives_seed_a_dice_or_a_refusal(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator reads seed A as it is logged, knows the dice, and holds the write
    lock before the draw can take it: the throw is answered 503 busy."""
    holding = contextlib.ExitStack()
    commit = UnitOfWork.commit

    def then_hold(self: UnitOfWork, response: Any = None) -> None:
        commit(self, response)
        types = [e["type"] for e in (response or {}).get("events", ())]
        if "ClientSeedGiven" in types and not holding._exit_callbacks:
            holding.enter_context(scene.operator.transaction())

    monkeypatch.setattr(UnitOfWork, "commit", then_hold)
    with holding:
        refused = scene.throw("A")
        assert refused.status_code == 503, refused.get_json()
        assert refused.get_json()["type"] == "urn:hazard:busy"
    monkeypatch.undo()
    logged = [e for e in scene.events() if e["type"] in ("ClientSeedGiven", "DiceDrawn")]
    assert [(e["type"], e["payload"]["client_seed"]) for e in logged] == [("ClientSeedGiven", "A")]
    assert scene.night.state()["client_seed"] == "A"
    _never_b_at_nonce_0(scene)
    _a_throws_as_a(scene)
