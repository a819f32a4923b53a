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
