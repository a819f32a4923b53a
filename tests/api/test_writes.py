"""How every write behaves: repeats, stale writes, what it answers, and its errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from engine.table import MAX_NAME
from ledger.service import Club, InvalidName
from ledger.store.schema import accounts, commands, events, postings
from tests.api.conftest import Api, Client


def _counts(api: Api) -> tuple[int, int, int]:
    with api.book.store.engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (events, postings, commands)
        )


def _table_in_play(bank: Client) -> None:
    """ann is the caster of t1, with a main of 7 called; bob is seated."""
    bank.ok("post", "/players/setter/deposits", {"amount": 10_000})
    for name in ("ann", "bob"):
        bank.ok("post", "/players", {"name": name})
        bank.ok("post", f"/players/{name}/deposits", {"amount": 1_000})
    bank.ok("post", "/tables", {"id": "t1"})
    for name in ("ann", "bob"):
        bank.ok("post", "/tables/t1/seats", {"player": name})
    bank.ok("post", "/tables/t1/casts", {"player": "ann", "die": 1})
    bank.ok("post", "/tables/t1/casts", {"player": "bob", "die": 4})


def test_a_write_answers_with_its_events_and_the_new_version(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    before = bank.ok("get", "/tables/t1")["version"]
    answer = bank.ok("post", "/tables/t1/stakes", {"amount": 100})
    assert answer["version"] == before + 1
    [event] = answer["events"]
    assert event["type"] == "CasterStaked"
    assert event["version"] == before + 1
    assert event["stream"] == "table:t1"
    assert event["actor"] == api.actor()
    assert event["payload"]["amount"] == 100
    assert len(event["hash"]) == 64


def test_a_repeat_with_the_same_key_gets_the_same_answer_and_writes_nothing(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    key = {"Idempotency-Key": "stake-1"}
    first = bank.post("/tables/t1/stakes", json={"amount": 100}, headers=key)
    assert first.status_code == 201
    counts = _counts(api)
    again = bank.post("/tables/t1/stakes", json={"amount": 100}, headers=key)
    assert again.status_code == 201
    assert again.get_json() == first.get_json()
    assert _counts(api) == counts


def test_a_key_reused_for_another_request_is_refused(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    key = {"Idempotency-Key": "k"}
    bank.ok("post", "/tables/t1/stakes", {"amount": 100}, headers=key)
    counts = _counts(api)
    other = bank.post("/tables/t1/lays", json={"player": "bob", "amount": 50}, headers=key)
    assert other.status_code == 422
    assert other.get_json()["type"] == "urn:hazard:idempotency-key-reused"
    assert _counts(api) == counts


def test_keys_belong_to_the_token_that_sent_them(api: Api) -> None:
    bank, croupier = api.client(), api.client("croupier", "cecil")
    _table_in_play(bank)
    key = {"Idempotency-Key": "1"}
    bank.ok("post", "/tables/t1/stakes", {"amount": 100}, headers=key)
    # Another client's key "1" is its own: the write happens.
    answer = croupier.ok("post", "/tables/t1/lays", {"player": "bob", "amount": 50}, headers=key)
    assert answer["events"][0]["type"] == "StakeLaid"


def test_account_writes_are_idempotent_too(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    key = {"Idempotency-Key": "dep-1"}
    bank.ok("post", "/players/ann/deposits", {"amount": 500}, headers=key)
    bank.ok("post", "/players/ann/deposits", {"amount": 500}, headers=key)
    assert bank.ok("get", "/players/ann/balance")["balance"] == 500


def test_a_stale_if_match_gets_409_with_the_current_version(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    current = bank.get("/tables/t1")
    version = current.get_json()["version"]
    assert current.headers["ETag"] == f'"{version}"'
    counts = _counts(api)
    stale = bank.post(
        "/tables/t1/stakes", json={"amount": 100}, headers={"If-Match": str(version - 1)}
    )
    assert stale.status_code == 409
    body = stale.get_json()
    assert stale.mimetype == "application/problem+json"
    assert body["type"] == "urn:hazard:stale-version"
    assert body["current_version"] == version
    assert _counts(api) == counts
    # The version as the ETag gave it, quoted, is accepted; so is the bare number.
    bank.ok("post", "/tables/t1/stakes", {"amount": 100}, headers={"If-Match": f'"{version}"'})
    bank.ok("post", "/tables/t1/main", {"main": 7}, headers={"If-Match": str(version + 1)})


def test_a_malformed_if_match_names_the_header(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    bad = bank.post("/tables/t1/stakes", json={"amount": 100}, headers={"If-Match": "W/abc"})
    assert bad.status_code == 422
    assert "If-Match" in bad.get_json()["detail"]


def test_a_broken_rule_has_a_stable_type_and_names_the_rule(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    counts = _counts(api)
    early = bank.post("/tables/t1/throws", json={"die1": 3, "die2": 4})
    assert early.status_code == 422
    assert early.mimetype == "application/problem+json"
    problem = early.get_json()
    assert problem["type"] == "urn:hazard:rule:throw-before-main"
    assert problem["rule"] == "throw-before-main"
    assert problem["status"] == 422
    assert "main" in problem["detail"]
    assert _counts(api) == counts


def test_an_uncovered_stake_is_refused_by_its_rule(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    bank.ok("post", "/tables/t1/lays", {"player": "bob", "amount": 900})
    bank.ok("post", "/players/ann/withdrawals", {"amount": 500})
    counts = _counts(api)
    short = bank.post("/tables/t1/covers", json={})
    assert short.status_code == 422
    assert short.get_json()["type"] == "urn:hazard:rule:stake-not-covered"
    assert _counts(api) == counts


def test_validation_errors_name_the_field(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    bad = bank.post("/tables/t1/throws", json={"die1": "three", "die2": 4})
    assert bad.status_code == 422
    problem = bad.get_json()
    assert problem["type"] == "urn:hazard:validation"
    assert "die1" in problem["detail"]
    assert "die1" in problem["errors"]
    missing = bank.post("/players/ann/deposits", json={})
    assert "amount" in missing.get_json()["detail"]


def test_a_die_off_the_die_is_a_validation_problem_naming_it(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    bank.ok("post", "/tables/t1/main", {"main": 7})
    counts = _counts(api)
    for path, body, field in [
        ("/tables/t1/throws", {"die1": 7, "die2": 4}, "die1"),
        ("/tables/t1/throws", {"die1": 3, "die2": 0}, "die2"),
        ("/tables/t1/void-throws", {"reason": "cocked", "off": 1, "standing": 9}, "standing"),
    ]:
        problem = bank.post(path, json=body).get_json()
        assert (problem["status"], problem["type"]) == (422, "urn:hazard:validation"), problem
        assert list(problem["errors"]) == [field]
    assert _counts(api) == counts


def test_a_main_or_void_off_its_range_is_a_validation_problem_naming_it(api: Api) -> None:
    """As for a die: the contract states the range, so the schema refuses it as a field
    before the table is asked (not `invalid-main` or `invalid-void`)."""
    bank = api.client()
    _table_in_play(bank)
    counts = _counts(api)
    for path, body, field in [
        ("/tables/t1/main", {"main": 4}, "main"),
        ("/tables/t1/main", {"main": 10}, "main"),
        ("/tables/t1/void-throws", {"reason": "spun", "off": 1}, "reason"),
        ("/tables/t1/void-throws", {"reason": "cocked", "off": 3}, "off"),
        ("/tables/t1/void-throws", {"reason": "wild", "off": -1}, "off"),
    ]:
        problem = bank.post(path, json=body).get_json()
        assert (problem["status"], problem["type"]) == (422, "urn:hazard:validation"), problem
        assert list(problem["errors"]) == [field]
    assert _counts(api) == counts
    bank.ok("post", "/tables/t1/main", {"main": 9})


def test_a_table_seats_at_most_fifty(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/tables", {"id": "big"})
    for n in range(1, 52):
        bank.ok("post", "/players", {"name": f"p{n}"})
    for n in range(1, 51):
        bank.ok("post", "/tables/big/seats", {"player": f"p{n}"})
    counts = _counts(api)
    problem = bank.post("/tables/big/seats", json={"player": "p51"}).get_json()
    assert (problem["status"], problem["type"]) == (422, "urn:hazard:rule:table-full"), problem
    assert "at most 50 players" in problem["detail"]
    assert _counts(api) == counts
    assert len(bank.ok("get", "/tables/big")["seats"]) == 50


def test_the_table_shows_the_standing_die(api: Api) -> None:
    """After a void where only the off die is recast, GET /tables/{t} says which die
    stands and at what, until the next throw that counts."""
    bank = api.client()
    _table_in_play(bank)
    bank.ok("post", "/tables/t1/main", {"main": 7})
    assert bank.ok("get", "/tables/t1")["standing"] is None
    bank.ok("post", "/tables/t1/void-throws", {"reason": "cocked", "off": 2, "standing": 5})
    assert bank.ok("get", "/tables/t1")["standing"] == {"die": 1, "value": 5}
    bank.ok("post", "/tables/t1/void-throws", {"reason": "wild", "off": 2, "standing": 5})
    assert bank.ok("get", "/tables/t1")["standing"] == {"die": 1, "value": 5}
    bank.ok("post", "/tables/t1/throws", {"die1": 5, "die2": 3})
    assert bank.ok("get", "/tables/t1")["standing"] is None
    bank.ok("post", "/tables/t1/void-throws", {"reason": "cocked", "off": 1, "standing": 2})
    assert bank.ok("get", "/tables/t1")["standing"] == {"die": 2, "value": 2}


def test_an_overdraft_is_refused_and_leaves_nothing(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    bank.ok("post", "/players/ann/deposits", {"amount": 100})
    counts = _counts(api)
    over = bank.post("/players/ann/withdrawals", json={"amount": 101})
    assert over.status_code == 422
    assert over.get_json()["type"] == "urn:hazard:overdraft"
    assert _counts(api) == counts
    bank.ok("put", "/players/ann/credit-limit", {"limit": 1})
    bank.ok("post", "/players/ann/withdrawals", {"amount": 101})
    assert bank.ok("get", "/players/ann/balance") == {
        "player": "ann",
        "balance": -1,
        "credit_limit": 1,
        "owed": 0,  # drawn on credit, within it
    }


def test_credit_in_use_cannot_be_taken_away(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    bank.ok("put", "/players/ann/credit-limit", {"limit": 1000})
    bank.ok("post", "/players/ann/withdrawals", {"amount": 800})
    counts = _counts(api)
    refused = bank.put("/players/ann/credit-limit", json={"limit": 0})
    assert refused.status_code == 422
    problem = refused.get_json()
    assert problem["type"] == "urn:hazard:credit-in-use"
    assert (problem["account"], problem["drawn"]) == ("player:ann", 800)
    assert "has drawn 800" in problem["detail"]
    assert _counts(api) == counts
    assert bank.ok("get", "/players/ann/balance") == {
        "player": "ann",
        "balance": -800,
        "credit_limit": 1000,
        "owed": 0,
    }


def test_unknown_things_are_404_problems(api: Api) -> None:
    bank = api.client()
    for path in ("/tables/nowhere", "/players/nobody/balance", "/no/such/path"):
        response = bank.get(path)
        assert response.status_code == 404, path
        assert response.mimetype == "application/problem+json"
    assert bank.post("/tables/nowhere/throws", json={"die1": 1, "die2": 2}).status_code == 404
    assert bank.post("/players/nobody/deposits", json={"amount": 1}).status_code == 404


def test_duplicates_are_409(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    assert bank.post("/players", json={"name": "ann"}).get_json()["type"] == (
        "urn:hazard:already-exists"
    )
    bank.ok("post", "/tables", {"id": "t1"})
    assert bank.post("/tables", json={"id": "t1"}).status_code == 409


def test_a_custom_rule_set_is_checked_field_by_field(api: Api) -> None:
    bank = api.client()
    bad = bank.post("/tables", json={"id": "t2", "rules": {"name": "x", "table": {"4": {}}}})
    assert bad.status_code == 422
    assert bad.get_json()["type"] == "urn:hazard:invalid-rule-set"
    assert bad.get_json()["field"] == "table.4"
    unknown = bank.post("/tables", json={"id": "t3", "ruleset": "../../etc/passwd"})
    assert unknown.status_code == 422
    assert unknown.get_json()["field"] == "ruleset"


def test_without_a_good_token_nothing_is_done(api: Api) -> None:
    anonymous, forged = api.client(None), api.client(None)
    forged.token = "hz_not-a-real-token"
    for client in (anonymous, forged):
        response = client.post("/players", json={"name": "ann"})
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert response.get_json()["type"] == "urn:hazard:unauthenticated"
    assert _counts(api) == (0, 0, 0)


def test_a_caller_without_a_token_is_refused_before_the_body_is_read(api: Api) -> None:
    response = api.client(None).post("/tables/t1/throws", json={"die1": "not a die"})
    assert response.status_code == 401
    assert "die1" not in response.get_json()["detail"]


def test_a_balance_beyond_64_bits_is_refused_not_crashed(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    # The cash account (deposits' other side) stands just short of the edge.
    with api.book.store.engine.begin() as conn:
        conn.execute(accounts.insert().values(account="cash", balance=-(2**63 - 1) + 10))
    counts = _counts(api)
    response = bank.post("/players/ann/deposits", json={"amount": 11})
    assert response.status_code == 422
    assert response.get_json()["type"] == "urn:hazard:invalid-amount"
    assert _counts(api) == counts
    bank.ok("post", "/players/ann/deposits", {"amount": 10})


UNREACHABLE = (".", "..", "...")
"""Names a URL cannot carry: a client sends `/players/../balance` as `/balance`."""


def test_a_name_no_client_could_reach_is_a_validation_problem_naming_the_field(
    api: Api,
) -> None:
    bank = api.client()
    bank.ok("post", "/tables", {"id": "t1"})
    counts = _counts(api)
    for name in UNREACHABLE:
        for path, field, body in [
            ("/players", "name", {"name": name}),
            ("/tables", "id", {"id": name}),
            ("/tables/t1/seats", "player", {"player": name}),
            (f"/settlements?player={name}", "player", None),
        ]:
            answer = bank.post(path, json=body) if body else bank.get(path)
            problem = answer.get_json()
            assert answer.status_code == 422, (path, problem)
            assert problem["type"] == "urn:hazard:validation"
            assert list(problem["errors"]) == [field], problem
            assert "not only dots" in problem["detail"], problem
    assert _counts(api) == counts


def test_every_name_a_player_may_have_can_sit_at_a_table(api: Api) -> None:
    """The ledger's names and the engine's seats agree on length: a player the ledger
    takes can sit, and a name the seat would refuse is refused when the player is made."""
    bank = api.client()
    bank.ok("post", "/tables", {"id": "t1"})
    longest = "a" * MAX_NAME
    bank.ok("post", "/players", {"name": longest})
    bank.ok("post", "/tables/t1/seats", {"player": longest})
    counts = _counts(api)
    answer = bank.post("/players", json={"name": "a" * (MAX_NAME + 1)})
    assert answer.status_code == 422, answer.get_json()
    assert list(answer.get_json()["errors"]) == ["name"]
    assert _counts(api) == counts


def test_the_service_refuses_a_bad_player_name_as_invalid_not_as_an_amount(api: Api) -> None:
    club: Club = api.app.extensions["hazard.club"]
    for name in ("..", "setter", "a b"):
        with pytest.raises(InvalidName) as refused:
            club.create_player(name, "setter:bank")
        assert refused.value.field == "name"
        with api.app.test_request_context():
            answer = api.app.handle_user_exception(refused.value)
        problem = answer.get_json()
        assert (answer.status_code, problem["type"]) == (422, "urn:hazard:validation")
        assert list(problem["errors"]) == ["name"], problem


def test_writes_and_reads_name_the_money_in_the_same_accounts(api: Api) -> None:
    bank = api.client()
    _table_in_play(bank)
    [staked] = bank.ok("post", "/tables/t1/stakes", {"amount": 100})["events"]
    bet = staked["payload"]["bet_id"]
    escrow = f"escrow:t1:{bet}"
    assert staked["transfers"] == [
        {"source": "player:ann", "target": escrow, "amount": 100},
        {"source": "setter", "target": escrow, "amount": 100},
    ]
    bank.ok("post", "/tables/t1/main", {"main": 7})
    thrown = bank.ok("post", "/tables/t1/throws", {"die1": 3, "die2": 4})["events"]  # a nick
    [settled] = [e for e in thrown if e["type"] == "BetSettled"]
    assert settled["transfers"] == [{"source": escrow, "target": "player:ann", "amount": 200}]
    # The payload is the engine's record as stored and hashed, in the table's own names.
    assert settled["payload"]["transfers"] == [
        {"source": f"escrow:{bet}", "target": "ann", "amount": 200}
    ]
    [settlement] = bank.ok("get", "/settlements", query_string={"table": "t1"})["items"]
    assert settlement["transfers"] == settled["transfers"]
    lines = bank.ok("get", "/players/ann/statement")["items"]
    assert [(line["counterparty"], line["amount"]) for line in lines[-2:]] == [
        (escrow, -100),
        (escrow, 200),
    ]
    round_events = bank.ok("get", "/tables/t1/rounds/1")["events"]
    shown = {e["position"]: e["transfers"] for e in round_events}
    for event in (staked, settled):
        assert shown[event["position"]] == event["transfers"]
    opened = bank.ok("post", "/players", {"name": "cat"})["events"][0]
    deposited = bank.ok("post", "/players/cat/deposits", {"amount": 5})["events"][0]
    assert opened["transfers"] == []
    assert deposited["transfers"] == [{"source": "cash", "target": "player:cat", "amount": 5}]


RESERVED = [
    "SETTER",
    "Setter",
    "cash",
    "CASH",
    "escrow",
    "Escrow",
    "bank",
    "BANK",
    "s.etter",
    "ca-sh",
]
"""Names of the ledger's own accounts (the setter, cash, the bets' escrows) and of the
setter's other name, the bank, in any case and with `_ . -` in them."""


def test_no_player_takes_the_name_of_one_of_the_ledgers_own_accounts(api: Api) -> None:
    """Regression: players named `SETTER` and `cash` were made (only `setter` itself was
    refused). The rule is one function (ledger.books.accounts.reserved), which the
    API's schema and the service both ask."""
    bank = api.client()
    club: Club = api.app.extensions["hazard.club"]
    counts = _counts(api)
    for name in RESERVED:
        answer = bank.post("/players", json={"name": name})
        problem = answer.get_json()
        assert answer.status_code == 422, (name, answer.status_code, problem)
        assert "own accounts" in " ".join(problem["errors"]["name"]), problem
        with pytest.raises(InvalidName, match="own accounts"):
            club.create_player(name, "setter:bank")
    assert _counts(api) == counts
    for name in ("setter2", "cashel", "bankside", "escrows", "ann"):  # not confusable
        bank.ok("post", "/players", {"name": name})


def test_everyone_lays_over_the_api_is_every_lay_or_none(api: Api) -> None:
    """`POST /tables/t1/lays/everyone`: the console's "Everyone lays" is the API's write,
    one lay a seated player but the caster, in one write; a player who cannot fund theirs
    refuses every lay, by name, and nothing is written; a player may not send it."""
    bank = api.client()
    _table_in_play(bank)
    bank.ok("post", "/players", {"name": "cat"})
    bank.ok("post", "/tables/t1/seats", {"player": "cat"})
    counts = _counts(api)
    short = bank.post("/tables/t1/lays/everyone", json={"amount": 50})
    assert short.status_code == 422
    assert short.get_json()["type"] == "urn:hazard:overdraft"
    assert "player:cat" in short.get_json()["detail"]
    assert _counts(api) == counts
    bob = api.client("player", "bob")
    assert bob.post("/tables/t1/lays/everyone", json={"amount": 50}).status_code == 403
    assert _counts(api) == counts
    bank.ok("post", "/players/cat/deposits", {"amount": 1_000})
    laid = bank.ok("post", "/tables/t1/lays/everyone", {"amount": 50})
    placed = [e["payload"] for e in laid["events"] if e["type"] == "StakeLaid"]
    assert [(p["bettor"], p["amount"]) for p in placed] == [("bob", 50), ("cat", 50)]
    assert bank.ok("get", "/players/bob/balance")["balance"] == 950


def test_a_throws_answer_is_the_commands_answer_as_its_schema_would_dump_it(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table write's answer is sent as the command built it (ledger.api.shaped), not
    dumped field by field: the same JSON value marshmallow's dump gave, a settled bet's
    transfers and all."""
    from ledger.api.shaped import encode
    from ledger.web import schemas, tablewrites

    built: list[dict[str, Any]] = []
    run = tablewrites.run

    def remembered(*args: Any, **kwargs: Any) -> dict[str, Any]:
        built.append(run(*args, **kwargs))
        return built[-1]

    bank = api.client()
    _table_in_play(bank)
    bank.ok("post", "/tables/t1/main", {"main": 7})
    bank.ok("post", "/tables/t1/stakes", {"amount": 100})
    monkeypatch.setattr(tablewrites, "run", remembered)
    for dice in ({"die1": 5, "die2": 3}, {"die1": 3, "die2": 4}):  # a chance of 8, then 7
        answer = bank.post("/tables/t1/throws", json=dice)
        assert answer.status_code == 201, answer.get_json()
        assert answer.get_json() == json.loads(
            json.dumps(schemas.WriteResultSchema().dump(built[-1]))
        )
        assert answer.data == encode(built[-1]) + b"\n"  # sent as built, undumped
    assert any(e["transfers"] for e in answer.get_json()["events"])  # the stake settled
