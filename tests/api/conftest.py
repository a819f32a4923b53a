"""An app on a fresh database, and clients that hold a token of each role.

    def test_x(api):
        setter = api.client("setter")              # role setter, name "bank"
        ann = api.client("player", "ann")
        ann.post("/tables/t1/lays", json={...})

The app runs on SQLite by default; `api_pg` gives the same on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ledger import db
from ledger.api import create_app
from ledger.book import Book
from ledger.store import EventStore
from ledger.tokens import Role, create


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

    def ok(self, method: str, path: str, json: Any = None, **kw: Any) -> Any:
        """The response's JSON, after checking it succeeded."""
        response = getattr(self, method)(path, json=json, **kw) if json is not None else (
            getattr(self, method)(path, **kw)
        )
        assert response.status_code < 300, (response.status_code, response.get_json())
        return response.get_json()


class Api:
    def __init__(self, app: Flask) -> None:
        self.app = app
        self.book: Book = app.extensions["hazard.club"].book

    def client(self, role: str | None = "setter", name: str = "bank") -> Client:
        token = None if role is None else create(self.book.store.engine, Role(role), name)
        return Client(self.app.test_client(), token)


def _api(url: str) -> Iterator[Api]:
    engine = db.make_engine(url)
    db.upgrade(engine)
    store = EventStore(engine)
    app = create_app(book=Book(store), TESTING=True)
    yield Api(app)
    store.close()
    engine.dispose()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    yield from _api(f"sqlite:///{tmp_path / 'api.sqlite3'}")


@pytest.fixture
def api_both(database_url: str) -> Iterator[Api]:
    """The app on SQLite and on PostgreSQL."""
    yield from _api(database_url)
