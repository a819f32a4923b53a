"""`hazard verify --policy FILE`, through click's runner, on SQLite and PostgreSQL: the
caller's own policy decides, never the bank's key alone. On the database it passes
when a quorum cosigned, fails for want of one, and names the witnessed checkpoint an
insider with the bank's key rewrote (which plain `hazard verify` passes); on a file,
the export's cosigned checkpoint is held to the policy, and without one the file is
said to rest on the bank's key alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.cli import main
from ledger.store.eventstore import EventStore
from tests.ledger.cosignkit import AUDITOR, CHAIR, TREASURER, cosign, policy_file, sizes
from tests.ledger.tamperkit import (
    OTHER,
    Log,
    hazard_verify,
    played_log,
    unguarded,
    whole_log_rehashed_and_resigned,
)
from tests.signing import SIGNER, VERIFIER


@pytest.fixture
def log(store: EventStore, tmp_path: Path) -> Iterator[Log]:
    yield from played_log(store, tmp_path)


def test_verify_under_a_policy_says_what_was_witnessed_and_what_is_not_yet(log: Log) -> None:
    size = cosign(log.engine, sizes(log.engine)[-3], TREASURER, AUDITOR)  # two writes back
    policy = policy_file(log.tmp)
    result = hazard_verify(log, "--policy", policy)
    assert result.exit_code == 0, result.output
    assert f"key: {VERIFIER.text()} (the log of the policy {policy})" in result.output
    assert f"policy: {policy} asks for 2 of treasurer, auditor, chair" in result.output
    assert (
        f"witnesses: treasurer up to size {size}, auditor up to size {size}, chair nothing"
        in result.output
    )
    assert f"witnessed: the checkpoint of size {size}, cosigned by auditor at " in result.output
    after = log.size - size
    assert f"warning: the {after} events after it (positions {size + 1}..{log.size})" in (
        result.output
    )
    assert result.output.rstrip().endswith("and the checkpoint your policy's witnesses cosigned")


def test_verify_under_a_policy_fails_for_want_of_a_quorum(log: Log) -> None:
    cosign(log.engine, log.size, CHAIR)
    result = hazard_verify(log, "--policy", policy_file(log.tmp, "all"))
    assert result.exit_code == 1, result.output
    assert (
        "problem under the policy: for want of a quorum: no stored checkpoint is cosigned by "
        "all of treasurer, auditor, chair, as the policy asks" in result.output
    )
    assert f"witnesses: treasurer nothing, auditor nothing, chair up to size {log.size}" in (
        result.output
    )
    assert "every hash chain verifies" not in result.output


def test_the_insider_s_rewrite_passes_plain_verify_and_fails_under_the_policy(log: Log) -> None:
    size = cosign(log.engine, log.size, TREASURER, AUDITOR, CHAIR)
    policy = policy_file(log.tmp)
    assert hazard_verify(log, "--policy", policy).exit_code == 0
    with unguarded(log) as conn:
        whole_log_rehashed_and_resigned(log, conn, SIGNER)
    plain = hazard_verify(log)
    assert plain.exit_code == 0, plain.output  # the bank's word, as before
    result = hazard_verify(log, "--policy", policy)
    assert result.exit_code == 1, result.output
    assert (
        f"problem under the policy: the checkpoint of size {size} that auditor, chair, "
        "treasurer cosigned is not the one stored" in result.output
    )
    assert f"they cosigned another tree of {size} events, which the events no longer give" in (
        result.output
    )


def test_the_policy_chooses_the_key_and_a_key_it_does_not_list_is_refused(log: Log) -> None:
    cosign(log.engine, log.size, TREASURER, AUDITOR)
    other = log.tmp / "other.pub"
    other.write_text(OTHER.verifier.text() + "\n", encoding="utf-8")
    refused = hazard_verify(log, "--policy", policy_file(log.tmp), "--key", str(other))
    assert refused.exit_code == 2
    assert "is not a log the policy" in refused.output
    bad = log.tmp / "bad.policy"
    bad.write_text("log nonsense\nquorum none\n", encoding="utf-8")
    unreadable = hazard_verify(log, "--policy", str(bad))
    assert unreadable.exit_code == 2 and "line 1" in unreadable.output
    # A policy of another log's key: nothing the bank signed holds under it.
    theirs = hazard_verify(log, "--policy", policy_file(log.tmp, "any", OTHER.verifier))
    assert theirs.exit_code == 1
    assert "is not signed by the policy's log key" in theirs.output


# -- an export, offline ---------------------------------------------------------------


def _exported(log: Log, name: str, *scope: str) -> Path:
    out = log.tmp / name
    url = log.engine.url.render_as_string(hide_password=False)
    made = CliRunner().invoke(main, ["export", *scope, "-o", str(out)], env={"DATABASE_URL": url})
    assert made.exit_code == 0, made.output
    return out


def test_verify_file_under_a_policy_and_without(log: Log) -> None:
    size = cosign(log.engine, sizes(log.engine)[-2], TREASURER, CHAIR)  # one write back
    file = _exported(log, "all.jsonl", "--all")
    runner = CliRunner()
    alone = runner.invoke(main, ["verify", str(file)])
    assert alone.exit_code == 0, alone.output
    assert (
        "the file is checked against the bank's key alone: nothing shows that anyone but the "
        f"bank saw this log (its cosigned checkpoint (size {size}, 2 witness cosignature "
        "line(s)) was not checked: give --policy, your own policy file)" in alone.output
    )
    policy = policy_file(log.tmp)
    held = runner.invoke(main, ["verify", str(file), "--policy", policy])
    assert held.exit_code == 0, held.output
    assert "key: " + VERIFIER.text() + " (your policy's log)" in held.output
    assert "policy: your policy asks for 2 of treasurer, auditor, chair" in held.output
    assert f"witnessed: the checkpoint of size {size}, cosigned by chair at " in held.output
    assert f"positions {size + 1}..{log.size} are after the checkpoint the witnesses" in (
        held.output
    )
    wanting = runner.invoke(main, ["verify", str(file), "--policy", policy_file(log.tmp, "all")])
    assert wanting.exit_code == 1
    assert (
        "for want of a quorum: the closing record's cosigned checkpoint, of size "
        f"{size}, is not cosigned by all of treasurer, auditor, chair, as the policy asks: of "
        "your policy's witnesses it carries chair, treasurer" in wanting.output
    )


def test_verify_file_under_a_policy_refuses_a_file_no_witness_cosigned(log: Log) -> None:
    file = _exported(log, "bare.jsonl", "--table", "t1")
    result = CliRunner().invoke(main, ["verify", str(file), "--policy", policy_file(log.tmp)])
    assert result.exit_code == 1
    assert "the closing record carries no checkpoint cosigned by 2 of treasurer" in result.output
    assert "or its cosigned checkpoint was stripped" in result.output
    none = CliRunner().invoke(main, ["verify", str(file), "--policy", policy_file(log.tmp, "none")])
    assert none.exit_code == 0, none.output
    assert "policy: your policy asks for no witness" in none.output
