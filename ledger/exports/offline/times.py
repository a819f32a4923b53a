"""An export's times (docs/export-format.md, "What hazard verify FILE checks"): every
event's `recorded_at` written in the store's one form and not before the file's event
before it; every checkpoint, the closing's included, dated (to the second, as its note
signs it) no earlier than the file's events up to its size; and in a file whose scope
has a `since` or an `until`, every event recorded inside them. The rules, and their
words, are the database check's (ledger.store.log.times)."""

from __future__ import annotations

from typing import Any

from ledger.exports.verdict import CheckpointLine, Disagreement, Header
from ledger.store.eventstore import Recorded
from ledger.store.log import times


class Times:
    def __init__(self) -> None:
        self.last = ""
        """The time of the file's last event so far ("": none yet)."""
        self.since: str | None = None
        self.until: str | None = None

    def start(self, header: Header) -> None:
        """The scope's times, which must be written as recorded_at is."""
        self.since = _bound(header, "since")
        self.until = _bound(header, "until")

    def event(self, number: int, row: Recorded) -> None:
        """The event on line `number`, after the file's events before it."""
        at = row.recorded_at
        if times.out_of_order(at, self.last):
            wrong = times.problem(at, self.last)
            if wrong is not None:
                raise Disagreement(number, f"position {row.position}: {wrong}")
        self.last = at
        # Whether it is inside the scope's since/until is ledger.exports.offline.complete's
        # to say: an edge, or a seal a table's file is proven against, is outside it.

    def checkpoint(self, number: int, checkpoint: CheckpointLine, what: str) -> None:
        """A checkpoint (`what` it is, on line `number`) covering every event so far;
        its `issued_at` is the note's signed time to the second (ledger.exports.offline.
        tree)."""
        signed = checkpoint.issued_at[: times.SECOND]
        if signed < self.last[: times.SECOND]:
            raise Disagreement(
                number,
                f"{what} is dated {signed}Z, before the events it covers (the file's are "
                f"recorded up to {self.last})",
            )


def _bound(header: Header, name: str) -> str | None:
    value: Any = header.scope.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not times.FORM.fullmatch(value):
        raise Disagreement(
            header.line,
            f"the header's scope.{name} {value!r} is not a time written "
            "YYYY-MM-DDTHH:MM:SS.ffffffZ",
        )
    return value
