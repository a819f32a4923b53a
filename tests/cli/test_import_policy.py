"""`hazard import FILE --policy FILE`, through click's runner, on SQLite and PostgreSQL:
the file's cosigned checkpoint held to the reader's policy before anything is kept,
its witnesses' cosignatures restored (so that `hazard verify --policy` holds on the
restored log), and without a policy, the cosignatures neither checked nor kept."""

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
from tests.ledger.cosignkit import AUDITOR, CHAIR, TREASURER, cosign, policy_file
from tests.ledger.restorekit import counts, empty_database, export, played_store


@pytest.fixture
def played(engine: sa.Engine) -> Iterator[EventStore]:
    yield from played_store(engine)


@pytest.fixture
def target_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    yield from empty_database(database_url, tmp_path)


def hazard(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env=env)


def test_import_under_a_policy_restores_the_cosignatures_it_checked(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    size = cosign(played.engine, None, TREASURER, CHAIR)
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    policy = policy_file(tmp_path)
    done = hazard("import", str(path), "--policy", policy, "--database-url", target_url)
    assert done.exit_code == 0, done.output
    assert (
        f"cosignatures: 2 of the checkpoint of size {size} restored, checked under your "
        "policy: treasurer, chair" in done.output
    )
    assert "taken on trust" not in done.output  # the policy's log is the key
    checked = hazard("verify", "--policy", policy, env={"DATABASE_URL": target_url})
    assert checked.exit_code == 0, checked.output
    assert f"witnessed: the checkpoint of size {size}, cosigned by chair at " in checked.output


def test_import_under_a_policy_it_does_not_meet_writes_nothing(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    cosign(played.engine, None, AUDITOR)
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    done = hazard(
        "import", str(path), "--policy", policy_file(tmp_path), "--database-url", target_url
    )
    assert done.exit_code == 1
    assert "for want of a quorum" in done.output and "nothing was written" in done.output
    engine = db.make_engine(target_url)
    try:
        assert set(counts(engine).values()) == {0}
    finally:
        engine.dispose()


def test_import_without_a_policy_says_the_cosignatures_were_not_kept(
    played: EventStore, target_url: str, tmp_path: Path
) -> None:
    size = cosign(played.engine, None, TREASURER, AUDITOR)
    path = tmp_path / "all.jsonl"
    path.write_bytes(export(played.engine))
    done = hazard("import", str(path), "--database-url", target_url)
    assert done.exit_code == 0, done.output
    assert (
        f"cosignatures: the file's 2 of the checkpoint of size {size} were not checked, nor "
        "kept: the file is taken on the bank's key alone" in done.output
    )
    wanting = hazard("verify", "--policy", policy_file(tmp_path), env={"DATABASE_URL": target_url})
    assert wanting.exit_code == 1 and "for want of a quorum" in wanting.output
