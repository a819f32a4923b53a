"""`hazard import FILE`, through click's runner, on SQLite and PostgreSQL: a whole-log
export restored into a new database it migrates, verified deep; a file that does not
verify, or is signed by another key, refused with nothing written; and what it says of
the signing key here (tests/ledger/test_import.py: the restore itself)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ledger.cli import main
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.schema import checkpoints, events
from tests.ledger.restorekit import (
    counts,
    empty_database,
    export,
    played_store,
    rows,
    tamper_amount,
)
from tests.signing import SIGNER


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    yield from played_store(engine)


@pytest.fixture
def target_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    yield from empty_database(database_url, tmp_path)


def hazard(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env=env)


def test_hazard_import_migrates_a_new_database_restores_and_verifies_deep(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "hazard-all.jsonl"
    path.write_bytes(export(played.engine))

    key = SIGNER.verifier.text()
    done = hazard("import", str(path), "--key", key, "--database-url", target_url)
    assert done.exit_code == 0, done.output
    size, root = rows(played.engine, checkpoints)[-1][:2]
    assert f"restored {len(rows(played.engine, events))} events" in done.output
    assert f"checkpoint: size {size}, root {root}" in done.output

    checked = hazard("verify", "--deep", env={"DATABASE_URL": target_url})
    assert checked.exit_code == 0, checked.output
    assert "every read model" in checked.output

    again = hazard("import", str(path), "--database-url", target_url)
    assert again.exit_code == 1
    assert "already holds a log" in again.output


def test_hazard_import_names_the_line_of_a_bad_file_and_writes_nothing(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    bad, number = tamper_amount(export(played.engine))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(bad)
    done = hazard("import", str(path), "--database-url", target_url)
    assert done.exit_code == 1
    assert f"line {number}" in done.output and "nothing was written" in done.output
    engine = db.make_engine(target_url)
    try:
        assert set(counts(engine).values()) == {0}
    finally:
        engine.dispose()


def test_hazard_import_refuses_a_file_signed_by_another_key(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    from ledger.store.log.keys import Signer

    other = Signer.generate("hazard.local/ledger")
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    done = hazard("import", str(path), "--key", other.verifier.text(), "--database-url", target_url)
    assert done.exit_code == 1
    assert "nothing was written" in done.output


def test_hazard_import_where_there_is_no_key_says_so(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    """Regression: in a folder with no key, `hazard import` said "the signing key at
    hazard.key is not that key". It says there is none, and what to do."""
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    missing = tmp_path / "hazard.key"
    done = hazard(
        "import", str(path), "--database-url", target_url, env={"HAZARD_KEY": str(missing)}
    )
    assert done.exit_code == 0, done.output
    assert f"there is no signing key at {missing}" in done.output
    assert "not that key" not in done.output
    assert SIGNER.verifier.text() in done.output and "HAZARD_KEY" in done.output


def test_hazard_import_where_another_key_is_names_it(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    from ledger.store.log.keys import create_key

    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    elsewhere = tmp_path / "other.key"
    other = create_key(elsewhere, "hazard.local/ledger")
    done = hazard(
        "import", str(path), "--database-url", target_url, env={"HAZARD_KEY": str(elsewhere)}
    )
    assert done.exit_code == 0, done.output
    assert f"the signing key at {elsewhere} is another key ({other})" in done.output


def test_hazard_import_with_another_key_names_the_files_header(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    """Regression: `--key` with a file whose header names another key blamed the
    checkpoints ("the checkpoints are signed by ..."), which were never read: it is the
    header that names the other key."""
    from ledger.store.log.keys import Signer

    other = Signer.generate("hazard.local/ledger").verifier.text()
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    done = hazard("import", str(path), "--key", other, "--database-url", target_url)
    assert done.exit_code == 1
    said = done.output
    assert f"line 1: the file's header names the key {SIGNER.verifier.text()}" in said, said
    assert f"not the key you gave ({other})" in said and "checkpoints are signed" not in said
