"""The store suites use the sqlite/postgres `database_url`, `engine` and `store`
fixtures from tests/conftest.py; an import's, `target_url` and `target`, are here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.store import db
from tests.ledger.restorekit import empty_database


@pytest.fixture
def target_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A second, empty database of the same kind as the test's (what an import fills)."""
    yield from empty_database(database_url, tmp_path)


@pytest.fixture
def target(target_url: str) -> Iterator[sa.Engine]:
    """`target_url` migrated to today's schema, and its engine."""
    engine = db.make_engine(target_url)
    db.upgrade(engine)
    yield engine
    engine.dispose()
