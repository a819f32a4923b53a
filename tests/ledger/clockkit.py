"""Clocks for the tests of time that only goes forward: one wall clock, and the clocks of
app servers that read it wrong by a fixed amount (two servers of one database whose
clocks differ by a minute)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

EVENING = datetime(2026, 11, 23, 20, 0, tzinfo=UTC)


def stamp(when: datetime) -> str:
    """`when` as the store writes recorded_at (ledger.store.eventstore.utc_now)."""
    return when.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Wall:
    """The real time of a test: a second passes at each reading of any server's clock."""

    def __init__(self, start: datetime = EVENING) -> None:
        self.now = start

    def clock(self, off_by: timedelta = timedelta(0)) -> Callable[[], str]:
        """A server's clock: the wall's time, `off_by` out (ahead when positive)."""

        def read() -> str:
            self.now += timedelta(seconds=1)
            return stamp(self.now + off_by)

        return read
