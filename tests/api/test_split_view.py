"""A split view, on SQLite and PostgreSQL: from one witnessed prefix, two histories,
both signed with the bank's key, each consistent on its own, each cosigned by one of
the club's two witnesses (its policy asks one of them), each served to a watcher of
its own. The witness shown both refuses the second and keeps both notes; the watcher
of one view, reading the gossip where the other's watcher reported what it was shown,
stops with both notes. The evening and its copies: tests/api/lyingkit.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.books.book import Book
from ledger.pusher import State
from ledger.service import Club
from ledger.store.log.checkpoint import Checkpoint, parse_note
from ledger.store.vocabulary import Deposited
from tests.api.lyingkit import Evening, evening_fixture, one_board, serving


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def evening(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Evening]:
    yield from evening_fixture(request, tmp_path_factory)


def _root(note: str) -> bytes:
    return Checkpoint.parse(parse_note(note)[0]).root


def _size(note: str) -> int:
    return Checkpoint.parse(parse_note(note)[0]).size


def test_a_split_view_is_refused_by_a_witness_and_caught_by_the_gossip(
    evening: Evening, tmp_path: Path
) -> None:
    a, b = evening.scene(tmp_path / "a"), evening.scene(tmp_path / "b")
    try:
        # The prefix both views share is the honest evening; then each goes its own way.
        to_a = Club(Book(a.store())).account_command("ann", Deposited, 100, "setter")
        to_b = Club(Book(b.store())).account_command("bob", Deposited, 100, "setter")
        seen_a, seen_b = to_a["receipt"]["checkpoint"], to_b["receipt"]["checkpoint"]
        size = _size(seen_a)
        assert _size(seen_b) == size > evening.size  # one write each, from one prefix
        assert (seen_a, seen_b) == (a.checkpoint(size), b.checkpoint(size))
        assert _root(seen_a) != _root(seen_b)
        for view in (a, b):  # each whole by its own lights
            deep = view.verify("--deep")
            assert deep.exit_code == 0, deep.output

        # The bank shows each view to one witness: both cosign. Shown the other view,
        # each refuses it: the log signed two trees of one size.
        with a.witnesses_serving() as policy:
            assert a.push(policy, "treasurer")["treasurer"].state is State.OK
            assert b.push(policy, "auditor")["auditor"].state is State.OK
            refused = {**b.push(policy, "treasurer"), **a.push(policy, "auditor")}
        for name, outcome in refused.items():
            assert outcome.state is State.REFUSED and "answered 422" in (outcome.error or ""), (
                name, outcome,
            )  # fmt: skip
        for name, cosigned, shown in (("treasurer", seen_a, seen_b), ("auditor", seen_b, seen_a)):
            evidence = a.evidence(name)
            assert evidence.exit_code == 0, evidence.output
            assert f"the log signed two different trees of size {size}" in evidence.output
            assert cosigned.rstrip("\n") in evidence.output
            assert shown.rstrip("\n") in evidence.output

        # Each watcher, shown its own view, finds it consistent: it is, on its own.
        board = a.app()
        with serving(board) as url_a, serving(b.app()) as url_b:
            watched_a = a.watch("--url", url_a, "--report")
            watched_b = b.watch("--url", url_b)
        assert watched_a.exit_code == 0, watched_a.output
        assert "reported: the ledger's gossip lists this checkpoint" in watched_a.output
        assert watched_b.exit_code == 0, watched_b.output
        before = f"the checkpoint this watcher verified before, of size {evening.size}"
        assert f"consistent: it extends {before}" in watched_b.output

        # The watcher of view B reads the gossip where view A's watcher reported.
        with serving(one_board(b.app(), board)) as url_b:
            found = b.watch("--url", url_b)
        assert found.exit_code == 1, found.output
        assert f"FORK: the bank signed two different histories of size {size}." in found.output
        assert "report 1 to the ledger's gossip" in found.output
        assert seen_a.rstrip("\n") in found.output and seen_b.rstrip("\n") in found.output
    finally:
        a.close()
        b.close()
