"""The restore's read-ahead (ledger.exports.restore._read_ahead, on PostgreSQL): the
verifier's items in a thread of their own hand on exactly what the verifier gives, in
order, and what it raises after every item before it; a caller that stops early
stops the thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

restore = pytest.importorskip("ledger.exports.restore")


class Refused(Exception):
    pass


def _items(count: int, fails: bool) -> Iterator[int]:
    yield from range(count)
    if fails:
        raise Refused(f"line {count + 1}")


@settings(max_examples=30, deadline=None)
@given(count=st.integers(0, 3 * restore.READ_AHEAD + 5), fails=st.booleans())
def test_the_items_come_in_order_and_the_verifiers_refusal_after_them(
    count: int, fails: bool
) -> None:
    got: list[int] = []
    if fails:
        with pytest.raises(Refused, match=f"line {count + 1}"):
            got.extend(restore._read_ahead(_items(count, fails)))
    else:
        got.extend(restore._read_ahead(_items(count, fails)))
    assert got == list(range(count))


def test_a_caller_that_stops_early_stops_the_reading_thread() -> None:
    before = threading.active_count()
    read = restore._read_ahead(_items(10 * restore.READ_AHEAD, False))
    assert next(read) == 0
    read.close()  # as when the writes fail: the generator is closed
    assert threading.active_count() == before
