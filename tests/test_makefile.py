"""`make run` takes a host and a port, and says what it is doing on its first run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")


def dry_run(*args: str) -> str:
    """What make would run, without running it (-n), as if nothing were built (-B)."""
    # --no-print-directory: under `make test` this make is a sub-make, which would say
    # which directory it enters and leaves around what it prints
    result = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_make_run_serves_on_the_host_and_port_it_is_given() -> None:
    assert "hazard serve --host 0.0.0.0 --port 8001" in dry_run("run", "PORT=8001", "HOST=0.0.0.0")


def test_make_run_defaults_to_localhost_8000() -> None:
    assert "hazard serve --host 127.0.0.1 --port 8000" in dry_run("run")


def test_the_first_run_says_it_is_setting_up_before_it_installs() -> None:
    out = dry_run("run")
    assert "Setting up .venv" in out
    assert out.index("Setting up .venv") < out.index("pip install")


def test_make_run_installs_only_what_the_service_needs_and_quietly() -> None:
    out = dry_run("run")
    installs = [line for line in out.splitlines() if "pip install" in line]
    assert installs and not any("[dev]" in line for line in installs)
    # pip's own output goes to a log, printed only if the install fails
    assert all("install.log" in line for line in installs)


def test_make_test_adds_the_test_tools_to_the_service_s_environment() -> None:
    out = dry_run("lint")
    assert "pip install -e ." in out and "pip install -e '.[dev]'" in out
    assert out.index("pip install -e .") < out.index("pip install -e '.[dev]'")


def test_make_key_names_the_log_before_the_first_start() -> None:
    assert "hazard key create --name club.example/hazard" in dry_run(
        "key", "NAME=club.example/hazard"
    )
    assert dry_run("key").rstrip().endswith("hazard key create")
