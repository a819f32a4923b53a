"""Errors as RFC 9457 problem details (application/problem+json).

Every error the API gives has a stable `type`: a rule of the table broken
(`urn:hazard:rule:throw-before-main`), or one of the service's own
(`urn:hazard:stale-version`, `urn:hazard:validation`, ...). `detail` says which rule
or which field; nothing a caller sends can produce a 500.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, json
from werkzeug.exceptions import HTTPException

from engine.errors import RuleBroken, RuleSetError
from ledger.book import InvalidAmount
from ledger.idempotency import IdempotencyConflict
from ledger.projections import Overdraft
from ledger.service import AlreadyExists, Forbidden, NotFound, StaleVersion
from ledger.store import ConcurrencyError

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("hazard.api")


def problem(status: int, kind: str, title: str, detail: str, **extra: Any) -> Response:
    body = {"type": f"urn:hazard:{kind}", "title": title, "status": status, "detail": detail}
    body.update(extra)
    return Response(json.dumps(body), status=status, mimetype=PROBLEM_JSON)


def _http(exc: HTTPException) -> Response:
    status = exc.code or 500
    data = getattr(exc, "data", None) or {}
    messages = data.get("messages")
    if status == 422 and messages:
        # webargs: {location: {field: [messages]}}; name the fields.
        fields = {
            field: errs
            for location in messages.values()
            for field, errs in (location.items() if isinstance(location, dict) else ())
        }
        detail = "; ".join(f"{f}: {' '.join(map(str, _flat(e)))}" for f, e in fields.items())
        return problem(422, "validation", "Invalid request", detail, errors=fields)
    kind = {
        400: "bad-request",
        401: "unauthenticated",
        403: "forbidden",
        404: "not-found",
        405: "method-not-allowed",
        406: "not-acceptable",
        409: "conflict",
        412: "precondition-failed",
        413: "too-large",
        415: "unsupported-media-type",
        428: "precondition-required",
    }.get(status, "http-error")
    detail = data.get("message") or exc.description or exc.name
    response = problem(status, kind, exc.name, str(detail))
    if status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    return response


def _flat(errors: Any) -> list[Any]:
    if isinstance(errors, dict):
        return [f"{k}: {' '.join(map(str, _flat(v)))}" for k, v in errors.items()]
    if isinstance(errors, list):
        return [x for e in errors for x in _flat(e)]
    return [errors]


def register(app: Flask) -> None:
    app.register_error_handler(HTTPException, _http)

    @app.errorhandler(RuleBroken)
    def _rule(exc: RuleBroken) -> Response:
        return problem(
            422, f"rule:{exc.code}", "A rule of the table was broken", exc.detail, rule=exc.code
        )

    @app.errorhandler(RuleSetError)
    def _ruleset(exc: RuleSetError) -> Response:
        return problem(
            422, "invalid-rule-set", "Invalid rule set", str(exc), field=getattr(exc, "field", None)
        )

    @app.errorhandler(StaleVersion)
    def _stale(exc: StaleVersion) -> Response:
        return problem(
            409, "stale-version", "The table has moved on", str(exc), current_version=exc.current
        )

    @app.errorhandler(ConcurrencyError)
    def _conflict(exc: ConcurrencyError) -> Response:
        return problem(409, "conflict", "A concurrent write got there first", str(exc))

    @app.errorhandler(IdempotencyConflict)
    def _key(exc: IdempotencyConflict) -> Response:
        return problem(422, "idempotency-key-reused", "Idempotency-Key reused", str(exc))

    @app.errorhandler(Overdraft)
    def _overdraft(exc: Overdraft) -> Response:
        return problem(422, "overdraft", "Not enough funds", str(exc), account=exc.account)

    @app.errorhandler(InvalidAmount)
    def _amount(exc: InvalidAmount) -> Response:
        return problem(422, "invalid-amount", "Invalid amount", str(exc))

    @app.errorhandler(NotFound)
    def _missing(exc: NotFound) -> Response:
        return problem(404, "not-found", "Not found", str(exc))

    @app.errorhandler(Forbidden)
    def _forbidden(exc: Forbidden) -> Response:
        return problem(403, "forbidden", "Forbidden", str(exc))

    @app.errorhandler(AlreadyExists)
    def _exists(exc: AlreadyExists) -> Response:
        return problem(409, "already-exists", "Already exists", str(exc))

    @app.errorhandler(Exception)
    def _bug(exc: Exception) -> Response:
        log.exception("unexpected error")
        return problem(500, "internal", "Internal error", "an unexpected error; it is logged")
