"""The OpenAPI contract: what /openapi.json serves and `hazard openapi` writes to
openapi.yaml, generated from the routes and schemas so that it cannot fall behind them.

flask-smorest documents the paths, parameters, bodies and responses the views
declare; `document` adds what it cannot know:
  - errors are problem details: a response whose schema is Problem is
    application/problem+json (flask-smorest would say application/json);
  - every operation behind the bearer token (all but those marked `security: []`)
    may answer 401 and 403, every one with a body 400, 413 and 415, every write 503
    (busy), every heavy read (ledger.web.heavy) 429 and 503, and every one open to
    callers without a token (ledger.web.anonymous) 503, whether or not its view says so;
  - a query parameter is never null: a query carries text (apispec documents a field
    whose load_default is None, absent, as nullable, with null among its values);
  - links: which values of an answer the next request takes (ledger.api.links);
  - keys in a fixed order (paths sorted, responses by status), so that a change to
    the code is a small, readable diff of openapi.yaml.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml
from apispec import APISpec
from flask import Flask, Response
from flask_smorest import Api

from ledger.api import links
from ledger.api.problems import PROBLEM_JSON, ProblemSchema
from ledger.web import heavy

COMMAND = "hazard openapi --write openapi.yaml"
"""How openapi.yaml is made; the drift test's failure says it."""
HEADER = f"# Generated from the code by `{COMMAND}`: edit the code, not this file.\n"

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")

SHARED_RESPONSES = {
    "BadRequest": {
        "description": "The body is not JSON (`detail` says where it fails), or nests "
        "deeper or has a longer number than any request needs",
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
    "TooLarge": {
        "description": "The body is larger than any request needs",
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
    "UnsupportedMediaType": {
        "description": "A body sent as something other than JSON: send it with "
        "`Content-Type: application/json`",
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
    "Unauthenticated": {
        "description": "No bearer token, or not a live one",
        "headers": {"WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}}},
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
    "Forbidden": {
        "description": "The caller's role or name does not allow this",
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
    "Busy": {
        "description": "Another writer held the database past the lock timeout; "
        "nothing was written: retry",
        "headers": {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "string"}}
        },
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
    "TooManyRequests": {
        "description": "This token already runs as many heavy reads as one caller may at "
        "once: retry when one has finished",
        "headers": {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "string"}}
        },
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
    "Overloaded": {
        "description": "The server already runs as many heavy reads, or as many requests "
        "without a token, as it takes at once (`urn:hazard:overloaded`): retry",
        "headers": {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "string"}}
        },
        "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}},
    },
}
"""What any operation with a body, and any behind the token, may answer (every view
calls `require`), any write (Busy), and any heavy read (TooManyRequests, Overloaded),
whether or not its view says so."""
WRITES = ("put", "post", "patch", "delete")

FLASK_SMOREST_RESPONSES = {
    "DEFAULT_ERROR": "Any other error",
    "UNPROCESSABLE_ENTITY": "A field of the request is invalid; `errors` names it",
}
"""Better words for the shared responses flask-smorest adds ("Unprocessable Entity")."""


class ContractApi(Api):  # type: ignore[misc]  # flask-smorest is untyped
    """flask-smorest's Api with errors documented as problems, serving `document`."""

    ERROR_SCHEMA = ProblemSchema  # the DEFAULT_ERROR and 422 responses flask-smorest adds

    def init_app(self, app: Flask, *args: Any, **kwargs: Any) -> None:
        super().init_app(app, *args, **kwargs)
        app.extensions["hazard.contract"] = self

    def _openapi_json(self) -> Response:
        # flask-smorest's own view serves spec.to_dict(); this one serves what openapi.yaml
        # holds. stdlib json, not Flask's, which would sort the keys.
        return Response(json.dumps(document(self.spec), indent=2), mimetype="application/json")


def of(app: Flask) -> dict[str, Any]:
    """The contract of an app made by create_app."""
    api: ContractApi = app.extensions["hazard.contract"]
    return document(api.spec)


def document(spec: APISpec) -> dict[str, Any]:
    doc = copy.deepcopy(spec.to_dict())  # to_dict hands out the spec's own dicts
    responses = doc.setdefault("components", {}).setdefault("responses", {})
    responses.update(copy.deepcopy(SHARED_RESPONSES))
    for name, description in FLASK_SMOREST_RESPONSES.items():
        if name in responses:
            responses[name]["description"] = description
    for item in doc["paths"].values():
        for method, operation in ((m, item[m]) for m in METHODS if m in item):
            if method in WRITES:
                _also(operation, "503", "Busy")
            if operation.pop(heavy.MARK, False):
                _also(operation, "429", "TooManyRequests")
                _also(operation, "503", "Overloaded")
            if {} in operation.get("security", []):  # open to strangers, in their pool
                _also(operation, "503", "Overloaded")
            if "requestBody" in operation:
                _also(operation, "400", "BadRequest")
                _also(operation, "413", "TooLarge")
                _also(operation, "415", "UnsupportedMediaType")
            if operation.get("security") != []:
                _also(operation, "401", "Unauthenticated")
                _also(operation, "403", "Forbidden")
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query":
                    _sent(parameter["schema"])
    for response in _responses(doc):
        content = response.get("content", {})
        if content.get("application/json", {}).get("schema") == PROBLEM_REF:
            content[PROBLEM_JSON] = content.pop("application/json")
    links.add(doc)
    return _ordered(doc)


def _also(operation: dict[str, Any], status: str, shared: str) -> None:
    """The operation may answer `status` as SHARED_RESPONSES[shared] says, unless its
    view documents that status itself."""
    operation["responses"].setdefault(status, {"$ref": f"#/components/responses/{shared}"})


def _sent(schema: dict[str, Any]) -> None:
    """A query parameter's schema as a client can send it: without the null a query
    cannot carry, which a client generated from the contract would otherwise offer
    (openapi-python-client makes three enums of `[open, resolved, null]`)."""
    schema.pop("nullable", None)
    if "default" in schema and schema["default"] is None:
        del schema["default"]
    if "enum" in schema:
        schema["enum"] = [value for value in schema["enum"] if value is not None]


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML is untyped here
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a schema used twice is written twice, not as an &anchor

    def represent_str(self, data: str) -> Any:
        # Text of several lines (the problem types) as a block, as it reads in the code,
        # not as a quoted string with every line break doubled.
        style = "|" if "\n" in data else None
        return self.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _Dumper.represent_str)


def to_yaml(doc: dict[str, Any]) -> str:
    body: str = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return HEADER + body


def _responses(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every response object of the spec: the operations' own and the shared ones."""
    found = list(doc["components"]["responses"].values())
    for item in doc["paths"].values():
        for method in METHODS:
            found += [r for r in item.get(method, {}).get("responses", {}).values()]
    return [r for r in found if "$ref" not in r]


# -- key order ----------------------------------------------------------------------

TOP = ("openapi", "info", "servers", "security", "tags", "paths", "components")
OPERATION = (
    "tags",
    "summary",
    "description",
    "operationId",
    "security",
    "parameters",
    "requestBody",
    "responses",
)


def _first(mapping: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """`mapping` with the keys in `order` first, in that order; the rest as they were."""
    keys = [k for k in order if k in mapping] + [k for k in mapping if k not in order]
    return {k: mapping[k] for k in keys}


def _by_status(status: str) -> tuple[int, str]:
    return (1, status) if status == "default" else (0, status)


def _ordered(doc: dict[str, Any]) -> dict[str, Any]:
    paths = {}
    for path in sorted(doc["paths"]):
        item = _first(doc["paths"][path], ("summary", "description", "parameters", *METHODS))
        for method in METHODS:
            if method in item:
                operation = _first(item[method], OPERATION)
                if "summary" in operation:  # a docstring's first paragraph, on one line
                    operation["summary"] = " ".join(operation["summary"].split())
                responses = operation["responses"]
                statuses = sorted(responses, key=_by_status)
                operation["responses"] = {status: responses[status] for status in statuses}
                item[method] = operation
        paths[path] = item
    components = {
        kind: {name: found[name] for name in sorted(found)}
        for kind, found in sorted(doc["components"].items())
    }
    return _first({**doc, "paths": paths, "components": components}, TOP)
