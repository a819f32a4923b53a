"""An app on a fresh database, and clients that hold a token of each role.

    def test_x(api):
        setter = api.client("setter")              # role setter, name "bank"
        ann = api.client("player", "ann")
        ann.post("/tables/t1/lays", json={...})

`api` runs each test twice, on SQLite and on PostgreSQL, as the store's own tests do:
what the API reads and writes is what the database answers. `sqlite_api` is the same
app on SQLite alone, for tests whose subject no database changes (see its docstring).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ledger.api import create_app
from ledger.books.book import Book
from ledger.commands import Role
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.web.tokens import NameTaken, create, listing, revoke
from tests.signing import SIGNER


class Client:
    """A test client that sends one bearer token with every request."""

    def __init__(self, client: FlaskClient, token: str | None) -> None:
        self._client, self.token = client, token

    def _headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        headers.update(extra or {})
        return headers

    def get(self, path: str, **kw: Any) -> Any:
        return self._client.get(path, headers=self._headers(kw.pop("headers", None)), **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> Any:
        headers = self._headers(kw.pop("headers", None))
        return self._client.post(path, json=json, headers=headers, **kw)

    def put(self, path: str, json: Any = None, **kw: Any) -> Any:
        headers = self._headers(kw.pop("headers", None))
        return self._client.put(path, json=json, headers=headers, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self._client.delete(path, headers=self._headers(kw.pop("headers", None)), **kw)

    def ok(self, method: str, path: str, json: Any = None, **kw: Any) -> Any:
        """The response's JSON, after checking it succeeded."""
        response = (
            getattr(self, method)(path, json=json, **kw)
            if json is not None
            else (getattr(self, method)(path, **kw))
        )
        assert response.status_code < 300, (response.status_code, response.get_json())
        return response.get_json()


class Api:
    def __init__(self, app: Flask) -> None:
        self.app = app
        self.book: Book = app.extensions["hazard.club"].book
        self.tokens: dict[tuple[str, str], str] = {}

    def client(self, role: str | None = "setter", name: str = "bank") -> Client:
        """A client holding the token of `role` and `name`: made the first time it is
        asked for (a name is one live token's within its role), the same one after."""
        if role is None:
            return Client(self.app.test_client(), None)
        if (role, name) not in self.tokens:
            self.tokens[role, name] = token_for(self.book.store.engine, Role(role), name)
        return Client(self.app.test_client(), self.tokens[role, name])

    def actor(self, role: str = "setter", name: str = "bank") -> str:
        """The actor the events of the live token of `role` and `name` record."""
        [held] = [
            t
            for t in listing(self.book.store.engine)
            if (t.role, t.name, t.revoked_at) == (role, name, None)
        ]
        return f"{role}:{name}#{held.tag}"


def token_for(engine: sa.Engine, role: Role, name: str) -> str:
    """A new token of `role` and `name`. On a copy of a database that already holds
    one, whose secret is not kept, that one is revoked first, as an operator would."""
    try:
        return create(engine, role, name)
    except NameTaken:
        [held] = [
            t for t in listing(engine) if (t.role, t.name, t.revoked_at) == (role.value, name, None)
        ]
        revoke(engine, held.id)
        return create(engine, role, name)


def _api(url: str) -> Iterator[Api]:
    engine = db.make_engine(url)
    db.upgrade(engine)  # a copy of a migrated database: finds it current
    store = EventStore(engine, signer=SIGNER)
    app = create_app(book=Book(store), TESTING=True)
    yield Api(app)
    store.close()
    engine.dispose()


# Each test gets a copy of a database migrated once per session: migrating a fresh one
# for each of some three hundred tests took longer than most of the tests themselves.


@pytest.fixture(scope="session")
def sqlite_migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("migrated") / "api.sqlite3"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    engine.dispose()  # the last connection closed folds the WAL into the file
    return path


@pytest.fixture(scope="session")
def postgres_migrated(postgres_server: str) -> str:
    """A migrated database to copy (CREATE DATABASE ... TEMPLATE), left to the cluster's
    own teardown."""
    name = f"api_migrated_{os.getpid()}"
    with _admin(postgres_server) as admin:
        admin.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine = db.make_engine(postgres_server.replace("/postgres?", f"/{name}?"))
    db.upgrade(engine)
    engine.dispose()  # a template must have no connections when it is copied
    return name


def _admin(server: str) -> sa.Connection:
    return sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool).connect()


_copies = itertools.count()


def _sqlite_copy(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    copy = tmp_path / "api.sqlite3"
    shutil.copyfile(request.getfixturevalue("sqlite_migrated"), copy)
    return f"sqlite:///{copy}"


@pytest.fixture(params=["sqlite", "postgres"])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    """The app on a fresh, migrated database of each kind: SQLite, then PostgreSQL."""
    if request.param == "sqlite":
        yield from _api(_sqlite_copy(request, tmp_path))
        return
    server = request.getfixturevalue("postgres_server")
    template = request.getfixturevalue("postgres_migrated")
    with postgres_copy(server, template, "api") as url:
        yield from _api(url)


@contextlib.contextmanager
def postgres_copy(server: str, template: str, prefix: str) -> Iterator[str]:
    """A new database on `server` made from `template` (CREATE DATABASE ... TEMPLATE),
    its URL, and the database dropped afterwards."""
    name = f"{prefix}_{os.getpid()}_{next(_copies)}"
    with _admin(server) as admin:
        admin.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    try:
        yield server.replace("/postgres?", f"/{name}?")
    finally:
        with _admin(server) as admin:
            admin.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    """The app on SQLite alone, for tests about the process or the contract rather than
    what the database answers, where a second run would only repeat the first: the
    operators' endpoints, request logs, metrics and docs (test_ops.py), and the token
    commands (tests/cli/test_tokens.py); input refused before any query is made
    (test_strict_input.py, and the bodies in test_contract.py); the OpenAPI document
    (test_openapi.py); and the guide's evening, whose subject is the text of
    docs/api.md (test_docs_guide.py).
    The schemathesis run (test_contract.py), `hazard serve` (test_serve.py) and the
    busy test (test_busy.py) build their own app on SQLite, for the same reason and
    because they are the slowest to repeat."""
    yield from _api(_sqlite_copy(request, tmp_path))
