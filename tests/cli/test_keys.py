"""`hazard key create` and `hazard key show`: the signing key from the command line, a
private file, never overwritten, of which only the public key is printed. The key
`hazard serve` insists on: tests/ledger/test_signing_key.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from click.testing import CliRunner

from ledger.cli import main
from ledger.store.log.keys import Signer, Verifier


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
