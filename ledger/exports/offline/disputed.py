"""The tables a dispute comes on in an export, found before the check reads it.

A table's referee keeps the last fifty rounds it read, their events and the state
before each, to judge a dispute over one (engine.rounds.RoundBook): across the
hundreds of tables of a long file, most of the check's memory. Most tables have no
dispute, and a file on disk (or lines in memory) can be read twice: a first pass that
only looks for dispute lines, at the speed of the disk, tells the check which tables'
referees need their rounds. The verdict is the same: a referee keeps its rounds
whenever its table has a dispute line anywhere in the file.

A dispute event's line holds `"type":"DisputeOpened"` (or `DisputeResolved`) as is:
every line is checked to be in canonical form, which writes those names unescaped, and
a line that is not is refused before anything after it is read. A string's own quotes
are escaped, so those bytes cannot stand inside one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ledger.exports.offline import events
from ledger.store import codec

_MARK = b'"type":"Dispute'
"""What every dispute event's line holds, and few others (a superset is only safe)."""
_CHUNK = 1 << 20


def tables(lines: Iterable[bytes]) -> frozenset[str] | None:
    """The streams the dispute lines of the export `lines` are on, read ahead of the
    check; None when `lines` cannot be read twice (a pipe) or a line that may hold a
    dispute does not say its stream (then any table may have one)."""
    if isinstance(lines, list | tuple):
        return _streams(raw for raw in lines if _MARK in raw)
    name = getattr(lines, "name", None)
    if not isinstance(name, str) or not os.path.isfile(name):
        return None
    try:
        if not lines.seekable() or lines.tell() != 0:  # type: ignore[attr-defined]
            return None
    except (AttributeError, OSError):
        return None
    return in_file(Path(name))


def in_file(path: Path) -> frozenset[str] | None:
    """The streams the dispute lines of the export file at `path` are on."""
    with path.open("rb") as f:
        return _streams(_marked(f))


def _marked(f: Any) -> Iterable[bytes]:
    """The lines of file `f` that hold the mark, read a chunk at a time."""
    carry = b""
    while chunk := f.read(_CHUNK):
        block = carry + chunk
        end = block.rfind(b"\n") + 1
        carry = block[end:]
        yield from _lines_with_mark(block[:end])
    yield from _lines_with_mark(carry)


def _lines_with_mark(block: bytes) -> Iterable[bytes]:
    at = block.find(_MARK)
    while at >= 0:
        start = block.rfind(b"\n", 0, at) + 1
        end = block.find(b"\n", at)
        end = len(block) if end < 0 else end
        yield block[start:end]
        at = block.find(_MARK, end)


def _streams(marked: Iterable[bytes]) -> frozenset[str] | None:
    found: set[str] = set()
    for raw in marked:
        stream = _stream(raw.rstrip(b"\r\n"))
        if stream is None:
            return None
        found.add(stream)
    return frozenset(found)


def _stream(line: bytes) -> str | None:
    m = events.CANONICAL.fullmatch(line)
    try:
        if m is not None:
            return m.group(14).decode()  # the stream, as events.fast reads it
        record = codec.loads(line.removeprefix(b"\xef\xbb\xbf"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    stream = record.get("stream") if isinstance(record, dict) else None
    return stream if isinstance(stream, str) else None
