"""An export read line by line: every line one JSON object in canonical form, with the
right `record` in the right order (the header first, then snapshots, then the body's
events, skips and checkpoints in position order, the closing last), each handed to
the part that checks it (header, chains, tree, tables, money, the evenings' cash-ups,
closing) and handed on only once it is checked."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from ledger.books import cashup
from ledger.books.accounts import TABLE_PREFIX
from ledger.books.limitreplay import READ, Replay
from ledger.exports.offline import closing, events
from ledger.exports.offline.chains import Chains
from ledger.exports.offline.complete import Completeness
from ledger.exports.offline.header import read_header
from ledger.exports.offline.money import MOVES_MONEY, Tally
from ledger.exports.offline.tables import Tables
from ledger.exports.offline.times import Times
from ledger.exports.offline.tree import Gap, Tree
from ledger.exports.verdict import (
    Closing,
    Disagreement,
    EdgeLine,
    EventLine,
    Header,
    Item,
    Snapshot,
    Verified,
)
from ledger.store import codec
from ledger.store.eventstore import CorruptEvent, RowDecoder
from ledger.store.log.heads import SEALS
from ledger.store.log.keys import Verifier
from ledger.store.log.policy import Policy
from ledger.store.vocabulary import EVENINGS

Progress = Callable[[int, int], None]
"""Called now and then with (positions covered so far, positions the file covers)."""
PROGRESS_EVERY = 16_384
"""Lines between two calls of `progress`."""

LIMITED = frozenset(READ)
"""The events a replay of players' limits reads."""

_POSITION = re.compile(rb'"(?:position|from)":([0-9]+)')


class Check:
    """One file's check, a line at a time."""

    def __init__(
        self,
        key: Verifier | None,
        progress: Progress | None = None,
        policy: Policy | None = None,
        disputed: Collection[str] | None = None,
    ) -> None:
        self.expected = key
        self.progress = progress
        self.policy = policy
        self.header: Header | None = None
        self.closing: Closing | None = None
        self.body = False
        """Whether the body has begun (no more snapshots)."""
        self.tree = Tree()
        self.times = Times()
        self.chains = Chains()
        self.disputed = disputed
        """The tables a dispute comes on, looked for ahead (ledger.exports.offline.disputed);
        None: any may have one."""
        self.tables = Tables({})
        self.tally = Tally()
        self.types: dict[str, int] = {}
        """The events the file holds, by type."""
        self.decode = RowDecoder(seen=256)
        self.complete: Completeness | None = None
        self.cashups: cashup.Replayed | None = None
        """The evenings' cash-ups held to the file's events: a whole log's or a range's
        (a table's or a player's file holds neither the evenings nor every table)."""
        self.limits: Replay | None = None
        """Players' limits replayed (ledger.books.limitreplay), in a file that holds the
        whole log from its first event: only there is every deposit and stake in it."""
        self.elsewhere: Callable[[int, bytes], bool] | None = None
        """A check shared among processes (ledger.exports.offline.shares): given each
        line after the header, whether it was an event another process checks, and
        taken here only for its place in the file (its position, leaf and time)."""

    def run(self, lines: Iterable[bytes]) -> Iterator[Item]:
        """Each line's record, once checked; Disagreement at the first that is not."""
        number = 0
        match_event = events.CANONICAL.fullmatch
        elsewhere = self.elsewhere
        progress = self.progress
        countdown = PROGRESS_EVERY
        it = iter(lines)
        for raw in it:
            number += 1
            # A copy that went through Windows (CRLF) or an editor (a byte order mark)
            # says the same: the line's content is what is checked.
            cut = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
            if number == 1 and cut.startswith(b"\xef\xbb\xbf"):
                cut = cut[3:]
            if self.closing is not None:
                raise Disagreement(
                    number, "a line follows the closing record, which must be the file's last"
                )
            if elsewhere is not None and self.header is not None and elsewhere(number, cut):
                self._cash_up_only(number, cut)
                continue
            if self.body:
                m = match_event(cut)
                if m is not None:
                    read = events.fast(m)
                    if read is None:  # a text that is not UTF-8: the slow path says so
                        read = events.slow(number, self._parse(number, cut + b"\n", cut))
                    try:
                        item = self._event(number, read)
                    except Gap as gap:
                        raise _swapped(gap, next(it, b"")) from None
                    yield item
                    if progress is not None:
                        countdown -= 1
                        if countdown == 0:
                            countdown = PROGRESS_EVERY
                            self._progress()
                    continue
            record = self._parse(number, raw, cut)
            kind = record.get("record")
            if self.header is None:
                if kind != "header":
                    raise Disagreement(
                        number, f"the file must begin with its header, not a {_kind(kind)}"
                    )
                yield self._header(number, record)
                continue
            if kind == "edge":
                self.body = True
                yield self._edge(number, events.slow(number, record))
                continue
            if kind in ("event", "skip"):
                self.body = True
                try:
                    body = (
                        self._event(number, events.slow(number, record))
                        if kind == "event"
                        else self.tree.skip(number, record)
                    )
                except Gap as gap:
                    raise _swapped(gap, next(it, b"")) from None
                yield body
            elif kind == "checkpoint":
                self.body = True
                line = self.tree.checkpoint(number, record)
                assert self.complete is not None
                self.complete.checkpoint(number, line.size)
                self.times.checkpoint(number, line, f"the checkpoint of size {line.size}")
                yield line
            elif kind == "snapshot":
                yield self._snapshot(number, record)
            elif kind == "closing":
                self.closing = self._closing(number, record)
                # Nothing may follow: look before handing the closing on, since a
                # restore commits once it has it.
                for extra in it:
                    raise Disagreement(
                        number + 1,
                        "a line follows the closing record, which must be the file's last"
                        if extra.strip()
                        else "an empty line follows the closing record, which must be the "
                        "file's last",
                    )
                if progress is not None:
                    self._progress()
                yield self.closing
            elif kind == "header":
                raise Disagreement(number, "a second header: a file has one, on its first line")
            else:
                raise Disagreement(number, f"a record of kind {kind!r} is not one the format has")
        if number == 0:
            raise Disagreement(1, "the file is empty")
        if self.closing is None:
            raise Disagreement(
                number + 1,
                "the file ends without its closing record (truncated?): "
                + (
                    f"its last position is {self.tree.size}, the header's is {self.header.last}"
                    if self.header is not None
                    else "it has no header either"
                ),
            )

    def _progress(self) -> None:
        header = self.header
        if self.progress is not None and header is not None:
            self.progress(self.tree.size - header.first + 1, header.last - header.first + 1)

    def _parse(self, number: int, raw: bytes, cut: bytes) -> dict[str, Any]:
        try:
            record = codec.loads(cut)
        except RecursionError:
            raise Disagreement(number, "the line is not JSON (nested too deeply)") from None
        except (ValueError, UnicodeDecodeError) as exc:
            if not raw.endswith(b"\n"):
                raise Disagreement(
                    number, f"the line is cut off (the file ends inside it: truncated?): {exc}"
                ) from None
            if not cut.strip():
                raise Disagreement(number, "an empty line: every line is one JSON object") from None
            raise Disagreement(number, f"the line is not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise Disagreement(number, "the line is not a JSON object")
        try:
            canonical = codec.canonical(record) == cut
        except ValueError:  # a float that JSON cannot hold (NaN, Infinity)
            canonical = False
        if not canonical:
            # Every line is written canonically (docs/export-format.md), so one that is
            # not was rewritten; and a key given twice would let a reader who keeps the
            # first value and one who keeps the last see two different files.
            raise Disagreement(
                number,
                "the line is not in the canonical form every export line is written in (keys "
                "sorted and each given once, no spaces, whole numbers): it was rewritten "
                "after export",
            )
        return record

    def _header(self, number: int, record: dict[str, Any]) -> Header:
        header = self.header = read_header(number, record, self.expected)
        self.complete = Completeness.of(header, header.format_version)
        if header.scope["kind"] in ("table", "player"):
            self.chains.loose = frozenset({SEALS})
        else:
            self.cashups = cashup.Replayed()
        self.tree.start(header)
        self.times.start(header)
        self.tables = Tables(header.rule_sets, disputed=self.disputed)
        if header.first == 1 and header.scope["kind"] in ("all", "range"):
            # the file does not say the club's time zone: the stand-in's evenings (its
            # days) are not judged, the evenings the setter recorded are
            self.limits = Replay(None)
        return header

    def _snapshot(self, number: int, record: dict[str, Any]) -> Snapshot:
        if self.body:
            raise Disagreement(number, "a snapshot after the body began: snapshots come first")
        assert self.header is not None
        snapshot = self.tables.snapshot(number, record, self.header.first)
        self.chains.start(snapshot.stream, snapshot.version, snapshot.hash, number)
        return snapshot

    def _event(self, number: int, read: events.Read) -> EventLine:
        """Everything about one event line but its parsing: the hot path of a check."""
        row, document, leaf_hex = read
        # Its place and leaf first: a line out of place is named as such, whatever else
        # is wrong with it.
        leaf = self.tree.add(number, row.position, document, leaf_hex)
        self.times.event(number, row)
        stream = row.stream
        if self.chains.follow(number, row, document):
            self.tables.open(stream)
        type_ = row.type
        try:
            event = self.decode(row.position, type_, row.schema_version, row.version, row.payload)
        except CorruptEvent as exc:
            raise Disagreement(number, f"the event cannot be read: {exc}") from None
        if stream.startswith(TABLE_PREFIX):
            self.tables.event(number, stream, event)
        # The accounts a table's event posts to, as the tally finds them: the seals'
        # heads and a player's file ask for the same (complete.Completeness.event).
        posted = self.tally.count(stream, event) if type_ in MOVES_MONEY else None
        types = self.types
        types[type_] = types.get(type_, 0) + 1
        if self.cashups is not None:
            self._cash_up(number, stream, event)
        assert self.complete is not None
        self.complete.event(number, row, event, posted)
        if self.limits is not None and type_ in LIMITED:
            self.limits.see((row.position, stream, row.recorded_at, event))
        return EventLine(number, row, leaf, event)

    def _cash_up(self, number: int, stream: str, event: Any) -> None:
        """The event fed to the cash-ups' check: a cash-up the file's events do not bear
        out disagrees at its evening's closing line."""
        assert self.cashups is not None
        found = len(self.cashups.problems)
        self.cashups.event(stream, event)
        if len(self.cashups.problems) > found:
            raise Disagreement(number, str(self.cashups.problems[found]))

    def _cash_up_only(self, number: int, cut: bytes) -> None:
        """A line another process checks (shares), read here for the cash-ups alone:
        the evenings' events, and while one is open the events that move money. What
        is wrong with the line otherwise is its owner's to say."""
        cashups = self.cashups
        if cashups is None or (m := events.CANONICAL.fullmatch(cut)) is None:
            return
        read = events.fast(m)
        if read is None:
            return
        row = read[0]
        if row.stream != EVENINGS and not (cashups.watching and row.type in MOVES_MONEY):
            return
        try:
            event = self.decode(
                row.position, row.type, row.schema_version, row.version, row.payload
            )
        except CorruptEvent:
            return
        self._cash_up(number, row.stream, event)

    def _edge(self, number: int, read: events.Read) -> EdgeLine:
        """An event just outside a range: in the tree, outside the range's counts."""
        row, document, leaf_hex = read
        leaf = self.tree.add(number, row.position, document, leaf_hex)
        self.times.event(number, row)
        assert self.complete is not None
        self.complete.edge(number, row)
        return EdgeLine(number, row, leaf)

    def _closing(self, number: int, record: dict[str, Any]) -> Closing:
        assert self.header is not None and self.complete is not None
        if self.limits is not None and (found := self.limits.end()):
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise Disagreement(
                number,
                f"a deposit, bet or limit the players' limits in force did not allow: "
                f"{found[0]}{more}",
            )
        closed = closing.close(
            number,
            record,
            self.header,
            tree=self.tree,
            streams=set(self.chains.heads) | set(self.tables.snapshotted),
            tables=self.tables,
            tally=self.tally,
            types=self.types,
            policy=self.policy,
        )
        checkpoint = closed.checkpoint
        self.complete.close(number, record, checkpoint.size, checkpoint.issued_at)
        self.times.checkpoint(number, closed.checkpoint, "the closing record's checkpoint")
        return closed

    def verified(self) -> Verified:
        """What the whole file's check verified, once it has read the closing."""
        assert self.header is not None and self.closing is not None
        verified = closing.summary(
            self.header,
            self.closing,
            key_given=self.expected is not None,
            policy=self.policy,
            tree=self.tree,
            mid_chain=self.chains.mid_chain,
            tables=self.tables,
            tally=self.tally,
            types=self.types,
            complete=self.complete.proven if self.complete is not None else None,
        )
        if self.cashups is None or not self.cashups.checked:
            return verified
        return dataclasses.replace(verified, cash_ups=self.cashups.checked)


def _swapped(gap: Gap, following: bytes) -> Disagreement:
    """The gap, or lines out of order if the line after it holds the position missing."""
    found = _POSITION.search(following)
    if found is None or int(found.group(1)) != gap.missing:
        return gap
    return Disagreement(
        gap.line,
        f"position {gap.found} comes before {gap.missing}, which is on the next line: lines "
        "out of order (swapped?)",
    )


def _kind(kind: Any) -> str:
    return f"{kind} record" if isinstance(kind, str) else "line without a record kind"
