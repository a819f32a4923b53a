"""Who may do what: every operation, tried by every role.

The roles, as the issue has them: the setter does everything; a croupier runs tables,
play and bets but moves no money in or out and grants no credit; an auditor reads
everything and writes nothing; a player reads their own account and public table
state and places their own bets. Each operation is tried by the setter, a croupier,
an auditor, the player it concerns ("self"), another player acting for them
("other"), and no one. A refused attempt must change nothing; an allowed one must get
past the role check to the answer a good request gets.

Reads of settlements, rounds, statements and the audit log are in the same matrix,
in tests/api/test_reads.py and tests/api/test_audit.py's role tests; the signed log's
key, checkpoints and proofs in tests/api/test_log.py's.
"""

from __future__ import annotations

import pytest

from tests.api.conftest import Api, Client
from tests.api.rolekit import OPS, Op, attempt, club, event_count, prepare

ROLES = ("setter", "croupier", "auditor", "self", "other", "anonymous")


def _client(api: Api, role: str, op: Op) -> Client:
    if role == "anonymous":
        return api.client(None)
    if role == "self":
        return api.client("player", op.self_name)
    if role == "other":
        return api.client("player", op.other_name)
    return api.client(role, f"{role}-1")


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_each_role_may_do_what_it_may_and_nothing_else(api: Api, op: Op) -> None:
    bank = club(api)
    refused = [role for role in ROLES if role not in op.allowed]
    context = prepare(bank, op.setup)
    for role in refused:
        before = event_count(api)
        response = attempt(_client(api, role, op), op, context)
        expected = 401 if role == "anonymous" else 403
        assert response.status_code == expected, (role, response.get_json())
        assert response.get_json()["type"] == (
            "urn:hazard:unauthenticated" if role == "anonymous" else "urn:hazard:forbidden"
        )
        assert event_count(api) == before, role
    for role in sorted(op.allowed):
        context = prepare(bank, op.setup)  # each allowed attempt on a fresh table
        response = attempt(_client(api, role, op), op, context)
        assert response.status_code == op.expect, (role, response.get_json())
        if op.rule is not None:
            assert response.get_json()["rule"] == op.rule
        if response.status_code == 201:
            players = {"self": ("player", op.self_name), "other": ("player", op.other_name)}
            actor = api.actor(*players.get(role, (role, f"{role}-1")))
            assert {e["actor"] for e in response.get_json()["events"]} == {actor}


def test_the_matrix_covers_every_operation(api: Api) -> None:
    """A new route must join the matrix here or in the read suites' role tests."""
    covered = {
        (
            op.method.upper(),
            op.path.replace("{t}", "<table>")
            .replace("{d}", "<dispute_id>")
            .replace("/rounds/1/", "/rounds/<int:round>/"),
        )
        for op in OPS
    }
    for op in OPS:
        for name in ("ann", "bob", "cat", "dan"):
            path = op.path.replace(name, "<name>").replace("/limits/stake", "/limits/<kind>")
            covered.add((op.method.upper(), path))
    routes = {
        (method, rule.rule)
        for rule in api.app.url_map.iter_rules()
        for method in rule.methods or ()
        if method in {"GET", "POST", "PUT", "DELETE", "PATCH"}
        and rule.rule.startswith(("/players", "/tables"))
    }
    elsewhere = {("GET", "/tables/<table>/rounds"), ("GET", "/tables/<table>/rounds/<int:round>"),
                 ("GET", "/players/<name>/statement"),
                 ("GET", "/tables/<table>/rounds/<int:round>/replay"),
                 # a statement for a period: tests/api/test_period_statement.py
                 ("GET", "/players/<name>/period-statement"),
                 ("GET", "/players/<name>/period-statement.csv"),
                 ("GET", "/players/<name>/period-statement.pdf")}  # fmt: skip
    assert routes - covered - elsewhere == set()


ELSEWHERE = {
    "/settlements": "tests/api/test_reads.py",
    "/events": "tests/api/test_audit.py",
    "/audit/verify": "tests/api/test_audit.py",
    "/audit/head": "tests/api/test_audit.py",
    "/log/key": "tests/api/test_log.py",
    "/log/checkpoint": "tests/api/test_log.py",
    "/log/checkpoints/<int:size>": "tests/api/test_log.py",
    "/log/proofs/inclusion": "tests/api/test_log.py",
    "/log/proofs/consistency": "tests/api/test_log.py",
    "/log/proofs/tlog-proof": "tests/api/test_public_log.py",
    "/log/cosigned": "tests/api/test_log.py",
    "/log/gossip": "tests/api/test_log.py",
    "/reports/dice": "tests/api/test_roles.py (rolekit.OPS)",
    "/disputes": "tests/api/test_roles.py (rolekit.OPS)",
}
"""The operations outside /players and /tables, and the suite whose role tests try them."""


def test_every_operation_that_needs_a_token_is_tried_somewhere(api: Api) -> None:
    """Every route of the token-protected blueprints is in the matrix above or named in
    ELSEWHERE: a new one, such as the signed log's, cannot go untried by the roles."""
    from ledger.api import audit, disputes, log, reads, reports

    others = {blp.name for blp in (audit.blp, disputes.blp, log.blp, reads.blp, reports.blp)}
    routes = {
        rule.rule
        for rule in api.app.url_map.iter_rules()
        if rule.endpoint.split(".")[0] in others
        and not rule.rule.startswith(("/players", "/tables"))
    }
    assert routes == set(ELSEWHERE)
