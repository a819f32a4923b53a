"""The `hazard` group itself (ledger/cli/__init__.py): every command is found in its
module and only when asked for, every command a module defines is one `hazard` runs,
a mistyped name is still offered the one meant, and every command that opens the
database by URL takes the one --database-url option."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from collections.abc import Iterator

import click
from click.testing import CliRunner

import ledger.cli
from ledger.cli import COMMANDS, DATABASE_URL_HELP, main

TAKES_A_DATABASE_URL = [
    "books authentication",
    "books exceptions",
    "books significant",
    "dispute list",
    "dispute open",
    "dispute resolve",
    "dispute show",
    "evening cash-up",
    "evening list",
    "evening open",
    "evening report",
    "export",
    "fairness",
    "import",
    "limits break",
    "limits set",
    "limits show",
    "recall",
    "replay",
    "statement",
    "token create",
    "token list",
    "token revoke",
    "watch",
]
"""The commands that took `--database-url` when the CLI was one module, and take it now."""


def every_command() -> Iterator[tuple[str, click.Command]]:
    """Each command `hazard` runs, by its words (`dispute open`), groups included."""
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None, name
        yield name, command
        if isinstance(command, click.Group):
            for sub, inner in command.commands.items():
                yield f"{name} {sub}", inner


def test_every_command_is_found_in_the_module_that_defines_it() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name, where in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name, name
        module, _, attribute = where.rpartition(".")
        assert getattr(importlib.import_module(module), attribute) is command
    assert main.get_command(ctx, "nothing") is None


def test_every_command_a_module_defines_is_one_hazard_runs() -> None:
    runs = {id(command) for _, command in every_command()}
    for found in pkgutil.iter_modules(ledger.cli.__path__, "ledger.cli."):
        module = importlib.import_module(found.name)
        for name, value in vars(module).items():
            if isinstance(value, click.Command):
                assert id(value) in runs, f"{found.name}.{name} is not a command of hazard"


def test_a_mistyped_command_is_offered_the_one_meant() -> None:
    result = CliRunner().invoke(main, ["expor"])
    assert result.exit_code == 2
    assert "No such command 'expor'" in result.output
    assert "Did you mean 'export'?" in result.output


def test_every_database_url_is_the_one_option() -> None:
    """The same option everywhere: a plain --database-url with its help, no default
    (the command gets None and opens DATABASE_URL, or hazard.sqlite3 here)."""
    plain = click.Option(["--database-url"], help=DATABASE_URL_HELP).to_info_dict()
    taking = []
    for words, command in every_command():
        for param in command.params:
            if param.name == "database_url":
                taking.append(words)
                assert param.to_info_dict() == plain, words
    assert sorted(taking) == TAKES_A_DATABASE_URL


LOADED = """
import json, sys
from ledger.cli import main
try:
    main(sys.argv[1:], prog_name="hazard")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in ("flask", "gunicorn") if m in sys.modules)))
"""


def loaded(*args: str) -> list[str]:
    """Which of Flask and gunicorn `hazard ARGS` imported, in a process of its own."""
    ran = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    found: list[str] = json.loads(ran.stdout.splitlines()[-1])
    return found


def test_a_command_imports_only_what_it_runs() -> None:
    """`hazard odds` starts without the API's Flask, and only `hazard serve` imports
    gunicorn: a command's module is imported when the command is run, and `hazard
    --help`, which imports every one, does not import what only serving needs."""
    assert loaded("odds", "--json") == []
    assert loaded("verify", "--help") == []
    assert loaded("--help") == ["flask"]  # the token commands' roles are the API's
