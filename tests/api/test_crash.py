"""A short run of bench.crash in the suite: three client processes drive a two-worker
`hazard serve` over loopback, on two tables, while it is killed with SIGKILL three times
and restarted; every check of the bench must pass (docs/reliability.md, "Concurrency
and crashes", has a longer run and what each check means)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import crash

SHORT = ["--processes", "3", "--tables", "2", "--seconds", "12", "--kills", "3", "--json"]


def _run(capsys: pytest.CaptureFixture[str], *more: str) -> dict[str, Any]:
    status = crash.main([*SHORT, *more])
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    failed = [name for name, ok in result["checks"].items() if not ok]
    assert status == 0 and not failed, (failed, result)
    return result


def _exercised(result: dict[str, Any]) -> None:
    """The run did what it is for: writes of every kind, races and kills."""
    assert result["kills_survived"] == 3
    assert result["requests_by_status"].get("201", 0) > 50
    assert result["conflicts"] > 0 and result["conflicts_settled_by_retry"] > 0
    assert result["connection_errors"] > 0
    assert {"throw", "side-bet", "deposit", "withdrawal"} <= set(result["writes_by_kind"])
    assert not any(status.startswith("5") for status in result["requests_by_status"])


def test_crash_run_on_sqlite(capsys: pytest.CaptureFixture[str]) -> None:
    _exercised(_run(capsys, "--database", "sqlite"))


def test_crash_run_on_postgres(capsys: pytest.CaptureFixture[str], postgres_server: str) -> None:
    _exercised(_run(capsys, "--database", "postgres", "--postgres-url", postgres_server))
