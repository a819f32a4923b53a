"""A server-dice throw from the console, in a real browser: the caster's own page makes
the client seed in the browser and keeps it until the log holds it, so a throw that
fails is sent again with the same seed, never a fresh one (issue 25, "A last look at
server dice"): the bank that refused a seed once it knew its dice gains nothing.
The croupier's table page keeps the seed typed for the caster the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from engine import events as ev
from engine import serverdice
from ledger.commands import Caller, Role, tables
from ledger.store.eventstore import Busy
from ledger.store.schema import events
from ledger.store.vocabulary import Deposited
from ledger.unit_of_work import UnitOfWork
from tests.console.conftest import Served, sign_in

CECIL = Caller(Role.CROUPIER, "cecil")


def control(page: Any, label: str) -> Any:
    """The form of one control, by its accessible name."""
    return page.get_by_role("form", name=label)


def server_table(served: Served) -> None:
    """Table s1 with server dice: ann the caster, 100 staked, her first throw due."""
    club = served.app.extensions["hazard.club"]
    for name in ("ann", "bob"):
        club.create_player(name, "setter:bank")
        club.account_command(name, Deposited, 1000, "setter:bank")
    club.account_command("setter", Deposited, 10_000, "setter:bank")
    tables.open_table(club, "s1", CECIL, ruleset="club", dice=serverdice.SERVER)
    for name in ("ann", "bob"):
        tables.seat(club, "s1", CECIL, name)
    tables.cast(club, "s1", CECIL, "ann", 1)
    tables.cast(club, "s1", CECIL, "bob", 4)
    tables.stake(club, "s1", Caller(Role.PLAYER, "ann"), 100)


def fail_once(monkeypatch: pytest.MonkeyPatch, kind: type) -> Callable[[], bool]:
    """The next write that would append a `kind` answered 503 busy, as a held write lock
    answers it; whether it has failed yet."""
    failed: list[bool] = []
    play = UnitOfWork.play

    def failing(self: UnitOfWork, stream: str, before: Any, new: Any, *args: Any) -> Any:
        if not failed and any(isinstance(e, kind) for e in new):
            failed.append(True)
            raise Busy("the database is busy: another writer held it past the lock timeout")
        return play(self, stream, before, new, *args)

    monkeypatch.setattr(UnitOfWork, "play", failing)
    return lambda: bool(failed)


def logged(served: Served) -> list[tuple[str, str]]:
    with served.book.store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(events.c.type, events.c.payload)
            .where(events.c.type.in_(["ClientSeedGiven", "DiceDrawn"]))
            .order_by(events.c.position)
        ).all()
    return [(r.type, r.payload) for r in rows]


def test_the_casters_page_sends_the_same_seed_again_after_a_throw_fails(
    served: Served, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_table(served)
    sign_in(page, served.url, served.token("player", "ann"))
    page.goto(served.url + "/console/me")
    form = control(page, "Your throw at s1")
    seed = form.get_by_label("Your client seed for throw 0 at s1", exact=False).input_value()
    assert len(seed) == 32 and int(seed, 16) >= 0  # made in the browser: 16 bytes, in hex

    # The bank refuses to log the seed at all: the page, loaded again, offers the same.
    refused = fail_once(monkeypatch, ev.ClientSeedGiven)
    form.get_by_role("button", name="Throw at s1").click()
    page.wait_for_load_state()
    assert refused() and logged(served) == []
    page.goto(served.url + "/console/me")
    form = control(page, "Your throw at s1")
    assert form.get_by_label("Your client seed", exact=False).input_value() == seed

    # Logged, then the draw refused: the page shows the seed the log holds, and says so.
    drawn = fail_once(monkeypatch, ev.DiceDrawn)
    form.get_by_role("button", name="Throw at s1").click()
    page.wait_for_load_state()
    assert drawn() and [t for t, _ in logged(served)] == ["ClientSeedGiven"]
    page.goto(served.url + "/console/me")
    form = control(page, "Your throw at s1")
    assert form.get_by_label("Your client seed", exact=False).input_value() == seed
    assert form.locator("[data-seed-logged]").count() == 1

    # Sent again, it is drawn from that seed.
    form.get_by_role("button", name="Throw at s1").click()
    page.wait_for_load_state()
    kinds = [t for t, _ in logged(served)]
    assert kinds == ["ClientSeedGiven", "DiceDrawn"]
    assert f'"client_seed":"{seed}"' in logged(served)[1][1]
    assert '"nonce":0' in logged(served)[1][1]


def test_the_croupiers_page_keeps_the_seed_typed_for_the_caster(
    served: Served, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_table(served)
    sign_in(page, served.url, served.token("croupier", "cecil"))
    page.goto(served.url + "/console/tables/s1")
    form = control(page, "Throw the server dice")
    field = form.get_by_label("The caster's client seed", exact=False)
    assert field.input_value() == ""  # the caster's to give, not the croupier's browser's
    field.fill("ann's seed")
    refused = fail_once(monkeypatch, ev.ClientSeedGiven)
    form.get_by_role("button", name="Throw").click()
    # The page is not reloaded: the refusal is said beside the throw (nothing written).
    assert "busy" in control(page, "Throw the server dice").get_by_role("alert").inner_text()
    assert refused()
    page.goto(served.url + "/console/tables/s1")
    form = control(page, "Throw the server dice")
    assert form.get_by_label("The caster's client seed", exact=False).input_value() == "ann's seed"
    form.get_by_role("button", name="Throw").click()
    page.locator("#announce", has_text="Thrown:").wait_for()
    assert [t for t, _ in logged(served)] == ["ClientSeedGiven", "DiceDrawn"]


def test_a_seed_being_typed_survives_the_table_redrawing_on_its_poll(
    served: Served, page: Any
) -> None:
    server_table(served)
    sign_in(page, served.url, served.token("croupier", "cecil"))
    page.goto(served.url + "/console/tables/s1")
    field = control(page, "Throw the server dice").get_by_label(
        "The caster's client seed", exact=False
    )
    field.fill("ann's se")  # half typed, the field left for a moment
    page.locator("h1").click()
    club = served.app.extensions["hazard.club"]
    version = club.state("s1").version
    tables.lay(club, "s1", CECIL, "bob", 50)  # a write from another screen
    page.locator(f"#board:not([data-version='{version}'])").wait_for()  # the poll redrew
    form = control(page, "Throw the server dice")
    assert form.get_by_label("The caster's client seed", exact=False).input_value() == "ann's se"
