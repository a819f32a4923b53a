"""Each request's id, its one log line, and its metrics.

The id is the caller's `X-Request-Id` when it is short and made of safe characters (a
load balancer's or a client's own, so that its logs and ours can be joined), and a new
one otherwise; either way the response carries it back in `X-Request-Id`. An id that
fails the check is replaced rather than refused: it is a tracing aid, not input, and
anything echoed into headers and logs must not be able to forge lines there.
"""

from __future__ import annotations

import logging
import os
import re
import time

from flask import Flask, Response, g, request

from ledger.api import metrics

HEADER = "X-Request-Id"
SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

log = logging.getLogger("hazard.access")


def request_id(offered: str | None) -> str:
    if offered is not None and SAFE_ID.fullmatch(offered):
        return offered
    # 128 random bits in hex, as uuid4().hex gave less its six fixed bits, without
    # building a UUID: a few us of every request.
    return os.urandom(16).hex()


def register(app: Flask) -> None:
    """Hooks that must run before any other: the id exists before anything can log."""

    @app.before_request
    def _start() -> None:
        g.request_started = time.perf_counter()
        g.request_id = request_id(request.headers.get(HEADER))

    @app.after_request
    def _finish(response: Response) -> Response:
        # Error handlers' responses come through here too (Flask finalises them), so
        # 4xx and 500 problems are counted and logged like any other.
        started = g.get("request_started", time.perf_counter())
        seconds = time.perf_counter() - started
        rule = request.url_rule
        route = rule.rule if rule is not None else None
        metrics.observe(request.method, route, response.status_code, seconds)
        if g.get("request_id") is None:  # a hook before ours failed: still trace it
            g.request_id = request_id(None)
        response.headers[HEADER] = g.request_id
        log.log(
            logging.ERROR if response.status_code >= 500 else logging.INFO,
            "%s %s %s",
            request.method,
            route or request.path,
            response.status_code,
            extra={
                "method": request.method,
                "route": route,
                "path": request.path,
                "status": response.status_code,
                "duration_ms": round(seconds * 1000, 3),
            },
        )
        return response
