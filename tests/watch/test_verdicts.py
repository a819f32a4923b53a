"""The watcher's verdicts (ledger.watch.verdicts), over a database on SQLite and
PostgreSQL: consistent, a fork of one size, a rewrite an older checkpoint catches, the
first change bounded by the receipts that still agree (and by none it does not know),
no quorum, a witness's bad cosignature, forks in the gossip, and what the ledger did
not prove."""

from __future__ import annotations

import dataclasses

import pytest

from ledger.store.eventstore import EventStore
from ledger.store.log import witnessed
from ledger.store.log.checkpoint import parse_note
from ledger.store.log.policy import Policy
from ledger.watch.evidence import Outcome, Verdict
from ledger.watch.sources import Consistency, LocalSource, Report
from ledger.watch.state import Receipt, State
from ledger.watch.verdicts import watch
from tests.signing import SIGNER
from tests.watch.watchkit import (
    AT,
    AUDITOR,
    CHAIR,
    TREASURER,
    cosign,
    cut,
    evening,
    forged,
    lose_checkpoint,
    more,
    note_of,
    policy_text,
    rewrite,
    size_of,
)

POLICY = Policy.parse(policy_text())


class Counting(LocalSource):
    """A LocalSource that counts the consistency proofs asked of it."""

    asked: list[tuple[int, int]]

    def consistency(self, old: int, new: int) -> Consistency:
        self.asked.append((old, new))
        return super().consistency(old, new)


def source(store: EventStore) -> Counting:
    found = Counting(store.engine, SIGNER.verifier)
    found.asked = []
    return found


def receipts(notes: list[str], *sizes: int) -> tuple[Receipt, ...]:
    return tuple(Receipt(f"r{size}", notes[size - 1]) for size in sizes)


def ran(store: EventStore, state: State, policy: Policy = POLICY) -> Verdict:
    return watch(state, source(store), policy)


def said(verdict: Verdict) -> str:
    return "\n".join(verdict.lines)


def test_a_first_run_keeps_the_newest_and_a_second_asks_one_proof(store: EventStore) -> None:
    notes = evening(store, 12)
    cosigned = cosign(store.engine, 12, TREASURER, AUDITOR)
    first = ran(store, State(receipts=receipts(notes, 5, 9)))
    assert first.outcome is Outcome.CONSISTENT, said(first)
    assert first.state is not None and first.state.newest == cosigned
    assert [r.checked_with for r in first.state.receipts] == [12, 12]
    assert "first run: nothing was held" in said(first)
    assert (
        "newest: size 12" in first.lines[0] and "cosigned by auditor, treasurer" in first.lines[0]
    )

    more(store, 5)
    cosign(store.engine, 17, AUDITOR, CHAIR)
    counting = source(store)
    second = watch(first.state, counting, POLICY)
    assert second.outcome is Outcome.CONSISTENT, said(second)
    assert counting.asked == [(12, 17)]  # the receipts are prefixes of what was held
    assert "consistent: it extends the checkpoint this watcher verified before, of size 12" in said(
        second
    )
    assert second.state is not None and [r.checked_with for r in second.state.receipts] == [17, 17]


def test_a_receipt_beyond_the_newest_cosigned_is_proven_to_extend_it(store: EventStore) -> None:
    notes = evening(store, 15)
    cosign(store.engine, 12, TREASURER, AUDITOR)
    first = ran(store, State(receipts=receipts(notes, 15)))
    assert first.outcome is Outcome.CONSISTENT, said(first)
    assert first.state is not None and first.state.receipts[0].checked_with == 12
    cosign(store.engine, 15, TREASURER, AUDITOR)
    counting = source(store)
    again = watch(first.state, counting, POLICY)
    assert again.outcome is Outcome.CONSISTENT and (12, 15) in counting.asked
    assert again.state is not None and again.state.receipts[0].checked_with == 15


def test_two_histories_of_one_size_are_a_fork_with_both_notes(store: EventStore) -> None:
    evening(store, 12)
    held = cosign(store.engine, 12, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    rewrite(store.engine, 5)  # the same size, another tree, signed by the bank's key
    served = cosign(store.engine, 12, TREASURER, AUDITOR)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE and found.state is None
    text = said(found)
    assert "FORK: the bank signed two different histories of size 12." in text
    assert held.rstrip("\n") in text and served.rstrip("\n") in text
    assert "The first event changed is in positions 1..12" in text


def test_an_older_checkpoint_catches_a_rewrite_and_says_before_which_position(
    store: EventStore,
) -> None:
    evening(store, 8)
    held = cosign(store.engine, 8, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None and first.outcome is Outcome.CONSISTENT
    more(store, 4)
    rewrite(store.engine, 5)
    more(store, 1)
    newest = cosign(store.engine, 13, TREASURER, CHAIR)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE, said(found)
    text = said(found)
    assert (
        "The checkpoint of size 13 does not extend the one of size 8 that this watcher saw: "
        "the bank rewrote history before position 9." in text
    )
    assert held.rstrip("\n") in text and newest.rstrip("\n") in text
    assert "the ledger's checkpoint of size 8 today:" in text
    assert "proof:" in text  # the proof that the newest extends the bank's other 8


@pytest.mark.parametrize(
    ("sizes", "changed", "words"),
    [
        ((2, 4, 6, 8, 10), 7, "the bank rewrote history in positions 7..8."),
        ((2, 6, 7, 10), 7, "the bank rewrote history at position 7."),
        ((8, 10), 3, "the bank rewrote history before position 9."),
    ],
    ids=["a range", "one position", "nothing below"],
)
def test_the_receipts_that_still_agree_bound_the_first_change(
    store: EventStore, sizes: tuple[int, ...], changed: int, words: str
) -> None:
    notes = evening(store, 10)
    cosign(store.engine, 10, TREASURER, AUDITOR)
    first = ran(store, State(receipts=receipts(notes, *sizes)))
    assert first.state is not None
    more(store, 3)
    rewrite(store.engine, changed)
    more(store, 1)
    cosign(store.engine, 14, TREASURER, AUDITOR)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE, said(found)
    assert words in said(found)


def test_receipts_never_checked_together_bound_nothing(store: EventStore) -> None:
    """Receipts at 2, 4 and 6 still agree, but this watcher never learnt that they are
    prefixes of the receipt of 8 (the bank could have handed them out from two
    histories): it names no bound they would give."""
    notes = evening(store, 8)
    more(store, 3)
    rewrite(store.engine, 7)
    more(store, 1)
    cosign(store.engine, 12, TREASURER, AUDITOR)
    found = ran(store, State(receipts=receipts(notes, 2, 4, 6, 8)))
    assert found.outcome is Outcome.EVIDENCE, said(found)
    text = said(found)
    assert "the bank rewrote history before position 9." in text
    assert "(3 smaller checkpoint(s) held still agree, but this watcher never proved" in text


def test_no_quorum_is_a_verdict_of_its_own(store: EventStore) -> None:
    evening(store, 6)
    cosign(store.engine, 6, TREASURER)
    found = ran(store, State())
    assert found.outcome is Outcome.UNCHECKED and found.state is None
    assert found.lines == (
        "no quorum: the newest checkpoint (size 6) has cosignatures from treasurer only; "
        "the policy asks 2 of treasurer, auditor, chair",
    )
    everyone = Policy.parse(policy_text("all"))
    cosign(store.engine, 6, AUDITOR)
    assert "the policy asks all of treasurer, auditor, chair" in said(ran(store, State(), everyone))
    assert ran(store, State()).outcome is Outcome.CONSISTENT


def test_a_policy_that_asks_no_witness_reads_the_newest_checkpoint(store: EventStore) -> None:
    evening(store, 4)
    alone = Policy.parse(f"log {SIGNER.verifier.text()}\nquorum none\n")
    found = ran(store, State(), alone)
    assert found.outcome is Outcome.CONSISTENT and found.state is not None
    assert parse_note(found.state.newest or "")[0].split("\n")[1] == "4"
    assert ran(store, State()).outcome is Outcome.UNCHECKED  # the club's policy asks two


def test_a_rewrite_no_quorum_cosigned_is_a_fork_with_what_is_held(store: EventStore) -> None:
    """The witnesses refused the rewrite, so nothing of it is cosigned: the run cannot
    accept a newest, but the log's own checkpoint of the size it holds is another tree,
    and two notes of one size signed by the log need no witness to be a fork."""
    evening(store, 8)
    held = cosign(store.engine, 8, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    rewrite(store.engine, 5)  # every cosignature dropped with it
    more(store, 2)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    text = said(found)
    assert found.lines[:2] == (
        f"not accepted under the policy: {store.engine.url} has no cosigned checkpoint yet; "
        "the policy asks 2 of treasurer, auditor, chair",
        "what this watcher holds is held to the newest checkpoint the log signed (no quorum "
        "cosigned it): a fork needs no witness",
    )
    assert "FORK: the bank signed two different histories of size 8." in text
    assert "The checkpoint of size 10 does not extend the one of size 8" in text
    assert held.rstrip("\n") in text and note_of(store.engine, 8).rstrip("\n") in text


def test_no_quorum_over_a_log_that_extends_what_is_held_is_still_no_quorum(
    store: EventStore,
) -> None:
    """Held to what the log signed alone, a log that only grew contradicts nothing:
    the run could not check, and says why, exactly as before."""
    evening(store, 6)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    more(store, 3)
    cosign(store.engine, 9, TREASURER)
    found = ran(store, first.state)
    assert found.outcome is Outcome.UNCHECKED and found.state is None
    assert found.lines == (
        "no quorum: the newest checkpoint (size 9) has cosignatures from treasurer only; "
        "the policy asks 2 of treasurer, auditor, chair",
    )


class Tampered(LocalSource):
    """The ledger serving its newest cosigned note with a line changed."""

    line: str

    def cosigned(self) -> str | None:
        note = super().cosigned()
        assert note is not None
        return note + self.line


def test_a_witness_s_bad_cosignature_is_refused_not_counted(store: EventStore) -> None:
    evening(store, 6)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    bad = Tampered(store.engine)
    bad.line = CHAIR.cosign("another checkpoint\n", 1_790_000_000).line()
    found = watch(State(), bad, POLICY)
    assert found.outcome is Outcome.UNCHECKED
    assert "the cosignature by chair.example/w+" in found.lines[0]
    assert "does not verify" in found.lines[0]


def test_a_report_of_another_tree_in_the_gossip_is_a_fork(store: EventStore) -> None:
    evening(store, 6)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    with store.engine.begin() as conn:
        witnessed.report(conn, forged(4), SIGNER.verifier, "a player", AT)
    found = ran(store, State())
    assert found.outcome is Outcome.EVIDENCE, said(found)
    text = said(found)
    assert "FORK: the bank signed two different histories of size 4." in text
    assert "report 1 to the ledger's gossip, by 'a player', of size 4:" in text
    assert "the ledger's checkpoint of size 4 today:" in text


def test_two_reports_of_one_size_with_two_roots_are_a_fork(store: EventStore) -> None:
    evening(store, 6)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    with store.engine.begin() as conn:
        witnessed.report(conn, forged(9, b"one"), SIGNER.verifier, "alice", AT)
        witnessed.report(conn, forged(9, b"two"), SIGNER.verifier, "bob", AT)
    found = ran(store, State())
    assert found.outcome is Outcome.EVIDENCE
    assert "report 1 to the ledger's gossip, by 'alice', of size 9:" in said(found)
    assert "report 2 to the ledger's gossip, by 'bob', of size 9:" in said(found)


def test_reports_consistent_with_the_newest_are_read_once(store: EventStore) -> None:
    notes = evening(store, 6)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    with store.engine.begin() as conn:
        witnessed.report(conn, notes[2], SIGNER.verifier, None, AT)
    first = ran(store, State())
    assert first.outcome is Outcome.CONSISTENT and first.state is not None
    assert "gossip: 1 new report(s), each consistent with the newest" in said(first)
    assert first.state.gossip_after == 1
    assert "gossip" not in said(ran(store, first.state))


class Lying(LocalSource):
    """The ledger answering a consistency proof with a hash changed."""

    def consistency(self, old: int, new: int) -> Consistency:
        found = super().consistency(old, new)
        proof = (bytes(32), *found.proof[1:])
        return dataclasses.replace(found, proof=proof)


def test_a_proof_that_does_not_verify_is_not_proven(store: EventStore) -> None:
    evening(store, 9)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    cosign(store.engine, 9, TREASURER, AUDITOR)
    found = watch(first.state, Lying(store.engine), POLICY)
    assert found.outcome is Outcome.UNPROVEN and found.state is None
    assert "its consistency proof between sizes 6 and 9 does not verify" in said(found)


def test_a_receipt_of_a_size_the_ledger_never_had_is_evidence_against_its_key(
    store: EventStore,
) -> None:
    """Signed by the bank's key, for a size its ledger says it never had: whoever holds
    the key signed it, and the log does not have it. That is what a log cut back looks
    like, and it is evidence all the same."""
    evening(store, 6)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    kept = State(receipts=(Receipt("r15", forged(15)),))
    found = ran(store, kept)
    assert found.outcome is Outcome.EVIDENCE
    assert (
        "DENIED: the ledger says it has no checkpoint of size 15, and its log signed one: "
        "receipt r15 (below)."
    ) in found.lines


def test_an_older_newest_consistent_with_what_is_held_keeps_what_is_held(
    store: EventStore,
) -> None:
    notes = evening(store, 9)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    held = State(newest=cosign(store.engine, 9, TREASURER, AUDITOR))

    class Behind(LocalSource):
        def cosigned(self) -> str | None:
            with self.engine.connect() as conn:
                found = witnessed.at(conn, 6)
            return None if found is None else found.note

    found = watch(
        dataclasses.replace(held, receipts=receipts(notes, 8)), Behind(store.engine), POLICY
    )
    assert found.outcome is Outcome.CONSISTENT, said(found)
    assert found.state is not None and found.state.newest == held.newest
    assert "consistent, and older" in said(found)
    assert found.state.receipts[0].checked_with == 6  # it extends the newest's 6


def test_gossip_is_read_a_page_at_a_time(store: EventStore) -> None:
    notes = evening(store, 6)
    cosign(store.engine, 6, TREASURER, AUDITOR)
    with store.engine.begin() as conn:
        for note in notes[:5]:
            witnessed.report(conn, note, SIGNER.verifier, None, AT)

    class Paged(LocalSource):
        def gossip(self, after: int) -> tuple[list[Report], int | None]:
            page = [r for r in super().gossip(after)[0]][:2]
            return page, (page[-1].id if len(page) == 2 else None)

    found = watch(State(), Paged(store.engine), POLICY)
    assert found.state is not None and found.state.gossip_after == 5


# -- a checkpoint the log signed, and no longer has --------------------------------------


@pytest.mark.parametrize(
    "cut_at",
    [5, 3],  # the write whose checkpoint the backup ends at
    ids=["behind the receipt, the cosigned checkpoint kept", "behind every cosignature"],
)
def test_a_log_cut_behind_a_receipt_is_evidence_with_the_receipt(
    store: EventStore, cut_at: int
) -> None:
    """The ledger restored from a backup cut short: it answers 404 for the size of a
    receipt this watcher holds. The receipt, signed by the log's key, proves that size
    existed, and a log keeps every checkpoint it signs: evidence, as a fork is, with
    the receipt that proves it. Cut behind every cosignature too, nothing is cosigned
    any more, and what is held is held to the newest the log signed alone."""
    notes = evening(store, 9)
    cosign(store.engine, size_of(notes[5]), TREASURER, AUDITOR)
    first = ran(store, State(receipts=(Receipt("r9", notes[8]),)))
    assert first.outcome is Outcome.CONSISTENT and first.state is not None, said(first)
    cut(store.engine, size_of(notes[cut_at]))
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    text = said(found)
    size = size_of(notes[8])
    assert (
        f"DENIED: the ledger says it has no checkpoint of size {size}, and its log signed "
        f"one: receipt r9 (below).\n  asked for it: no checkpoint of size {size}"
    ) in text
    assert notes[8].rstrip("\n") in text  # the receipt that proves the size existed
    assert note_of(store.engine, size_of(notes[cut_at])).rstrip("\n") in text  # today's


def test_a_checkpoint_lost_from_a_longer_log_is_evidence(store: EventStore) -> None:
    """A backup restored with one checkpoint's line taken out: the log goes on past it,
    but answers 404 for the size a receipt holds."""
    notes = evening(store, 12)
    cosign(store.engine, size_of(notes[11]), TREASURER, AUDITOR)
    lose_checkpoint(store.engine, size_of(notes[8]))
    found = ran(store, State(receipts=(Receipt("r9", notes[8]),)))
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    size = size_of(notes[8])
    assert f"receipt r9 (below).\n  asked for it: no checkpoint of size {size}" in said(found)
    assert notes[8].rstrip("\n") in said(found)


def test_a_report_in_the_gossip_of_a_size_the_ledger_has_not_is_evidence(
    store: EventStore,
) -> None:
    notes = evening(store, 6)
    cosign(store.engine, size_of(notes[5]), TREASURER, AUDITOR)
    later = forged(size_of(notes[5]) + 3)  # signed by the log's key, a size it never had
    with store.engine.begin() as conn:
        witnessed.report(conn, later, SIGNER.verifier, "a player", AT)
    found = ran(store, State())
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    assert "its log signed one: report 1 to the ledger's gossip, by 'a player' (below)." in (
        said(found)
    )
    assert later.rstrip("\n") in said(found)
