"""`hazard witness`: init makes the key (0600, never overwritten) and the state, and
prints the public key; key, logs, evidence, trust and retire read and change that
state; each says plainly what is wrong when the witness is not there."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ledger.cli import main
from ledger.store.log.cosignature import Cosigner, WitnessKey
from ledger.store.log.keys import Signer
from ledger.witness.cosigning import Witness
from ledger.witness.home import load_cosigner, open_state
from ledger.witness.judge import Unprovable
from ledger.witness.state import StateError, origin_hash
from tests.witness.witnesskit import ORIGIN, Log

NAME = "treasurer.example/witness"


def hazard(*args: str) -> Result:
    return CliRunner().invoke(main, ["witness", *args])


@pytest.fixture
def log() -> Log:
    return Log.new()


@pytest.fixture
def home(tmp_path: Path, log: Log) -> Path:
    where = tmp_path / "w"
    made = hazard("init", "--name", NAME, "--log", log.signer.verifier.text(), "--dir", str(where))
    assert made.exit_code == 0, made.output
    return where


def test_init_makes_a_private_key_and_a_state_and_prints_the_public_key(
    tmp_path: Path, log: Log
) -> None:
    (tmp_path / "club.pub").write_text(log.signer.verifier.text() + "\n")
    where = tmp_path / "w"
    made = CliRunner().invoke(
        main, ["witness", "init", "--name", NAME, "--log", str(tmp_path / "club.pub"),
               "--dir", str(where)],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    vkey = made.stdout.strip()
    assert WitnessKey.parse(vkey).name == NAME
    assert f"witness {NAME} {vkey} http://HOST:7380" in made.stderr  # the policy's line
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(where / "witness.key").st_mode) == 0o600
    assert load_cosigner(where).key.text() == vkey
    (followed,) = open_state(where).followed()
    assert (followed.origin, followed.keys) == (ORIGIN, (log.signer.verifier.text(),))


def test_init_never_replaces_a_witness(home: Path, log: Log) -> None:
    key = (home / "witness.key").read_bytes()
    again = hazard("init", "--name", NAME, "--log", log.signer.verifier.text(), "--dir", str(home))
    assert again.exit_code == 1 and "already holds a witness" in again.output
    assert (home / "witness.key").read_bytes() == key


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--name", "a name", "--log", "LOG"], "must have no spaces"),
        (["--name", NAME, "--log", "nope"], "verifier key"),
        (["--name", NAME, "--log", "WITNESS"], "signature type"),  # a witness key is not a log's
    ],
)
def test_init_refuses_a_bad_name_or_log_key_and_makes_nothing(
    tmp_path: Path, log: Log, args: list[str], says: str
) -> None:
    keys = {"LOG": log.signer.verifier.text(), "WITNESS": Cosigner.generate(NAME).key.text()}
    given = [keys.get(a, a) for a in args]
    made = hazard("init", *given, "--dir", str(tmp_path / "w"))
    assert made.exit_code != 0 and says in made.output, made.output
    assert not (tmp_path / "w" / "witness.key").exists()


def test_key_prints_the_public_key_and_refuses_a_key_file_others_may_read(home: Path) -> None:
    shown = hazard("key", "--dir", str(home))
    assert shown.exit_code == 0 and shown.output == load_cosigner(home).key.text() + "\n"
    os.chmod(home / "witness.key", 0o644)
    refused = hazard("key", "--dir", str(home))
    assert refused.exit_code == 1 and "chmod 600" in refused.output


def test_the_directory_comes_from_hazard_witness_dir(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAZARD_WITNESS_DIR", str(home))
    assert hazard("key").output == load_cosigner(home).key.text() + "\n"


def test_every_command_says_when_there_is_no_witness(tmp_path: Path) -> None:
    for command in ("key", "logs", "evidence"):
        result = hazard(command, "--dir", str(tmp_path / "none"))
        assert result.exit_code == 1 and "hazard witness init" in result.output, command


def test_evidence_prints_both_notes_in_full_the_reason_and_when(home: Path, log: Log) -> None:
    assert "No evidence" in hazard("evidence", "--dir", str(home)).output
    witness = Witness(open_state(home), load_cosigner(home), clock=lambda: 1_795_392_000)
    witness.add_checkpoint(log.push(0, 55))
    cosigned = witness.newest(origin_hash(ORIGIN))
    other = Log(log.signer)
    other.grow(55, salt=b"rewritten ")
    with pytest.raises(Unprovable):
        witness.add_checkpoint(other.push(55, 55))
    printed = hazard("evidence", "--dir", str(home))
    assert printed.exit_code == 0
    out = printed.output
    assert f"{ORIGIN}: the log signed two different trees of size 55" in out
    assert "refused 2026-11-23T00:00:00Z (once), answered 422" in out
    assert cosigned is not None and cosigned in out and other.note(55) in out
    assert out.index(cosigned) < out.index(other.note(55))
    as_json = json.loads(hazard("evidence", "--json", "--dir", str(home)).output)
    (refusal,) = as_json["refusals"]
    assert (refusal["breach"], refusal["cosigned_note"], refusal["refused_note"]) == (
        "fork", cosigned, other.note(55)
    )  # fmt: skip


def test_trust_follows_another_log_or_a_new_key_and_retire_lets_one_go(
    home: Path, log: Log
) -> None:
    other = Signer.generate("other.example/log")
    added = hazard("trust", "--log", other.verifier.text(), "--dir", str(home))
    assert added.output == f"now follows other.example/log: {other.verifier.text()}\n"
    rotated = Signer.generate(ORIGIN)
    added = hazard("trust", "--log", rotated.verifier.text(), "--dir", str(home))
    assert added.output == f"trusts a new key for {ORIGIN}: {rotated.verifier.text()}\n"
    again = hazard("trust", "--log", rotated.verifier.text(), "--dir", str(home))
    assert again.output == f"already trusted for {ORIGIN}\n"
    retired = hazard("retire", "--log", log.signer.verifier.text(), "--dir", str(home))
    assert retired.exit_code == 0, retired.output
    assert open_state(home).trusted(ORIGIN) == (rotated.verifier.text(),)
    last = hazard("retire", "--log", rotated.verifier.text(), "--dir", str(home))
    assert last.exit_code == 1 and "the only key trusted" in last.output
    listed = hazard("logs", "--dir", str(home)).output
    assert listed == (
        f"club.example/hazard\n  nothing cosigned yet\n  trusts {rotated.verifier.text()}\n"
        f"other.example/log\n  nothing cosigned yet\n  trusts {other.verifier.text()}\n"
    )


def test_trust_under_an_origin_other_than_the_key_s_name(home: Path) -> None:
    other = Signer.generate("signer.example/k")
    added = hazard("trust", "--log", other.verifier.text(), "--origin", "log.example/x",
                   "--dir", str(home))  # fmt: skip
    assert added.exit_code == 0 and open_state(home).trusted("log.example/x") == (
        other.verifier.text(),
    )


def test_a_key_that_passes_for_a_trusted_one_is_refused(home: Path, log: Log) -> None:
    """Another key under the trusted key's name and id: signed-note could not tell the
    two apart, so it is not trusted beside it."""
    name, key_id, _ = log.signer.verifier.text().split("+", 2)
    other = Signer.generate(ORIGIN).verifier.text().split("+", 2)[2]
    lookalike = f"{name}+{key_id}+{other}"
    with pytest.raises(StateError, match="another key named"):
        open_state(home).follow(ORIGIN, lookalike, 1)


def test_init_where_a_file_stands_says_so(tmp_path: Path, log: Log) -> None:
    (tmp_path / "taken").write_text("")
    made = hazard("init", "--name", NAME, "--log", log.signer.verifier.text(),
                  "--dir", str(tmp_path / "taken" / "w"))  # fmt: skip
    assert made.exit_code == 1 and "cannot make the witness" in made.output, made.output
