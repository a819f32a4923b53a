"""The offline check of an export file (docs/export-format.md): no database, no network.

`read` checks a file line by line and hands on each record only once it is checked, so
that a restore (ledger.exports.restore) can write as it reads and roll back at the
first `Disagreement`; `verify` reads it all and says what was verified, and what was
taken on trust. Memory stays bounded however long the file: of the tree only its
frontier is kept (at most 64 hashes), of each stream its head, of each table its
referee (the table's state), and tallies; never the file.

What is checked, in the order of the format's "What hazard verify checks":

- every line is a JSON object with the right `record`, in the right order, the
  positions of events and skips in sequence from `first` to `last`;
- each stream's versions go up by one and its hash chain holds; each event's `leaf`
  is the hash of its document;
- the tree built from `tree_start`, the leaves and the skipped subtrees has, at each
  `checkpoint` line, the root that checkpoint signs, and at the end the closing root,
  which the consistency proof ties to the closing's signed checkpoint; every signature
  is by the header's key (and that is the key the caller expects, if given);
- every table is replayed through the engine's referee (engine.referee) from its
  opening or its snapshot, which re-runs every command and holds what it derives to
  the file, under the rule set its TableOpened (or snapshot) names, which must be the
  header's;
- the closing's counts and money are recomputed from the events.

The hot path reads an event line without parsing it as a whole: a canonical line is
split by one regular expression into its fields, and the event's document (what its
leaf and chain hash cover) is cut out of the line's own bytes, the four fields that
are not part of it (`hash`, `leaf`, `prev_hash`, `record`) left out. That is still a
recomputation from the content: the leaf is SHA-256 over those bytes, each field
between the cuts is checked to be one JSON value of its kind (the payload when it is
decoded), so the bytes hashed are the fields read, and since the tree ties each leaf
to the signed log, bytes that are not the stored event's cannot pass. A line that is
not in canonical form takes the slow path: parsed, and its document re-encoded.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from hashlib import sha256
from typing import Any, TypeGuard

from engine import events as ev
from engine.errors import RuleSetError
from engine.fold import INITIAL
from engine.money import ESCROW as LOCAL_ESCROW
from engine.money import holds
from engine.referee import Disagreement as Differs
from engine.referee import Referee
from engine.rules import RuleSet, from_mapping
from engine.state import TableState
from ledger.books.accounts import (
    CASH,
    TABLE_PREFIX,
    account_stream,
    book_account,
    player_account,
    transfers_of,
)
from ledger.exports.scope import KINDS
from ledger.exports.verdict import (
    FIGURES,
    CheckpointLine,
    Closing,
    Disagreement,
    EventLine,
    Header,
    Item,
    Money,
    SkipLine,
    Snapshot,
    Verified,
    figures_view,
)
from ledger.store import codec, snapshots
from ledger.store.eventstore import GENESIS, CorruptEvent, Recorded, RowDecoder
from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, NoteError, open_checkpoint
from ledger.store.log.keys import BadKey, Verifier

__all__ = [
    "FIGURES",
    "CheckpointLine",
    "Closing",
    "Disagreement",
    "EventLine",
    "Header",
    "Item",
    "Money",
    "SkipLine",
    "Snapshot",
    "Verified",
    "figures_view",
    "read",
    "verify",
]

FORMAT = "hazard-export"
FORMAT_VERSION = 1

Progress = Callable[[int, int], None]
"""Called now and then with (positions covered so far, positions the file covers)."""
PROGRESS_EVERY = 16_384
"""Lines between two calls of `progress`."""


class _Gap(Disagreement):
    """A position missing: deleted, unless the next line holds it (lines swapped)."""

    def __init__(self, line: int, reason: str, missing: int, found: int) -> None:
        super().__init__(line, reason)
        self.missing, self.found = missing, found


# -- The event line, read fast --------------------------------------------------------

_STRING = rb'"([^"\\]*)"'  # a JSON string with nothing escaped in it
_NUMBER = rb"(0|[1-9][0-9]*)"
_HEX = rb'"([0-9a-f]{64})"'
_EVENT = re.compile(
    rb'(\{"actor":' + _STRING + rb")"
    rb',"hash":' + _HEX
    + rb'(,"idempotency_key":(null|"[^"\\]*"))'
    rb',"leaf":' + _HEX
    + rb'(,"payload":(\{.*\}),"position":' + _NUMBER + rb")"
    rb',"prev_hash":' + _HEX + rb',"record":"event"'
    rb'(,"recorded_at":' + _STRING + rb',"schema_version":' + _NUMBER + rb',"stream":' + _STRING
    + rb',"type":' + _STRING + rb',"version":' + _NUMBER + rb"\})",
    re.DOTALL,
)  # fmt: skip
"""An event line in canonical form whose texts need no unescaping. The payload is
whatever lies between its key and `,"position":` (what follows is fixed, and a string
cannot hold an unescaped quote, so there is one way to match); it is checked to be one
JSON object when it is decoded. Four groups hold the event's document in pieces: the
line but `hash`, `leaf`, `prev_hash` and `record`."""
_EVENT_KEYS = frozenset(
    ("actor", "hash", "idempotency_key", "leaf", "payload", "position", "prev_hash", "record",
     "recorded_at", "schema_version", "stream", "type", "version")
)  # fmt: skip
_NOT_HASHED = ("hash", "leaf", "prev_hash", "record")
_MOVES_MONEY = frozenset(
    name
    for name, cls in codec.EVENT_TYPES.items()
    if {"amount", "stake", "payout", "transfers"} & {f.name for f in dataclasses.fields(cls)}
)
"""The event types that can move money: those with an amount, a stake, a payout or
transfers (accounts.transfers_of is empty for the others: a test holds it so). The
others are not looked at for money, a third of a table's events (the throws)."""
_POSITION = re.compile(rb'"(?:position|from)":([0-9]+)')


def _is_int(value: Any) -> TypeGuard[int]:
    return type(value) is int


def _hex_hash(value: Any) -> bytes | None:
    if not isinstance(value, str) or len(value) != 64:
        return None
    try:
        digest = bytes.fromhex(value)
    except ValueError:
        return None
    return digest if digest.hex() == value else None


# -- The check ----------------------------------------------------------------------------


class _Table:
    """A table stream in the file: its referee, and the lines of its recent events so
    that a disagreement about an earlier event of a command names that event's line;
    at a server-dice table also the lines of the turn's throws, which its revealed seed
    can find at fault long after them."""

    __slots__ = ("drawn", "recent", "referee")

    def __init__(self, state: TableState) -> None:
        self.referee = Referee(state)
        self.recent: deque[tuple[int, int]] = deque(maxlen=64)
        self.drawn: dict[int, int] = {}


def read(lines: Iterable[bytes], key: Verifier | None = None) -> Iterator[Item]:
    """Check the export `lines` (bytes, with or without their newline) and yield each
    record once it is checked; raise Disagreement at the first line that disagrees.
    With `key`, the file must be signed by it; without, the header's key is used (and
    the caller should say so)."""
    return _Check(key).run(lines)


def verify(
    lines: Iterable[bytes], key: Verifier | None = None, progress: Progress | None = None
) -> Verified:
    """Check the whole file; what was verified, or Disagreement."""
    check = _Check(key, progress)
    # The cyclic collector held off: a check allocates a row, an event and a table
    # state or two per line, none in a cycle, and the collector's passes over the
    # tables' states cost a tenth of the time. Reference counting frees them as usual.
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in check.run(lines):
            pass
    finally:
        if was:
            gc.enable()
    return check.verified()


class _Check:
    def __init__(self, key: Verifier | None, progress: Progress | None = None) -> None:
        self.expected = key
        self.progress = progress
        self.header: Header | None = None
        self.closing: Closing | None = None
        self.body = False
        """Whether the body has begun (no more snapshots)."""
        self.frontier = merkle.Frontier()
        """The tree of the events so far: its size is the last position covered by an
        event or skip line."""
        self.heads: dict[str, tuple[int, str, int]] = {}
        """Per stream: (version, hash, line) of its latest event (or snapshot)."""
        self.tables: dict[str, _Table] = {}
        self.snapshotted: dict[str, Snapshot] = {}
        self.mid_chain: list[str] = []
        """Streams other than tables whose first event in the file is not their first."""
        self.decode = RowDecoder(seen=256)
        self.events = 0
        self.skipped = 0
        self.settlements = 0
        self.checkpoints = 0
        self.types: dict[str, int] = {}
        self.money: dict[str, list[int]] = {}
        self.names: dict[str, str] = {}
        """Ledger account names of the players (and the setter) at the tables."""
        self.last_line = 0
        self.checkpoint_seen_at = -1

    # -- the loop ---------------------------------------------------------------------

    def run(self, lines: Iterable[bytes]) -> Iterator[Item]:
        number = 0
        match_event = _EVENT.fullmatch
        progress = self.progress
        countdown = PROGRESS_EVERY
        it = iter(lines)
        for raw in it:
            number += 1
            self.last_line = number
            # A copy that went through Windows (CRLF) or an editor (a byte order mark)
            # says the same: the line's content is what is checked.
            cut = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
            if number == 1 and cut.startswith(b"\xef\xbb\xbf"):
                cut = cut[3:]
            if self.closing is not None:
                raise Disagreement(
                    number, "a line follows the closing record, which must be the file's last"
                )
            if self.body:
                m = match_event(cut)
                if m is not None:
                    try:
                        item = self._fast_event(number, cut, m)
                    except _Gap as gap:
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
                self.header = self._header(number, record)
                yield self.header
                continue
            if kind in ("event", "skip"):
                self.body = True
                try:
                    body = (
                        self._slow_event(number, record)
                        if kind == "event"
                        else self._skip(number, record)
                    )
                except _Gap as gap:
                    raise _swapped(gap, next(it, b"")) from None
                yield body
            elif kind == "checkpoint":
                self.body = True
                yield self._checkpoint(number, record)
            elif kind == "snapshot":
                yield self._snapshot(number, record)
            elif kind == "closing":
                closing = self._closing(number, record)
                self.closing = closing
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
                yield closing
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
                    f"its last position is {self.frontier.size}, the header's is {self.header.last}"
                    if self.header is not None
                    else "it has no header either"
                ),
            )

    def _progress(self) -> None:
        header = self.header
        if self.progress is not None and header is not None:
            self.progress(self.frontier.size - header.first + 1, header.last - header.first + 1)

    def _parse(self, number: int, raw: bytes, cut: bytes) -> dict[str, Any]:
        try:
            record = json.loads(cut)
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

    # -- header and snapshots ------------------------------------------------------------

    def _header(self, number: int, h: dict[str, Any]) -> Header:
        if h.get("format") != FORMAT:
            raise Disagreement(number, f"not a Hazard export: format {h.get('format')!r}")
        if not _is_int(h.get("format_version")) or h.get("format_version") != FORMAT_VERSION:
            raise Disagreement(
                number,
                f"format version {h.get('format_version')!r}: this verifier reads version "
                f"{FORMAT_VERSION}",
            )
        first, last = h.get("first"), h.get("last")
        if not (_is_int(first) and _is_int(last) and first >= 1 and last >= first - 1):
            raise Disagreement(number, f"the header's range {first!r}..{last!r} is not one")
        try:
            verifier = Verifier.parse(str(h.get("key")))
        except (BadKey, ValueError) as exc:
            raise Disagreement(number, f"the header's key is not a verifier key ({exc})") from None
        expected = self.expected
        if expected is not None and (
            verifier.name != expected.name or verifier.public_key != expected.public_key
        ):
            # Nothing has been checked against the header's key yet: it is the header
            # that disagrees, whatever the checkpoints further on may hold.
            raise Disagreement(
                number,
                f"the file's header names the key {verifier.text()}, not the key you gave "
                f"({expected.text()})",
            )
        origin = h.get("origin")
        if not isinstance(origin, str) or not origin:
            raise Disagreement(number, "the header has no origin (the log's name)")
        scope = h.get("scope")
        if not isinstance(scope, dict) or scope.get("kind") not in KINDS:
            raise Disagreement(
                number, f"the header's scope is not an object with a kind of {', '.join(KINDS)}"
            )
        rule_sets: dict[str, RuleSet] = {}
        given = h.get("rule_sets")
        if not isinstance(given, dict):
            raise Disagreement(number, "the header's rule_sets is not an object")
        for name, mapping in given.items():
            try:
                rules = from_mapping(mapping)
            except (RuleSetError, TypeError, ValueError, KeyError, AttributeError) as exc:
                raise Disagreement(number, f"rule set {name!r} cannot be read: {exc}") from None
            if rules.name != name:
                raise Disagreement(number, f"the rule set listed as {name!r} is {rules.name!r}")
            rule_sets[name] = rules
        start = h.get("tree_start")
        size = first - 1
        hashes = start.get("hashes") if isinstance(start, dict) else None
        if not isinstance(start, dict) or start.get("size") != size or not isinstance(hashes, list):
            raise Disagreement(number, f"the header's tree_start is not the tree of {size} events")
        if len(hashes) != size.bit_count():
            raise Disagreement(
                number,
                f"the tree of {size} events has {size.bit_count()} complete subtrees, "
                f"tree_start gives {len(hashes)}",
            )
        frontier = []
        for text in hashes:
            digest = _hex_hash(text)
            if digest is None:
                raise Disagreement(number, f"tree_start hash {text!r} is not 64 hex digits")
            frontier.append(digest)
        self.frontier = merkle.Frontier(size, frontier)
        return Header(number, first, last, verifier, origin, scope, rule_sets, tuple(frontier))

    def _snapshot(self, number: int, s: dict[str, Any]) -> Snapshot:
        header = self.header
        assert header is not None
        if self.body:
            raise Disagreement(number, "a snapshot after the body began: snapshots come first")
        stream, position, version, digest = (
            s.get(k) for k in ("stream", "position", "version", "hash")
        )
        if not isinstance(stream, str) or not stream.startswith(TABLE_PREFIX):
            raise Disagreement(number, f"a snapshot of {stream!r}, which is not a table's stream")
        if stream in self.snapshotted:
            raise Disagreement(number, f"a second snapshot of {stream}")
        if not (_is_int(position) and _is_int(version) and version >= 1):
            raise Disagreement(number, "the snapshot's position and version are not numbers")
        if not 1 <= position < header.first:
            raise Disagreement(
                number,
                f"the snapshot is at position {position}, which is not before the file's first "
                f"({header.first})",
            )
        if _hex_hash(digest) is None:
            raise Disagreement(number, "the snapshot's hash is not 64 hex digits")
        state_doc = s.get("state")
        if not isinstance(state_doc, dict):
            raise Disagreement(number, "the snapshot's state is not an object")
        document = codec.canonical(state_doc)
        try:
            state = snapshots.decode_state(document)
        except (RuleSetError, TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise Disagreement(number, f"the snapshot's state cannot be read: {exc!r}") from None
        if state is None:
            raise Disagreement(
                number,
                f"the snapshot's state is in format {state_doc.get('format')!r}, "
                f"not {snapshots.FORMAT}",
            )
        if state.version != version:
            raise Disagreement(
                number, f"the snapshot's state is at version {state.version}, not {version}"
            )
        self._rules(number, stream, state.rules, "the snapshot's")
        self.heads[stream] = (version, str(digest), number)
        self.tables[stream] = _Table(state)
        snapshot = Snapshot(number, stream, position, version, str(digest), state, document)
        self.snapshotted[stream] = snapshot
        return snapshot

    def _rules(self, number: int, stream: str, rules: RuleSet | None, whose: str) -> None:
        header = self.header
        assert header is not None
        if rules is None:
            raise Disagreement(number, f"{stream}: {whose} state has no rule set")
        listed = header.rule_sets.get(rules.name)
        if listed is None:
            raise Disagreement(
                number,
                f"{stream} plays under rule set {rules.name!r}, which the header does not list",
            )
        if listed != rules:
            raise Disagreement(
                number,
                f"{stream} plays under a rule set {rules.name!r} that is not the header's "
                f"{rules.name!r}",
            )

    # -- event lines -----------------------------------------------------------------------

    def _fast_event(self, number: int, cut: bytes, m: re.Match[bytes]) -> EventLine:
        (head, actor, digest, middle, key, leaf, body, payload, position, prev, tail, at,
         schema, stream, type_, version) = m.groups()  # fmt: skip
        try:
            row = Recorded(
                int(position),
                stream.decode(),
                int(version),
                type_.decode(),
                int(schema),
                payload.decode(),
                actor.decode(),
                None if key == b"null" else key[1:-1].decode(),
                at.decode(),
                prev.decode(),
                digest.decode(),
            )
        except UnicodeDecodeError:
            return self._slow_event(number, self._parse(number, cut + b"\n", cut))
        return self._event(number, row, head + middle + body + tail, leaf.decode())

    def _slow_event(self, number: int, e: dict[str, Any]) -> EventLine:
        if e.keys() != _EVENT_KEYS:
            missing = sorted(_EVENT_KEYS - e.keys())
            extra = sorted(e.keys() - _EVENT_KEYS)
            raise Disagreement(
                number,
                "the event line "
                + "; ".join(
                    filter(
                        None,
                        [
                            f"lacks {', '.join(missing)}" if missing else "",
                            f"has fields the format does not: {', '.join(extra)}" if extra else "",
                        ],
                    )
                ),
            )
        for name in ("position", "version", "schema_version"):
            if not _is_int(e[name]) or e[name] < 0:
                raise Disagreement(number, f"the event's {name} is not a whole number")
        for name in ("actor", "recorded_at", "stream", "type", "hash", "prev_hash", "leaf"):
            if not isinstance(e[name], str):
                raise Disagreement(number, f"the event's {name} is not text")
        if e["idempotency_key"] is not None and not isinstance(e["idempotency_key"], str):
            raise Disagreement(number, "the event's idempotency_key is not text or null")
        if not isinstance(e["payload"], dict):
            raise Disagreement(number, "the event's payload is not an object")
        document = codec.canonical({k: v for k, v in e.items() if k not in _NOT_HASHED})
        row = Recorded(
            e["position"],
            e["stream"],
            e["version"],
            e["type"],
            e["schema_version"],
            codec.canonical(e["payload"]).decode(),
            e["actor"],
            e["idempotency_key"],
            e["recorded_at"],
            e["prev_hash"],
            e["hash"],
        )
        return self._event(number, row, document, e["leaf"])

    def _event(self, number: int, row: Recorded, document: bytes, leaf_hex: str) -> EventLine:
        """Everything about one event line but its parsing: the hot path of a check."""
        position = row.position
        size = self.frontier.size
        if position != size + 1:
            raise self._out_of_place(number, position)
        if position > self.header.last:  # type: ignore[union-attr]
            raise Disagreement(
                number,
                f"position {position} is past the header's last ({self.header.last}): "  # type: ignore[union-attr]
                "a line was added",
            )
        leaf = sha256(b"\x00" + document).digest()
        if leaf.hex() != leaf_hex:
            raise Disagreement(
                number,
                "the event does not hash to its leaf (its content, or the leaf, was changed "
                "after export)",
            )
        stream = row.stream
        version = row.version
        head = self.heads.get(stream)
        if head is None:
            self._first_of(number, stream, version, row.prev_hash)
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
        if sha256(row.prev_hash.encode() + b"\n" + document).hexdigest() != row.hash:
            raise Disagreement(
                number,
                f"its hash is not the chain hash of its prev_hash and content ({stream} "
                f"version {version}): the event or its hash was changed",
            )
        self.heads[stream] = (version, row.hash, number)
        try:
            event = self.decode(position, row.type, row.schema_version, version, row.payload)
        except CorruptEvent as exc:
            raise Disagreement(number, f"the event cannot be read: {exc}") from None
        type_ = row.type
        if stream.startswith(TABLE_PREFIX):
            self._referee(number, stream, event)
            if type_ == "BetSettled":
                self.settlements += 1
        if type_ in _MOVES_MONEY:
            self._count_money(stream, event)
        types = self.types
        types[type_] = types.get(type_, 0) + 1
        self.events += 1
        self.frontier.append(leaf)
        return EventLine(number, row, leaf, event)

    def _first_of(self, number: int, stream: str, version: int, prev: str) -> None:
        """A stream's first event in the file."""
        if version == 1:
            if prev != GENESIS:
                raise Disagreement(
                    number,
                    f"{stream} begins here (version 1), but its prev_hash is not 64 zeros",
                )
            if stream.startswith(TABLE_PREFIX):
                self.tables[stream] = _Table(INITIAL)
            return
        if stream.startswith(TABLE_PREFIX):
            raise Disagreement(
                number,
                f"{stream} starts at version {version} with no snapshot of the table before "
                "it: its events cannot be replayed",
            )
        self.mid_chain.append(stream)

    def _referee(self, number: int, stream: str, event: ev.Event) -> None:
        table = self.tables[stream]
        table.recent.append((event.version, number))
        if isinstance(event, ev.TableOpened):
            self._rules(number, stream, event.rules, "its TableOpened's")
        if isinstance(event, ev.DiceDrawn):
            table.drawn[event.version] = number
        try:
            table.referee.check(event)
        except Differs as exc:
            raise Disagreement(
                self._line_of(table, exc.version, number), _at(stream, exc)
            ) from None
        if isinstance(event, ev.SeedRevealed):  # the turn's throws are drawn again
            table.drawn.clear()

    @staticmethod
    def _line_of(table: _Table, version: int, default: int) -> int:
        for v, line in table.recent:
            if v == version:
                return line
        return table.drawn.get(version, default)

    def _count_money(self, stream: str, event: Any) -> None:
        """Add what the event moves to `money`: per ledger account (accounts.transfers_of's
        names), what it staked into escrows, was paid out of them, deposited from cash
        and withdrew to it."""
        money = self.money
        if not stream.startswith(TABLE_PREFIX):
            for t in transfers_of(stream, event):
                if t.source == CASH:
                    _add(money, t.target, 0, t.amount)
                elif t.target == CASH:
                    _add(money, t.source, 3, t.amount)
            return
        # A table's transfers are transfers_of's, which maps each side of the engine's
        # holds through accounts.book_account: the non-escrow side, the one counted, is
        # a player or the setter, whose ledger name is looked up once.
        names = self.names
        for t in holds(event):
            source, target = t.source, t.target
            if target.startswith(LOCAL_ESCROW):
                if source.startswith(LOCAL_ESCROW):
                    continue
                local, index = source, 2
            elif source.startswith(LOCAL_ESCROW):
                local, index = target, 1
            else:  # party to party: a dispute's adjustment, counted on both sides
                for local, amount in ((source, -t.amount), (target, t.amount)):
                    account = names.get(local)
                    if account is None:
                        account = names[local] = book_account(stream, local)
                    _add(money, account, 4, amount)
                continue
            account = names.get(local)
            if account is None:
                account = names[local] = book_account(stream, local)
            _add(money, account, index, t.amount)

    def _out_of_place(self, number: int, position: Any) -> Disagreement:
        size = self.frontier.size
        if position == size:
            return Disagreement(number, f"position {position} again: a line was repeated (added)")
        if position > size + 1:
            gap = (
                f"position {size + 1} is missing"
                if position == size + 2
                else f"positions {size + 1}..{position - 1} are missing"
            )
            return _Gap(
                number,
                f"position {position} follows {size}: {gap} (a line was deleted?)",
                size + 1,
                position,
            )
        return Disagreement(
            number,
            f"position {position} follows {size}: lines out of order (moved, or added)",
        )

    # -- skips and checkpoints ----------------------------------------------------------------

    def _skip(self, number: int, s: dict[str, Any]) -> SkipLine:
        header = self.header
        assert header is not None
        start, end, hashes = s.get("from"), s.get("to"), s.get("hashes")
        if not (_is_int(start) and _is_int(end) and isinstance(hashes, list)):
            raise Disagreement(
                number, "the skip line's from, to and hashes are not what they must be"
            )
        if start != self.frontier.size + 1:
            raise self._out_of_place(number, start)
        if end < start or end > header.last:
            raise Disagreement(
                number, f"the skip line covers {start}..{end}, not a range within the file's"
            )
        subtrees = merkle.cover(start - 1, end)
        if len(hashes) != len(subtrees):
            raise Disagreement(
                number,
                f"positions {start}..{end} are {len(subtrees)} complete subtrees, the skip line "
                f"gives {len(hashes)} hashes",
            )
        digests = []
        for text, (level, _) in zip(hashes, subtrees, strict=True):
            made = _hex_hash(text)
            if made is None:
                raise Disagreement(number, f"skipped hash {text!r} is not 64 hex digits")
            digests.append(made)
            self.frontier.append_subtree(level, made)
        self.skipped += end - start + 1
        return SkipLine(number, start, end, tuple(digests))

    def _open(self, number: int, note: Any, what: str) -> Checkpoint:
        header = self.header
        assert header is not None
        if not isinstance(note, str):
            raise Disagreement(number, f"{what} has no note")
        try:
            checkpoint = open_checkpoint(note, [header.key])
        except NoteError as exc:
            raise Disagreement(
                number, f"{what} is not signed by the header's key {header.key.text()}: {exc}"
            ) from None
        if checkpoint.origin != header.origin:
            raise Disagreement(
                number,
                f"{what} is of the log {checkpoint.origin!r}, not the header's {header.origin!r}",
            )
        return checkpoint

    def _checkpoint(self, number: int, c: dict[str, Any]) -> CheckpointLine:
        size, issued_at = c.get("size"), c.get("issued_at")
        if not _is_int(size) or not isinstance(issued_at, str):
            raise Disagreement(
                number, "the checkpoint line's size and issued_at are not what they must be"
            )
        if size != self.frontier.size:
            gap = (
                f"position {size} is missing (a line was deleted?)"
                if size == self.frontier.size + 1
                else f"positions {self.frontier.size + 1}..{size} are missing (lines deleted?)"
                if size > self.frontier.size
                else "it must follow the event at its size"
            )
            raise Disagreement(
                number,
                f"a checkpoint of size {size} where the file is at position {self.frontier.size}: "
                f"{gap}",
            )
        if size == self.checkpoint_seen_at:
            raise Disagreement(number, f"a second checkpoint of size {size}")
        checkpoint = self._open(number, c.get("note"), f"the checkpoint of size {size}")
        if checkpoint.size != size:
            raise Disagreement(
                number, f"the checkpoint line says size {size}, its signed note {checkpoint.size}"
            )
        root = self.frontier.root()
        if checkpoint.root != root:
            raise Disagreement(
                number,
                f"the signed checkpoint of size {size} has root {checkpoint.root.hex()}, but the "
                f"events up to here give {root.hex()}: an event before it was changed or forged",
            )
        _issued_as_signed(number, checkpoint, issued_at, f"the checkpoint of size {size}")
        self.checkpoints += 1
        self.checkpoint_seen_at = size
        return CheckpointLine(number, size, root, issued_at, c["note"])

    # -- the closing record ------------------------------------------------------------

    def _scope_holds(self, number: int, header: Header) -> None:
        """The header's scope is what the file holds: what verify reports as checked."""
        scope, streams = header.scope, set(self.heads) | set(self.snapshotted)
        kind = scope["kind"]
        whole = f"the header says the file is {kind}, but it "
        if kind in ("all", "range") and self.skipped:
            raise Disagreement(number, whole + f"skips {self.skipped} positions")
        if kind == "all" and (header.first != 1 or self.snapshotted):
            raise Disagreement(number, whole + f"starts at position {header.first}")
        if kind == "table":
            own = TABLE_PREFIX + str(scope.get("table"))
            other = sorted(streams - {own})
            if other:
                raise Disagreement(
                    number, f"the header says the file is {own}'s, but it holds {other[0]}"
                )
        if kind == "player":
            account = account_stream(player_account(str(scope.get("player"))))
            other = sorted(s for s in streams if s != account and not s.startswith(TABLE_PREFIX))
            if other:
                raise Disagreement(
                    number,
                    f"the header says the file is {account}'s statement, but it holds {other[0]}",
                )

    def _closing(self, number: int, c: dict[str, Any]) -> Closing:
        header = self.header
        assert header is not None
        where = f"closing record (line {number})"
        if self.frontier.size != header.last:
            raise Disagreement(
                number,
                f"the {where} comes at position {self.frontier.size}, but the header says the "
                f"file covers up to {header.last}: positions {self.frontier.size + 1}.."
                f"{header.last} are missing (lines deleted at the end?)",
            )
        self._scope_holds(number, header)
        size, root_hex, cp = c.get("size"), c.get("root"), c.get("checkpoint")
        if size != header.last:
            raise Disagreement(
                number, f"the {where} is of size {size!r}, the header's last is {header.last}"
            )
        root = self.frontier.root()
        if root_hex != root.hex():
            raise Disagreement(
                number,
                f"the {where} gives root {root_hex}, but the lines build the tree with root "
                f"{root.hex()}: an event or a hash was changed",
            )
        if (
            not isinstance(cp, dict)
            or not _is_int(cp.get("size"))
            or not isinstance(cp.get("issued_at"), str)
        ):
            raise Disagreement(number, f"the {where} has no checkpoint of size and time")
        signed = self._open(number, cp.get("note"), f"the {where}'s checkpoint")
        _issued_as_signed(number, signed, cp["issued_at"], f"the {where}'s checkpoint")
        if signed.size != cp["size"] or signed.size < header.last:
            raise Disagreement(
                number,
                f"the {where}'s checkpoint is of size {signed.size} (its line says "
                f"{cp['size']}), which does not cover the file's {header.last} events",
            )
        proof_text = c.get("consistency")
        if not isinstance(proof_text, list):
            raise Disagreement(number, f"the {where} has no consistency proof")
        proof = []
        for text in proof_text:
            digest = _hex_hash(text)
            if digest is None:
                raise Disagreement(number, f"consistency proof hash {text!r} is not 64 hex digits")
            proof.append(digest)
        forged = (
            f"{where}: the tree of these events has root {root.hex()}, which the signed "
            f"checkpoint at size {signed.size} does not prove: an event or hash was forged"
        )
        if header.last == 0:
            if proof:
                raise Disagreement(number, f"{where}: an empty file needs no proof, it gives one")
        elif header.last == signed.size:
            if proof:
                raise Disagreement(
                    number, f"{where}: the checkpoint is of the same size, yet a proof is given"
                )
            if signed.root != root:
                raise Disagreement(number, forged)
        else:
            try:
                merkle.check_tree(proof, signed.size, signed.root, header.last, root)
            except merkle.MerkleError:
                raise Disagreement(number, forged) from None
        self._counts(number, where, c)
        for stream, table in self.tables.items():
            try:
                table.referee.finish()
            except Differs as exc:
                raise Disagreement(number, f"{where}: {_at(stream, exc)}") from None
        checkpoint = CheckpointLine(number, signed.size, signed.root, cp["issued_at"], cp["note"])
        return Closing(
            number,
            header.last,
            root,
            checkpoint,
            self.events,
            self.skipped,
            dict(self.types),
            self._money_view(),
        )

    def _counts(self, number: int, where: str, c: dict[str, Any]) -> None:
        if c.get("events") != self.events:
            raise Disagreement(
                number, f"the {where} counts {c.get('events')!r} events, the file has {self.events}"
            )
        if c.get("skipped") != self.skipped:
            raise Disagreement(
                number,
                f"the {where} counts {c.get('skipped')!r} skipped positions, the file's skip "
                f"lines cover {self.skipped}",
            )
        if c.get("types") != self.types:
            given = c.get("types")
            said: dict[str, Any] = given if isinstance(given, dict) else {}
            differ = sorted(
                t for t in set(said) | set(self.types) if said.get(t) != self.types.get(t)
            )
            raise Disagreement(
                number,
                f"the {where} counts events by type otherwise than the file has them: "
                + ", ".join(
                    f"{t} {said.get(t, 0)!r} where the file has {self.types.get(t, 0)}"
                    for t in differ
                ),
            )
        said_money = c.get("money")
        if not isinstance(said_money, dict):
            raise Disagreement(number, f"the {where} has no money totals")
        mine = self._money_view()
        theirs = {a: f for a, f in said_money.items() if not _all_zero(f)}
        if theirs != {a: f for a, f in mine.items() if not _all_zero(f)}:
            for account in sorted(set(theirs) | set(mine)):
                have = mine.get(account, figures_view([0] * len(FIGURES)))
                said = theirs.get(account, figures_view([0] * len(FIGURES)))
                if have != said:
                    figures = [
                        f"{k} {said.get(k) if isinstance(said, dict) else said!r}, the events "
                        f"give {have.get(k)}"
                        for k in FIGURES
                        if not isinstance(said, dict) or said.get(k) != have.get(k)
                    ]
                    raise Disagreement(
                        number,
                        f"the {where} says {account} has " + "; ".join(figures),
                    )

    def _money_view(self) -> dict[str, dict[str, int]]:
        return {a: figures_view(f) for a, f in sorted(self.money.items())}

    # -- the summary ----------------------------------------------------------------------

    def verified(self) -> Verified:
        header, closing = self.header, self.closing
        assert header is not None and closing is not None
        trusted = []
        if self.expected is None:
            trusted.append(
                f"the signing key is the one the file names ({header.key.text()}): "
                "check it against the key your club published (--key)"
            )
        if header.first > 1:
            trusted.append(
                f"the {header.first - 1} events before position {header.first} are not in "
                "the file: the header's tree_start stands for them (the signed root holds "
                "it to the log), but what they say was not checked"
            )
        if self.skipped:
            trusted.append(
                f"{self.skipped} positions outside the scope were skipped: their subtree "
                "hashes tie them to the signed log, but their events were not checked"
            )
        for stream, snap in self.snapshotted.items():
            trusted.append(
                f"{stream}'s state at version {snap.version} (position {snap.position}) is "
                "the snapshot's: its events before that were not replayed"
            )
        if self.mid_chain:
            shown = ", ".join(self.mid_chain[:5]) + (
                f" and {len(self.mid_chain) - 5} more" if len(self.mid_chain) > 5 else ""
            )
            trusted.append(
                f"{len(self.mid_chain)} stream(s) start before the file ({shown}): the "
                "prev_hash of each one's first event here is taken as given"
            )
        for stream, table in self.tables.items():
            unrevealed = table.referee.unrevealed
            if unrevealed:
                trusted.append(
                    f"{stream}: {len(unrevealed)} server throw(s) of the turn in play "
                    f"(versions {unrevealed[0]} to {unrevealed[-1]}) cannot be drawn again "
                    "until the turn ends and its seed is revealed: their dice are as the file "
                    "gives them"
                )
        for stream, table in self.tables.items():
            disputed = table.referee.trusted
            if disputed:
                trusted.append(
                    f"{stream}: {len(disputed)} dispute event(s) (versions "
                    f"{', '.join(map(str, disputed))}) concern a round the file does not hold "
                    "whole, so the referee could not read it back to judge them: they fold, "
                    "and their money is counted, as the file gives them, but they are not "
                    "verified"
                )
        tables = self.tables.values()
        money = {a: Money(*f) for a, f in sorted(self.money.items()) if any(f)}
        return Verified(
            scope=header.scope,
            first=header.first,
            last=header.last,
            events=self.events,
            skipped=self.skipped,
            tables=len(self.tables),
            rounds=sum(t.referee.rounds for t in tables),
            bets=sum(t.referee.bets for t in tables),
            settlements=self.settlements,
            checkpoints=self.checkpoints,
            checkpoint_size=closing.checkpoint.size,
            root=closing.root,
            key=header.key,
            key_given=self.expected is not None,
            money=money,
            trusted=trusted,
        )


def _add(money: dict[str, list[int]], account: str, index: int, amount: int) -> None:
    figures = money.get(account)
    if figures is None:
        figures = money[account] = [0, 0, 0, 0, 0]
    figures[index] += amount


def _swapped(gap: _Gap, following: bytes) -> Disagreement:
    """The gap, or lines out of order if the line after it holds the position missing."""
    found = _POSITION.search(following)
    if found is None or int(found.group(1)) != gap.missing:
        return gap
    return Disagreement(
        gap.line,
        f"position {gap.found} comes before {gap.missing}, which is on the next line: lines "
        "out of order (swapped?)",
    )


def _all_zero(figures: Any) -> bool:
    return isinstance(figures, dict) and not any(figures.values())


def _kind(kind: Any) -> str:
    return f"{kind} record" if isinstance(kind, str) else "line without a record kind"


def _at(stream: str, exc: Differs) -> str:
    return f"at table {stream.removeprefix(TABLE_PREFIX)} version {exc.version}, {exc.reason}"


def _issued_as_signed(number: int, checkpoint: Checkpoint, issued_at: str, what: str) -> None:
    """`issued_at` is not signed, but the note's `time` line is: the two must agree to
    the second, or a restore would keep a time the service never signed."""
    for line in checkpoint.extensions:
        if line.startswith("time ") and not (
            issued_at[:19] == line[5:24] and issued_at.endswith("Z")
        ):
            raise Disagreement(
                number, f"{what} says it was issued at {issued_at}, its signed note at {line[5:]}"
            )
