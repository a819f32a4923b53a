"""openapi.yaml: made from the code, checked in, and complete.

The file is what clients read and what tests/api/test_contract.py fuzzes the app with;
these tests keep it equal to what the code generates (and the app serves), valid
OpenAPI, covering every route, with every error a problem whose type is real.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import yaml

from engine.errors import Rule
from engine.state import RoundResult
from ledger.api import contract, generate, problems
from tests.api.conftest import Api

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "openapi.yaml"
PROBLEM = {"schema": {"$ref": "#/components/schemas/Problem"}}

PLATFORM = {
    "static": "Flask's own, unused",
    "api-docs.openapi_json": "the contract itself",
    "api-docs.openapi_swagger_ui": "the docs page",
    "docs_asset": "the docs page's scripts and styles",
    "docs_slash": "/docs/, redirected to the docs page",
    "ops.healthz": "liveness, for the platform (ledger/api/ops.py)",
    "ops.readyz": "readiness, for the platform",
    "ops.prometheus": "metrics, for the internal network only",
}
"""Routes that are not the API's, and so not in its contract, with why."""


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    return loaded


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in spec["paths"].items():
        for method in contract.METHODS:
            if method in item:
                yield path, method, item[method]


def resolved(spec: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    ref = response.get("$ref")
    if ref is None:
        return response
    found: dict[str, Any] = spec["components"]["responses"][ref.rsplit("/", 1)[1]]
    return found


# -- made from the code ---------------------------------------------------------------


def test_openapi_yaml_is_what_the_code_generates() -> None:
    generated = generate()
    checked_in = OPENAPI.read_text(encoding="utf-8") if OPENAPI.exists() else ""
    if generated != checked_in:
        diff = difflib.unified_diff(
            checked_in.splitlines(), generated.splitlines(), "openapi.yaml", "generated", n=1
        )
        shown = "\n".join(list(diff)[:60])
        pytest.fail(
            f"openapi.yaml is not what the code generates: run `{contract.COMMAND}` and "
            f"commit the result.\n{shown}",
            pytrace=False,
        )


def test_the_app_serves_the_same_contract(sqlite_api: Api, spec: dict[str, Any]) -> None:
    response = sqlite_api.client(None).get("/openapi.json")  # no token: the contract is public
    assert response.status_code == 200
    assert response.get_json() == spec


# -- valid and complete ---------------------------------------------------------------


def test_it_is_valid_openapi() -> None:
    # Against the OpenAPI 3.0 meta-schema schemathesis carries.
    schemathesis.openapi.from_path(OPENAPI).validate()


def test_every_route_of_the_api_is_documented(sqlite_api: Api, spec: dict[str, Any]) -> None:
    routes = set()
    endpoints = set()
    for rule in sqlite_api.app.url_map.iter_rules():
        endpoints.add(rule.endpoint)
        if rule.endpoint in PLATFORM or rule.endpoint.startswith("console."):
            continue  # the console's pages are HTML for people (ledger/console), not the API
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        for method in rule.methods or ():
            if method not in ("HEAD", "OPTIONS"):  # Flask answers those for every route
                routes.add((path, method.lower()))
    documented = {(path, method) for path, method, _ in operations(spec)}
    assert routes - documented == set(), "routes missing from openapi.yaml"
    assert documented - routes == set(), "openapi.yaml documents routes the app lacks"
    assert set(PLATFORM) <= endpoints, "PLATFORM names a route that is gone"


FILES = {
    "/export": {"application/jsonl", "text/csv"},
    "/log/proofs/tlog-proof": {"text/plain"},
    "/players/{name}/period-statement.csv": {"text/csv"},
    "/players/{name}/period-statement.pdf": {"application/pdf"},
    "/evenings/{number}.pdf": {"application/pdf"},
}
FILES |= {
    f"/reports/{name}.csv": {"text/csv"} for name in ("exceptions", "authentication", "significant")
}
"""Operations whose success is a file to save rather than JSON: its media types."""


def test_every_error_is_a_problem(spec: dict[str, Any]) -> None:
    for path, method, operation in operations(spec):
        assert "default" in operation["responses"], (path, method)
        for status, response in operation["responses"].items():
            content = resolved(spec, response).get("content", {})
            if status == "default" or int(status) >= 400:
                assert content == {problems.PROBLEM_JSON: PROBLEM}, (path, method, status)
            else:
                allowed = FILES.get(path, {"application/json"})
                assert set(content) <= allowed, (path, method, status)


def test_every_protected_operation_says_401_and_403(spec: dict[str, Any]) -> None:
    assert spec["security"] == [{"bearer": []}]
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, method, operation in operations(spec):
        if operation.get("security") == []:
            continue
        unauthenticated = resolved(spec, operation["responses"]["401"])
        assert "WWW-Authenticate" in unauthenticated["headers"], (path, method)
        assert "403" in operation["responses"], (path, method)


SAME_TWICE = {("/log/gossip", "post")}
"""Writes that are the same however often they are sent, with no key to say so: a
report of a checkpoint is kept once per tree (and may come without a token, to which
a key would be scoped)."""


def test_writes_document_their_headers(spec: dict[str, Any]) -> None:
    for path, method, operation in operations(spec):
        headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
        if method in ("post", "put") and (path, method) not in SAME_TWICE:
            assert "Idempotency-Key" in headers, (path, method)
        if method == "post" and path.startswith("/tables/{table}/"):
            assert "If-Match" in headers, (path, method)
    etag = spec["paths"]["/tables/{table}"]["get"]["responses"]["200"]["headers"]["ETag"]
    assert etag["schema"] == {"type": "string"}


# -- problem types --------------------------------------------------------------------


def test_the_documented_problem_types_are_the_real_ones(spec: dict[str, Any]) -> None:
    described = spec["components"]["schemas"]["Problem"]["properties"]["type"]["description"]
    named = set(re.findall(r"`(urn:hazard:[a-z-]+)`", described))
    assert named == {problems.PREFIX + kind for kind in problems.TYPES}
    rules, evenings = described.split(problems.RULE_PREFIX + "<code>")[1].split(
        problems.EVENING_PREFIX + "<rule>"
    )
    codes = set(re.findall(r"`([a-z-]+)`", rules.split("one of")[1]))
    assert codes == {rule.value for rule in Rule}
    codes = set(re.findall(r"`([a-z-]+)`", evenings.split("one of")[1]))
    assert codes == set(problems.EVENING_RULES)


def test_every_documented_kind_is_sent_and_every_kind_sent_is_documented() -> None:
    # The service's problems are made by the HTTP errors' table, the table of plain
    # refusals, and `problem(status, "kind", ...)` calls, read from the source as the
    # code has no registry of those to ask.
    sent = {problems.HTTP_OTHER, *problems.HTTP_KINDS.values()}
    sent |= {kind for _, kind, _ in problems.PLAIN.values()}
    for source in (ROOT / "ledger").rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        sent |= set(re.findall(r"\bproblem\(\s*\d+,\s*\"([a-z-]+)\"", text))
    assert sent == set(problems.TYPES)


def test_every_rule_is_one_the_engine_enforces() -> None:
    sources = "\n".join(
        path.read_text(encoding="utf-8")
        for path in (ROOT / "engine").rglob("*.py")
        if path.name != "errors.py"
    )
    assert [r.name for r in Rule if f"Rule.{r.name}" not in sources] == []


# -- what the fields take and give ----------------------------------------------------


def test_dice_are_documented_as_1_to_6(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    for schema, field in [
        ("Throw", "die1"),
        ("Throw", "die2"),
        ("Cast", "die"),
        ("VoidThrow", "standing"),
    ]:
        described = schemas[schema]["properties"][field]
        assert (described["minimum"], described["maximum"]) == (1, 6), (schema, field)


def test_a_rounds_result_and_winner_are_documented(spec: dict[str, Any]) -> None:
    for name in ("Round", "RoundDetail"):
        properties = spec["components"]["schemas"][name]["properties"]
        result = properties["result"]
        assert result["enum"] == [r.value for r in RoundResult] + [None], name
        for r in RoundResult:
            assert f"`{r.value}`" in result["description"], (name, r)
        winner = properties["winner"]
        assert winner["nullable"] is True and "setter" in winner["description"], name
