"""A round over HTTP, on the rule sets that call the main and that roll it."""

from tests.api.conftest import Api


def test_a_round_over_http(api: Api) -> None:
    bank = api.client()
    for name in ("ann", "bob"):
        bank.ok("post", "/players", {"name": name})
        bank.ok("post", f"/players/{name}/deposits", {"amount": 1000})
    bank.ok("post", "/players/setter/deposits", {"amount": 10000})
    bank.ok("post", "/tables", {"id": "t1", "ruleset": "english"})
    for name in ("ann", "bob"):
        bank.ok("post", "/tables/t1/seats", {"player": name})
    bank.ok("post", "/tables/t1/casts", {"player": "ann", "die": 2})
    bank.ok("post", "/tables/t1/casts", {"player": "bob", "die": 6})
    state = bank.ok("get", "/tables/t1")
    assert state["caster"] == "ann"
    bank.ok("post", "/tables/t1/stakes", {"amount": 100})
    bank.ok("post", "/tables/t1/main", {"main": 7})
    bank.ok("post", "/tables/t1/throws", {"die1": 3, "die2": 4})
    assert bank.ok("get", "/players/ann/balance")["balance"] == 1100


def test_where_the_main_is_rolled_the_first_throw_sets_it(api: Api) -> None:
    bank = api.client()
    for name in ("ann", "bob"):
        bank.ok("post", "/players", {"name": name})
    bank.ok("post", "/tables", {"id": "fr", "ruleset": "french"})
    for name in ("ann", "bob"):
        bank.ok("post", "/tables/fr/seats", {"player": name})
    for name, die in (("ann", 1), ("bob", 2)):
        bank.ok("post", "/tables/fr/casts", {"player": name, "die": die})
    called = bank.post("/tables/fr/main", json={"main": 7})
    assert called.get_json()["type"] == "urn:hazard:rule:main-is-rolled"
    bank.ok("post", "/tables/fr/throws", {"die1": 5, "die2": 6})  # 11: no main, thrown again
    assert bank.ok("get", "/tables/fr")["main"] is None
    bank.ok("post", "/tables/fr/throws", {"die1": 3, "die2": 3})
    state = bank.ok("get", "/tables/fr")
    assert (state["phase"], state["main"]) == ("first-throw", 6)
