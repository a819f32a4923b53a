"""What the check in shares keeps while one process runs ahead of another
(ledger.exports.offline.shares): the parent holds each seal to every process's events
before it, so it keeps the events of the seals it has read and the others have not
reached, or those another process sent and it has not taken. However far one runs
ahead, that is at most shares.AHEAD events and one seal's, never the file's: a
process made to lag costs no more memory on a long file than on a short one."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from typing import Any

import pytest

from ledger.exports.offline import shares
from ledger.exports.offline import verify as verify_alone  # not made both ways (conftest)
from tests.ledger.offlinekit import exported_files
from tests.signing import VERIFIER

AHEAD = 4
"""shares.AHEAD for these tests: a few events, where a file holds a hundred."""

WAIT = 30
"""The longest a process is held back here, in seconds: a guard against a hang, never
reached when the check works."""


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[bytes]]:
    files = exported_files(tmp_path_factory)
    yield next(files)["all"].splitlines(keepends=True)
    files.close()


def largest_seal(lines: list[bytes]) -> int:
    """The most events of the file between two seals: one seal's, which is kept whole."""
    most = events = 0
    for line in lines:
        if b'"record":"event"' not in line:
            continue
        if b'"stream":"log"' in line:
            most, events = max(most, events), 0
        else:
            events += 1
    return max(most, events)


def events_of(lines: list[bytes]) -> int:
    return sum(b'"record":"event"' in line for line in lines)


def ahead(inbox: Any) -> bool:
    """Whether the process has sent all it has, or waits for the parent to take."""
    return any(kind != "seal" for kind, _ in inbox.got) or getattr(inbox, "kept", 0) > AHEAD


def queued(inbox: Any) -> int:
    return sum(len(what) for kind, what in list(inbox.got) if kind == "seal")


def test_a_process_that_lags_holds_the_parent_to_a_bound(
    lines: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other process waits at its first seal until the parent waits for it: the
    # parent keeps its own events for each seal it reads until then.
    monkeypatch.setattr(shares, "AHEAD", AHEAD, raising=False)
    go = multiprocessing.get_context("fork").Event()
    peak = [0]
    at_seal, hold, take = shares._Child._at_seal, shares._Parent._hold, shares._Inbox.take

    def lagging(self: Any, seal: Any, rows: Any) -> None:
        go.wait(WAIT)
        at_seal(self, seal, rows)

    def holding(self: Any, wait: bool) -> None:
        peak[0] = max(peak[0], sum(len(rows) for _, rows in self.sealed))
        hold(self, wait)

    def waiting(self: Any) -> Any:
        go.set()
        return take(self)

    monkeypatch.setattr(shares._Child, "_at_seal", lagging)
    monkeypatch.setattr(shares._Parent, "_hold", holding)
    monkeypatch.setattr(shares._Inbox, "take", waiting)
    bound = AHEAD + largest_seal(lines)
    assert events_of(lines) > 3 * bound  # the file is long enough to tell
    assert shares.shared(lines, VERIFIER, None, None, 2) == verify_alone(lines, VERIFIER)
    assert 0 < peak[0] <= bound, f"the parent kept {peak[0]} events for a lagging process"


def test_a_parent_that_lags_holds_the_other_process_to_a_bound(
    lines: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The parent waits at its first seal until the other process has sent all it has
    # or waits for the parent: what it sent meanwhile is queued in the parent.
    monkeypatch.setattr(shares, "AHEAD", AHEAD, raising=False)
    peak = [0]
    at_seal, take = shares._Parent._at_seal, shares._Inbox.take

    def lagging(self: Any, seal: Any, rows: Any) -> None:
        for inbox in self.inboxes:
            with inbox.came:
                inbox.came.wait_for(lambda inbox=inbox: ahead(inbox), timeout=WAIT)
        at_seal(self, seal, rows)

    def taking(self: Any) -> Any:
        with self.came:
            peak[0] = max(peak[0], queued(self))
        return take(self)

    monkeypatch.setattr(shares._Parent, "_at_seal", lagging)
    monkeypatch.setattr(shares._Inbox, "take", taking)
    bound = AHEAD + largest_seal(lines)
    assert events_of(lines) > 3 * bound
    assert shares.shared(lines, VERIFIER, None, None, 2) == verify_alone(lines, VERIFIER)
    assert 0 < peak[0] <= bound, f"the parent queued {peak[0]} events of a process ahead"
