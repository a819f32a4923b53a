"""Each stream's hash chain through an export: its versions go up by one, each event's
prev_hash is the hash of the one before, and its hash is the chain hash of that and
its document (codec.chain_hash), as the store wrote it."""

from __future__ import annotations

from ledger.books.accounts import TABLE_PREFIX
from ledger.exports.verdict import Disagreement
from ledger.store import codec
from ledger.store.eventstore import GENESIS, Recorded


class Chains:
    def __init__(self) -> None:
        self.loose: frozenset[str] = frozenset()
        """Streams whose events in the file are each checked alone, not as a run: the
        seals a table's or a player's file holds (its closing's start, end and next)."""
        self.heads: dict[str, tuple[int, str, int]] = {}
        """Per stream: (version, hash, line) of its latest event (or snapshot)."""
        self.mid_chain: list[str] = []
        """Streams other than tables whose first event in the file is not their first."""

    def start(self, stream: str, version: int, digest: str, line: int) -> None:
        """The stream goes on from a snapshot's event, of this version and hash."""
        self.heads[stream] = (version, digest, line)

    def follow(self, number: int, row: Recorded, document: bytes) -> bool:
        """Hold the event on line `number` to its stream's chain; whether it opens a
        table (the first event of a table's stream)."""
        stream, version = row.stream, row.version
        head = self.heads.get(stream)
        if stream in self.loose:
            head = None  # each seal on its own: its hash is still its content's
            if version == 1 and row.prev_hash != GENESIS:
                self._first(number, stream, version, row.prev_hash)
        elif head is None:
            self._first(number, stream, version, row.prev_hash)
        else:
            head_version, head_hash, head_line = head
            if version != head_version + 1:
                if version <= head_version:
                    raise Disagreement(
                        number,
                        f"{stream} version {version} after version {head_version} (line "
                        f"{head_line}): a stream's versions only go up, one at a time",
                    )
                raise Disagreement(
                    number,
                    f"{stream} version {version} follows version {head_version} (line "
                    f"{head_line}): version {head_version + 1} is missing",
                )
            if row.prev_hash != head_hash:
                raise Disagreement(
                    number,
                    f"its prev_hash is not the hash of {stream}'s event before it (version "
                    f"{head_version}, line {head_line}): the chain is broken",
                )
        if codec.chain_hash(row.prev_hash, document) != row.hash:
            raise Disagreement(
                number,
                f"its hash is not the chain hash of its prev_hash and content ({stream} "
                f"version {version}): the event or its hash was changed",
            )
        self.heads[stream] = (version, row.hash, number)
        return head is None and version == 1 and stream.startswith(TABLE_PREFIX)

    def _first(self, number: int, stream: str, version: int, prev: str) -> None:
        """A stream's first event in the file."""
        if version == 1:
            if prev != GENESIS:
                raise Disagreement(
                    number,
                    f"{stream} begins here (version 1), but its prev_hash is not 64 zeros",
                )
            return
        if stream.startswith(TABLE_PREFIX):
            raise Disagreement(
                number,
                f"{stream} starts at version {version} with no snapshot of the table before "
                "it: its events cannot be replayed",
            )
        self.mid_chain.append(stream)
