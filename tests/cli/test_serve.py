"""`hazard serve`'s refusals before it starts (a schema behind, a lock timeout gunicorn
would cut short), and `hazard openapi`. The server itself, under gunicorn:
tests/api/test_serve.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.api import generate
from ledger.cli import main


def test_serve_refuses_a_database_whose_schema_is_behind(
    postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's server's own `postgres` database: reachable, never migrated.
    monkeypatch.setenv("DATABASE_URL", postgres_server)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    result = CliRunner().invoke(main, ["serve", "--port", "0"])
    assert result.exit_code == 1
    assert "run `hazard db upgrade`" in result.output
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ  # serve put things back


@pytest.mark.parametrize("seconds", ["30", "45", "0", "soon"])
def test_serve_refuses_a_lock_timeout_that_is_not_below_the_worker_timeout(
    seconds: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write waiting for the lock must be answered (503 busy) before gunicorn kills
    the worker waiting with it."""
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'lock.sqlite3'}")
    monkeypatch.setenv("HAZARD_LOCK_TIMEOUT", seconds)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    result = CliRunner().invoke(main, ["serve", "--port", "0"])
    assert result.exit_code != 0
    assert "HAZARD_LOCK_TIMEOUT" in result.output
    assert not (tmp_path / "lock.sqlite3").exists()


def test_hazard_openapi_prints_or_writes_it(tmp_path: Path) -> None:
    runner = CliRunner()
    printed = runner.invoke(main, ["openapi"])
    assert printed.exit_code == 0, printed.output
    assert printed.output == generate()
    written = tmp_path / "openapi.yaml"
    assert runner.invoke(main, ["openapi", "--write", str(written)]).exit_code == 0
    assert written.read_text(encoding="utf-8") == printed.output
