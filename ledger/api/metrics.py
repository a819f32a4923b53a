"""Prometheus metrics: requests counted and timed by route template, method and status;
the witnesses the log is pushed to (ledger.pusher), each one's state and size; and the
appends whose clock was held back to the log's last time (ledger.store.eventstore).

Labels are the route's template (`/tables/<table>/throws`), never the path a client
sent, and a method outside the usual few is `other`: a label value per table, player or
invented method would grow the series without bound. A request that matched no route
(404, 405) is labelled `unmatched`.

Under gunicorn each worker is a process with its own counters. prometheus-client's
multiprocess mode, on when PROMETHEUS_MULTIPROC_DIR is set (`hazard serve` sets it),
has every worker write its values to files in that directory and sums them at each
scrape, so /metrics answers for the whole server whichever worker takes the request.
The variable must be set before prometheus_client is first imported: it chooses how
values are stored at import time.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
LABELS = ("method", "route", "status")

# The service's own registry, not prometheus_client's global one: nothing else in the
# process can register a clashing name, and an app made twice (tests) shares these.
REGISTRY = CollectorRegistry()
REQUESTS = Counter("hazard_http_requests", "HTTP requests answered.", LABELS, registry=REGISTRY)
LATENCY = Histogram(
    "hazard_http_request_duration_seconds",
    "Time from a request's arrival to its response, in seconds.",
    LABELS,
    registry=REGISTRY,
)

# The witnesses, as the pushing process (ledger.pusher) finds them, labelled by their
# name in the policy (a few, and bounded by it). One process pushes; under multiprocess
# mode a gauge is that process's latest, and goes with it when it ends.
WITNESS_UP = Gauge(
    "hazard_witness_up",
    "1 while the witness cosigns what it is pushed, 0 while it is down or refuses.",
    ("witness",),
    registry=REGISTRY,
    multiprocess_mode="livemostrecent",
)
WITNESS_SIZE = Gauge(
    "hazard_witness_cosigned_size",
    "The largest checkpoint the witness has cosigned (its tree size).",
    ("witness",),
    registry=REGISTRY,
    multiprocess_mode="livemostrecent",
)
WITNESS_FAILURES = Counter(
    "hazard_witness_failures",
    "Pushes the witness did not cosign, by what it came to (down or refused).",
    ("witness", "state"),
    registry=REGISTRY,
)


# Appends whose server's clock was behind the log's last event (another server's clock
# ahead, or this one stepped back): each recorded that event's time instead
# (ledger.store.eventstore), and how far behind the clock was, summed. A count that
# grows says the servers' clocks disagree: see docs/operating.md.
CLOCK_HELD = Counter(
    "hazard_clock_held",
    "Appends whose clock was behind the log's last event, and recorded its time instead.",
    registry=REGISTRY,
)
CLOCK_HELD_SECONDS = Counter(
    "hazard_clock_held_seconds",
    "How far behind the log's last event those appends' clocks were, in seconds, summed.",
    registry=REGISTRY,
)


def clock_held(clock: str, recorded_at: str) -> None:
    """An append held its clock's reading `clock` back to `recorded_at` (both as the
    store writes times)."""
    behind = datetime.fromisoformat(recorded_at) - datetime.fromisoformat(clock)
    CLOCK_HELD.inc()
    CLOCK_HELD_SECONDS.inc(max(behind.total_seconds(), 0.0))


def witnessed(name: str, state: str, cosigned_size: int) -> None:
    """A push to the witness `name` came to `state` (ledger.pusher.State's value)."""
    if state == "waiting":
        return
    WITNESS_UP.labels(name).set(1 if state == "ok" else 0)
    WITNESS_SIZE.labels(name).set(cosigned_size)
    if state != "ok":
        WITNESS_FAILURES.labels(name, state).inc()


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def check() -> None:
    """Refuse to start with multiprocess mode half on: counts would silently be one
    worker's share, or the first scrape would fail."""
    path = multiprocess_dir()
    if path is None:
        return
    if not os.path.isdir(path):
        raise RuntimeError(f"PROMETHEUS_MULTIPROC_DIR={path} is not a directory")
    if values.ValueClass is values.MutexValue:
        raise RuntimeError(
            "PROMETHEUS_MULTIPROC_DIR was set after prometheus_client was imported; "
            "set it in the environment before the process starts"
        )


def observe(method: str, route: str | None, status: int, seconds: float) -> None:
    labels = (
        method if method in METHODS else "other",
        route if route is not None else UNMATCHED,
        str(status),
    )
    series = _series.get(labels)
    if series is None:  # a few hundred at most: the labels are bounded (above)
        series = _series[labels] = (REQUESTS.labels(*labels), LATENCY.labels(*labels))
    series[0].inc()
    series[1].observe(seconds)


_series: dict[tuple[str, str, str], tuple[Any, Any]] = {}
"""Each label set's counter and histogram, found once: `labels()` takes a lock and
checks its arguments on every call, a tenth of a small request's time (bench.api)."""


def exposition() -> tuple[bytes, str]:
    """The text format, and its content type."""
    path = multiprocess_dir()
    if path is None:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    # A fresh registry each scrape, as the library asks: the collector reads every
    # worker's files as they are now.
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    return generate_latest(registry), CONTENT_TYPE_LATEST
