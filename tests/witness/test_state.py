"""The witness's state file: check-and-update in one transaction, so that two
submissions at once never roll the witness back (tlog-witness's race); what it keeps
across a restart; a lock held too long is Busy at once, not a long wait."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ledger.witness import cosigning
from ledger.witness.cosigning import Witness
from ledger.witness.judge import NotAtOld
from ledger.witness.state import Busy, State, StateError
from tests.witness.witnesskit import ORIGIN, Log, a_witness


def race(witness: Witness, bodies: dict[int, bytes]) -> dict[int, int]:
    """Each body pushed from a thread of its own, all let go at once: size to status."""
    start = threading.Barrier(len(bodies))
    answered: dict[int, int] = {}

    def push(size: int) -> None:
        start.wait()
        try:
            witness.add_checkpoint(bodies[size])
            answered[size] = 200
        except NotAtOld:
            answered[size] = 409

    threads = [threading.Thread(target=push, args=(size,)) for size in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answered


def cosigned_size(witness: Witness) -> int:
    (followed,) = witness.state.followed()
    return followed.cosigned.size


def test_the_spec_s_race_a_at_n_and_b_at_n_plus_k_never_rolls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A (size N) and B (size N+K), both from the size last cosigned, both judged while
    the other is: only one is cosigned, the other told the new size, and what is stored
    is what was cosigned. The judging is slowed so the two overlap every time."""
    log = Log.new()
    witness = a_witness(tmp_path, log)
    witness.add_checkpoint(log.push(0, 10))
    judge = cosigning.judge

    def slow_judge(*args: object) -> object:
        time.sleep(0.05)
        return judge(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(cosigning, "judge", slow_judge)
    size = 10
    for _ in range(5):
        bodies = {size + 7: log.push(size, size + 7), size + 20: log.push(size, size + 20)}
        answered = race(witness, bodies)
        assert sorted(answered.values()) == [200, 409], answered
        (won,) = [n for n, status in answered.items() if status == 200]
        assert cosigned_size(witness) == won
        size = won


def test_many_pushes_at_once_cosign_one_tree_at_a_time(tmp_path: Path) -> None:
    log = Log.new()
    witness = a_witness(tmp_path, log)
    witness.add_checkpoint(log.push(0, 1))
    size = 1
    for _ in range(10):
        bodies = {size + k: log.push(size, size + k) for k in range(1, 7)}
        answered = race(witness, bodies)
        won = [n for n, status in answered.items() if status == 200]
        assert len(won) == 1 and cosigned_size(witness) == won[0], answered
        size = won[0]


def test_a_witness_opened_again_resumes_where_it_was(tmp_path: Path) -> None:
    log = Log.new()
    witness = a_witness(tmp_path, log)
    witness.add_checkpoint(log.push(0, 12))
    again = Witness(State(tmp_path / "witness.sqlite3"), witness.cosigner)
    with pytest.raises(NotAtOld) as refused:
        again.add_checkpoint(log.push(0, 20))
    assert refused.value.size == 12
    again.add_checkpoint(log.push(12, 20))
    assert cosigned_size(again) == 20


def test_a_state_held_by_another_writer_is_busy_soon(tmp_path: Path) -> None:
    log = Log.new()
    witness = a_witness(tmp_path, log)
    witness.state = State(tmp_path / "witness.sqlite3", busy_timeout=0.1)
    holder = sqlite3.connect(tmp_path / "witness.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(Busy):
            witness.add_checkpoint(log.push(0, 3))
        assert time.monotonic() - started < 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    witness.add_checkpoint(log.push(0, 3))  # nothing was changed: it starts from 0


def test_a_file_that_is_not_a_witness_s_state_is_refused(tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "other.sqlite3")
    other.execute("CREATE TABLE t (x)")
    other.close()
    with pytest.raises(StateError, match="not a witness's state"):
        State(tmp_path / "other.sqlite3").connection()
    with pytest.raises(StateError, match="already holds a database"):
        State.create(tmp_path / "other.sqlite3")
    with pytest.raises(StateError, match="cannot open"):
        State(tmp_path / "missing.sqlite3").connection()
    assert not (tmp_path / "missing.sqlite3").exists()


def test_the_state_is_wal_and_synchronous_full(tmp_path: Path) -> None:
    state = State.create(tmp_path / "w.sqlite3")
    conn = state.connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_each_thread_has_its_own_connection(tmp_path: Path) -> None:
    state = State.create(tmp_path / "w.sqlite3")
    state.follow(ORIGIN, Log.new().signer.verifier.text(), 1)
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(id(state.connection())))
    thread.start()
    thread.join()
    assert seen and seen[0] != id(state.connection())
