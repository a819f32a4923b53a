"""The signing key as the service holds it (ledger.bootstrap.ensure_key), on SQLite and
PostgreSQL: made for a log never signed, then needed; and the test session's key,
which signs what every test store writes. `hazard key`: tests/cli/test_keys.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ledger import bootstrap
from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log.keys import BadKey
from tests.signing import SIGNER


def _store(engine: sa.Engine, key: Path) -> EventStore:
    return EventStore(engine, signer=bootstrap.load_key(key), key_path=str(key))


def test_serve_makes_a_key_for_a_log_never_signed_and_then_needs_that_key(
    engine: sa.Engine, tmp_path: Path
) -> None:
    key = tmp_path / "hazard.key"
    store = _store(engine, key)
    made = bootstrap.ensure_key(store)
    assert made is not None and key.exists()
    Club(Book(store)).create_player("ann", "setter")  # signs with the key just made
    store.close()

    assert bootstrap.ensure_key(_store(engine, key)) is None  # the same key: fine
    with pytest.raises(BadKey, match="no signing key"):
        bootstrap.ensure_key(_store(engine, tmp_path / "moved.key"))
    other = tmp_path / "other.key"
    CliRunner().invoke(main, ["key", "create", "--path", str(other)])
    with pytest.raises(BadKey, match="did not sign"):
        bootstrap.ensure_key(_store(engine, other))


def test_the_session_key_signs_what_the_test_stores_write(engine: sa.Engine) -> None:
    store = EventStore(engine, signer=SIGNER)
    answer = Club(Book(store)).create_player("bob", "setter")
    store.close()
    assert answer["receipt"]["positions"] == [1]
    assert f"— {SIGNER.name} " in answer["receipt"]["checkpoint"]
