"""Provably fair server dice over HTTP, on SQLite and PostgreSQL: a table opened with
`dice: server`, a caster's turn committed to before its first throw, throws from the
caster's own client seeds, the seed revealed as the turn ends, and every throw drawn
again from it here, by hand (HMAC-SHA256 as docs/player.md tells a player), not by the
engine's code."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.store.schema import server_seeds
from tests.api.conftest import Api
from tests.api.gamekit import Evening


def by_hand(seed_hex: str, client_seed: str, nonce: int) -> tuple[int, int]:
    dice: list[int] = []
    cursor = 0
    while len(dice) < 2:
        block = hmac.new(
            bytes.fromhex(seed_hex), f"{client_seed}:{nonce}:{cursor}".encode(), hashlib.sha256
        ).digest()
        dice += [b % 6 + 1 for b in block if b < 252]
        cursor += 1
    return dice[0], dice[1]


def of_type(answer: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in answer["events"] if e["type"] == kind]


def opened(api: Api, table: str = "t1") -> Evening:
    night = Evening(api, table, deposits={"ann": 5000, "bob": 5000, "setter": 100_000})
    answer = night.croupier.ok(
        "post", "/tables", {"id": table, "ruleset": "club", "dice": "server"}
    )
    assert [e["type"] for e in answer["events"]] == ["TableOpened", "ServerDiceChosen"]
    assert "dice" not in answer["events"][0]["payload"]  # stored as it always was
    for name in ("ann", "bob"):
        night.do(night.croupier, "seats", {"player": name})
    night.do(night.croupier, "casts", {"player": "ann", "die": 1})
    return night


def test_a_turn_commits_throws_from_client_seeds_and_reveals_a_seed_that_draws_them(
    api: Api,
) -> None:
    night = opened(api)
    chosen = night.do(night.croupier, "casts", {"player": "bob", "die": 5})
    assert [e["type"] for e in chosen["events"]] == [
        "DieCastForCaster",
        "CasterChosen",
        "SeedCommitted",
    ]
    commitment = of_type(chosen, "SeedCommitted")[0]["payload"]["commitment"]
    state = night.state()
    assert (state["dice"], state["caster"], state["commitment"], state["nonce"]) == (
        "server",
        "ann",
        commitment,
        0,
    )

    drawn: list[dict[str, Any]] = []
    ann = night.balance("ann")
    for n in range(200):
        if night.state()["phase"] == "awaiting-main" and not night.state()["open_bets"]:
            night.do("ann", "stakes", {"amount": 100})
            ann -= 100
        # ann's own token gives her seed, after the bets on this throw are placed.
        answer = night.do("ann", "throws", {"client_seed": f"ann's luck #{n}"})
        (draw,) = of_type(answer, "DiceDrawn")
        (thrown,) = of_type(answer, "DiceThrown")
        assert draw["payload"]["nonce"] == len(drawn)
        assert (draw["payload"]["die1"], draw["payload"]["die2"]) == (
            thrown["payload"]["die1"],
            thrown["payload"]["die2"],
        )
        for settled in of_type(answer, "BetSettled"):
            if settled["payload"]["winner"] == "ann":
                ann += 200  # her 100 back and the setter's 100: even money
        drawn.append(draw["payload"])
        if of_type(answer, "SeedRevealed"):
            break
    else:
        raise AssertionError("ann's turn never ended")

    assert [e["type"] for e in answer["events"][-3:]] == [
        "DicePassed",
        "SeedRevealed",
        "SeedCommitted",
    ]
    seed = of_type(answer, "SeedRevealed")[0]["payload"]["seed"]
    assert hashlib.sha256(bytes.fromhex(seed)).hexdigest() == commitment
    for d in drawn:
        assert by_hand(seed, d["client_seed"], d["nonce"]) == (d["die1"], d["die2"])
    assert night.balance("ann") == ann

    # bob's turn has a new commitment; closing the table reveals its seed too.
    state = night.state()
    following = of_type(answer, "SeedCommitted")[0]["payload"]["commitment"]
    assert (state["caster"], state["commitment"], state["nonce"]) == ("bob", following, 0)
    night.do("bob", "throws", {"client_seed": "bob-1"})
    closed = night.do(night.croupier, "close")
    (revealed,) = of_type(closed, "SeedRevealed")
    assert hashlib.sha256(bytes.fromhex(revealed["payload"]["seed"])).hexdigest() == following


def test_the_seed_of_a_turn_in_play_is_kept_and_never_served(api: Api) -> None:
    night = opened(api)
    night.do(night.croupier, "casts", {"player": "bob", "die": 5})
    night.do(night.croupier, "throws", {"client_seed": "relayed-by-the-croupier"})
    with api.book.store.engine.connect() as conn:
        rows = conn.execute(sa.select(server_seeds)).all()
    assert [(r.stream, len(r.seed)) for r in rows] == [("table:t1", 32)]
    secret = bytes(rows[0].seed).hex()
    seen = json.dumps(
        [
            night.state(),
            night.auditor.ok("get", "/events", query_string={"stream": "table:t1"}),
            night.bank.get("/export", query_string={"table": "t1"}).get_data(as_text=True),
        ]
    )
    assert hashlib.sha256(bytes.fromhex(secret)).hexdigest() in seen  # the commitment
    assert secret not in seen


def test_who_may_throw_and_with_what(api: Api) -> None:
    night = opened(api)
    night.do(night.croupier, "casts", {"player": "bob", "die": 5})
    croupier = night.croupier
    night.refused(croupier, "throws", {"die1": 3, "die2": 4}, rule="server-dice")
    night.refused(
        croupier, "throws", {"client_seed": "x", "die1": 3, "die2": 4}, rule="server-dice"
    )
    night.refused(croupier, "throws", {}, rule="server-dice")
    night.refused(croupier, "void-throws", {"reason": "cocked", "off": 1}, rule="server-dice")
    before = night.state()["version"]
    for who, status in ((night.bank, 403), (night.players["bob"], 403)):
        response = who.post("/tables/t1/throws", json={"client_seed": "mine"})
        assert response.status_code == status, response.get_json()
        assert response.get_json()["type"] == "urn:hazard:forbidden"
    for bad in ("", "tab\there", "x" * 65, "ünï"):
        response = croupier.post("/tables/t1/throws", json={"client_seed": bad})
        assert response.status_code == 422, bad
        assert "client_seed" in response.get_json()["errors"]
    assert night.state()["version"] == before

    # A croupier table takes dice, not seeds, and a player enters none.
    croupier.ok("post", "/tables", {"id": "t2", "ruleset": "club"})
    for name in ("ann", "bob"):
        croupier.ok("post", "/tables/t2/seats", {"player": name})
    croupier.ok("post", "/tables/t2/casts", {"player": "ann", "die": 1})
    croupier.ok("post", "/tables/t2/casts", {"player": "bob", "die": 2})
    t2 = Evening.__new__(Evening)
    t2.__dict__.update(night.__dict__, table="t2")
    t2.refused(croupier, "throws", {"client_seed": "x"}, rule="croupier-dice")
    t2.refused(croupier, "throws", {"die1": 3}, rule="croupier-dice")
    response = night.players["ann"].post("/tables/t2/throws", json={"die1": 3, "die2": 4})
    assert response.status_code == 403
    assert t2.state()["dice"] == "croupier" and t2.state()["commitment"] is None


def test_a_turn_whose_seed_this_database_lacks_is_refused_plainly(api: Api) -> None:
    """As after a restore from an export (which never carries seeds): a clear 409."""
    night = opened(api)
    night.do(night.croupier, "casts", {"player": "bob", "die": 5})
    with api.book.store.engine.begin() as conn:  # append-only: a newer, wrong seed
        conn.execute(server_seeds.insert().values(stream="table:t1", version=99, seed=b"\0" * 32))
    before = night.state()["version"]
    response = night.players["ann"].post("/tables/t1/throws", json={"client_seed": "late"})
    assert response.status_code == 409, response.get_json()
    assert response.get_json()["type"] == "urn:hazard:seed-unavailable"
    assert night.state()["version"] == before


def _rounds_as_a_player_reads_them(night: Evening) -> list[dict[str, Any]]:
    """Every event of every round of the table, round by round, each round's pages in
    turn, as GET /tables/<t>/rounds/<n> gives them to a player."""
    events: list[dict[str, Any]] = []
    for r in night.rounds():
        after = 0
        while True:
            page = night.players["ann"].ok(
                "get",
                f"/tables/{night.table}/rounds/{r['round']}",
                query_string={"after": after, "limit": 500},
            )["events"]
            events += page
            if len(page) < 500:
                break
            after = page[-1]["position"]
    return events


def _drawn_again(events: list[dict[str, Any]]) -> tuple[int, int]:
    """(throws drawn again from their turn's revealed seed, throws whose seed the events
    never reveal): each DiceDrawn is drawn by the first SeedRevealed after it."""
    pending: list[dict[str, Any]] = []
    verified = 0
    for e in events:
        if e["type"] == "DiceDrawn":
            pending.append(e["payload"])
        elif e["type"] == "SeedRevealed":
            seed = e["payload"]["seed"]
            for d in pending:
                assert by_hand(seed, d["client_seed"], d["nonce"]) == (d["die1"], d["die2"])
            verified += len(pending)
            pending = []
    return verified, len(pending)


@pytest.mark.parametrize("ending", ["the table closes", "the caster leaves, alone"])
def test_the_seed_revealed_as_a_turn_ends_mid_round_is_in_its_last_round(
    api: Api, ending: str
) -> None:
    """Issue 22: closing a server-dice table mid-turn (or its last caster leaving alone)
    reveals the turn's seed after the command, with no round in play, and the reveal
    belonged to no round: a player reading the rounds could draw none of that turn's
    throws again. It is the last event of the turn's last round (the one the closing or
    the leaving abandoned), in the round's events, its replay and the rounds read model,
    its recall and an export's replay and rounds sheet, as a rebuild of the read models
    makes it too."""
    from ledger.audit import replay
    from ledger.books import deep, projections
    from ledger.exports import jsonl, sheets
    from ledger.exports.scope import scope_of
    from tests.signing import VERIFIER

    night = opened(api)
    night.do(night.croupier, "casts", {"player": "bob", "die": 5})
    if ending == "the caster leaves, alone":
        night.do(night.croupier, "leave", {"player": "bob"})
    for n in range(3):
        if night.state()["caster"] != "ann":
            break
        night.do("ann", "throws", {"client_seed": f"ann #{n}"})
    if ending == "the table closes":
        ended = night.do(night.croupier, "close")
    else:
        ended = night.do("ann", "leave", {"player": "ann"})
        assert night.state()["caster"] is None
    (revealed,) = of_type(ended, "SeedRevealed")

    last = night.rounds()[-1]
    assert (last["last_version"], last["last_position"]) == (
        revealed["version"],
        revealed["position"],
    )
    events = night.auditor.ok(
        "get", f"/tables/t1/rounds/{last['round']}", query_string={"limit": 500}
    )["events"]
    assert events[-1]["type"] == "SeedRevealed" and events[-1]["version"] == revealed["version"]
    steps = night.auditor.ok(
        "get", f"/tables/t1/rounds/{last['round']}/replay", query_string={"limit": 500}
    )["steps"]
    assert steps[-1]["type"] == "SeedRevealed" and steps[-1]["version"] == revealed["version"]
    drawn, unrevealed = _drawn_again(_rounds_as_a_player_reads_them(night))
    assert drawn > 0 and unrevealed == 0
    recalled = night.auditor.ok("get", "/tables/t1/recall")["rounds"][0]
    assert (recalled["round"], recalled["last_version"]) == (last["round"], revealed["version"])
    exported = jsonl.prepare(api.book.store.engine, scope_of(table="t1"), key=VERIFIER)
    lines = b"".join(exported.chunks()).splitlines()
    offline_steps = list(replay.from_file(lines, "t1", last["round"], VERIFIER))
    assert [s.version for s in offline_steps] == [s["version"] for s in steps]
    prepared = sheets.prepare(api.book.store.engine, scope_of(table="t1"), "rounds")
    text = b"".join(prepared.chunks()).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert rows[-1]["last_position"] == str(revealed["position"])

    before = night.rounds()
    projections.rebuild(api.book.store)
    assert night.rounds() == before
    assert list(deep.differences(api.book.store)) == []
