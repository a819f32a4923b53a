"""What several of the `hazard` commands' tests share: a DATABASE_URL of their own, and
the API (tests/api/conftest.py's app on SQLite) for the token commands, whose tokens
the API then takes or refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.conftest import sqlite_api, sqlite_migrated

__all__ = ["sqlite_api", "sqlite_migrated"]


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    monkeypatch.setenv("DATABASE_URL", value)
    return value
