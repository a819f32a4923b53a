"""`hazard watch`, `hazard watch add` and `hazard watch check` (ledger.cli.watch): what
they print and the status they exit with (0 consistent, 1 evidence: a fork, or a size
the log signed denied, 2 could not check, 3 not proven), reading a database (SQLite
and PostgreSQL) or the ledger's anonymous reads over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ledger.cli import main
from ledger.store.eventstore import EventStore
from ledger.store.log import witnessed
from tests.signing import SIGNER
from tests.watch.watchkit import (
    AUDITOR,
    CHAIR,
    TREASURER,
    changed_extra,
    cosign,
    cut,
    evening,
    forged,
    ledger_serving,
    more,
    policy_text,
    rewrite,
    tlog_proof,
)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A player's directory: their policy (club.policy), where the state goes."""
    folder = tmp_path / "player"
    folder.mkdir()
    (folder / "club.policy").write_text(policy_text())
    monkeypatch.chdir(folder)
    return folder


def hazard(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def watching(store: EventStore, *more_args: str) -> Result:
    url = store.engine.url.render_as_string(hide_password=False)
    return hazard("watch", "--database-url", url, "--policy", "club.policy", *more_args)


def test_a_watcher_keeps_what_it_verified_and_stops_on_a_fork(
    store: EventStore, here: Path
) -> None:
    written = evening(store, 9)
    third, sixth = written[2], written[5]
    (here / "r3.txt").write_text(third.note)
    (here / "r6.txt").write_text(sixth.note)
    added = hazard("watch", "add", "r3.txt", "r6.txt", "--policy", "club.policy")
    assert added.exit_code == 0, added.output
    assert added.output.splitlines()[-1] == "saved: hazard-watch.json holds 2 receipt(s)"
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    first = watching(store)
    assert first.exit_code == 0, first.output
    assert (
        f"receipts: 2, each consistent with it (sizes {third.size}, {sixth.size}; 2 checked now"
        in first.output
    )
    assert first.output.splitlines()[-1] == "saved: hazard-watch.json"

    more(store, 2)
    rewrite(store.engine, written[4].position)
    cosign(store.engine, more(store, 1)[-1].size, TREASURER, CHAIR)
    kept = (here / "hazard-watch.json").read_bytes()
    forked = watching(store)
    assert forked.exit_code == 1, forked.output
    assert f"FORK: the bank signed two different histories of size {sixth.size}." in forked.output
    assert f"the bank rewrote history in positions {third.size + 1}..{sixth.size}." in forked.output
    assert sixth.note.rstrip("\n") in forked.output  # the receipt, as kept
    assert (
        forked.output.splitlines()[-1]
        == "nothing was saved: hazard-watch.json still holds what it held"
    )
    assert (here / "hazard-watch.json").read_bytes() == kept


def test_the_ledger_is_read_anonymously_over_http(store: EventStore, here: Path) -> None:
    reported = evening(store, 6)[-1].size
    cosign(store.engine, reported, TREASURER, AUDITOR)
    with ledger_serving(store.engine) as (url, asked):
        first = hazard("watch", "--url", url, "--policy", "club.policy", "--report")
        newest = more(store, 3)[-1].size
        cosign(store.engine, newest, AUDITOR, CHAIR)
        second = hazard("watch", "--url", url, "--policy", "club.policy", "--state", "w.json")
        third = hazard("watch", "--url", url + "/", "--policy", "club.policy", "--state", "w.json")
    assert first.exit_code == 0, first.output
    assert "reported: the ledger's gossip lists this checkpoint" in first.output
    assert second.exit_code == 0 and third.exit_code == 0, second.output + third.output
    assert "gossip: 1 new report(s)" in second.output and "gossip" not in third.output
    assert (
        f"consistent: it is the checkpoint this watcher verified before, of size {newest}"
        in third.output
    )
    assert asked == [
        "/log/cosigned", "/log/gossip?after=0&limit=100", "/log/gossip",  # the first
        "/log/cosigned", "/log/gossip?after=0&limit=100",  # the second: nothing held, and
        f"/log/proofs/consistency?from={reported}&to={newest}",  # the first's report
        "/log/cosigned", "/log/gossip?after=1&limit=100",  # the third: held the newest
    ]  # fmt: skip
    with store.engine.connect() as conn:
        assert [r.size for r in witnessed.reports(conn)] == [reported]


def test_no_quorum_and_an_unreachable_ledger_could_not_check(store: EventStore, here: Path) -> None:
    size = evening(store, 4)[-1].size
    cosign(store.engine, size, CHAIR)
    short = watching(store)
    assert short.exit_code == 2
    assert short.output.splitlines() == [
        f"no quorum: the newest checkpoint (size {size}) has cosignatures from chair only; "
        "the policy asks 2 of treasurer, auditor, chair",
        "nothing was saved: hazard-watch.json was not made",
    ]
    away = hazard("watch", "--url", "http://127.0.0.1:9", "--policy", "club.policy")
    assert away.exit_code == 2 and away.output.startswith(
        "could not check: cannot reach http://127.0.0.1:9"
    )
    assert not (here / "hazard-watch.json").exists()


def test_a_size_the_bank_signed_and_the_ledger_has_not_is_evidence_exit_1(
    store: EventStore, here: Path
) -> None:
    newest = evening(store, 4)[-1].size
    cosign(store.engine, newest, TREASURER, AUDITOR)
    never = newest + 12
    (here / "later.txt").write_text(forged(never))  # signed by the bank, a size it never had
    assert hazard("watch", "add", "later.txt", "--policy", "club.policy").exit_code == 0
    found = watching(store)
    assert found.exit_code == 1, found.output
    assert (
        f"DENIED: the ledger says it has no checkpoint of size {never}, and its log signed "
        f"one: receipt later.txt (below).\n  asked for it: no checkpoint of size {never}"
    ) in found.output
    assert forged(never).rstrip("\n") in found.output


def test_a_ledger_restored_from_a_cut_backup_is_caught_over_http(
    store: EventStore, here: Path
) -> None:
    """The ledger serving a log restored from a backup cut short of a player's receipt:
    asked for the receipt's size, it answers 404. The watcher stops, exit 1, and prints
    the receipt that proves the size existed, and keeps what it held."""
    written = evening(store, 9)
    older, deposit = written[5], written[8]
    cosign(store.engine, older.size, TREASURER, AUDITOR)
    (here / "deposit.txt").write_text(deposit.note)
    assert hazard("watch", "add", "deposit.txt", "--policy", "club.policy").exit_code == 0
    with ledger_serving(store.engine) as (url, _):
        first = hazard("watch", "--url", url, "--policy", "club.policy")
        assert first.exit_code == 0, first.output
        kept = (here / "hazard-watch.json").read_text()
        cut(store.engine, older.size)
        found = hazard("watch", "--url", url, "--policy", "club.policy")
    assert found.exit_code == 1, found.output
    assert (
        f"DENIED: the ledger says it has no checkpoint of size {deposit.size}, and its log "
        f"signed one: receipt deposit.txt (below).\n  asked for it: {url}/log/proofs/"
        f"consistency?from={older.size}&to={deposit.size} answered 404: no checkpoint of "
        f"size {deposit.size}"
    ) in found.output
    assert deposit.note.rstrip("\n") in found.output
    assert found.output.endswith("nothing was saved: hazard-watch.json still holds what it held\n")
    assert (here / "hazard-watch.json").read_text() == kept


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--policy", "club.policy"], "give the ledger's --url (or a database's"),
        (["--url", "http://x"], "give --policy FILE: the keys and quorum you trust"),
        (["--url", "ftp://x", "--policy", "club.policy"], "'ftp://x' is not an http:// or"),
        (["--url", "http://x", "--policy", "none.policy"], "cannot read the policy none.policy"),
        (["--database-url", "sqlite:///none.db", "--policy", "club.policy"], "none.db"),
        (["add", "none.txt", "--policy", "club.policy"], "cannot read none.txt"),
        (["check", "none.tlog-proof", "--policy", "club.policy"], "cannot read none.tlog-proof"),
    ],
)  # fmt: skip
def test_a_command_that_cannot_check_says_why_and_exits_2(
    here: Path, args: list[str], said: str
) -> None:
    found = hazard("watch", *args)
    assert found.exit_code == 2, found.output
    assert said in found.output


def test_a_damaged_state_is_refused_and_left_as_it_is(store: EventStore, here: Path) -> None:
    cosign(store.engine, evening(store, 4)[-1].size, TREASURER, AUDITOR)
    (here / "hazard-watch.json").write_text('{"format": "hazard-watch/1", "newest": ')
    found = watching(store)
    assert found.exit_code == 2
    assert found.output.startswith("could not check: hazard-watch.json is not a watcher's state")
    assert "move it aside to start again" in found.output
    assert (here / "hazard-watch.json").read_text() == '{"format": "hazard-watch/1", "newest": '


def test_adding_a_receipt_of_another_history_is_a_fork_on_the_spot(
    store: EventStore, here: Path
) -> None:
    mine = evening(store, 4)[3]
    (here / "mine.txt").write_text(mine.note)
    (here / "theirs.txt").write_text(forged(mine.size))
    (here / "stranger.txt").write_text("not a receipt\n")
    assert hazard("watch", "add", "mine.txt", "--policy", "club.policy").exit_code == 0
    fork = hazard("watch", "add", "theirs.txt", "--policy", "club.policy")
    assert fork.exit_code == 1
    assert f"FORK: the bank signed two different histories of size {mine.size}." in fork.output
    refused = hazard("watch", "add", "stranger.txt", "--policy", "club.policy")
    assert (
        refused.exit_code == 2 and "neither a signed checkpoint nor a tlog-proof" in refused.output
    )


def test_check_proves_a_tlog_proof_offline_and_names_its_event(
    store: EventStore, here: Path
) -> None:
    written = evening(store, 6)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    position = written[4].position  # ann's deposit of 40
    proof = tlog_proof(store.engine, position)
    (here / "deposit.tlog-proof").write_text(proof)
    (here / "changed.tlog-proof").write_text(changed_extra(proof, b":40}", b":4000}"))
    good = hazard("watch", "check", "deposit.tlog-proof", "--policy", "club.policy")
    assert good.exit_code == 0, good.output
    assert good.output.splitlines()[0].startswith(
        f"event: position {position}, Deposited on account:player:ann"
    )
    assert good.output.splitlines()[-1] == "deposit.tlog-proof: proven"
    bad = hazard("watch", "--policy", "club.policy", "check", "changed.tlog-proof")
    assert bad.exit_code == 1
    assert bad.output.startswith("changed.tlog-proof does not prove its event:")
    (here / "alone.policy").write_text(policy_text("all"))
    short = hazard("watch", "check", "deposit.tlog-proof", "--policy", "alone.policy")
    assert short.exit_code == 2 and "not witnessed: the policy asks all of" in short.output
    assert SIGNER.name in good.output


LOADED = """
import json, sys
from ledger.cli import main
try:
    main(sys.argv[1:], prog_name="hazard")
except SystemExit as stopped:
    print(json.dumps([stopped.code, sorted(m for m in {HEAVY} if m in sys.modules)]))
"""
HEAVY = ("sqlalchemy", "alembic", "flask", "engine", "ledger.books", "ledger.service")
"""What a watcher that opens no database has no use for: the database's code, the
books and the engine beneath them, the API's Flask."""


def loaded(here: Path, *args: str) -> tuple[int, list[str]]:
    """How `hazard ARGS` exited, in a process of its own in `here`, and which of HEAVY
    it imported."""
    program = LOADED.replace("{HEAVY}", repr(set(HEAVY)))
    ran = subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=here, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.stderr == "" or ran.returncode == 0, ran.stderr
    code, found = json.loads(ran.stdout.splitlines()[-1])
    return code, found


def test_a_watcher_over_http_or_a_file_imports_no_database(store: EventStore, here: Path) -> None:
    """`hazard watch --url`, `hazard watch check` and their help start without
    SQLAlchemy, the books or the engine: most of the command's second went on importing
    them (bench.watch)."""
    written = evening(store, 6)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    (here / "deposit.tlog-proof").write_text(tlog_proof(store.engine, written[4].position))
    with ledger_serving(store.engine) as (url, _):
        assert loaded(here, "watch", "--url", url, "--policy", "club.policy") == (0, [])
    assert loaded(here, "watch", "check", "deposit.tlog-proof", "--policy", "club.policy") == (
        0,
        [],
    )
    assert (here / "hazard-watch.json").exists()
    assert loaded(here, "watch", "--help") == (0, [])
