"""tlog-proof files (ledger.store.log.tlogproof) and `hazard watch check`'s reading of
them (ledger.watch.receipts.check_file): a file made from the log proves its event
under the reader's policy, and any change to its extra line, path, index or note is
caught, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json

import pytest

from ledger.store.eventstore import EventStore
from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, parse_note, sign_checkpoint
from ledger.store.log.policy import Policy
from ledger.store.log.tlogproof import HEADER, TlogProof, TlogProofError, check
from ledger.watch.receipts import Checked, check_file
from tests.signing import SIGNER
from tests.watch.watchkit import (
    AUDITOR,
    CHAIR,
    TREASURER,
    Written,
    changed_extra,
    cosign,
    evening,
    policy_text,
    tlog_proof,
)

POLICY = Policy.parse(policy_text())


@pytest.fixture
def written(store: EventStore) -> list[Written]:
    """Seven writes, the newest cosigned."""
    written = evening(store, 7)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    return written


@pytest.fixture
def proof(store: EventStore, written: list[Written]) -> str:
    """The tlog-proof of the fourth write's deposit (ann's 30, her stream's version 4)."""
    return tlog_proof(store.engine, written[3].position)


def path_length(index: int, size: int) -> int:
    """How many hashes RFC 9162's PATH(index, D[size]) has (2.1.3.1): one a split."""
    length = 0
    while size > 1:
        k = 1 << ((size - 1).bit_length() - 1)  # the largest power of 2 below size
        index, size = (index, k) if index < k else (index - k, size - k)
        length += 1
    return length


def test_a_proof_from_the_log_proves_its_event_under_the_policy(
    proof: str, written: list[Written]
) -> None:
    position, size = written[3].position, written[-1].size
    parsed = TlogProof.parse(proof)
    assert parsed.text() == proof and proof.startswith(HEADER + "\nextra ")
    assert parsed.index == position - 1 and parsed.position == position
    assert len(parsed.path) == path_length(position - 1, size)
    proved = check(parsed, POLICY)
    assert proved.verdict.quorum and proved.position == position
    assert json.loads(proved.frame)["position"] == position
    found, lines = check_file("deposit.tlog-proof", proof.encode(), POLICY)
    assert found is Checked.PROVEN
    assert lines[0].startswith(
        f"event: position {position}, Deposited on account:player:ann (version 4)"
    )
    assert lines[1] == 'payload: {"account":"player:ann","amount":30}'
    assert f"in the tree of {size} events" in lines[2]
    assert "cosigned by auditor, treasurer" in lines[2]
    assert lines[-1] == "deposit.tlog-proof: proven"


def _lines(proof: str) -> list[str]:
    return proof.split("\n")


def _changed_extra(proof: str) -> str:
    return changed_extra(proof, b":30}", b":3000}")


def _changed_path(proof: str) -> str:
    lines = _lines(proof)
    lines[3] = base64.b64encode(bytes(32)).decode()
    return "\n".join(lines)


def _changed_index(proof: str) -> str:
    index = TlogProof.parse(proof).index
    return proof.replace(f"\nindex {index}\n", f"\nindex {index - 1}\n")


def _changed_note(proof: str) -> str:
    lines = _lines(proof)
    blank = lines.index("")
    lines[blank + 2] = str(int(lines[blank + 2]) + 1)  # the size, under the log's signature
    return "\n".join(lines)


def _changed_root(proof: str) -> str:
    lines = _lines(proof)
    blank = lines.index("")
    lines[blank + 3] = base64.b64encode(bytes(32)).decode()
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (_changed_extra, "the inclusion path does not lead from the extra line's event"),
        (_changed_path, "the inclusion path does not lead from the extra line's event"),
        (_changed_index, "the inclusion path does not lead from the extra line's event"),
        (_changed_note, "the signature by test.hazard/ledger+"),
        (_changed_root, "the signature by test.hazard/ledger+"),
        (lambda p: p.replace(HEADER, "c2sp.org/tlog-proof@v2"), "this is not a tlog-proof"),
        (lambda p: p.replace("\n\n", "\n", 1), "(path): 'test.hazard/ledger' is not base64"),
    ],
    ids=["extra", "path", "index", "note", "root", "header", "blank line"],
)
def test_a_changed_proof_proves_nothing(proof: str, change: object, why: str) -> None:
    assert callable(change)
    changed = change(proof)
    assert changed != proof
    found, lines = check_file("r.tlog-proof", changed.encode(), POLICY)
    assert found is Checked.BROKEN, lines
    assert lines[0].startswith("r.tlog-proof does not prove its event: ")
    assert why in lines[0]


def test_a_frame_that_names_another_position_proves_nothing() -> None:
    """A tree the bank signed whose first leaf is an event that says it is at position
    2: the path holds, but the event is not where the proof puts it."""
    frames = [b'{"position":2,"type":"Deposited"}', b'{"position":1,"type":"Deposited"}']
    leaves = [merkle.leaf_hash(f) for f in frames]
    root = merkle.node_hash(leaves[0], leaves[1])
    note = sign_checkpoint(Checkpoint(SIGNER.name, 2, root), SIGNER)
    text, _ = parse_note(note)
    note += (
        TREASURER.cosign(text, 1_790_000_000).line() + AUDITOR.cosign(text, 1_790_000_000).line()
    )
    misplaced = TlogProof(0, (leaves[1],), note, frames[0])
    assert check(misplaced, POLICY).position == 1  # the path alone holds
    found, lines = check_file("r.tlog-proof", misplaced.text().encode(), POLICY)
    assert found is Checked.BROKEN
    assert lines == [
        "r.tlog-proof does not prove its event: the extra line's event says position 2, "
        "but the proof is of position 1"
    ]


def test_a_proof_short_of_the_quorum_holds_but_is_not_witnessed(store: EventStore) -> None:
    written = evening(store, 5)
    cosign(store.engine, written[-1].size, CHAIR)
    proof = tlog_proof(store.engine, written[2].position)
    found, lines = check_file("r.tlog-proof", proof.encode(), POLICY)
    assert found is Checked.UNWITNESSED
    assert lines[-1] == (
        "not witnessed: the policy asks 2 of treasurer, auditor, chair; the event is in "
        "the tree the bank signed, on its word alone"
    )


def test_a_witness_s_forged_cosignature_breaks_the_proof(proof: str) -> None:
    forged = proof + CHAIR.cosign("some other checkpoint\n", 1_790_000_000).line()
    found, lines = check_file("r.tlog-proof", forged.encode(), POLICY)
    assert found is Checked.BROKEN and "the cosignature by chair.example/w+" in lines[0]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"{HEADER}\nindex 01\n\nx\n", "line 2 (index): '01' is not a decimal number"),
        (f"{HEADER}\nextra !!\nindex 0\n\nx\n", "line 2 (extra): '!!' is not base64"),
        (f"{HEADER}\nindex 0\nAAAA\n\nx\n", "line 3 (path): a hash is 32 bytes, not 3"),
        (f"{HEADER}\nextra AA==\n\nx\n", "line 3 must be `index <record number>`"),
        (f"{HEADER}\nindex 0\n\nnot a note\n", "the checkpoint after the blank line"),
        (f"{HEADER}\nindex 9223372036854775807\n\nx\n", "below 2^63"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_line(text: str, why: str) -> None:
    with pytest.raises(TlogProofError) as refused:
        TlogProof.parse(text)
    assert why in str(refused.value)


def test_a_proof_without_an_extra_line_has_no_leaf(proof: str) -> None:
    parsed = TlogProof.parse(proof)
    bare = TlogProof(parsed.index, parsed.path, parsed.note)
    assert TlogProof.parse(bare.text()) == bare
    with pytest.raises(TlogProofError, match="no extra line"):
        check(bare, POLICY)
