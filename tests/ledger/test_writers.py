"""SQLite's writers take turns in ledger.store.writers: across processes by flock, in
a process by a lock with the lock timeout; a holder that dies lets go of its turn."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.store import db, writers

FORK = multiprocessing.get_context("fork")


def within(seconds: float) -> float:
    """The deadline `seconds` from now, as a turn takes it."""
    return time.monotonic() + seconds


def _hold(path: str, taken: FORK.Event, release: FORK.Event) -> None:  # type: ignore[name-defined]
    queue = writers.for_engine(sa.create_engine(f"sqlite:///{path}"))
    assert queue is not None
    with queue.turn(within(5)):
        taken.set()
        release.wait(30)


def _holder(tmp_path: Path) -> tuple[multiprocessing.process.BaseProcess, FORK.Event]:  # type: ignore[name-defined]
    taken, release = FORK.Event(), FORK.Event()
    child = FORK.Process(target=_hold, args=(str(tmp_path / "h.sqlite3"), taken, release))
    child.start()
    assert taken.wait(10), "the child never took its turn"
    return child, release


def _queue(tmp_path: Path) -> writers.WriterQueue:
    queue = writers.for_engine(db.make_engine(f"sqlite:///{tmp_path / 'h.sqlite3'}"))
    assert queue is not None
    return queue


def test_another_process_waits_for_the_turn_and_gets_it_when_let_go(tmp_path: Path) -> None:
    child, release = _holder(tmp_path)
    queue = _queue(tmp_path)
    got: list[float] = []

    def wait_turn() -> None:
        with queue.turn(within(10)):
            got.append(time.monotonic())

    waiter = threading.Thread(target=wait_turn)
    waiter.start()
    time.sleep(0.3)
    assert got == [], "the turn was taken while another process held it"
    let_go = time.monotonic()
    release.set()
    waiter.join(10)
    child.join(10)
    assert got and got[0] - let_go < 5


def test_a_holder_killed_by_sigkill_lets_go_of_its_turn(tmp_path: Path) -> None:
    child, _ = _holder(tmp_path)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    with _queue(tmp_path).turn(within(5)):
        pass  # taken: the kernel let go of the dead holder's flock


def test_a_second_turn_in_the_same_process_times_out_rather_than_wait_on_itself(
    tmp_path: Path,
) -> None:
    """Two engines on one file share the process's queue: a thread that holds its turn
    and asks again (a transaction within a transaction) gives up after the timeout."""
    first, second = _queue(tmp_path), _queue(tmp_path)
    assert first is second
    with first.turn(within(1)):
        started = time.monotonic()
        with pytest.raises(writers.QueueTimeout), second.turn(within(0.2)):
            pass
        assert 0.15 < time.monotonic() - started < 3


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:///file:x.db?uri=true"])
def test_only_a_plain_sqlite_file_has_a_queue(url: str) -> None:
    assert writers.for_engine(sa.create_engine(url)) is None


def test_a_queue_file_that_cannot_be_opened_leaves_writes_to_sqlites_lock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A queue file that cannot be opened (here: a link to a folder that is not there)
    does not refuse writes: they go on under SQLite's own lock, and the log says why."""
    (tmp_path / "h.sqlite3.writers").symlink_to(tmp_path / "gone" / "writers")
    queue = _queue(tmp_path)
    with caplog.at_level("WARNING", logger="hazard.store"), queue.turn(within(1)):
        pass
    assert "SQLite's lock alone" in caplog.text
    with queue.turn(within(1)):  # and again, the same way, without a second warning
        pass
    assert caplog.text.count("SQLite's lock alone") == 1


def _flock_taken_elsewhere(path: Path) -> bool:
    """Whether another open file holds the queue's flock: a fresh one tries it."""
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # lets go of it, if taken here
    return False


def test_a_turn_another_process_holds_is_given_up_at_the_deadline(tmp_path: Path) -> None:
    """flock has no timeout of its own: a writer waits for another process's turn only
    until its deadline, then QueueTimeout, however long the other holds it."""
    child, release = _holder(tmp_path)
    queue = _queue(tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(writers.QueueTimeout), queue.turn(within(0.3)):
            pass
        assert 0.25 < time.monotonic() - started < 1.5
        # The turn is free in this process again: the next writer waits its own time.
        started = time.monotonic()
        with pytest.raises(writers.QueueTimeout), queue.turn(within(0.2)):
            pass
        assert 0.15 < time.monotonic() - started < 1.5
    finally:
        release.set()
        child.join(10)
    # The broker got the lock after the writers gave up, with nobody waiting for it:
    # it let go at once, for any process to take.
    deadline = time.monotonic() + 5
    while _flock_taken_elsewhere(queue.path) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _flock_taken_elsewhere(queue.path)
    with queue.turn(within(1)):
        assert _flock_taken_elsewhere(queue.path)  # and a turn still takes it


def test_a_waiting_writer_gets_the_turn_of_a_holder_killed_by_sigkill(tmp_path: Path) -> None:
    child, _ = _holder(tmp_path)
    queue = _queue(tmp_path)
    got: list[float] = []

    def wait_turn() -> None:
        with queue.turn(within(10)):
            got.append(time.monotonic())

    waiter = threading.Thread(target=wait_turn)
    waiter.start()
    time.sleep(0.3)
    assert child.pid is not None and got == []
    killed = time.monotonic()
    os.kill(child.pid, signal.SIGKILL)
    waiter.join(10)
    child.join(10)
    assert got and got[0] - killed < 5


def _take_turn(path: str, done: FORK.Queue) -> None:  # type: ignore[name-defined]
    queue = writers.for_engine(sa.create_engine(f"sqlite:///{path}"))
    assert queue is not None
    try:
        with queue.turn(within(5)):
            done.put("taken")
    except writers.QueueTimeout:
        done.put("timed out")


def test_a_child_forked_while_the_parent_held_its_turn_takes_its_own(tmp_path: Path) -> None:
    """gunicorn forks its workers: a child forked while a thread of the parent held
    the turn must not find the parent's lock taken for ever, nor share its flock."""
    queue = _queue(tmp_path)
    done = FORK.Queue()
    with queue.turn(within(1)):
        child = FORK.Process(target=_take_turn, args=(str(tmp_path / "h.sqlite3"), done))
        child.start()
        time.sleep(0.3)
        assert done.empty(), "the child wrote while the parent held the turn"
    assert done.get(timeout=10) == "taken"
    child.join(10)
