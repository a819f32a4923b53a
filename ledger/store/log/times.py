"""Time only goes forward: what `hazard verify` holds a log's times to, the same words
from the database (ledger.store.log.check) and from an export file
(ledger.exports.offline).

- Every `recorded_at` is written as the store writes it (ledger.store.eventstore.utc_now:
  `2026-11-23T14:02:11.123456Z`), one width, so that text order is time order.
- No event is recorded before the event before it (the append holds a clock that is
  behind to the last event's time; migration 0013's trigger refuses anything else).
- A checkpoint's signed time, to the second, is not before the events it covers: a
  write's checkpoint is signed at its last event's time.

A pass over millions of events asks `out_of_order(at, before)` of each: two cheap
comparisons, and the form checked in full only where they fail.
"""

from __future__ import annotations

import re

from ledger.store.log.checkpoint import Checkpoint

WIDTH = 27
"""The length of every recorded_at."""
FORM = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
"""recorded_at's one form."""
SECOND = 19
"""The length of a time's text to the second (`2026-11-23T14:02:11`), what a
checkpoint's `time` line holds before its `Z`."""


def out_of_order(at: str, before: str) -> bool:
    """Whether `at`, the time of the event after one recorded at `before` (or "" for
    none), breaks a rule; `problem` says which."""
    return at < before or len(at) != WIDTH


def problem(at: str, before: str) -> str | None:
    """What is wrong with an event recorded at `at` after one recorded at `before` ("":
    none before it), in words; None if nothing is."""
    if not isinstance(at, str) or not FORM.fullmatch(at):
        return f"recorded_at {at!r} is not a time written YYYY-MM-DDTHH:MM:SS.ffffffZ"
    if at < before:
        return f"recorded at {at}, earlier than the event before it ({before}): time went back"
    return None


def signed_second(checkpoint: Checkpoint) -> str | None:
    """The checkpoint's signed time to the second, as the start of a recorded_at
    (`2026-11-23T14:02:11`); None without a `time` line."""
    when = checkpoint.time
    return None if when is None else when.strftime("%Y-%m-%dT%H:%M:%S")


def checkpoint_early(checkpoint: Checkpoint, newest: str) -> str | None:
    """What is wrong with `checkpoint`, which covers events recorded up to `newest`
    ("": none), in words; None if its time is not before them, to the second."""
    signed = signed_second(checkpoint)
    if signed is None or signed >= newest[:SECOND]:
        return None
    return (
        f"the checkpoint of size {checkpoint.size} is signed at {signed}Z, before the events "
        f"it covers (recorded up to {newest})"
    )
