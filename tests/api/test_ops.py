"""What operators call: health, readiness, metrics, request ids and JSON logs, the
vendored docs, and the first setter's token with the banner that shows it (the token
commands, `hazard token create|list|revoke`: tests/cli/test_tokens.py)."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ledger import jsonlogging
from ledger.api import create_app
from ledger.api.server import banner
from ledger.books.book import Book
from ledger.commands import Role
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.web.tokens import FIRST_SETTER, create, first_setter, holder, listing
from tests.api.conftest import Api
from tests.signing import SIGNER

# --- health and readiness ---------------------------------------------------------


def test_healthz_answers_without_a_token(sqlite_api: Api) -> None:
    response = sqlite_api.client(None).get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}


def test_readyz_is_ready_on_a_current_schema(sqlite_api: Api) -> None:
    """Ready, with no witness to list when no policy names one (tests/api/test_pusher.py
    lists them)."""
    response = sqlite_api.client(None).get("/readyz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ready", "witnesses": []}


def test_readyz_is_a_503_problem_when_the_schema_is_behind(sqlite_api: Api) -> None:
    with sqlite_api.book.store.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM alembic_version")
    response = sqlite_api.client(None).get("/readyz")
    assert response.status_code == 503
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["type"] == "urn:hazard:not-ready"
    assert "hazard db upgrade" in body["detail"]
    assert response.headers["Retry-After"]


def test_unreachable_database_is_not_ready_but_still_alive() -> None:
    # A PostgreSQL URL whose socket directory does not exist: every connect fails.
    engine = db.make_engine("postgresql+psycopg://nobody@/hazard?host=/nonexistent/socket")
    app = create_app(book=Book(EventStore(engine, signer=SIGNER)), TESTING=True)
    client = app.test_client()
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.get_json()["detail"] == "the database is unreachable (OperationalError)"
    assert "nonexistent" not in ready.get_data(as_text=True)  # no connection details
    assert client.get("/healthz").status_code == 200  # liveness touches no database
    engine.dispose()


# --- metrics ----------------------------------------------------------------------


def _count(text: str, method: str, route: str, status: int) -> float:
    for family in text_string_to_metric_families(text):
        if family.name != "hazard_http_requests":
            continue
        for sample in family.samples:
            want = {"method": method, "route": route, "status": str(status)}
            if sample.name.endswith("_total") and sample.labels == want:
                return sample.value
    return 0.0


def _metrics(sqlite_api: Api) -> str:
    response = sqlite_api.client(None).get("/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    text: str = response.get_data(as_text=True)
    return text


def test_metrics_label_by_route_template_never_the_raw_path(sqlite_api: Api) -> None:
    bank = sqlite_api.client()
    before = _metrics(sqlite_api)
    for table in ("t-one", "t-two"):
        assert bank.get(f"/tables/{table}").status_code == 404  # no such table
    assert bank.get("/no/such/thing/here").status_code == 404
    assert bank._client.open("/healthz", method="BREW").status_code == 405
    after = _metrics(sqlite_api)

    def grew(method: str, route: str, status: int) -> float:
        return _count(after, method, route, status) - _count(before, method, route, status)

    assert grew("GET", "/tables/<table>", 404) == 2
    assert grew("GET", "unmatched", 404) == 1
    assert grew("other", "unmatched", 405) == 1  # an invented method is not a label
    for raw in ("t-one", "t-two", "/no/such", "BREW"):
        assert raw not in after
    assert 'hazard_http_request_duration_seconds_bucket{le="0.005",method="GET",' in after


def test_metrics_need_no_token(sqlite_api: Api) -> None:
    assert sqlite_api.client(None).get("/metrics").status_code == 200


# --- request ids and logs ---------------------------------------------------------


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The JSON lines the `hazard` loggers write, as ledger.jsonlogging formats them."""
    stream = io.StringIO()
    logger = logging.getLogger(jsonlogging.LOGGER)
    out, level = jsonlogging.handler(stream), logger.level
    logger.addHandler(out)
    logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(out)
    logger.setLevel(level)


def test_a_safe_request_id_is_echoed(sqlite_api: Api) -> None:
    response = sqlite_api.client(None).get("/healthz", headers={"X-Request-Id": "lb-7f3a:01.x_y"})
    assert response.headers["X-Request-Id"] == "lb-7f3a:01.x_y"


@pytest.mark.parametrize("offered", [None, "has space", "a" * 65, "semi;colon", "ünï"])
def test_an_unsafe_or_missing_request_id_is_replaced(sqlite_api: Api, offered: str | None) -> None:
    headers = {} if offered is None else {"X-Request-Id": offered}
    response = sqlite_api.client(None).get("/healthz", headers=headers)
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["X-Request-Id"])


def test_each_request_is_one_json_line(sqlite_api: Api, log_lines: Callable[[], Any]) -> None:
    sqlite_api.app.extensions["hazard.club"].create_player("ann", "setter:bank")  # no request
    ann = sqlite_api.client("player", "ann")
    response = ann.get("/tables/t9", headers={"X-Request-Id": "req-1"})
    assert response.headers["X-Request-Id"] == "req-1"
    [line] = [entry for entry in log_lines() if entry["logger"] == "hazard.access"]
    assert line["request_id"] == "req-1"
    assert line["method"] == "GET"
    assert line["route"] == "/tables/<table>"
    assert line["path"] == "/tables/t9"
    assert line["status"] == response.status_code
    assert line["actor"] == sqlite_api.actor("player", "ann")
    assert line["level"] == "info"
    assert isinstance(line["duration_ms"], float)
    assert line["time"].endswith("+00:00")


def test_an_unexpected_error_is_logged_with_its_request_id(
    sqlite_api: Api, log_lines: Callable[[], Any]
) -> None:
    def broken() -> str:
        raise RuntimeError("a bug")

    sqlite_api.app.add_url_rule("/broken", view_func=broken)
    response = sqlite_api.client(None).get("/broken", headers={"X-Request-Id": "bug-42"})
    assert response.status_code == 500
    assert response.mimetype == "application/problem+json"
    assert response.headers["X-Request-Id"] == "bug-42"
    error, access = log_lines()
    assert error["logger"] == "hazard.api" and error["level"] == "error"
    assert error["request_id"] == "bug-42"
    assert "RuntimeError: a bug" in error["exception"]
    assert access["request_id"] == "bug-42" and access["status"] == 500
    assert access["level"] == "error" and access["route"] == "/broken"


def test_a_line_with_a_lone_surrogate_is_still_one_json_line() -> None:
    """A path WSGI decoded from bytes that are not UTF-8 can hold a lone surrogate: the
    line is still written (as json.dumps writes it, escaped), never lost to an error."""
    record = logging.makeLogRecord(
        {"name": "hazard.access", "msg": "GET %s", "args": ("/x",), "path": "/\udce9"}
    )
    line = json.loads(jsonlogging.JsonFormatter().format(record))
    assert line["path"] == "/\udce9"


def test_configured_logging_writes_every_field_of_a_requests_line(
    sqlite_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`configure` turns off the logging module's lookups of where a line was logged
    from and by which thread and process, which no line holds: a request's line, and an
    error's with its traceback, have the same fields and values as without it."""

    def lines(configured: bool) -> list[dict[str, Any]]:
        for knob in ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing"):
            monkeypatch.setattr(logging, knob, getattr(logging, knob))  # restored after
        logger = logging.getLogger(jsonlogging.LOGGER)
        monkeypatch.setattr(logger, "handlers", [])
        monkeypatch.setattr(logger, "propagate", logger.propagate)
        monkeypatch.setattr(logger, "level", logger.level)
        stream = io.StringIO()
        if configured:
            jsonlogging.configure(stream=stream)
            assert logging._srcfile is None  # type: ignore[attr-defined]
        else:
            logger.addHandler(jsonlogging.handler(stream))
            logger.setLevel(logging.INFO)
        client = sqlite_api.client(None)
        client.get("/tables/t9", headers={"X-Request-Id": "req-1"})
        client.get("/broken", headers={"X-Request-Id": "bug-42"})
        found = [json.loads(line) for line in stream.getvalue().splitlines()]
        for line in found:
            line.pop("time"), line.pop("duration_ms", None)
            line["exception"] = line.get("exception", "").splitlines()[-1:]
        return found

    def broken() -> str:
        raise RuntimeError("a bug")

    sqlite_api.app.add_url_rule("/broken", view_func=broken)
    plain = lines(configured=False)
    assert [line["logger"] for line in plain] == ["hazard.access", "hazard.api", "hazard.access"]
    assert lines(configured=True) == plain


def test_configured_logging_leaves_other_formats_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The knobs are the whole process's: gunicorn's own lines (`[%(process)d]`) and
    any other handler's still find the process and thread they name. Turning the
    process lookup off made every gunicorn line after `configure` a logging error."""
    for knob in ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, knob, getattr(logging, knob))  # restored after
    logger = logging.getLogger(jsonlogging.LOGGER)
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "level", logger.level)
    jsonlogging.configure(stream=io.StringIO())
    record = logging.getLogger("gunicorn.error").makeRecord(
        "gunicorn.error", logging.INFO, __file__, 1, "Worker exiting (pid: %s)", (7,), None
    )
    gunicorns = logging.Formatter("[%(process)d] [%(thread)d] [%(levelname)s] %(message)s")
    assert gunicorns.format(record) == (
        f"[{os.getpid()}] [{threading.get_ident()}] [INFO] Worker exiting (pid: 7)"
    )


def test_logs_outside_a_request_have_no_request_fields() -> None:
    record = logging.makeLogRecord({"name": "hazard.x", "msg": "hi %s", "args": ("there",)})
    line = json.loads(jsonlogging.JsonFormatter().format(record))
    assert line["message"] == "hi there"
    assert "request_id" not in line


# --- docs -------------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href") and value]


def test_docs_load_only_local_assets_and_they_are_served(sqlite_api: Api) -> None:
    client = sqlite_api.client(None)
    page = client.get("/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert "://" not in html  # no CDN, nor any other origin
    parser = _Links()
    parser.feed(html)
    assert len(parser.urls) == 3  # the stylesheet and two scripts
    for url in parser.urls:
        assert url.startswith("/") and not url.startswith("//"), url
        with client.get(url) as asset:  # a file, streamed: closed when done
            assert asset.status_code == 200, url
            assert len(asset.get_data()) > 1000
    spec = re.search(r'url: "([^"]+)"', html)
    assert spec is not None and spec.group(1) == "/openapi.json"
    document = client.get("/openapi.json").get_json()
    assert document["info"]["title"] == "Hazard ledger"
    assert "/tables/{table}/throws" in document["paths"]


def test_docs_with_a_trailing_slash_redirects_to_the_docs(sqlite_api: Api) -> None:
    client = sqlite_api.client(None)
    answer = client.get("/docs/")
    assert answer.status_code == 308
    assert answer.headers["Location"] == "/docs"
    assert client.get("/docs/", follow_redirects=True).status_code == 200
    assert client.get("/docs/?x=1").headers["Location"] == "/docs?x=1"


def test_docs_assets_stay_in_their_directory(sqlite_api: Api) -> None:
    client = sqlite_api.client(None)
    for path in ("/docs/assets/no-such.js", "/docs/assets/../../../pyproject.toml"):
        with client.get(path) as response:
            assert response.status_code == 404
            assert response.mimetype == "application/problem+json"


# --- tokens -----------------------------------------------------------------------


def test_the_first_setter_token_is_made_once_and_only_on_an_empty_table(sqlite_api: Api) -> None:
    engine = sqlite_api.book.store.engine
    token = first_setter(engine)
    assert token is not None
    who = holder(engine, token)
    assert who is not None and (who.role, who.name) == (Role.SETTER, FIRST_SETTER)
    assert first_setter(engine) is None
    assert len(listing(engine)) == 1


def test_no_first_setter_when_any_token_exists(sqlite_api: Api) -> None:
    create(sqlite_api.book.store.engine, Role.AUDITOR, "aud")
    assert first_setter(sqlite_api.book.store.engine) is None


def test_the_banner_shows_the_token_and_the_docs() -> None:
    shown = banner("http://127.0.0.1:8000", "hz_secret", 2, "sqlite:///hazard.sqlite3")
    assert "http://127.0.0.1:8000/docs" in shown
    assert "\n    hz_secret\n" in shown
    assert "hz_" not in banner("http://127.0.0.1:8000", None, 1, "sqlite:///x")


def test_the_banner_names_the_hazard_command_a_shell_can_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`make run` does not activate .venv, so there the banner says `.venv/bin/hazard`;
    where this installation's `hazard` is on PATH, plain `hazard`."""
    here = Path(sys.executable).with_name("hazard")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.chdir(here.parent.parent.parent)  # the folder that holds the venv
    shown = banner("http://127.0.0.1:8000", "hz_secret", 1, "sqlite:///x")
    relative = here.relative_to(here.parent.parent.parent)
    assert f"`{relative} token create --role ROLE --name NAME`" in shown
    monkeypatch.setenv("PATH", f"{here.parent}:/usr/bin:/bin")
    assert "`hazard token create" in banner("http://127.0.0.1:8000", None, 1, "sqlite:///x")
