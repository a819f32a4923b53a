"""The `table` fixture: a table builder whose every table is checked on teardown
(money sums to zero, escrows match, replay gives the same state)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.engine.tablekit import Table, tables


@pytest.fixture
def table() -> Iterator[Callable[..., Table]]:
    yield from tables()
