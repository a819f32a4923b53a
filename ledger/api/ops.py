"""What operators and their tools call: /healthz, /readyz, /metrics; and the wiring of
request ids, JSON request logs, metrics and the vendored docs into the app.

None of these three needs a token. /healthz and /readyz say nothing a stranger could
use; /metrics gives traffic by route, which is for the internal network: expose the
service publicly through a proxy that does not route /metrics (see docs/operating.md).
They are not in the OpenAPI spec: they are the platform's interface, not the API's.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, Flask, Response, current_app

from ledger import pusher
from ledger.api import docs, metrics, observe
from ledger.api.problems import problem
from ledger.store import db
from ledger.web import club

blp = Blueprint("ops", __name__)
log = logging.getLogger("hazard.api")


@blp.get("/healthz")
def healthz() -> dict[str, Any]:
    """Liveness: the process answers. No database: a database outage must not get
    every app server restarted."""
    return {"status": "ok"}


@blp.get("/readyz")
def readyz() -> Response | dict[str, Any]:
    """Readiness: the database answers and its schema is the one this code needs. It
    lists the witnesses the log is pushed to, and how each answered, but stays ready
    when they are down or refuse: writes never wait on a witness (ledger.pusher)."""
    engine = club().book.store.engine
    try:
        db.require_current(engine)
        witnesses = pusher.standings(engine, current_app.extensions.get("hazard.policy"))
    except db.SchemaBehind as exc:
        return _not_ready(str(exc))
    except sa.exc.SQLAlchemyError as exc:
        # The driver's message can name hosts and users: logged, not returned.
        log.warning("readiness: database unreachable: %s", exc)
        return _not_ready(f"the database is unreachable ({type(exc).__name__})")
    return {"status": "ready", "witnesses": witnesses}


def _not_ready(detail: str) -> Response:
    response = problem(503, "not-ready", "Not ready", detail)
    response.headers["Retry-After"] = "5"
    return response


@blp.get("/metrics")
def prometheus() -> Response:
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)


def register(app: Flask) -> None:
    """Call before any other before_request hook is added: the request id comes first."""
    metrics.check()
    observe.register(app)
    docs.register(app)
    app.register_blueprint(blp)
