"""The API's fixtures (tests/api/conftest.py): the app on a fresh database, `api` on
SQLite and PostgreSQL, `sqlite_api` on SQLite alone.

The PostgreSQL template is this directory's own: a session that runs tests/api too
makes that one under its name, and a fixture imported here is a second fixture."""

from __future__ import annotations

import os

import pytest

from ledger.store import db
from tests.api.conftest import _admin, api, sqlite_api, sqlite_migrated

__all__ = ["api", "postgres_migrated", "sqlite_api", "sqlite_migrated"]


@pytest.fixture(scope="session")
def postgres_migrated(postgres_server: str) -> str:
    name = f"console_migrated_{os.getpid()}"
    with _admin(postgres_server) as admin:
        admin.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine = db.make_engine(postgres_server.replace("/postgres?", f"/{name}?"))
    db.upgrade(engine)
    engine.dispose()
    return name
