"""The signing key from the command line, and the key `hazard serve` insists on: a
log never signed gets one; a log already signed starts only with the key that signed
it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ledger import bootstrap
from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log.keys import BadKey, Signer, Verifier
from tests.signing import SIGNER


def test_key_create_makes_a_private_file_and_prints_only_the_public_key(tmp_path: Path) -> None:
    path = tmp_path / "club.key"
    made = CliRunner().invoke(main, ["key", "create", "--name", "club.example/hazard",
                                     "--path", str(path)])  # fmt: skip
    assert made.exit_code == 0, made.output
    public = made.stdout.strip()
    assert Verifier.parse(public).name == "club.example/hazard"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "PRIVATE" not in made.output
    shown = CliRunner().invoke(main, ["key", "show", "--path", str(path)])
    assert shown.exit_code == 0 and shown.stdout.strip() == public
    again = CliRunner().invoke(main, ["key", "create", "--path", str(path)])
    assert again.exit_code == 1 and "never overwritten" in again.output
    assert CliRunner().invoke(main, ["key", "show", "--path", str(path)]).stdout.strip() == public


def test_key_show_without_a_key_says_how_to_make_one(tmp_path: Path) -> None:
    shown = CliRunner().invoke(main, ["key", "show", "--path", str(tmp_path / "none.key")])
    assert shown.exit_code == 1 and "hazard key create" in shown.output


def test_a_key_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "open.key"
    path.write_text(Signer.generate("x.example/log").text() + "\n")
    path.chmod(0o644)
    shown = CliRunner().invoke(main, ["key", "show", "--path", str(path)])
    assert shown.exit_code == 1 and "chmod 600" in shown.output


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
