"""Errors as RFC 9457 problem details (application/problem+json).

Every error the API gives has a stable `type`: a rule of the table broken
(`urn:hazard:rule:throw-before-main`), or one of the service's own in TYPES
(`urn:hazard:stale-version`, `urn:hazard:validation`, ...). `detail` says which rule
or which field; nothing a caller sends can produce a 500. `catalogue()` lists the
types for the OpenAPI contract, from the same names the handlers use, so the
documented list cannot drift from what is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, json
from marshmallow import Schema, fields
from werkzeug.exceptions import HTTPException

from engine.errors import Rule, RuleBroken, RuleSetError
from ledger.books.limits import LimitReached, OnBreak
from ledger.books.projections import CreditInUse, OutOfRange, Overdraft
from ledger.commands.evenings import RULES as EVENING_RULES
from ledger.commands.evenings import EveningRefused
from ledger.commands.limits import InvalidLimit
from ledger.service import (
    AlreadyExists,
    Forbidden,
    InvalidAmount,
    InvalidName,
    NotFound,
    SeedUnavailable,
    StaleVersion,
)
from ledger.store.eventstore import Busy, ConcurrencyError, NoSigningKey, is_busy
from ledger.store.idempotency import IdempotencyConflict
from ledger.web.heavy import RETRY_AFTER, Overloaded, TooManyReads

PROBLEM_JSON = "application/problem+json"
PREFIX = "urn:hazard:"
RULE_PREFIX = PREFIX + "rule:"
EVENING_PREFIX = PREFIX + "evening:"
log = logging.getLogger("hazard.api")
HTTP_OTHER = "http-error"
"""The kind of an HTTP error HTTP_KINDS does not name."""

TYPES: dict[str, str] = {
    "validation": "422: a field of the request is invalid; `errors` names each field and why",
    "bad-request": "400: the request is malformed (a body that is not JSON, ...)",
    "unauthenticated": "401: no bearer token, or not a live one",
    "forbidden": "403: the caller's role or name does not allow this",
    "not-found": "404: no such table, player, round or path",
    "method-not-allowed": "405: the path does not take this method",
    "not-acceptable": "406: no representation the caller accepts",
    "conflict": "409: a concurrent write got there first; retry",
    "already-exists": "409: a table or player by that name is already there",
    "stale-version": "409: If-Match named a version the table has moved on from; "
    "`current_version` is where it is",
    "precondition-failed": "412: a precondition failed",
    "too-large": "413, 414, 431: the request is too large (its body, its URL, its headers)",
    "unsupported-media-type": "415: the body's content type is not one taken here",
    "precondition-required": "428: a precondition is required",
    "invalid-rule-set": "422: a custom rule set is malformed; `field` names the part",
    "invalid-amount": "422: an amount the ledger cannot hold",
    "overdraft": "422: not enough funds; `account` is whose",
    "credit-in-use": "422: a credit limit below what the account has drawn on it; "
    "`account` is whose, `drawn` how much",
    "limit-reached": "422: a deposit or bet past a limit the player set; `account` is "
    "whose, `limit` which (deposit_24h, deposit_7d, loss_evening, loss_week, stake)",
    "on-break": "403: the player is on a time-out or self-exclusion, `until` when it ends: "
    "no stakes, lays, odds, side bets or deposits (withdrawals still work)",
    "invalid-limit": "422: a limit or break the rules do not allow (a time-out of 24 hours "
    "to 6 weeks, a self-exclusion of 6 to 120 months, one never shorter than the one in force)",
    "idempotency-key-reused": "422: the Idempotency-Key came before with another request",
    "seed-unavailable": "409: a server-dice table's turn needs its secret server seed, and "
    "this database does not hold it (a table restored from an export mid-turn)",
    HTTP_OTHER: "any other HTTP error, by its status",
    "internal": "500: a fault of the service, logged; never the caller's doing",
    "not-ready": "503: the service cannot serve yet (/readyz): the database is "
    "unreachable or its schema behind",
    "busy": "503: another writer held the database past the lock timeout; nothing was "
    "written: retry after `Retry-After` seconds",
    "too-many-requests": "429: this token already runs as many heavy reads (exports, "
    "replays, recalls, reports, the log's checks) as one caller may at once; nothing was "
    "read: retry after `Retry-After` seconds",
    "overloaded": "503: the server already runs as many heavy reads, or as many requests "
    "without a token, as it takes at once; nothing was read: retry after `Retry-After` "
    "seconds",
    "no-signing-key": "503: the service has no key to sign the log's checkpoints, so it "
    "writes nothing (`hazard key create`)",
}
"""The service's own problem types (`urn:hazard:<kind>`), each with its status and
meaning. The table's rules add one type each: `urn:hazard:rule:<code>` (RuleBroken)."""

BUSY_RETRY_AFTER = "1"
"""Seconds a busy answer asks the caller to wait: writes hold the lock for
milliseconds, so a wait past the lock timeout is a long job (a rebuild) or a fault."""

HTTP_KINDS = {
    400: "bad-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    409: "conflict",
    412: "precondition-failed",
    413: "too-large",
    414: "too-large",
    415: "unsupported-media-type",
    428: "precondition-required",
    431: "too-large",
}
"""The kind of a werkzeug HTTP error (an abort, a route not found, ...), or of one
gunicorn answers itself (ledger.api.servererrors), by status."""


def type_uris() -> list[str]:
    """Every problem type the API sends."""
    return (
        [PREFIX + kind for kind in TYPES]
        + [RULE_PREFIX + rule.value for rule in Rule]
        + [EVENING_PREFIX + rule for rule in EVENING_RULES]
    )


def catalogue() -> str:
    """The problem types, as Markdown for the contract."""
    return "\n".join(
        [
            "A stable URI naming the problem: branch on it, not on `title` or `detail`.",
            "",
            *(f"- `{PREFIX}{kind}`: {meaning}" for kind, meaning in TYPES.items()),
            f"- `{RULE_PREFIX}<code>`: 422: a rule of the table was broken; `rule` is the "
            "code, one of:",
            *(f"  - `{rule.value}`" for rule in Rule),
            f"- `{EVENING_PREFIX}<rule>`: a rule of the club's evenings was broken; `rule` "
            "names it, one of:",
            *(f"  - `{rule}`: {meaning}" for rule, meaning in EVENING_RULES.items()),
        ]
    )


class ProblemSchema(Schema):
    """RFC 9457 problem details (application/problem+json)."""

    type = fields.String(required=True, metadata={"description": catalogue()})
    title = fields.String(required=True, metadata={"description": "The type, in words"})
    status = fields.Integer(required=True, metadata={"description": "The HTTP status"})
    detail = fields.String(required=True, metadata={"description": "What went wrong, here"})
    rule = fields.String(metadata={"description": "A rule broken: its code"})
    field = fields.String(
        allow_none=True, metadata={"description": "An invalid rule set: the part at fault"}
    )
    current_version = fields.Integer(metadata={"description": "A stale version: the table's"})
    account = fields.String(
        metadata={"description": "An overdraft, a limit reached, a break: whose account"}
    )
    limit = fields.String(metadata={"description": "A player's limit reached: which kind"})
    until = fields.String(metadata={"description": "A player's break: when it ends (UTC)"})
    errors = fields.Dict(
        metadata={
            "description": "A validation problem: each invalid field and why (a list of "
            "messages; a nested field's are nested the same way)"
        }
    )


def problem(status: int, kind: str, title: str, detail: str, **extra: Any) -> Response:
    body = {"type": PREFIX + kind, "title": title, "status": status, "detail": detail}
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
    kind = HTTP_KINDS.get(status, HTTP_OTHER)
    detail = data.get("message") or exc.description or exc.name
    response = problem(status, kind, exc.name, str(detail))
    # The exception's own headers say what HTTP requires of its status: a 405's Allow,
    # a 503's Retry-After. Its Content-Type is for the HTML page it would have sent.
    for name, value in [*exc.get_headers(), *(data.get("headers") or {}).items()]:
        if name.lower() != "content-type":
            response.headers[name] = value
    if status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    return response


def _flat(errors: Any) -> list[Any]:
    if isinstance(errors, dict):
        return [f"{k}: {' '.join(map(str, _flat(v)))}" for k, v in errors.items()]
    if isinstance(errors, list):
        return [x for e in errors for x in _flat(e)]
    return [errors]


PLAIN: dict[type[Exception], tuple[int, str, str]] = {
    ConcurrencyError: (409, "conflict", "A concurrent write got there first"),
    IdempotencyConflict: (422, "idempotency-key-reused", "Idempotency-Key reused"),
    InvalidAmount: (422, "invalid-amount", "Invalid amount"),
    OutOfRange: (422, "invalid-amount", "Invalid amount"),
    NotFound: (404, "not-found", "Not found"),
    Forbidden: (403, "forbidden", "Forbidden"),
    AlreadyExists: (409, "already-exists", "Already exists"),
    SeedUnavailable: (409, "seed-unavailable", "Server seed unavailable"),
    InvalidLimit: (422, "invalid-limit", "Not a limit or break the rules allow"),
}
"""The service's refusals whose message is the whole story: status, kind and title."""


def _plain(status: int, kind: str, title: str) -> Callable[[Exception], Response]:
    def handle(exc: Exception) -> Response:
        return problem(status, kind, title, str(exc))

    return handle


def register(app: Flask) -> None:
    app.register_error_handler(HTTPException, _http)

    @app.errorhandler(RuleBroken)
    def _rule(exc: RuleBroken) -> Response:
        return problem(
            422, f"rule:{exc.code}", "A rule of the table was broken", exc.detail, rule=exc.code
        )

    @app.errorhandler(EveningRefused)
    def _evening(exc: EveningRefused) -> Response:
        return problem(
            exc.status,
            EVENING_PREFIX.removeprefix(PREFIX) + exc.rule,
            "A rule of the evenings was broken",
            exc.detail,
            rule=exc.rule,
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

    @app.errorhandler(InvalidName)
    def _name(exc: InvalidName) -> Response:
        # The schemas refuse such names first; the service's own check, for any caller
        # that skips them, answers the same way.
        errors = {exc.field: [exc.message]}
        return problem(422, "validation", "Invalid request", str(exc), errors=errors)

    @app.errorhandler(Overdraft)
    def _overdraft(exc: Overdraft) -> Response:
        return problem(422, "overdraft", "Not enough funds", str(exc), account=exc.account)

    @app.errorhandler(CreditInUse)
    def _credit_in_use(exc: CreditInUse) -> Response:
        return problem(
            422, "credit-in-use", "Credit in use", str(exc), account=exc.account, drawn=exc.drawn
        )

    @app.errorhandler(LimitReached)
    def _limit(exc: LimitReached) -> Response:
        return problem(
            422, "limit-reached", "A player's limit", str(exc), account=exc.account, limit=exc.kind
        )

    @app.errorhandler(OnBreak)
    def _on_break(exc: OnBreak) -> Response:
        return problem(
            403, "on-break", "The player is on a break", str(exc), account=exc.account,
            until=exc.until,
        )  # fmt: skip

    for error, (status, kind, title) in PLAIN.items():
        app.register_error_handler(error, _plain(status, kind, title))

    @app.errorhandler(Busy)
    def _busy(exc: Exception) -> Response:
        response = problem(503, "busy", "The database is busy", str(exc))
        response.headers["Retry-After"] = BUSY_RETRY_AFTER
        return response

    @app.errorhandler(TooManyReads)
    def _too_many(exc: Exception) -> Response:
        response = problem(429, "too-many-requests", "Too many heavy reads", str(exc))
        response.headers["Retry-After"] = RETRY_AFTER
        return response

    @app.errorhandler(Overloaded)
    def _overloaded(exc: Exception) -> Response:
        response = problem(503, "overloaded", "Too many heavy reads at once", str(exc))
        response.headers["Retry-After"] = RETRY_AFTER
        return response

    @app.errorhandler(NoSigningKey)
    def _no_key(exc: Exception) -> Response:
        log.error("write refused: %s", exc)
        return problem(503, "no-signing-key", "No signing key", str(exc))

    @app.errorhandler(Exception)
    def _bug(exc: Exception) -> Response:
        if is_busy(exc):  # a lock wait outside the store's write path: busy all the same
            return _busy(Busy("the database is busy with another writer; try again"))
        log.exception("unexpected error")
        return problem(500, "internal", "Internal error", "an unexpected error; it is logged")
