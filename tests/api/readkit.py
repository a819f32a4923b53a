"""A small game played through the API, and how a test reads it back: a listing walked
page by page, a refusal held to its problem details.

    bank = play(api)                          # two tables, three players, the bank
    items = walk(bank, "/settlements", limit=2)
    problem(bank.get("/tables/nope"), 404)
"""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api, Client

PROBLEM = "application/problem+json"


def play(api: Api) -> Client:
    """Two tables. t1: ann casts three rounds against bob and the bank (a nick; a chance
    thrown, with odds; a refused lay, the round left open). t2: bob nicks once.
    cat has an account and never plays."""
    bank = api.client()
    for name in ("ann", "bob", "cat"):
        bank.ok("post", "/players", {"name": name})
        bank.ok("post", f"/players/{name}/deposits", {"amount": 1000})
    bank.ok("post", "/players/setter/deposits", {"amount": 10000})

    bank.ok("post", "/tables", {"id": "t1", "ruleset": "english"})
    for name in ("ann", "bob"):
        bank.ok("post", "/tables/t1/seats", {"player": name})
    bank.ok("post", "/tables/t1/casts", {"player": "ann", "die": 2})  # the lowest casts
    bank.ok("post", "/tables/t1/casts", {"player": "bob", "die": 6})
    # Round 1: ann stakes 100 against the bank, bob lays 50 against ann; a nick.
    bank.ok("post", "/tables/t1/stakes", {"amount": 100})
    bank.ok("post", "/tables/t1/lays", {"player": "bob", "amount": 50})
    bank.ok("post", "/tables/t1/covers", {})
    bank.ok("post", "/tables/t1/main", {"main": 7})
    bank.ok("post", "/tables/t1/throws", {"die1": 3, "die2": 4})
    # Round 2: a chance of 4; bob lays odds on the main; ann throws the chance.
    bank.ok("post", "/tables/t1/stakes", {"amount": 40})
    bank.ok("post", "/tables/t1/lays", {"player": "bob", "amount": 20})
    bank.ok("post", "/tables/t1/covers", {})
    bank.ok("post", "/tables/t1/main", {"main": 6})
    bank.ok("post", "/tables/t1/throws", {"die1": 2, "die2": 2})
    bank.ok("post", "/tables/t1/odds", {"player": "bob", "on": "main", "amount": 20})
    bank.ok("post", "/tables/t1/throws", {"die1": 1, "die2": 1})
    bank.ok("post", "/tables/t1/throws", {"die1": 2, "die2": 2})
    # Round 3: bob lays, ann refuses it; the round stays open.
    laid = bank.ok("post", "/tables/t1/lays", {"player": "bob", "amount": 10})
    bank.ok("post", "/tables/t1/refusals", {"bet": laid["events"][0]["payload"]["bet_id"]})

    bank.ok("post", "/tables", {"id": "t2", "ruleset": "english"})
    for name in ("bob", "ann"):
        bank.ok("post", "/tables/t2/seats", {"player": name})
    bank.ok("post", "/tables/t2/casts", {"player": "bob", "die": 1})
    bank.ok("post", "/tables/t2/casts", {"player": "ann", "die": 3})
    bank.ok("post", "/tables/t2/stakes", {"amount": 30})
    bank.ok("post", "/tables/t2/main", {"main": 8})
    bank.ok("post", "/tables/t2/throws", {"die1": 6, "die2": 2})
    return bank


def walk(client: Client, path: str, limit: int, key: str = "next_after", **query: Any) -> list:
    """Every item of a listing, page by page; each page but the last is full."""
    items: list[Any] = []
    after = 0
    for _ in range(1000):
        body = client.ok("get", path, query_string={**query, "after": after, "limit": limit})
        items += body["items"]
        if body[key] is None:
            # The last page may be full; it is empty only if the listing is.
            assert len(body["items"]) <= limit
            assert body["items"] or after == 0
            return items
        assert len(body["items"]) >= limit
        after = body[key]
    raise AssertionError("the listing never ended")


def problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_json()
    assert response.mimetype == PROBLEM
    body: dict[str, Any] = response.get_json()
    assert body["status"] == status
    return body
