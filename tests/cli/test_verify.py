"""`hazard verify`, through click's runner: the log from the database, on SQLite and
PostgreSQL (what it says it checked and with which key, a key that did not sign, an
incremental run, --deep), and an export alone, offline (`hazard verify FILE`). The
checks themselves: tests/ledger/test_tamper.py and test_offline_verify.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ledger.books.book import Book
from ledger.cli import main
from ledger.exports import offline
from ledger.exports.offline import shares
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.log.keys import Signer
from ledger.store.vocabulary import Deposited
from tests.ledger import attackkit
from tests.ledger.cosignkit import sizes
from tests.ledger.offlinekit import encoded, exported_files, fails, records, settled
from tests.ledger.tamperkit import (
    OTHER,
    Log,
    hazard_verify,
    played_log,
    receipt_file,
    unguarded,
    whole_log_rehashed_and_resigned,
)
from tests.signing import ORIGIN, VERIFIER


@pytest.fixture
def log(store: EventStore, tmp_path: Path) -> Iterator[Log]:
    yield from played_log(store, tmp_path)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, bytes]]:
    yield from exported_files(tmp_path_factory)


# -- the log, from the database ---------------------------------------------------------


def test_verify_says_what_it_checked_and_with_which_key(log: Log, signing_key: Path) -> None:
    result = hazard_verify(log)
    assert result.exit_code == 0, result.output
    root = open_checkpoint(log.receipt, [VERIFIER]).root.hex()
    assert f"events: {log.size} in the log, {log.size} read (positions 1..{log.size})" in (
        result.output
    )
    assert f"key: {VERIFIER.text()} (the public half of the signing key at {signing_key})" in (
        result.output
    )
    assert f"root: {root} (the tree of {log.size} events)" in result.output
    assert "every hash chain verifies" in result.output
    given = hazard_verify(log, "--key", VERIFIER.text(), "--checkpoint", receipt_file(log))
    assert given.exit_code == 0, given.output
    assert f"key: {VERIFIER.text()} (--key)" in given.output
    assert f"the log agrees with the checkpoint of size {log.size}" in given.output


def test_a_key_that_did_not_sign_the_log_is_a_problem_and_no_key_an_error(
    log: Log, tmp_path: Path
) -> None:
    other = tmp_path / "other.vkey"
    other.write_text(OTHER.verifier.text() + "\n", encoding="utf-8")
    first = sizes(log.engine)[0]  # the first write's checkpoint, at its seal
    result = hazard_verify(log, "--key", str(other))
    assert result.exit_code == 1
    assert f"key: {OTHER.verifier.text()} (--key {other})" in result.output
    assert (
        f"position {first}: the stored checkpoint of size {first} is not signed by the "
        "trusted key" in result.output
    )
    refused = hazard_verify(log, "--key", str(other), "--checkpoint", receipt_file(log))
    assert refused.exit_code == 1
    assert "is not a checkpoint signed by the trusted key" in refused.output
    nowhere = hazard_verify(log, env={"HAZARD_KEY": str(tmp_path / "none.key")})
    assert nowhere.exit_code == 1
    assert "no key to check the checkpoints with" in nowhere.output
    assert "--key" in nowhere.output


def test_an_incremental_run_reads_only_newer_events_and_rereads_a_rewritten_tree(
    log: Log, store: EventStore, tmp_path: Path
) -> None:
    state = str(tmp_path / "verified.json")
    first = hazard_verify(log, "--state", state)
    assert first.exit_code == 0, first.output
    assert f"now holds the tree of {log.size} events verified" in first.output
    club = Club(Book(store))
    for amount in (1, 2, 3):
        club.account_command("ann", Deposited, amount, "setter")
    added = 3 * 2  # three writes, each a deposit and its seal
    size = log.size + added
    again = hazard_verify(log, "--state", state)
    assert again.exit_code == 0, again.output
    assert f"events: {size} in the log, {added} read (positions {log.size + 1}..{size})" in (
        again.output
    )
    assert f"(incremental: the first {log.size} were verified before" in again.output
    with unguarded(log) as conn:
        whole_log_rehashed_and_resigned(log, conn)
    rewritten = hazard_verify(log, "--state", state)
    assert rewritten.exit_code == 1
    assert "is not the one verified then: a full run" in rewritten.output
    assert f"events: {size} in the log, {size} read" in rewritten.output


def test_verify_deep_passes_a_played_log_and_accepts_a_receipt_saved_with_jq_r(log: Log) -> None:
    path = log.tmp / "receipt-jq-r.txt"
    path.write_text(log.receipt + "\n", encoding="utf-8")  # `jq -r` adds a newline
    result = hazard_verify(log, "--deep", "--checkpoint", str(path))
    assert result.exit_code == 0, result.output
    assert "every table equals the replay of the events" in result.output
    assert "and every read model" in result.output


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        # The two read-model tamperings of the issue: the API served both.
        ("UPDATE accounts SET balance = balance + 1000 WHERE account = 'player:ann'",
         "accounts: player:ann"),
        ("UPDATE postings SET amount = amount * 10 WHERE id = (SELECT min(id) FROM postings"
         " WHERE account = 'player:ann')", "postings: position"),
    ],
)  # fmt: skip
def test_verify_deep_names_a_read_model_edited_behind_the_events(
    log: Log, edit: str, named: str
) -> None:
    with log.engine.begin() as conn:
        conn.exec_driver_sql(edit)
    plain = hazard_verify(log)
    assert plain.exit_code == 0, plain.output  # the log itself is untouched
    deep = hazard_verify(log, "--deep")
    assert deep.exit_code == 1, deep.output
    assert "differ from the replay of the events" in deep.output
    assert named in deep.output


def test_verify_deep_names_a_payout_rewritten_and_re_signed_with_the_bank_s_key(
    log: Log,
) -> None:
    """The issue's attack: a payout made 20 smaller on a copy, every hash chain, the tree
    and every checkpoint made again with the bank's own key, and the read models
    rebuilt. The log's checks and the read models all agree with the events; the rules
    do not, and --deep names the payout."""
    attackkit.payout_rewritten(log)
    plain = hazard_verify(log)
    assert plain.exit_code == 0, plain.output
    deep = hazard_verify(log, "--deep")
    assert deep.exit_code == 1, deep.output
    assert "read models: every table equals the replay of the events" in deep.output
    paid = log.rows("type = 'BetSettled'")[-1]
    assert (
        f"rules: the first event the rules do not allow: position {paid.position}: at table "
        f"t1 version {paid.version}, BetSettled b9 pays player ann 780, but the throw 1+3 at "
        "version 12 under english rules decides b9 for player ann: ann is paid 800"
    ) in deep.output


def test_a_mistyped_key_file_is_named_as_no_file(log: Log) -> None:
    result = hazard_verify(log, "--key", "/nowhere/club.pub")
    assert result.exit_code == 2 and "no file '/nowhere/club.pub'" in result.output


# -- an export, offline ------------------------------------------------------------------


def test_cli_verifies_a_file_without_a_database(
    files: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAZARD_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    path = tmp_path / "t1.jsonl"
    path.write_bytes(files["t1"])
    keyfile = tmp_path / "club.pub"
    keyfile.write_text(VERIFIER.text() + "\n")
    result = CliRunner().invoke(main, ["verify", str(path), "--key", str(keyfile)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("verified\n")
    assert "tables: 1 replayed through the engine" in result.output
    assert "(the key you gave)" in result.output
    result = CliRunner().invoke(main, ["verify", "-"], input=files["t1"])
    assert result.exit_code == 0, result.output
    assert "taken on trust:" in result.output and "the file names" in result.output


def test_cli_says_where_a_file_disagrees(files: dict[str, bytes], tmp_path: Path) -> None:
    recs = records(files["t1"])
    number = settled(recs, "b9")
    recs[number - 1]["payload"]["winner"] = "bob"
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(encoded(recs)))
    result = CliRunner().invoke(main, ["verify", str(path), "--key", VERIFIER.text()])
    assert result.exit_code == 1
    assert result.output == f"line {number}: " + fails(encoded(recs)).reason + "\n"
    other = Signer.generate(ORIGIN).verifier.text()
    path.write_bytes(files["t1"])
    result = CliRunner().invoke(main, ["verify", str(path), "--key", other])
    assert result.exit_code == 1 and result.output.startswith("line 1: the file's header names")


def test_cli_refuses_the_database_options_with_a_file(
    files: dict[str, bytes], tmp_path: Path
) -> None:
    path = tmp_path / "t1.jsonl"
    path.write_bytes(files["t1"])
    for option in (["--deep"], ["--state", str(tmp_path / "s")], ["--checkpoint", str(path)]):
        result = CliRunner().invoke(main, ["verify", str(path), *option])
        assert result.exit_code == 2 and "with FILE, only the file is checked" in result.output
    result = CliRunner().invoke(main, ["verify", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 1 and "cannot read" in result.output


@pytest.mark.parametrize("scope", ["all", "bob"])
def test_cli_says_the_same_on_every_number_of_processes(
    files: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    path = tmp_path / "file.jsonl"
    path.write_bytes(files[scope])
    # The check alone, not also made both ways (tests/conftest.py): which way it is made
    # is what is counted here.
    monkeypatch.setattr(offline, "verify", offline.verify.__wrapped__)  # type: ignore[attr-defined]
    taken: list[int] = []
    real = shares.shared

    def counted(*args: Any) -> Any:
        taken.append(args[-1])
        return real(*args)

    monkeypatch.setattr(shares, "shared", counted)
    said = {
        jobs: CliRunner().invoke(main, ["verify", str(path), "--jobs", jobs])
        for jobs in ("1", "2", "3")
    }
    assert taken == [2, 3]  # --jobs 1 is the serial check, the others shared
    assert said["1"].exit_code == 0, said["1"].output
    assert said["1"].output.startswith("verified\n")
    assert said["2"].output == said["1"].output == said["3"].output
    monkeypatch.setattr(shares, "cores", lambda: 2)
    assert CliRunner().invoke(main, ["verify", str(path)]).output == said["1"].output
    assert taken == [2, 3, 2]  # without --jobs, on the cores there are


def test_cli_names_the_same_first_line_on_two_processes(
    files: dict[str, bytes], tmp_path: Path
) -> None:
    recs = records(files["all"])
    for bet in ("b9", "b8"):  # two lines disagree: the first in the file is named
        recs[settled(recs, bet) - 1]["payload"]["winner"] = "bob"
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(encoded(recs)))
    one, two = (
        CliRunner().invoke(main, ["verify", str(path), "--jobs", jobs]) for jobs in ("1", "2")
    )
    first = min(settled(recs, "b8"), settled(recs, "b9"))
    assert one.exit_code == two.exit_code == 1
    assert one.output.startswith(f"line {first}: ") and two.output == one.output


def test_cli_jobs_is_for_a_file(files: dict[str, bytes], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["verify", "--jobs", "2"])
    assert result.exit_code == 2 and "--jobs checks a FILE" in result.output
    path = tmp_path / "t1.jsonl"
    path.write_bytes(files["t1"])
    result = CliRunner().invoke(main, ["verify", str(path), "--jobs", "0"])
    assert result.exit_code == 2 and "--jobs" in result.output
    # Thousands of processes ran out of file descriptors (an OSError's traceback).
    result = CliRunner().invoke(main, ["verify", str(path), "--jobs", "99999"])
    assert result.exit_code == 2 and "99999 is not in the range 1<=x<=64" in result.output
    result = CliRunner().invoke(main, ["verify", "-", "--jobs", "2"], input=files["t1"])
    assert result.exit_code == 0 and result.output.startswith("verified\n")  # on one
