"""What the contract's fuzzing (tests/api/test_contract.py) and its stateful walk
(test_stateful_contract.py) share: openapi.yaml, schemathesis's settings (values the
seeded club has, used more often than not), the club they seed, the app on a SQLite
file, and the check that every error is a documented problem.

Tables t1 (a round under way, bets open) and t2 (a round played out), players ann, bob
and cat with money, a funded bank.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ledger.api import create_app
from ledger.api.problems import PROBLEM_JSON, type_uris
from ledger.books.book import Book
from ledger.store import db
from ledger.store.eventstore import EventStore
from tests.api.conftest import Api, Client
from tests.signing import SIGNER

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"
TABLES = ("t1", "t2")
PLAYERS = ("ann", "bob", "cat")
BETS = tuple(f"b{n}" for n in range(1, 30))
"""Bet ids are `b<table version>`: the seeded bets are among these (seed checks)."""


def _often(dictionary: str) -> dict[str, Any]:
    return {"dictionary": dictionary, "probability": 0.6}


SETTINGS: dict[str, Any] = {
    # Values the seeded club has, used for these parameters more often than not.
    "dictionaries": {
        "tables": {"values": list(TABLES)},
        "players": {"values": [*PLAYERS, "setter"]},
        "bets": {"values": list(BETS)},
    },
    "parameters": {
        "path.table": _often("tables"),
        "path.name": _often("players"),
        "body.player": _often("players"),
        "body.bet": _often("bets"),
        "body.bets[*]": _often("bets"),
    },
    # The token is the test's to choose (below); schemathesis's ignored_auth check
    # still sends each request once more without it.
    "generation": {"with-security-parameters": False},
    # A body past the API's limit (64 KiB) is refused with 413 before it is parsed, and a
    # schema-violating body can be that long (a string far past its maxLength): 413 is as
    # much a refusal as 400 or 422, and documented for every operation with a body.
    "checks": {
        "negative_data_rejection": {
            "expected-statuses": [
                "400",
                "401",
                "403",
                "404",
                "405",
                "406",
                "409",
                "413",
                "415",
                "422",
                "428",
                "429",
                "5xx",
            ]
        }
    },
}
"""schemathesis's configuration (as its TOML file would hold it); test_stateful_contract
adds to it."""


DOCUMENTED_TYPES = frozenset(type_uris())


def seed(api: Api) -> None:
    bank = api.client()
    for name in PLAYERS:
        bank.ok("post", "/players", {"name": name})
        bank.ok("post", f"/players/{name}/deposits", {"amount": 10_000})
    bank.ok("post", "/players/setter/deposits", {"amount": 1_000_000})
    for table in TABLES:
        bank.ok("post", "/tables", {"id": table, "ruleset": "english"})
        for name in PLAYERS:
            bank.ok("post", f"/tables/{table}/seats", {"player": name})
        for name, die in zip(PLAYERS, (2, 6, 5), strict=True):  # ann is the caster
            bank.ok("post", f"/tables/{table}/casts", {"player": name, "die": die})
        bank.ok("post", f"/tables/{table}/stakes", {"amount": 100})
        bank.ok("post", f"/tables/{table}/lays", {"player": "bob", "amount": 50})
        bank.ok("post", f"/tables/{table}/covers", {})
        bank.ok("post", f"/tables/{table}/lays", {"player": "cat", "amount": 40})
        side_bet = {
            "player": "bob",
            "proposition": {"kind": "caster-wins", "totals": []},
            "backs": True,
            "stake": 10,
            "asks": 10,
        }
        bank.ok("post", f"/tables/{table}/side-bets", side_bet)
    bank.ok("post", "/tables/t2/refusals", {"bet": _pending_lay("t2", bank)})
    bank.ok("post", "/tables/t2/main", {"main": 7})
    bank.ok("post", "/tables/t2/throws", {"die1": 3, "die2": 4})
    state = bank.ok("get", "/tables/t1")
    assert state["caster"] == "ann" and {b["id"] for b in state["open_bets"]} <= set(BETS)


def _pending_lay(table: str, client: Client) -> str:
    state = client.ok("get", f"/tables/{table}")
    [found] = [b["id"] for b in state["open_bets"] if b["pending"] and b["kind"] == "laid"]
    bet: str = found
    return bet


def api_on(path: Path) -> Iterator[Api]:
    engine = db.make_engine(f"sqlite:///{path}")
    store = EventStore(engine, signer=SIGNER)
    yield Api(create_app(book=Book(store), TESTING=True))
    store.close()
    engine.dispose()


def problem_details(ctx: Any, response: Any, case: Any) -> bool | None:
    """An error is a problem: application/problem+json, its type documented."""
    if response.status_code < 400:
        return None
    [content_type] = response.headers.get("content-type", [""])
    assert content_type.split(";")[0] == PROBLEM_JSON, content_type
    problem = response.json()
    assert problem["type"] in DOCUMENTED_TYPES, f"undocumented problem type {problem['type']}"
    assert problem["status"] == response.status_code, problem
    return None
