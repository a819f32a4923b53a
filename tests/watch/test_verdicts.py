"""The watcher's verdicts (ledger.watch.verdicts), over a database on SQLite and
PostgreSQL: consistent, a fork of one size, a rewrite an older checkpoint catches, the
first change bounded by the receipts that still agree (and by none it does not know),
no quorum, a witness's bad cosignature, forks in the gossip, and what the ledger did
not prove."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from ledger.store.eventstore import EventStore
from ledger.store.log import witnessed
from ledger.store.log.checkpoint import Checkpoint, parse_note
from ledger.store.log.policy import Policy
from ledger.watch.evidence import Fork, Held, Outcome, Verdict, forked
from ledger.watch.sources import Consistency, LocalSource, Report
from ledger.watch.state import Receipt, State
from ledger.watch.verdicts import watch
from tests.signing import SIGNER
from tests.watch.watchkit import (
    AT,
    AUDITOR,
    CHAIR,
    TREASURER,
    Written,
    cosign,
    cut,
    evening,
    forged,
    lose_checkpoint,
    more,
    note_of,
    policy_text,
    rewrite,
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


def receipts(written: list[Written], *writes: int) -> tuple[Receipt, ...]:
    """The receipts of the evening's writes numbered `writes` (from 1), as kept."""
    return tuple(Receipt(f"r{n}", written[n - 1].note) for n in writes)


def ran(store: EventStore, state: State, policy: Policy = POLICY) -> Verdict:
    return watch(state, source(store), policy)


def said(verdict: Verdict) -> str:
    return "\n".join(verdict.lines)


def test_a_first_run_keeps_the_newest_and_a_second_asks_one_proof(store: EventStore) -> None:
    written = evening(store, 12)
    held = written[-1].size
    cosigned = cosign(store.engine, held, TREASURER, AUDITOR)
    first = ran(store, State(receipts=receipts(written, 5, 9)))
    assert first.outcome is Outcome.CONSISTENT, said(first)
    assert first.state is not None and first.state.newest == cosigned
    assert [r.checked_with for r in first.state.receipts] == [held, held]
    assert "first run: nothing was held" in said(first)
    assert (
        f"newest: size {held}" in first.lines[0]
        and "cosigned by auditor, treasurer" in first.lines[0]
    )

    newest = more(store, 5)[-1].size
    cosign(store.engine, newest, AUDITOR, CHAIR)
    counting = source(store)
    second = watch(first.state, counting, POLICY)
    assert second.outcome is Outcome.CONSISTENT, said(second)
    assert counting.asked == [(held, newest)]  # the receipts are prefixes of what was held
    assert (
        f"consistent: it extends the checkpoint this watcher verified before, of size {held}"
        in said(second)
    )
    assert second.state is not None
    assert [r.checked_with for r in second.state.receipts] == [newest, newest]


def test_a_receipt_beyond_the_newest_cosigned_is_proven_to_extend_it(store: EventStore) -> None:
    written = evening(store, 15)
    twelfth, last = written[11].size, written[14].size
    cosign(store.engine, twelfth, TREASURER, AUDITOR)
    first = ran(store, State(receipts=receipts(written, 15)))
    assert first.outcome is Outcome.CONSISTENT, said(first)
    assert first.state is not None and first.state.receipts[0].checked_with == twelfth
    cosign(store.engine, last, TREASURER, AUDITOR)
    counting = source(store)
    again = watch(first.state, counting, POLICY)
    assert again.outcome is Outcome.CONSISTENT and (twelfth, last) in counting.asked
    assert again.state is not None and again.state.receipts[0].checked_with == last


def test_two_histories_of_one_size_are_a_fork_with_both_notes(store: EventStore) -> None:
    written = evening(store, 12)
    size = written[-1].size
    held = cosign(store.engine, size, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    # The same size, another tree, signed by the bank's key.
    rewrite(store.engine, written[4].position)
    served = cosign(store.engine, size, TREASURER, AUDITOR)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE and found.state is None
    text = said(found)
    assert f"FORK: the bank signed two different histories of size {size}." in text
    assert held.rstrip("\n") in text and served.rstrip("\n") in text
    assert f"The first event changed is in positions 1..{size}" in text


def test_an_older_checkpoint_catches_a_rewrite_and_says_before_which_position(
    store: EventStore,
) -> None:
    written = evening(store, 8)
    size = written[-1].size
    held = cosign(store.engine, size, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None and first.outcome is Outcome.CONSISTENT
    more(store, 4)
    rewrite(store.engine, written[4].position)
    last = more(store, 1)[-1].size
    newest = cosign(store.engine, last, TREASURER, CHAIR)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE, said(found)
    text = said(found)
    assert (
        f"The checkpoint of size {last} does not extend the one of size {size} that this "
        f"watcher saw: the bank rewrote history before position {size + 1}." in text
    )
    assert held.rstrip("\n") in text and newest.rstrip("\n") in text
    assert f"the ledger's checkpoint of size {size} today:" in text
    assert "proof:" in text  # the proof that the newest extends the bank's other 8


@pytest.mark.parametrize(
    ("writes", "changed", "words"),
    [
        ((2, 4, 6, 8, 10), 7, lambda size: f"in positions {size(6) + 1}..{size(8)}."),
        ((2, 6, 7, 10), 7, lambda size: f"in positions {size(6) + 1}..{size(7)}."),
        ((8, 10), 3, lambda size: f"before position {size(8) + 1}."),
    ],
    ids=["a range", "one write", "nothing below"],
)
def test_the_receipts_that_still_agree_bound_the_first_change(
    store: EventStore, writes: tuple[int, ...], changed: int, words: Callable[..., str]
) -> None:
    """Receipts of the evening's writes `writes`, and the deposit of write `changed`
    rewritten: the change lies after the last receipt that still agrees and no later
    than the first that does not (receipts of two writes in a row bound it to the
    second write: its event and its seal)."""
    written = evening(store, 10)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    first = ran(store, State(receipts=receipts(written, *writes)))
    assert first.state is not None
    more(store, 3)
    rewrite(store.engine, written[changed - 1].position)
    cosign(store.engine, more(store, 1)[-1].size, TREASURER, AUDITOR)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE, said(found)
    assert "the bank rewrote history " + words(lambda n: written[n - 1].size) in said(found)


def test_a_change_bounded_to_one_position_is_named_at_it() -> None:
    """Checkpoints one position apart (a log from before seals has one at every size;
    since, a write's seal follows its events) bound a change to that one position."""
    notes = {size: forged(size, bytes([size])) for size in (6, 7, 9)}

    def held(what: str, size: int) -> Held:
        return Held(what, notes[size], Checkpoint.parse(parse_note(notes[size])[0]))

    fork = Fork(
        held("receipt r7", 7), held("the ledger's checkpoint of size 7 today", 7),
        newest=held("the newest", 9), changed=(7, 7), still=held("receipt r6", 6),
    )  # fmt: skip
    assert "the bank rewrote history at position 7." in "\n".join(forked(fork).lines)


def test_receipts_never_checked_together_bound_nothing(store: EventStore) -> None:
    """Receipts of writes 2, 4 and 6 still agree, but this watcher never learnt that
    they are prefixes of the receipt of write 8 (the bank could have handed them out
    from two histories): it names no bound they would give."""
    written = evening(store, 8)
    more(store, 3)
    rewrite(store.engine, written[6].position)
    cosign(store.engine, more(store, 1)[-1].size, TREASURER, AUDITOR)
    found = ran(store, State(receipts=receipts(written, 2, 4, 6, 8)))
    assert found.outcome is Outcome.EVIDENCE, said(found)
    text = said(found)
    assert f"the bank rewrote history before position {written[7].size + 1}." in text
    assert "(3 smaller checkpoint(s) held still agree, but this watcher never proved" in text


def test_no_quorum_is_a_verdict_of_its_own(store: EventStore) -> None:
    size = evening(store, 6)[-1].size
    cosign(store.engine, size, TREASURER)
    found = ran(store, State())
    assert found.outcome is Outcome.UNCHECKED and found.state is None
    assert found.lines == (
        f"no quorum: the newest checkpoint (size {size}) has cosignatures from treasurer "
        "only; the policy asks 2 of treasurer, auditor, chair",
    )
    everyone = Policy.parse(policy_text("all"))
    cosign(store.engine, size, AUDITOR)
    assert "the policy asks all of treasurer, auditor, chair" in said(ran(store, State(), everyone))
    assert ran(store, State()).outcome is Outcome.CONSISTENT


def test_a_policy_that_asks_no_witness_reads_the_newest_checkpoint(store: EventStore) -> None:
    size = evening(store, 4)[-1].size
    alone = Policy.parse(f"log {SIGNER.verifier.text()}\nquorum none\n")
    found = ran(store, State(), alone)
    assert found.outcome is Outcome.CONSISTENT and found.state is not None
    assert parse_note(found.state.newest or "")[0].split("\n")[1] == str(size)
    assert ran(store, State()).outcome is Outcome.UNCHECKED  # the club's policy asks two


def test_a_rewrite_no_quorum_cosigned_is_a_fork_with_what_is_held(store: EventStore) -> None:
    """The witnesses refused the rewrite, so nothing of it is cosigned: the run cannot
    accept a newest, but the log's own checkpoint of the size it holds is another tree,
    and two notes of one size signed by the log need no witness to be a fork."""
    written = evening(store, 8)
    size = written[-1].size
    held = cosign(store.engine, size, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    rewrite(store.engine, written[4].position)  # every cosignature dropped with it
    last = more(store, 2)[-1].size
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    text = said(found)
    assert found.lines[:2] == (
        f"not accepted under the policy: {store.engine.url} has no cosigned checkpoint yet; "
        "the policy asks 2 of treasurer, auditor, chair",
        "what this watcher holds is held to the newest checkpoint the log signed (no quorum "
        "cosigned it): a fork needs no witness",
    )
    assert f"FORK: the bank signed two different histories of size {size}." in text
    assert f"The checkpoint of size {last} does not extend the one of size {size}" in text
    assert held.rstrip("\n") in text and note_of(store.engine, size).rstrip("\n") in text


def test_no_quorum_over_a_log_that_extends_what_is_held_is_still_no_quorum(
    store: EventStore,
) -> None:
    """Held to what the log signed alone, a log that only grew contradicts nothing:
    the run could not check, and says why, exactly as before."""
    cosign(store.engine, evening(store, 6)[-1].size, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    last = more(store, 3)[-1].size
    cosign(store.engine, last, TREASURER)
    found = ran(store, first.state)
    assert found.outcome is Outcome.UNCHECKED and found.state is None
    assert found.lines == (
        f"no quorum: the newest checkpoint (size {last}) has cosignatures from treasurer "
        "only; the policy asks 2 of treasurer, auditor, chair",
    )


class Tampered(LocalSource):
    """The ledger serving its newest cosigned note with a line changed."""

    line: str

    def cosigned(self) -> str | None:
        note = super().cosigned()
        assert note is not None
        return note + self.line


def test_a_witness_s_bad_cosignature_is_refused_not_counted(store: EventStore) -> None:
    cosign(store.engine, evening(store, 6)[-1].size, TREASURER, AUDITOR)
    bad = Tampered(store.engine)
    bad.line = CHAIR.cosign("another checkpoint\n", 1_790_000_000).line()
    found = watch(State(), bad, POLICY)
    assert found.outcome is Outcome.UNCHECKED
    assert "the cosignature by chair.example/w+" in found.lines[0]
    assert "does not verify" in found.lines[0]


def test_a_report_of_another_tree_in_the_gossip_is_a_fork(store: EventStore) -> None:
    written = evening(store, 6)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    size = written[3].size  # a size the ledger signed, and another tree of it
    with store.engine.begin() as conn:
        witnessed.report(conn, forged(size), SIGNER.verifier, "a player", AT)
    found = ran(store, State())
    assert found.outcome is Outcome.EVIDENCE, said(found)
    text = said(found)
    assert f"FORK: the bank signed two different histories of size {size}." in text
    assert f"report 1 to the ledger's gossip, by 'a player', of size {size}:" in text
    assert f"the ledger's checkpoint of size {size} today:" in text


def test_two_reports_of_one_size_with_two_roots_are_a_fork(store: EventStore) -> None:
    newest = evening(store, 6)[-1].size
    cosign(store.engine, newest, TREASURER, AUDITOR)
    beyond = newest + 3  # a size past the log's, reported twice with two trees
    with store.engine.begin() as conn:
        witnessed.report(conn, forged(beyond, b"one"), SIGNER.verifier, "alice", AT)
        witnessed.report(conn, forged(beyond, b"two"), SIGNER.verifier, "bob", AT)
    found = ran(store, State())
    assert found.outcome is Outcome.EVIDENCE
    assert f"report 1 to the ledger's gossip, by 'alice', of size {beyond}:" in said(found)
    assert f"report 2 to the ledger's gossip, by 'bob', of size {beyond}:" in said(found)


def test_reports_consistent_with_the_newest_are_read_once(store: EventStore) -> None:
    written = evening(store, 6)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    with store.engine.begin() as conn:
        witnessed.report(conn, written[2].note, SIGNER.verifier, None, AT)
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
    written = evening(store, 9)
    sixth, last = written[5].size, written[-1].size
    cosign(store.engine, sixth, TREASURER, AUDITOR)
    first = ran(store, State())
    assert first.state is not None
    cosign(store.engine, last, TREASURER, AUDITOR)
    found = watch(first.state, Lying(store.engine), POLICY)
    assert found.outcome is Outcome.UNPROVEN and found.state is None
    assert f"its consistency proof between sizes {sixth} and {last} does not verify" in said(found)


def test_a_receipt_of_a_size_the_ledger_never_had_is_evidence_against_its_key(
    store: EventStore,
) -> None:
    """Signed by the bank's key, for a size its ledger says it never had: whoever holds
    the key signed it, and the log does not have it. That is what a log cut back looks
    like, and it is evidence all the same."""
    newest = evening(store, 6)[-1].size
    cosign(store.engine, newest, TREASURER, AUDITOR)
    never = newest + 9  # signed by the bank, a size it never had
    kept = State(receipts=(Receipt(f"r{never}", forged(never)),))
    found = ran(store, kept)
    assert found.outcome is Outcome.EVIDENCE
    assert (
        f"DENIED: the ledger says it has no checkpoint of size {never}, and its log signed "
        f"one: receipt r{never} (below)."
    ) in found.lines


def test_an_older_newest_consistent_with_what_is_held_keeps_what_is_held(
    store: EventStore,
) -> None:
    written = evening(store, 9)
    sixth = written[5].size
    cosign(store.engine, sixth, TREASURER, AUDITOR)
    held = State(newest=cosign(store.engine, written[-1].size, TREASURER, AUDITOR))

    class Behind(LocalSource):
        def cosigned(self) -> str | None:
            with self.engine.connect() as conn:
                found = witnessed.at(conn, sixth)
            return None if found is None else found.note

    found = watch(
        dataclasses.replace(held, receipts=receipts(written, 8)), Behind(store.engine), POLICY
    )
    assert found.outcome is Outcome.CONSISTENT, said(found)
    assert found.state is not None and found.state.newest == held.newest
    assert "consistent, and older" in said(found)
    assert found.state.receipts[0].checked_with == sixth  # it extends the sixth write's


def test_gossip_is_read_a_page_at_a_time(store: EventStore) -> None:
    written = evening(store, 6)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    with store.engine.begin() as conn:
        for write in written[:5]:
            witnessed.report(conn, write.note, SIGNER.verifier, None, AT)

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
    cosign(store.engine, notes[5].size, TREASURER, AUDITOR)
    first = ran(store, State(receipts=(Receipt("r9", notes[8].note),)))
    assert first.outcome is Outcome.CONSISTENT and first.state is not None, said(first)
    cut(store.engine, notes[cut_at].size)
    found = ran(store, first.state)
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    text = said(found)
    size = notes[8].size
    assert (
        f"DENIED: the ledger says it has no checkpoint of size {size}, and its log signed "
        f"one: receipt r9 (below).\n  asked for it: no checkpoint of size {size}"
    ) in text
    assert notes[8].note.rstrip("\n") in text  # the receipt that proves the size existed
    assert note_of(store.engine, notes[cut_at].size).rstrip("\n") in text  # today's


def test_a_checkpoint_lost_from_a_longer_log_is_evidence(store: EventStore) -> None:
    """A backup restored with one checkpoint's line taken out: the log goes on past it,
    but answers 404 for the size a receipt holds."""
    notes = evening(store, 12)
    cosign(store.engine, notes[11].size, TREASURER, AUDITOR)
    lose_checkpoint(store.engine, notes[8].size)
    found = ran(store, State(receipts=(Receipt("r9", notes[8].note),)))
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    size = notes[8].size
    assert f"receipt r9 (below).\n  asked for it: no checkpoint of size {size}" in said(found)
    assert notes[8].note.rstrip("\n") in said(found)


def test_a_report_in_the_gossip_of_a_size_the_ledger_has_not_is_evidence(
    store: EventStore,
) -> None:
    notes = evening(store, 6)
    cosign(store.engine, notes[5].size, TREASURER, AUDITOR)
    later = forged(notes[5].size + 3)  # signed by the log's key, a size it never had
    with store.engine.begin() as conn:
        witnessed.report(conn, later, SIGNER.verifier, "a player", AT)
    found = ran(store, State())
    assert found.outcome is Outcome.EVIDENCE and found.state is None, said(found)
    assert "its log signed one: report 1 to the ledger's gossip, by 'a player' (below)." in (
        said(found)
    )
    assert later.rstrip("\n") in said(found)
