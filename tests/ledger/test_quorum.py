"""The log checked under a reader's policy (check.verify with a policy, ledger.store.log
.quorum), on SQLite and PostgreSQL: the newest checkpoint a quorum of the policy's
witnesses cosigned must be the events' tree. It holds when they have kept up, fails for
want of a quorum, and names the witnessed checkpoint an insider with the bank's key
rewrote after the witnesses saw it, which the check without a policy passes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import check, quorum
from ledger.store.log.policy import Policy
from ledger.store.vocabulary import Deposited
from tests.ledger.cosignkit import (
    AT,
    AUDITOR,
    CHAIR,
    STRANGER,
    TREASURER,
    cosign,
    policy_text,
    sizes,
    unguard_cosignatures,
)
from tests.ledger.tamperkit import (
    Log,
    a_deposit,
    multiplied,
    played_log,
    rehash_stream,
    set_row,
    unguarded,
    whole_log_rehashed_and_resigned,
)
from tests.signing import SIGNER, VERIFIER

TWO = Policy.parse(policy_text("2"))


@pytest.fixture
def log(store: EventStore, tmp_path: Path) -> Iterator[Log]:
    yield from played_log(store, tmp_path)


def deposits(store: EventStore, n: int) -> None:
    club = Club(Book(store))
    for _ in range(n):
        club.account_command("ann", Deposited, 7, "setter")


def test_the_newest_checkpoint_a_quorum_cosigned_holds_and_the_rest_is_counted(
    log: Log, store: EventStore
) -> None:
    cosign(log.engine, log.size, TREASURER, CHAIR)
    verified = check.verify(log.engine, VERIFIER, policy=TWO)
    seen = verified.witnessing
    assert verified.ok and seen is not None and seen.ok
    assert (seen.size, seen.behind) == (log.size, 0)
    assert dict(seen.cosigned) == {"treasurer": AT, "chair": AT}
    deposits(store, 3)  # written after the witnesses' last push
    after = 3 * 2  # three writes, each a deposit and its seal
    later = check.verify(log.engine, VERIFIER, policy=TWO)
    assert later.ok and later.witnessing is not None
    assert (later.witnessing.size, later.witnessing.behind) == (log.size, after)
    printed = "\n".join(later.witnessing.lines("club.policy"))
    assert "policy: club.policy asks for 2 of treasurer, auditor, chair" in printed
    assert f"witnessed: the checkpoint of size {log.size}, cosigned by chair at " in printed
    assert (
        f"warning: the {after} events after it (positions {log.size + 1}..{log.size + after}) "
        "are not witnessed yet" in printed
    )


def test_for_want_of_a_quorum_says_who_cosigned_what_and_what_the_policy_asks(
    log: Log,
) -> None:
    older = sizes(log.engine)[-6]  # the checkpoint five writes back
    cosign(log.engine, older, TREASURER)
    cosign(log.engine, log.size, STRANGER)  # a witness the policy does not name
    verified = check.verify(log.engine, VERIFIER, policy=TWO)
    seen = verified.witnessing
    assert verified.report.ok and not verified.ok and seen is not None
    assert seen.size is None
    assert seen.problem == (
        "for want of a quorum: no stored checkpoint is cosigned by 2 of treasurer, auditor, "
        "chair, as the policy asks"
    )
    assert seen.lines("p")[1] == (
        f"witnesses: treasurer up to size {older}, auditor nothing, chair nothing (1 "
        "other witness key(s) cosigned the newest cosigned checkpoint too: the policy does "
        "not name them)"
    )
    one = Policy.parse(policy_text("treasurer"))
    alone = check.verify(log.engine, VERIFIER, policy=one)
    assert alone.ok and alone.witnessing is not None
    assert (alone.witnessing.size, alone.witnessing.behind) == (older, log.size - older)


def test_an_older_checkpoint_with_the_quorum_holds_when_the_newest_has_one_witness(
    log: Log,
) -> None:
    """A witness down: the newest cosigned has only the other's cosignature; the newest
    with both is the one the policy accepts, and the events after it are counted."""
    stored = sizes(log.engine)
    both, one = stored[-11], stored[-3]  # the checkpoints ten and two writes back
    cosign(log.engine, both, TREASURER, AUDITOR)
    cosign(log.engine, one, TREASURER)
    verified = check.verify(log.engine, VERIFIER, policy=TWO)
    assert verified.ok and verified.witnessing is not None
    assert (verified.witnessing.size, verified.witnessing.behind) == (both, log.size - both)


def test_the_quorum_is_looked_for_a_page_at_a_time_and_never_past_the_oldest(
    log: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Witnesses pushed to apart, each cosigning checkpoints the other did not: the
    newest both cosigned is found pages down; and where none is, the walk ends."""
    monkeypatch.setattr(quorum, "PAGE", 2)
    stored = sizes(log.engine)  # one checkpoint a write: stored[-1 - n] is n writes back
    cosign(log.engine, stored[-13], TREASURER, AUDITOR)
    for back in range(1, 9):
        cosign(log.engine, stored[-1 - back], TREASURER if back % 2 else AUDITOR)
    verified = check.verify(log.engine, VERIFIER, policy=TWO)
    assert verified.ok and verified.witnessing is not None
    assert verified.witnessing.size == stored[-13]
    everyone = check.verify(log.engine, VERIFIER, policy=Policy.parse(policy_text("all")))
    assert everyone.witnessing is not None and everyone.witnessing.size is None


def test_a_policy_asking_for_no_witness_holds_on_the_log_s_signature(log: Log) -> None:
    verified = check.verify(log.engine, VERIFIER, policy=Policy.parse(policy_text("none")))
    assert verified.ok and verified.witnessing is not None
    assert (verified.witnessing.size, verified.witnessing.behind) == (log.size, 0)
    assert "(no witness asked)" in "\n".join(verified.witnessing.lines("p"))


def test_an_insider_s_rewrite_passes_without_a_policy_and_fails_under_one(log: Log) -> None:
    """The bank's own key, an amount changed, the tree rebuilt and every checkpoint signed
    again: nothing stored disagrees with the events, but the witnesses cosigned the tree
    before, and their cosignatures name it."""
    witnessed = sizes(log.engine)[-5]  # the checkpoint four writes back
    cosign(log.engine, witnessed, TREASURER, AUDITOR, CHAIR)
    assert check.verify(log.engine, VERIFIER, policy=TWO).ok
    with unguarded(log) as conn:
        whole_log_rehashed_and_resigned(log, conn, SIGNER)
    assert check.verify(log.engine, VERIFIER).ok  # as today: the bank's word alone
    verified = check.verify(log.engine, VERIFIER, policy=TWO)
    assert verified.report.ok and not verified.ok
    seen = verified.witnessing
    assert seen is not None and seen.size == witnessed
    assert seen.problem is not None
    assert seen.problem.startswith(
        f"the checkpoint of size {witnessed} that auditor, chair, treasurer cosigned is not "
        "the one stored: their cosignatures do not verify over it, nor over the tree the "
        f"events give at {witnessed} (root "
    )
    assert f"they cosigned another tree of {witnessed} events, which the events no longer " in (
        seen.problem
    )
    # And had the insider dropped the cosignatures too: no quorum at all.
    with log.engine.begin() as conn:
        unguard_cosignatures(conn)
        conn.execute(sa.text("DELETE FROM cosignatures"))
    dropped = check.verify(log.engine, VERIFIER, policy=TWO)
    assert dropped.report.ok and not dropped.ok and dropped.witnessing is not None
    assert dropped.witnessing.problem is not None
    assert dropped.witnessing.problem.startswith("for want of a quorum: ")


def test_an_amount_changed_under_the_witnessed_checkpoint_names_both_roots(log: Log) -> None:
    """Events changed, their chain made again, the stored tree and checkpoints left: the
    plain check names the leaf, and the policy's the root the witnesses cosigned."""
    size = cosign(log.engine, log.size, TREASURER, AUDITOR)
    with unguarded(log) as conn:
        row = a_deposit(log)
        set_row(conn, row.position, payload=multiplied(row.payload))
        rehash_stream(conn, row.stream, row.version)
    verified = check.verify(log.engine, VERIFIER, policy=TWO)
    assert not verified.report.ok and verified.witnessing is not None
    problem = verified.witnessing.problem
    assert problem is not None
    assert problem.startswith(f"the witnessed checkpoint of size {size} has root ")
    assert ", which auditor, treasurer cosigned, but the events give " in problem


def test_an_incremental_run_holds_a_checkpoint_within_what_it_read_before(
    log: Log, store: EventStore
) -> None:
    """The witnessed checkpoint inside the tree the state verified: its root comes from
    the stored tree, proved consistent with the tree verified then, and holds."""
    first = check.verify(log.engine, VERIFIER)
    witnessed = sizes(log.engine)[-4]  # the checkpoint three writes back
    cosign(log.engine, witnessed, TREASURER, AUDITOR)
    deposits(store, 2)
    after = 2 * 2  # two writes, each a deposit and its seal
    again = check.verify(log.engine, VERIFIER, state=first.state, policy=TWO)
    assert again.ok and again.report.start == log.size and again.witnessing is not None
    behind = log.size - witnessed + after
    assert (again.witnessing.size, again.witnessing.behind) == (witnessed, behind)
