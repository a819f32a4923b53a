"""The watcher's state file (ledger.watch.state): written whole or not at all, read
back as written, and refused with a clear message when it is not one a watcher wrote;
and receipts handed to it (ledger.watch.receipts.admit), checked before they are kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger.store.eventstore import EventStore
from ledger.store.log.keys import Signer
from ledger.store.log.policy import Policy
from ledger.watch import state
from ledger.watch.evidence import Outcome, Verdict
from ledger.watch.receipts import Admitted, Refused, admit
from ledger.watch.state import Receipt, ReceiptError, State, StateError
from tests.signing import ORIGIN
from tests.watch.watchkit import (
    AUDITOR,
    TREASURER,
    cosign,
    evening,
    forged,
    policy_text,
    tlog_proof,
)

POLICY = Policy.parse(policy_text())


def test_a_state_is_read_back_as_it_was_saved(store: EventStore, tmp_path: Path) -> None:
    written = evening(store, 4)
    proof = tlog_proof(store.engine, written[2].position)
    kept = State(
        written[3].note,
        (Receipt("r2.txt", written[1].note, written[3].size), Receipt("p.tlog-proof", proof)),
        7,
    )
    path = tmp_path / "watcher" / "hazard-watch.json"
    path.parent.mkdir()
    state.save(path, kept)
    assert state.load(path) == kept
    assert [p.name for p in path.parent.iterdir()] == ["hazard-watch.json"]  # no temporary left
    assert state.load(tmp_path / "none.json") == State()


def test_a_save_is_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "hazard-watch.json"
    state.save(path, State(gossip_after=1))
    before = path.read_bytes()
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))

    def crash(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="No space left"):
        state.save(path, State(gossip_after=2))
    assert path.read_bytes() == before  # the old state, whole
    assert [p.name for p in tmp_path.iterdir()] == ["hazard-watch.json"]
    assert len(synced) == 1  # the new file was on disk before the rename was tried
    monkeypatch.undo()
    state.save(path, State(gossip_after=2))
    assert state.load(path).gossip_after == 2


HEAD = '{"format": "hazard-watch/1", '


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "not JSON"),
        ('{"format": "hazard-watch/9"}', "its format is not 'hazard-watch/1'"),
        (HEAD + '"newest": 3, "receipts": [], "gossip_after": 0}', "`newest` is not a note"),
        (HEAD + '"newest": "x\\n", "receipts": [], "gossip_after": 0}', "does not read"),
        (HEAD + '"newest": null, "receipts": [{}], "gossip_after": 0}', "a receipt is {name"),
    ],
)  # fmt: skip
def test_a_damaged_state_is_refused_and_left_alone(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "hazard-watch.json"
    path.write_text(text)
    with pytest.raises(StateError) as refused:
        state.load(path)
    message = str(refused.value)
    assert message.startswith(f"{path} is not a watcher's state, or it was damaged (")
    assert why in message and "move it aside to start again" in message
    assert path.read_text() == text


def test_a_receipt_is_kept_once_checked_and_once_only(store: EventStore) -> None:
    written = evening(store, 5)
    third, newest = written[2], written[-1].size
    cosign(store.engine, newest, TREASURER, AUDITOR)
    receipt = Receipt.read("r3.txt", third.note.encode() + b"\n\n")  # as an editor saves it
    added = admit(State(), receipt, POLICY)
    assert isinstance(added, Admitted)
    assert added.state.receipts == (Receipt("r3.txt", third.note),)
    assert added.said.startswith(
        f"r3.txt: added, a checkpoint of size {third.size} signed by test.hazard/ledger"
    )
    again = admit(added.state, receipt, POLICY)
    assert isinstance(again, Admitted) and again.state == added.state
    assert again.said == "r3.txt: already held (as receipt r3.txt); nothing added"
    position = written[1].position
    proof = Receipt.read("p.tlog-proof", tlog_proof(store.engine, position).encode())
    both = admit(added.state, proof, POLICY)
    assert isinstance(both, Admitted) and len(both.state.receipts) == 2
    assert f"a tlog-proof of the event at position {position}, in the tree of size {newest}" in (
        both.said
    )


def test_a_receipt_of_a_size_held_with_another_root_is_a_fork(store: EventStore) -> None:
    fourth = evening(store, 5)[3]
    held = State(receipts=(Receipt("r4.txt", fourth.note),))
    found = admit(held, Receipt("other.txt", forged(fourth.size)), POLICY)
    assert isinstance(found, Verdict) and found.outcome is Outcome.EVIDENCE
    assert f"FORK: the bank signed two different histories of size {fourth.size}." in found.lines
    assert (
        f"receipt r4.txt, of size {fourth.size}:" in found.lines
        and f"receipt other.txt, of size {fourth.size}:" in found.lines
    )


def test_a_receipt_not_signed_by_the_policy_s_log_is_not_kept(store: EventStore) -> None:
    written = evening(store, 3)
    other = Signer.generate(ORIGIN)
    stranger = Policy.parse(policy_text(log=other.verifier.text()))
    receipt = Receipt("r.txt", tlog_proof(store.engine, written[1].position))
    with pytest.raises(Refused, match=r"r.txt is not kept: no known key signed this note"):
        admit(State(), receipt, stranger)
    with pytest.raises(ReceiptError, match="neither a signed checkpoint nor a tlog-proof"):
        Receipt.read("notes.txt", b"my winnings tonight\n")
