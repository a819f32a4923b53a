"""The witness's rules (ledger.witness.cosigning over its state), one by one as
c2sp.org/tlog-witness states them: what it cosigns, what it refuses with which error,
and which refusals it keeps as evidence against the log."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from ledger.store.log.checkpoint import Checkpoint, parse_note, sign_checkpoint, sign_note
from ledger.store.log.cosignature import cosignatures
from ledger.store.log.keys import Signer
from ledger.witness.cosigning import Witness
from ledger.witness.judge import Breach, NotAtOld, NotSigned, UnknownLog, Unprovable
from ledger.witness.state import Refusal, origin_hash
from ledger.witness.submission import Malformed
from tests.witness.witnesskit import ORIGIN, Log, a_witness

EMPTY = hashlib.sha256(b"").digest()


@pytest.fixture
def log() -> Log:
    return Log.new()


@pytest.fixture
def witness(tmp_path: Path, log: Log) -> Witness:
    return a_witness(tmp_path, log, clock=1_800_000_000)


def cosigned_at(witness: Witness, log: Log, size: int) -> int:
    """The cosigned size the witness serves, once its cosignature there verifies."""
    note = witness.newest(origin_hash(ORIGIN))
    assert note is not None
    times = cosignatures(note, [witness.cosigner.key])
    assert list(times) == [witness.cosigner.key]
    text, _ = parse_note(note)
    assert text == Checkpoint(ORIGIN, size, log.root(size)).text()
    return size


def evidence(witness: Witness) -> list[Refusal]:
    kept, not_kept = witness.state.refusals()
    assert not_kept == 0
    return kept


def test_it_cosigns_the_first_checkpoint_from_old_0_and_then_each_one_proved_from_it(
    witness: Witness, log: Log
) -> None:
    first = witness.add_checkpoint(log.push(0, 5))
    text, _ = parse_note(log.note(5))
    assert witness.cosigner.key.timestamp(text, first) == 1_800_000_000
    assert cosigned_at(witness, log, 5) == 5
    for old, size in [(5, 8), (8, 13), (13, 64), (64, 1000)]:
        witness.add_checkpoint(log.push(old, size))
        assert cosigned_at(witness, log, size) == size
    assert evidence(witness) == []


def test_the_same_tree_again_is_cosigned_again_with_no_proof(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 7))
    witness.add_checkpoint(log.push(7, 7))
    assert cosigned_at(witness, log, 7) == 7


def test_an_empty_tree_is_cosigned_from_old_0(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 0))
    note = witness.newest(origin_hash(ORIGIN))
    assert note is not None and parse_note(note)[0] == Checkpoint(ORIGIN, 0, EMPTY).text()
    witness.add_checkpoint(log.push(0, 3))  # from the empty tree, no proof either
    assert cosigned_at(witness, log, 3) == 3


def test_an_old_size_that_is_not_the_last_cosigned_is_409_with_the_size(
    witness: Witness, log: Log
) -> None:
    witness.add_checkpoint(log.push(0, 10))
    for old in (0, 5, 9, 11):
        with pytest.raises(NotAtOld) as refused:
            witness.add_checkpoint(log.push(old, 20))
        assert refused.value.size == 10
    assert cosigned_at(witness, log, 10) == 10
    assert evidence(witness) == []  # a client behind is no evidence of anything


def test_an_old_size_beyond_the_checkpoint_is_malformed(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 10))
    with pytest.raises(Malformed, match="larger than the checkpoint"):
        witness.add_checkpoint(log.push(0, 4).replace(b"old 0\n", b"old 10\n", 1))


def test_an_unknown_origin_is_refused_and_not_kept(witness: Witness) -> None:
    other = Log.new("other.example/log")
    with pytest.raises(UnknownLog):
        witness.add_checkpoint(other.push(0, 3))
    assert evidence(witness) == []


def test_a_checkpoint_signed_by_another_key_is_refused_and_not_kept(
    witness: Witness, log: Log
) -> None:
    impostor = Signer.generate(ORIGIN)  # the log's name, another key
    with pytest.raises(NotSigned):
        witness.add_checkpoint(log.push(0, 3, note=log.note(3, signer=impostor)))
    assert evidence(witness) == []


def test_a_signature_by_the_trusted_key_that_does_not_verify_is_403(
    witness: Witness, log: Log
) -> None:
    text, signatures = parse_note(log.note(3))
    changed = text.replace("\n3\n", "\n4\n") + "\n" + "".join(s.line() for s in signatures)
    with pytest.raises(NotSigned, match="does not verify"):
        witness.add_checkpoint(log.push(0, 3, note=changed))


def test_signatures_of_unknown_keys_are_ignored(witness: Witness, log: Log) -> None:
    stranger = Signer.generate("stranger.example/key")
    text = Checkpoint(ORIGIN, 3, log.root(3)).text()
    both = sign_note(text, stranger, log.signer)
    witness.add_checkpoint(log.push(0, 3, note=both))
    served = witness.newest(origin_hash(ORIGIN))
    assert served is not None and "stranger.example" not in served  # only what it verified


def test_extension_lines_are_the_log_s_own_and_are_cosigned_as_they_are(
    witness: Witness, log: Log
) -> None:
    text = Checkpoint(ORIGIN, 3, log.root(3)).text() + "time is what the log says\nmore\n"
    note = sign_note(text, log.signer)
    line = witness.add_checkpoint(log.push(0, 3, note=note))
    assert witness.cosigner.key.timestamp(text, line) == 1_800_000_000


def test_a_tree_of_size_0_that_is_not_empty_is_422_and_kept(witness: Witness, log: Log) -> None:
    note = sign_checkpoint(Checkpoint(ORIGIN, 0, bytes(32)), log.signer)
    with pytest.raises(Unprovable, match="empty tree"):
        witness.add_checkpoint(log.push(0, 0, note=note))
    (kept,) = evidence(witness)
    assert kept.breach is Breach.NOT_EMPTY and kept.status == 422
    assert kept.refused_note == note and kept.cosigned_note is None


def test_a_proof_from_the_empty_tree_is_422(witness: Witness, log: Log) -> None:
    with pytest.raises(Unprovable, match="must be empty"):
        witness.add_checkpoint(log.push(0, 5, proof=[bytes(32)]))
    assert evidence(witness) == []


def test_a_proof_between_a_tree_and_itself_is_422(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 5))
    with pytest.raises(Unprovable, match="must be empty"):
        witness.add_checkpoint(log.push(5, 5, proof=[log.root(5)]))


def test_the_same_size_with_another_root_is_a_fork_refused_and_kept(
    witness: Witness, log: Log
) -> None:
    witness.add_checkpoint(log.push(0, 55))
    cosigned = witness.newest(origin_hash(ORIGIN))
    other = Log(log.signer)
    other.grow(55, salt=b"rewritten ")
    with pytest.raises(Unprovable, match="another tree of size 55"):
        witness.add_checkpoint(other.push(55, 55))
    (kept,) = evidence(witness)
    assert kept.breach is Breach.FORK and kept.status == 422
    assert kept.reason == "the log signed two different trees of size 55"
    assert kept.cosigned_note == cosigned and kept.refused_note == other.note(55)
    assert cosigned_at(witness, log, 55) == 55  # what it vouched for stands


def test_a_fork_sent_with_a_stale_old_size_is_409_and_still_kept(
    witness: Witness, log: Log
) -> None:
    witness.add_checkpoint(log.push(0, 55))
    other = Log(log.signer)
    other.grow(55, salt=b"rewritten ")
    with pytest.raises(NotAtOld):
        witness.add_checkpoint(other.push(40, 55))
    (kept,) = evidence(witness)
    assert kept.breach is Breach.FORK and kept.status == 409 and kept.old == 40


def test_a_proof_that_does_not_verify_is_422_and_kept(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 40))
    other = Log(log.signer)
    other.grow(60, salt=b"rewritten ")  # another history, with a proof of its own
    with pytest.raises(Unprovable, match="does not show"):
        witness.add_checkpoint(other.push(40, 60))
    (kept,) = evidence(witness)
    assert kept.breach is Breach.UNPROVEN and kept.status == 422
    assert "tree of size 60 was not shown to extend its tree of size 40" in kept.reason
    assert kept.proof == tuple(base64.b64encode(h).decode() for h in other.proof(40, 60))
    assert cosigned_at(witness, log, 40) == 40


def test_a_proof_a_hash_short_is_422(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 40))
    with pytest.raises(Unprovable, match="hashes, not"):
        witness.add_checkpoint(log.push(40, 60, proof=log.proof(40, 60)[:-1]))


def test_a_smaller_tree_is_a_rollback_refused_and_kept(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 55))
    with pytest.raises(Malformed):  # old 55 > size 50: 400
        witness.add_checkpoint(log.push(50, 50).replace(b"old 50\n", b"old 55\n"))
    with pytest.raises(NotAtOld):  # old 50, as the log would have it: 409
        witness.add_checkpoint(log.push(50, 50))
    (kept,) = evidence(witness)  # the same two notes: one piece of evidence, sent twice
    assert (kept.breach, kept.status, kept.times) == (Breach.ROLLBACK, 400, 2)
    assert kept.reason == (
        "the log asked for a cosignature on its tree of size 50 after this witness had "
        "cosigned its tree of size 55: a log only grows"
    )


def test_the_same_refusal_again_is_counted_not_kept_twice(witness: Witness, log: Log) -> None:
    witness.add_checkpoint(log.push(0, 55))
    other = Log(log.signer)
    other.grow(55, salt=b"rewritten ")
    for _ in range(3):
        with pytest.raises(Unprovable):
            witness.add_checkpoint(other.push(55, 55))
    (kept,) = evidence(witness)
    assert kept.times == 3


def test_evidence_is_bounded_and_what_is_past_the_bound_is_counted(
    witness: Witness, log: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.witness import state

    monkeypatch.setattr(state, "MAX_REFUSALS", 2)
    witness.add_checkpoint(log.push(0, 55))
    for n in range(4):
        other = Log(log.signer)
        other.grow(55, salt=b"rewrite %d " % n)
        with pytest.raises(Unprovable):
            witness.add_checkpoint(other.push(55, 55))
    kept, not_kept = witness.state.refusals()
    assert len(kept) == 2 and not_kept == 2


def test_a_cosignature_is_never_dated_before_the_last(tmp_path: Path, log: Log) -> None:
    ticks = iter([1_800_000_000, 1_700_000_000])
    witness = a_witness(tmp_path, log)
    witness.clock = lambda: next(ticks)
    witness.add_checkpoint(log.push(0, 5))
    line = witness.add_checkpoint(log.push(5, 9))
    assert witness.cosigner.key.timestamp(parse_note(log.note(9))[0], line) == 1_800_000_000


def test_a_new_log_key_is_trusted_beside_the_old_then_the_old_retired(
    witness: Witness, log: Log
) -> None:
    witness.add_checkpoint(log.push(0, 5))
    rotated = Signer.generate(ORIGIN)
    witness.state.follow(ORIGIN, rotated.verifier.text(), 1)
    witness.add_checkpoint(log.push(5, 9, note=log.note(9, signer=rotated)))
    assert witness.state.retire(ORIGIN, log.signer.verifier.text())
    with pytest.raises(NotSigned):
        witness.add_checkpoint(log.push(9, 12))
    witness.add_checkpoint(log.push(9, 12, note=log.note(12, signer=rotated)))
    assert cosigned_at(witness, log, 12) == 12


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "'old <size>'"),
        (b"old 1", "'old <size>'"),
        (b"old 01\n\n", "leading zeros"),
        (b"old -1\n\n", "leading zeros"),
        (b"old 9223372036854775808\n\n", "beyond 2^63-1"),
        (b"old 0\n", "no empty line"),
        (b"old 0\nAAAA\n\n", "not a base64 SHA-256 hash"),
        (b"old 0\n" + b"A" * 42 + b"B=\n\n", "not a base64"),  # not canonical
        (b"old 0\n\n", "no checkpoint"),
        (b"old 0\n\nnot a note\n", "not a signed note"),
        (b"old 0\n\n\xff\xfe\n", "not UTF-8"),
        (b"old 0\n" + (base64.b64encode(bytes(32)) + b"\n") * 64 + b"\n", "more than 63"),
    ],
)
def test_a_malformed_body_is_refused_saying_why(witness: Witness, body: bytes, says: str) -> None:
    with pytest.raises(Malformed, match=says.replace("(", r"\(").replace("^", r"\^")):
        witness.add_checkpoint(body)


def test_a_checkpoint_without_its_three_lines_is_malformed_once_signed(
    witness: Witness, log: Log
) -> None:
    for text in (f"{ORIGIN}\n5\n", f"{ORIGIN}\nfive\n{'A' * 43}=\n", f"{ORIGIN}\n5\nAAAA\n"):
        with pytest.raises(Malformed, match="checkpoint"):
            witness.add_checkpoint(b"old 0\n\n" + sign_note(text, log.signer).encode())
