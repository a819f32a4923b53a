"""The whole club's dice-fairness page names a bounded number of each rule set's tables
(the newest, and how many more), where GET /reports/dice names every one: a club that
has opened thousands of tables gets a page a person can read, and the API keeps its
contract. Both read ledger.audit.fairness.report, the console with a bound."""

from __future__ import annotations

import html

import pytest

from ledger.console import audit
from tests.api.conftest import Api, Client
from tests.console.officekit import console

TABLES = [f"t{n}" for n in range(1, 6)]


def _decided(croupier: Client, table: str) -> None:
    """`table` opened for ann and bob, and one round decided: main 7, thrown 3+4."""
    croupier.ok("post", "/tables", {"id": table, "ruleset": "english"})
    for name in ("ann", "bob"):
        croupier.ok("post", f"/tables/{table}/seats", {"player": name})
    croupier.ok("post", f"/tables/{table}/casts", {"player": "ann", "die": 1})
    croupier.ok("post", f"/tables/{table}/casts", {"player": "bob", "die": 2})
    croupier.ok("post", f"/tables/{table}/main", {"main": 7})
    croupier.ok("post", f"/tables/{table}/throws", {"die1": 3, "die2": 4})


def test_the_page_counts_each_rule_sets_tables_and_names_the_newest(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = api.client()
    for name in ("ann", "bob"):
        bank.ok("post", "/players", {"name": name})
    croupier = api.client("croupier", "cecil")
    for table in TABLES:
        _decided(croupier, table)
    monkeypatch.setattr(audit, "TABLES_NAMED", 3)
    page = html.unescape(
        console(api, "auditor", "audrey").get("/console/audit/fairness").get_data(as_text=True)
    )
    assert "Rule set english (5 tables: the newest t5, t4, t3 and 2 more)" in page
    assert "t1," not in page and "t2," not in page
    # The API names every table, as its contract says, and nothing more.
    [entry] = bank.ok("get", "/reports/dice")["rulesets"]
    assert entry["tables"] == TABLES
    assert set(entry) == {"ruleset", "tables", "test", "mains"}
    # A table's own page names its table alone.
    one = console(api, "auditor", "audrey").get("/console/audit/fairness?table=t2")
    assert "Rule set english (tables t2)" in html.unescape(one.get_data(as_text=True))


def test_a_tables_page_shows_the_order_of_its_throws(api: Api) -> None:
    bank = api.client()
    for name in ("ann", "bob"):
        bank.ok("post", "/players", {"name": name})
    _decided(api.client("croupier", "cecil"), "t1")
    page = html.unescape(
        console(api, "auditor", "audrey")
        .get("/console/audit/fairness?table=t1")
        .get_data(as_text=True)
    )
    assert "<h2>The order of the throws</h2>" in page
    # One throw, a 7: no runs to test; one throw: no serial test. Two units, no tests.
    assert '<th scope="row">table t1</th><td class="amount">1</td>' in page
    assert '<th scope="row">croupier cecil</th>' in page
    assert "0 tests: chance alone would flag 0.00 of them at 0.01" in page
    whole = console(api, "auditor", "audrey").get("/console/audit/fairness")
    assert "not tested for the whole club" in html.unescape(whole.get_data(as_text=True))
