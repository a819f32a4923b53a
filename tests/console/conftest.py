"""The console in a real browser: the app served over loopback by a real server in a
thread, and Debian's chromium driven by Playwright.

Playwright's own browser download cannot be reached from these machines, so the
browser is the `chromium` package's (`.ci/run` installs it if missing), found on PATH;
as root it runs with --no-sandbox. Each test saves a screenshot of where it ended in
build/screenshots/ (docs/console.md shows two, copied to docs/screenshots/).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from ledger.api import create_app
from ledger.books.book import Book
from ledger.commands import Role
from ledger.store import db
from ledger.store.eventstore import EventStore
from tests.api.conftest import _admin, api, sqlite_api, sqlite_migrated, token_for
from tests.signing import SIGNER

# The API's fixtures (tests/api/conftest.py), for the tests that use Flask's test client:
# `api` on SQLite and PostgreSQL, `sqlite_api` on SQLite alone. The PostgreSQL template
# is this directory's own: a session that runs tests/api too makes that one under its
# name, and a fixture imported here would be a second fixture of the same database.
__all__ = ["api", "postgres_migrated", "sqlite_api", "sqlite_migrated"]

ROOT = Path(__file__).resolve().parent.parent.parent
SHOTS = ROOT / "build" / "screenshots"


class Served:
    """The app behind a real HTTP server on 127.0.0.1, and its book."""

    def __init__(self, app: Any, url: str) -> None:
        self.app, self.url = app, url
        self.book: Book = app.extensions["hazard.club"].book

    def token(self, role: str, name: str) -> str:
        """A new token of `role` and `name` (one held before is revoked)."""
        return token_for(self.book.store.engine, Role(role), name)

    def balance(self, name: str) -> int:
        account = name if name == "setter" else f"player:{name}"
        return self.book.balances().get(account, 0)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    engine = db.make_engine(f"sqlite:///{tmp_path / 'console.sqlite3'}")
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    try:
        with serving(store) as served:
            yield served
    finally:
        store.close()
        engine.dispose()


@contextmanager
def serving(store: EventStore, **config: Any) -> Iterator[Served]:
    """The app on `store`, with `config` (HAZARD_POLICY, ...), behind a real server; its
    witness pusher, if the policy starts one, stopped with it."""
    app = create_app(book=Book(store), **config)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(app, f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join()
        pusher = app.extensions.get("hazard.pusher")
        if pusher is not None:
            pusher.stop()


@pytest.fixture(scope="session")
def postgres_migrated(postgres_server: str) -> str:
    name = f"console_migrated_{os.getpid()}"
    with _admin(postgres_server) as admin:
        admin.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine = db.make_engine(postgres_server.replace("/postgres?", f"/{name}?"))
    db.upgrade(engine)
    engine.dispose()
    return name


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium is not on PATH: apt-get install chromium (.ci/run does)")
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=args)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser context (its own cookies) at a tablet's width; a screenshot of
    where the test ended is saved as it ends."""
    context = browser.new_context(viewport={"width": 1024, "height": 1366})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    yield tab
    SHOTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)
    tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    context.close()


def sign_in(page: Any, url: str, token: str) -> None:
    page.goto(url + "/")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Sign out").wait_for()
