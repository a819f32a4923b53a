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
    notes = evening(store, 4)
    kept = State(
        notes[3],
        (Receipt("r2.txt", notes[1], 4), Receipt("p.tlog-proof", tlog_proof(store.engine, 3))),
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
    notes = evening(store, 5)
    cosign(store.engine, 5, TREASURER, AUDITOR)
    receipt = Receipt.read("r3.txt", notes[2].encode() + b"\n\n")  # as an editor saves it
    added = admit(State(), receipt, POLICY)
    assert isinstance(added, Admitted) and added.state.receipts == (Receipt("r3.txt", notes[2]),)
    assert added.said.startswith(
        "r3.txt: added, a checkpoint of size 3 signed by test.hazard/ledger"
    )
    again = admit(added.state, receipt, POLICY)
    assert isinstance(again, Admitted) and again.state == added.state
    assert again.said == "r3.txt: already held (as receipt r3.txt); nothing added"
    proof = Receipt.read("p.tlog-proof", tlog_proof(store.engine, 2).encode())
    both = admit(added.state, proof, POLICY)
    assert isinstance(both, Admitted) and len(both.state.receipts) == 2
    assert "a tlog-proof of the event at position 2, in the tree of size 5" in both.said


def test_a_receipt_of_a_size_held_with_another_root_is_a_fork(store: EventStore) -> None:
    notes = evening(store, 5)
    held = State(receipts=(Receipt("r4.txt", notes[3]),))
    found = admit(held, Receipt("other.txt", forged(4)), POLICY)
    assert isinstance(found, Verdict) and found.outcome is Outcome.EVIDENCE
    assert "FORK: the bank signed two different histories of size 4." in found.lines
    assert (
        "receipt r4.txt, of size 4:" in found.lines
        and "receipt other.txt, of size 4:" in found.lines
    )


def test_a_receipt_not_signed_by_the_policy_s_log_is_not_kept(store: EventStore) -> None:
    evening(store, 3)
    other = Signer.generate(ORIGIN)
    stranger = Policy.parse(policy_text(log=other.verifier.text()))
    receipt = Receipt("r.txt", tlog_proof(store.engine, 2))
    with pytest.raises(Refused, match=r"r.txt is not kept: no known key signed this note"):
        admit(State(), receipt, stranger)
    with pytest.raises(ReceiptError, match="neither a signed checkpoint nor a tlog-proof"):
        Receipt.read("notes.txt", b"my winnings tonight\n")
