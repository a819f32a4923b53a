"""Whether an export holds a player's limit or break, found before the check reads it.

Players' limits are judged across streams (a deposit on the player's account, a stake
at a table), in the log's order, so a file that holds one is checked on one process:
the shared check (ledger.exports.offline.shares) hands each process some streams only.
A limit's line holds `"type":"LimitSet"` (or `BreakTaken`) as is, every line being in
canonical form (ledger.exports.offline.disputed says why those bytes cannot stand
inside a string).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

_MARKS = (b'"type":"LimitSet"', b'"type":"BreakTaken"')
_CHUNK = 1 << 20


def present(lines: Iterable[bytes]) -> bool:
    """Whether the export `lines` (lines in memory, or a file on disk) holds a limit or
    a break; False for a pipe, which is checked on one process anyway."""
    if isinstance(lines, list | tuple):
        return any(mark in raw for raw in lines for mark in _MARKS)
    name = getattr(lines, "name", None)
    if not isinstance(name, str) or not os.path.isfile(name):
        return False
    with open(name, "rb") as f:
        carry = b""
        while chunk := f.read(_CHUNK):
            block = carry + chunk
            if any(mark in block for mark in _MARKS):
                return True
            carry = block[-32:]
    return False
