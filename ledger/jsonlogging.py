"""Logs as JSON lines, for a log pipeline rather than a person.

Every record under the `hazard` logger becomes one line on stderr:

    {"time": "2025-01-02T03:04:05.678+00:00", "level": "info", "logger": "hazard.access",
     "message": "GET /tables/<table> 200", "request_id": "...", "method": "GET", ...}

Inside a request, the request's id (and the caller, once known) are added to every
line, so that the traceback problems.py logs for an unexpected error can be matched to
the request that caused it. `hazard serve` and ledger.wsgi call `configure()`; tests and
library use leave logging alone.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

import msgspec

LOGGER = "hazard"

# What a LogRecord has of its own; anything else on it came from `extra=`.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


_PLAIN = (str, int, bool, type(None))
"""What msgspec writes exactly as json.dumps does (but that it sends characters outside
ASCII as themselves); anything else, a float (NaN) or an object (`default=str`), is left
to json.dumps."""

_encode = msgspec.json.Encoder().encode


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the request's context,
    any `extra=` fields, and the traceback as one string."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_request_context())
        line.update((k, v) for k, v in vars(record).items() if k not in _STANDARD)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        # Every request writes a line (ledger.api.observe): msgspec encodes it in a
        # fraction of json.dumps' time (a line 14.2 -> 11.7 us of CPU in all).
        if all(type(v) in _PLAIN or (type(v) is float and math.isfinite(v)) for v in line.values()):
            try:
                return _encode(line).decode()
            except UnicodeEncodeError:  # a lone surrogate: json.dumps escapes it
                pass
        return json.dumps(line, default=str)


_flask: Any = None
"""flask's request-context functions, imported at the first line logged in a request:
logging must not depend on Flask outside the service, and an import statement on every
line cost more than the rest of the context."""


def _request_context() -> dict[str, Any]:
    global _flask
    if _flask is None:
        try:
            import flask
        except ImportError:  # pragma: no cover - Flask is a dependency
            return {}
        _flask = flask
    if not (_flask.has_request_context() and _flask.has_app_context()):
        return {}
    g = _flask.g
    context: dict[str, Any] = {}
    if (request_id := g.get("request_id")) is not None:
        context["request_id"] = request_id
    if (holder := g.get("holder")) is not None:
        context["actor"] = holder.actor
    return context


def handler(stream: TextIO | None = None) -> logging.Handler:
    out = logging.StreamHandler(stream if stream is not None else sys.stderr)
    out.setFormatter(JsonFormatter())
    return out


def configure(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """JSON lines for the `hazard` loggers; idempotent."""
    # Where a line was logged from (a walk up the stack): no line holds it (JsonFormatter
    # writes the message, the request's context and the extras), and the walk was most
    # of the lookups that made a fifth of the CPU of every request's line
    # (docs/performance.md, issue 27's "http2"); the logging module's documentation
    # gives this knob for it ("Optimization"). The process and the thread stay: the
    # knobs are the whole process's, and gunicorn's own lines print `[%(process)d]`.
    logging._srcfile = None
    logger = logging.getLogger(LOGGER)
    logger.setLevel(level)
    if not any(isinstance(h.formatter, JsonFormatter) for h in logger.handlers):
        logger.addHandler(handler(stream))
    # Not also through the root logger: under gunicorn that prints each line twice.
    logger.propagate = False


GUNICORN_LOGCONFIG: dict[str, Any] = {
    # gunicorn merges this over its defaults key by key, so each key is given whole; its
    # loggers do not propagate, or every line would be printed twice. Other libraries'
    # INFO chatter (alembic at each worker's start) is left out.
    "root": {"level": "WARNING", "handlers": ["json"]},
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": ["json"], "propagate": False},
        # A log config turns gunicorn's access log on; the app logs each request itself
        # (ledger.api.observe), with the route, request id and caller gunicorn lacks.
        "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
    },
    "formatters": {"json": {"()": JsonFormatter}},
    "handlers": {
        "json": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "stream": "ext://sys.stderr",
        }
    },
}
"""gunicorn's own lines (starting, booting a worker, a worker timing out) as JSON too."""
