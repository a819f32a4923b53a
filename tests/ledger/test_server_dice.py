"""Server dice in the ledger, on SQLite and PostgreSQL: a seed per caster's turn kept in
`server_seeds` (append-only) in the write that commits to it and revealed by the write
that ends the turn; an export verifies offline (`hazard verify FILE`), every revealed
turn's throws drawn again, a turn in play taken on trust; a die, client seed, nonce,
commitment or seed changed, with the hashes recomputed, fails at its line; and the
database check (`hazard verify`) holds revealed seeds to their turns too."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from click.testing import CliRunner

import engine as hz
from engine import serverdice
from ledger.books import deep, projections
from ledger.books.book import Book
from ledger.cli import main
from ledger.exports import offline
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log import check
from ledger.store.schema import rounds, server_seeds
from tests.ledger.exportkit import export, ticking
from tests.ledger.offlinekit import encoded, fails, line_of, records, rehash
from tests.ledger.serverdicekit import fixed_seeds, play, server_throw
from tests.signing import SIGNER, VERIFIER


@pytest.fixture
def store(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    with fixed_seeds():
        play(Club(Book(store)))
    yield store
    store.close()


def table_events(store: EventStore) -> list[Recorded]:
    return [r for r in store.read_all(0, limit=10_000) if r.stream == "table:s1"]


def payloads(rows: list[Recorded], kind: str) -> list[dict[str, Any]]:
    return [json.loads(r.payload) | {"version": r.version} for r in rows if r.type == kind]


def test_each_turn_keeps_its_seed_and_reveals_it_as_it_ends(store: EventStore) -> None:
    rows = table_events(store)
    committed = payloads(rows, "SeedCommitted")
    revealed = payloads(rows, "SeedRevealed")
    assert len(committed) == 3 and len(revealed) == 2  # ann's, bob's; ann's again in play
    with store.engine.connect() as conn:
        kept = conn.execute(sa.select(server_seeds).order_by(server_seeds.c.version)).all()
    assert [(k.stream, k.version) for k in kept] == [("table:s1", c["version"]) for c in committed]
    for k, c in zip(kept, committed, strict=True):
        assert hashlib.sha256(k.seed).hexdigest() == c["commitment"]
    assert [r["seed"] for r in revealed] == [bytes(k.seed).hex() for k in kept[:2]]
    # Every throw of the ended turns draws again from its revealed seed.
    turn, drawn = -1, 0
    for r in rows:
        if r.type == "SeedCommitted":
            turn += 1
        elif r.type == "DiceDrawn" and turn < 2:
            d = json.loads(r.payload)
            seed = bytes.fromhex(revealed[turn]["seed"])
            assert serverdice.draw(seed, d["client_seed"], d["nonce"]) == (d["die1"], d["die2"])
            drawn += 1
    assert drawn >= 2


def test_the_seeds_are_append_only(store: EventStore) -> None:
    for statement in ("UPDATE server_seeds SET seed = seed", "DELETE FROM server_seeds"):
        with pytest.raises(sa.exc.DBAPIError), store.engine.begin() as conn:
            conn.exec_driver_sql(statement)
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(server_seeds)).scalar() == 3


def test_the_export_verifies_and_the_turn_in_play_is_taken_on_trust(
    store: EventStore, tmp_path: Path
) -> None:
    for scope in (scope_of(everything=True), scope_of(table="s1")):
        verified = offline.verify(export(store.engine, scope).splitlines(True), VERIFIER)
        rows = table_events(store)
        in_play = [r.version for r in rows if r.type == "DiceDrawn"][-1]
        said = " ".join(verified.trusted)
        assert f"table:s1: 1 server throw(s) of the turn in play (versions {in_play} to " in said
    path = tmp_path / "s1.jsonl"
    path.write_bytes(export(store.engine, scope_of(table="s1")))
    result = CliRunner().invoke(main, ["verify", str(path), "--key", VERIFIER.text()])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("verified\n") and "server throw(s)" in result.output


def test_a_log_from_before_seeds_were_logged_first_verifies_as_it_did(
    engine: sa.Engine,
) -> None:
    """The same table played as the ledger played it before it logged client seeds (the
    seed and the dice in one write): its export verifies, every ended turn drawn again."""
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    try:
        with fixed_seeds():
            play(Club(Book(store)), logged=False)
        assert not [r for r in table_events(store) if r.type == "ClientSeedGiven"]
        for scope in (scope_of(everything=True), scope_of(table="s1")):
            verified = offline.verify(export(store.engine, scope).splitlines(True), VERIFIER)
            assert "1 server throw(s) of the turn in play" in " ".join(verified.trusted)
        with store.engine.connect() as conn:
            assert check.check_log(conn, VERIFIER).ok
    finally:
        store.close()


def _first_turn_throw(recs: list[dict[str, Any]]) -> int:
    """The line of a DiceDrawn of the first turn whose dice differ (swapping them keeps
    the total, so every settlement still follows: only the seed can tell)."""
    for number, r in enumerate(recs, 1):
        if r.get("type") == "SeedRevealed":
            break
        if r.get("type") == "DiceDrawn" and r["payload"]["die1"] != r["payload"]["die2"]:
            return number
    raise LookupError("no throw of two different dice in the first turn")


def _swap(recs: list[dict[str, Any]], number: int) -> None:
    for r in (recs[number - 1], recs[number]):  # the DiceDrawn and its DiceThrown
        p = r["payload"]
        p["die1"], p["die2"] = p["die2"], p["die1"]


def _first(recs: list[dict[str, Any]], kind: str) -> int:
    return line_of(recs, type=kind, stream="table:s1")


Change = Callable[[list[dict[str, Any]]], tuple[int, list[int]]]
"""A change to the records: (the line it must fail at, the lines to re-hash)."""


def _die(recs: list[dict[str, Any]]) -> tuple[int, list[int]]:
    n = _first_turn_throw(recs)
    _swap(recs, n)
    return n, [n, n + 1]


def _client_seed(recs: list[dict[str, Any]]) -> tuple[int, list[int]]:
    n = _first_turn_throw(recs)
    recs[n - 1]["payload"]["client_seed"] = "mine"
    return n, [n]


def _seed_logged_and_drawn(recs: list[dict[str, Any]]) -> tuple[int, list[int]]:
    n = _first_turn_throw(recs)
    # The seed's line: the table's event before the draw (the seed's write's seal, and
    # any other write between, are skipped in a table's file).
    g = max(
        i
        for i, r in enumerate(recs[: n - 1], 1)
        if r["record"] == "event" and r["stream"] == recs[n - 1]["stream"]
    )
    assert recs[g - 1]["type"] == "ClientSeedGiven"
    recs[g - 1]["payload"]["client_seed"] = recs[n - 1]["payload"]["client_seed"] = "mine"
    return n, [g, n]


def _nonce(recs: list[dict[str, Any]]) -> tuple[int, list[int]]:
    n = _first_turn_throw(recs)
    recs[n - 1]["payload"]["nonce"] += 1
    return n, [n]


def _commitment(recs: list[dict[str, Any]]) -> tuple[int, list[int]]:
    c = _first(recs, "SeedCommitted")
    recs[c - 1]["payload"]["commitment"] = "ab" * 32
    return _first(recs, "SeedRevealed"), [c]


def _seed(recs: list[dict[str, Any]]) -> tuple[int, list[int]]:
    r = _first(recs, "SeedRevealed")
    recs[r - 1]["payload"]["seed"] = "cd" * 32
    return r, [r]


TAMPERING: dict[str, tuple[Change, str]] = {
    "die": (_die, "draws"),
    "client seed": (_client_seed, "seed-already-given"),
    "client seed, as logged and as drawn": (_seed_logged_and_drawn, "draws"),
    "nonce": (_nonce, "nonce"),
    "commitment": (_commitment, "committed to"),
    "seed": (_seed, "SHA-256"),
}


@pytest.mark.parametrize("what", sorted(TAMPERING))
def test_a_rehashed_change_fails_at_its_line(store: EventStore, what: str) -> None:
    recs = records(export(store.engine, scope_of(table="s1")))
    change, words = TAMPERING[what]
    at, changed = change(recs)
    for number in changed:
        rehash(recs, number)
    caught = fails(encoded(recs))
    assert caught.line == at, caught.reason
    assert words in caught.reason, caught.reason


def test_the_database_check_holds_revealed_seeds_to_their_turns(store: EventStore) -> None:
    with store.engine.connect() as conn:
        assert check.check_log(conn, VERIFIER).ok
    rows = table_events(store)
    drawn = next(
        r
        for r in rows
        if r.type == "DiceDrawn" and json.loads(r.payload)["die1"] != json.loads(r.payload)["die2"]
    )
    d = json.loads(drawn.payload)
    d["die1"], d["die2"] = d["die2"], d["die1"]
    with store.engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        with conn.begin():  # what a database administrator can do
            if sqlite:
                conn.exec_driver_sql("DROP TRIGGER events_refuse_update")
            else:
                conn.exec_driver_sql("ALTER TABLE events DISABLE TRIGGER ALL")
            conn.execute(
                sa.text("UPDATE events SET payload = :p WHERE position = :at"),
                {"p": json.dumps(d, sort_keys=True, separators=(",", ":")), "at": drawn.position},
            )
        conn.invalidate()
    with store.engine.connect() as conn:
        report = check.check_log(conn, VERIFIER)
    (finding,) = [f for f in report.findings if f.position == drawn.position]
    assert "does not draw the dice recorded" in finding.what
    assert finding.event == f"table:s1 v{drawn.version}"


def _rounds(engine: sa.Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(rounds).order_by(*rounds.primary_key))]


def test_migration_0008_puts_a_reveal_after_the_turns_last_round_into_it(
    store: EventStore,
) -> None:
    """A turn's seed revealed as the table closes (s1, its turn in play) or as its last
    caster leaves alone (s2) is the last event of the turn's last round: as the write
    path now stores the rounds, as a rebuild writes them, and as migration 0008 makes
    the rows stored before it, which ended at the closing and at the caster's leaving."""
    club = Club(Book(store))

    def do(table: str, command: Callable[..., list[hz.Event]], *args: Any) -> dict[str, Any]:
        return club.command(table, "croupier", lambda state, _r: command(state, *args))

    closed = do("s1", hz.close)
    club.command(
        "s2",
        "croupier",
        lambda s, _r: hz.open_table(hz.BUILTIN["club"], dice="server"),
        new_table=True,
    )
    for name in ("ann", "bob"):
        do("s2", hz.seat, name)
    do("s2", hz.cast_for_caster, "ann", 1)
    do("s2", hz.cast_for_caster, "bob", 4)
    do("s2", hz.leave, "bob")
    server_throw(club, "s2", "alone")
    left = do("s2", hz.leave, "ann")
    ends = {"s1": closed["events"][-1], "s2": left["events"][-1]}
    assert {e["type"] for e in ends.values()} == {"SeedRevealed"}
    now = _rounds(store.engine)
    for table, reveal in ends.items():
        last = [r for r in now if r[0] == f"table:{table}"][-1]
        assert dict(zip(rounds.c.keys(), last, strict=True))["last_version"] == reveal["version"]
    projections.rebuild(store, batch=1)  # cut wherever it may be: between a closing and its reveal
    assert _rounds(store.engine) == now

    with db.serialised(store.engine, db.UPGRADE_LOCK) as conn:
        command.downgrade(db._alembic_config(conn), "0007")
    # Each table's last round, as a database from before 0008 holds it.
    before = {r[0]: dict(zip(rounds.c.keys(), r, strict=True)) for r in _rounds(store.engine)}
    assert before["table:s1"]["last_version"] == ends["s1"]["version"] - 1  # the closing
    assert before["table:s2"]["last_version"] == ends["s2"]["version"] - 2  # ann leaving
    db.upgrade(store.engine)
    assert _rounds(store.engine) == now
    assert list(deep.differences(store)) == []
