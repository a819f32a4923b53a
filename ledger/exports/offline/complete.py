"""What an export proves whole (docs/export-format.md, "Seals: what makes a part of
the log provably whole"): that it leaves nothing of its scope out.

- A whole log (`all`): every seal commits the heads its events make, and every seal's
  checkpoint line follows it, so no event and no checkpoint is missing.
- A time range (`range`): its cuts are proven by the `edge` events either side, and
  every event inside is recorded inside the range.
- A table's or a player's file: its closing's head proofs tie each stream in it, and the
  player's account, to a seal's heads tree; the file's events must run from the start
  seal's heads to the end seal's, every one of them.

A file in format 1 proves nothing of this; its verdict says so.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from engine.money import ESCROW as LOCAL_ESCROW
from engine.money import holds
from ledger.books.accounts import (
    TABLE_PREFIX,
    account_stream,
    book_account,
    player_account,
    transfers_of,
)
from ledger.exports.offline.fields import is_int
from ledger.exports.offline.money import MOVES_MONEY
from ledger.exports.verdict import Disagreement, Header
from ledger.store.eventstore import GENESIS, Recorded
from ledger.store.log import heads as hd
from ledger.store.log import merkle
from ledger.store.log.heads import Heads

_NO_ACCOUNTS: frozenset[str] = frozenset()

FIRST_FORMAT = 1
"""The format before seals: it proves nothing about completeness."""

FOLD_AHEAD = 16_384
"""Events a whole log's check keeps for the next seal before it folds them into its
heads ahead of it: a log with no seal yet (one from before seals, not written to since)
would have every event kept to the end, about 43 MB for bench.seed's 10^5 and ten
times that at 10^6. The heads are the same either way (heads.apply a batch at a time
is apply at once)."""


@dataclass
class _Seal:
    line: int
    position: int
    version: int
    root: str
    heads: int
    recorded_at: str


@dataclass
class _Stream:
    first: tuple[int, str]
    """(version, prev_hash) of its first event in the file."""
    last: tuple[int, str]
    """(version, hash) of its last."""


@dataclass
class Completeness:
    header: Header
    format_version: int
    streams: dict[str, _Stream] = field(default_factory=dict)
    seals: dict[int, _Seal] = field(default_factory=dict)
    account: str | None = None
    """A player's file: the player's ledger account, whose chain the file is held to."""
    posted: list[str] = field(default_factory=list)
    """A player's file: the hash of each event that posts to the account, in order."""
    heads: Heads | None = None
    """A whole log's: the heads folded over every event, to hold each seal to."""
    awaiting: _Seal | None = None
    """A seal whose checkpoint line must come next (a whole log's or a range's)."""
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    """A range's: (line, position, recorded_at) of each edge."""
    proven: list[str] = field(default_factory=list)
    """What the closing proved whole, in words, for the verdict."""
    names: dict[tuple[str, str], str] = field(default_factory=dict)
    """Each table's local account names, as ledger accounts (accounts.book_account)."""
    pending: hd.Pending = field(default_factory=hd.Pending)
    """A whole log's events since the last seal, folded into `heads` at the next."""
    windowed: bool = False
    """A table's or a player's file, whose closing holds `streams` to its head proofs:
    no other file's check keeps them."""
    ranged: bool = False
    """Whether each event is held to a since or an until (`_in_range`): a whole log's
    has neither, and its check asks at every line."""

    @classmethod
    def of(cls, header: Header, format_version: int) -> Completeness:
        check = cls(header, format_version)
        scope = header.scope
        if scope["kind"] == "player":
            check.account = player_account(str(scope.get("player")))
        if scope["kind"] == "all" and format_version > FIRST_FORMAT:
            check.heads = Heads()
        check.windowed = scope["kind"] in ("table", "player")
        check.ranged = format_version > FIRST_FORMAT and (
            scope.get("since") is not None or scope.get("until") is not None
        )
        return check

    @property
    def contiguous(self) -> bool:
        return self.header.scope["kind"] in ("all", "range")

    # -- line by line ----------------------------------------------------------------

    def event(self, number: int, row: Recorded, event: Any, posted: Any = None) -> None:
        """The event on line `number`; `posted`, a table's event's accounts as the
        money's tally found them (Tally.count), else None: they are found here."""
        if self.awaiting is not None:
            self._seal_checkpointed(number)
        stream = row.stream
        if self.ranged:
            self._in_range(number, row)
        if stream == hd.SEALS:
            seal = _Seal(
                number, row.position, row.version, event.root, event.heads, row.recorded_at
            )
            self.seals[row.position] = seal
            if self.heads is not None:
                self._hold_seal(seal)
            if self.contiguous and self.format_version > FIRST_FORMAT:
                self.awaiting = seal
            return
        if self.windowed:
            known = self.streams.get(stream)
            if known is None:
                self.streams[stream] = _Stream(
                    (row.version, row.prev_hash), (row.version, row.hash)
                )
            else:
                known.last = (row.version, row.hash)
        accounts: AbstractSet[str] | list[str] = _NO_ACCOUNTS
        if row.type in MOVES_MONEY and (self.heads is not None or self.account is not None):
            accounts = self._posts_to(stream, event) if posted is None else posted
        if self.account is not None and self.account in accounts:
            self.posted.append(row.hash)
        if self.heads is not None:
            pending = self.pending
            pending.add(row.position, stream, row.version, row.type, row.hash, accounts)
            if len(pending.rows) >= FOLD_AHEAD:
                self._fold_ahead()

    def _fold_ahead(self) -> None:
        """The events kept for the next seal folded into the heads now."""
        assert self.heads is not None
        self.pending.fold(self.heads)

    def _posts_to(self, stream: str, event: Any) -> set[str]:
        """The accounts but escrows an event posts to (transfers_of's, without building
        its transfers: a whole log's check asks it of every bet), each table's local
        names looked up once."""
        if not stream.startswith(TABLE_PREFIX):
            return {a for t in transfers_of(stream, event) for a in (t.source, t.target)}
        names = self.names
        out = set()
        for t in holds(event):
            for local in (t.source, t.target):
                if local.startswith(LOCAL_ESCROW):
                    continue
                account = names.get((stream, local))
                if account is None:
                    account = names[(stream, local)] = book_account(stream, local)
                out.add(account)
        return out

    def edge(self, number: int, row: Recorded) -> None:
        """An event just outside a range, proving its cut."""
        self._seal_checkpointed(number)
        if self.header.scope["kind"] != "range" or self.format_version == FIRST_FORMAT:
            raise Disagreement(number, "an edge line: only a range's file (format 2) has them")
        self.edges.append((number, row.position, row.recorded_at))

    def checkpoint(self, number: int, size: int) -> None:
        if self.awaiting is not None and self.awaiting.position == size:
            self.awaiting = None
        else:
            self._seal_checkpointed(number)

    def _seal_checkpointed(self, number: int) -> None:
        """The seal read last has its checkpoint line right after it."""
        seal = self.awaiting
        if seal is None:
            return
        raise Disagreement(
            seal.line,
            f"checkpoint {seal.version} (size {seal.position}) is missing: the seal at "
            f"position {seal.position} numbers it, and its checkpoint line must follow it "
            f"(line {number} does not): a checkpoint line was removed",
        )

    def _hold_seal(self, seal: _Seal) -> None:
        heads = self.heads
        assert heads is not None
        self.pending.fold(heads)
        if seal.version != heads.seals + 1:
            raise Disagreement(
                seal.line, f"seal {seal.version} follows seal {heads.seals}: seals go up by one"
            )
        root = heads.root().hex()
        if seal.root != root or seal.heads != len(heads):
            raise Disagreement(
                seal.line,
                f"the seal at position {seal.position} commits {seal.heads} heads with root "
                f"{seal.root}, but the events before it make {len(heads)} heads with root "
                f"{root}: the seal, or an event before it, was rewritten",
            )
        heads.seals += 1

    def _in_range(self, number: int, row: Recorded) -> None:
        """An event of a file with a time range is recorded inside it (the seals that
        prove a table's or a player's cuts aside: they are checked at the closing)."""
        scope = self.header.scope
        since, until = scope.get("since"), scope.get("until")
        if row.stream == hd.SEALS and scope["kind"] in ("table", "player"):
            return
        at = row.recorded_at
        if (since is not None and at < since) or (until is not None and at >= until):
            raise Disagreement(
                number,
                f"position {row.position} was recorded at {at}, outside the file's time range "
                f"(since {since or 'the start'}, until {until or 'the end'})",
            )

    # -- at the closing ------------------------------------------------------------------

    def close(self, number: int, c: dict[str, Any], checkpoint_size: int, issued_at: str) -> None:
        """Hold the file to what its format proves whole; `proven` says what that is."""
        self._seal_checkpointed(number)
        if self.format_version == FIRST_FORMAT:
            if "heads" in c:
                raise Disagreement(number, "a format 1 file has no head proofs")
            return
        kind = self.header.scope["kind"]
        at = self._checkpoint(checkpoint_size, issued_at)
        if kind == "all":
            self._all(number, checkpoint_size, at)
        elif kind == "range":
            self._range(number, checkpoint_size, at)
        else:
            self._windowed(number, c.get("heads"), checkpoint_size, at)

    def _checkpoint(self, size: int, issued_at: str) -> str:
        """The closing's checkpoint, in words: its number, when its seal is in the file."""
        seal = self.seals.get(size)
        if seal is None:
            return f"the checkpoint of size {size} (issued {issued_at})"
        return f"checkpoint {seal.version} (size {size}, issued {issued_at})"

    def _all(self, number: int, checkpoint_size: int, at: str) -> None:
        # A whole log holds every seal up to its checkpoint, that checkpoint's own (at
        # its size) too: one cut short at an older seal, tied to a later checkpoint by
        # the consistency proof, would be dated by the later one.
        if self.header.last != checkpoint_size:
            raise Disagreement(
                number,
                f"the whole log runs to position {self.header.last}, but its closing "
                f"checkpoint is of size {checkpoint_size}: positions "
                f"{self.header.last + 1}..{checkpoint_size}, and their seals, are not in "
                "the file (cut short?)",
            )
        seals = len(self.seals)
        if not seals:
            self.proven.append(
                f"every position 1..{self.header.last}, up to {at} (the log has no seals "
                "yet: that no checkpoint line is missing is not proven)"
            )
            return
        first = min(self.seals.values(), key=lambda s: s.position)
        self.proven.append(
            f"every position 1..{self.header.last} and all {seals} seals, each with its "
            f"checkpoint (from checkpoint 1 at position {first.position}), up to {at}"
        )

    def _range(self, number: int, checkpoint_size: int, at: str) -> None:
        header, scope = self.header, self.header.scope
        since, until = scope.get("since"), scope.get("until")
        # A file of one position may be an empty range's one edge, which is the one
        # before it if recorded before since, else the one after it.
        leading = [
            e
            for e in self.edges[:1]
            if e[1] == header.first
            and not (header.first == header.last and since is not None and e[2] >= since)
        ]
        trailing = [e for e in self.edges if e[1] == header.last and e not in leading]
        if len(self.edges) != len(leading) + len(trailing):
            line = next(e[0] for e in self.edges if e not in leading and e not in trailing)
            raise Disagreement(line, "an edge inside the range: edges are its first and last")
        # A range with no since starts at position 1 and one with no until runs to the
        # closing checkpoint: neither has an edge there (an event written as one would
        # drop out of the range's counts), and neither may stop short of it.
        if leading:
            line, position, when = leading[0]
            if since is None:
                raise Disagreement(
                    line,
                    f"an edge at position {position}, but the range has no since: it starts at "
                    "position 1, and every event of it is in it (an edge is not counted)",
                )
            if when >= since:
                raise Disagreement(
                    line,
                    f"the edge at position {position} was recorded at {when}, not before "
                    f"since ({since}): it does not prove where the range begins",
                )
        elif header.first != 1:
            raise Disagreement(
                number,
                f"the range starts at position {header.first} with no edge before it: "
                + (
                    "nothing proves that no event before it is recorded after since"
                    if since is not None
                    else "a range with no since starts at position 1 (cut short?)"
                ),
            )
        if trailing:
            line, position, when = trailing[0]
            if until is None:
                raise Disagreement(
                    line,
                    f"an edge at position {position}, but the range has no until: it runs to "
                    "the closing checkpoint, and every event of it is in it (an edge is not "
                    "counted)",
                )
            if when < until:
                raise Disagreement(
                    line,
                    f"the edge at position {position} was recorded at {when}, before until "
                    f"({until}): it does not prove where the range ends",
                )
        elif header.last != checkpoint_size:
            raise Disagreement(
                number,
                f"the range ends at position {header.last} with no edge after it and the "
                f"log goes on to {checkpoint_size}: "
                + (
                    "nothing proves that no event after it is recorded before until"
                    if until is not None
                    else "a range with no until runs to its checkpoint (cut short?)"
                ),
            )
        self.proven.append(
            f"every event recorded in the range, its cuts proven by the events either side, "
            f"up to {at}"
        )

    def _windowed(self, number: int, given: Any, checkpoint_size: int, at: str) -> None:
        if given is None:
            # A log with no seal at its head has its table's and player's files written in
            # format 1; one in format 2 without proofs had them taken out.
            raise Disagreement(
                number,
                "the closing has no head proofs: a table's or a player's file in format 2 "
                "proves its heads (were they stripped?)",
            )
        if not isinstance(given, dict) or not isinstance(given.get("end"), dict):
            raise Disagreement(number, "the closing's heads has no end seal")
        scope = self.header.scope
        named = {"end": given["end"].get("position")}
        end = self._proofs(number, "end", given["end"])
        start = self._proofs(number, "start", given["start"]) if "start" in given else {}
        if "start" in given:
            named["start"] = given["start"].get("position")
        end_seal = self.seals[named["end"]]
        # The end seal: the log's head, or the last seal before `until`, proven so by
        # the one after it.
        until, since = scope.get("until"), scope.get("since")
        following = given.get("next")
        if following is not None:
            after = self.seals.get(following) if is_int(following) else None
            if after is None or after.version != end_seal.version + 1:
                raise Disagreement(
                    number, f"the closing's next seal ({following!r}) is not the seal after its end"
                )
            if until is None or after.recorded_at < until:
                raise Disagreement(
                    after.line,
                    f"the seal after the end seal was recorded at {after.recorded_at}, before "
                    f"until ({until}): the end seal is not the last one in the range",
                )
            named["next"] = following
        elif end_seal.position != checkpoint_size:
            raise Disagreement(
                number,
                f"the end seal (position {end_seal.position}) is not the log's head "
                f"({checkpoint_size}) and no seal after it shows the range ends there",
            )
        if until is not None and end_seal.recorded_at >= until:
            raise Disagreement(
                end_seal.line, f"the end seal was recorded at or after until ({until})"
            )
        if "start" in named:
            start_seal = self.seals[named["start"]]
            if since is None or start_seal.recorded_at >= since:
                raise Disagreement(
                    start_seal.line,
                    f"the start seal was recorded at {start_seal.recorded_at}, not before "
                    f"since ({since})",
                )
        elif since is not None:
            # No start seal: the log's first seal, recorded at or after since, shows that
            # none was recorded before it (else a start could be left out unseen).
            first = given.get("first")
            seal = self.seals.get(first) if is_int(first) else None
            if seal is None or seal.version != 1 or seal.recorded_at < since:
                raise Disagreement(
                    number,
                    "the closing names no start seal, nor the log's first seal recorded at or "
                    f"after since ({since}) to show there is none: where the file starts is "
                    "not proven",
                )
            named["first"] = first
        stray = sorted(set(self.seals) - {p for p in named.values() if is_int(p)})
        if stray:
            raise Disagreement(
                self.seals[stray[0]].line,
                f"the seal at position {stray[0]} is in a {scope['kind']}'s file but not one "
                "its closing names",
            )
        # With since but no seal before it (the log was sealed only later), where the
        # file's streams start is taken on trust, as their snapshots are.
        start_known = "start" in named or since is None
        self._whole(number, scope, start, end, at, start_known)

    def _proofs(
        self, number: int, which: str, given: dict[str, Any]
    ) -> dict[tuple[str, str], hd.Head]:
        """A seal's head proofs, each checked against the seal's root: the heads, by
        (kind, name)."""
        position = given.get("position")
        seal = self.seals.get(position) if is_int(position) else None
        if seal is None:
            raise Disagreement(
                number, f"the closing's {which} seal ({position!r}) is not a seal in the file"
            )
        proofs = given.get("proofs")
        if not isinstance(proofs, list):
            raise Disagreement(number, f"the {which} seal's proofs are not a list")
        root = bytes.fromhex(seal.root)
        found: dict[tuple[str, str], hd.Head] = {}
        for proof in proofs:
            head = _head(number, which, proof)
            index, path = proof.get("index"), proof.get("path")
            try:
                hashes = [bytes.fromhex(h) for h in path]
                if not is_int(index) or any(len(h) != merkle.HASH_SIZE for h in hashes):
                    raise ValueError
                merkle.check_record(hashes, seal.heads, root, index, head.leaf())
            except (merkle.MerkleError, ValueError, TypeError):
                raise Disagreement(
                    number,
                    f"the proof of {head.kind} {head.name} at the {which} seal (position "
                    f"{seal.position}) does not lead to its root: the head is not the one "
                    "the seal commits",
                ) from None
            found[(head.kind, head.name)] = head
        return found

    def _whole(
        self,
        number: int,
        scope: dict[str, Any],
        start: dict[tuple[str, str], hd.Head],
        end: dict[tuple[str, str], hd.Head],
        at: str,
        start_known: bool,
    ) -> None:
        required = {(hd.STREAM, s) for s in self.streams}
        if scope["kind"] == "table":
            required.add((hd.STREAM, TABLE_PREFIX + str(scope.get("table"))))
        else:
            assert self.account is not None
            required |= {(hd.ACCOUNT, self.account), (hd.STREAM, account_stream(self.account))}
        missing = sorted(required - set(end))
        if missing:
            kind, name = missing[0]
            raise Disagreement(
                number, f"the closing proves no head of {kind} {name} at the end seal"
            )
        whole = []
        for kind, name in sorted(required):
            head = end[(kind, name)]
            before = start.get((kind, name))
            count, digest = (before.count, before.hash) if before else (0, GENESIS)
            if not start_known:
                self._stream_end(number, name, head) if kind == hd.STREAM else None
                continue
            if kind == hd.STREAM:
                self._stream_whole(number, name, count, digest, head)
                whole.append(f"{name} (versions {count + 1}..{head.count})")
            else:
                self._account_whole(number, name, count, digest, head)
                whole.append(f"account {name} ({head.count - count} events posting to it)")
        if not start_known:
            self.proven.append(
                f"each stream's end, up to {at}; not where they start: no seal was "
                "recorded before since, so the file's start is taken on trust"
            )
            return
        self.proven.append(", ".join(whole) + f", up to {at}")

    def _stream_end(self, number: int, name: str, head: hd.Head) -> None:
        held = self.streams.get(name)
        if held is not None and held.last != (head.count, head.hash):
            raise Disagreement(
                number,
                f"{name} stands at version {head.count} at the end seal, but the file's last "
                f"event of it is version {held.last[0]}",
            )

    def _stream_whole(self, number: int, name: str, count: int, digest: str, head: hd.Head) -> None:
        held = self.streams.get(name)
        if held is None:
            if (head.count, head.hash) != (count, digest):
                raise Disagreement(
                    number,
                    f"{name} stands at version {head.count} at the end seal, {count} at the "
                    f"start, but the file holds none of its events: versions "
                    f"{count + 1}..{head.count} were left out",
                )
            return
        if held.first != (count + 1, digest):
            raise Disagreement(
                number,
                f"{name} stands at version {count} at the start seal, but the file's first "
                f"event of it is version {held.first[0]}"
                + (
                    f": versions {count + 1}..{held.first[0] - 1} were left out"
                    if held.first[0] > count + 1
                    else ", or does not follow the start's hash"
                ),
            )
        if held.last != (head.count, head.hash):
            raise Disagreement(
                number,
                f"{name} stands at version {head.count} at the end seal, but the file's last "
                f"event of it is version {held.last[0]}"
                + (
                    f": versions {held.last[0] + 1}..{head.count} were left out"
                    if head.count > held.last[0]
                    else ", another history than the seal's"
                ),
            )

    def _account_whole(
        self, number: int, name: str, count: int, digest: str, head: hd.Head
    ) -> None:
        chain = digest
        for event_hash in self.posted:
            chain = hd.account_step(chain, event_hash)
        if count + len(self.posted) != head.count or chain != head.hash:
            raise Disagreement(
                number,
                f"{name}'s postings in the file do not make its chain at the end seal: the "
                f"file holds {len(self.posted)} events posting to it, the seals say "
                f"{head.count - count}"
                + (
                    f": {head.count - count - len(self.posted)} were left out"
                    if head.count - count > len(self.posted)
                    else ""
                ),
            )


def _head(number: int, which: str, proof: Any) -> hd.Head:
    given = proof.get("head") if isinstance(proof, dict) else None
    if (
        not isinstance(given, list)
        or len(given) != 4
        or given[0] not in (hd.STREAM, hd.ACCOUNT)
        or not isinstance(given[1], str)
        or not is_int(given[2])
        or given[2] < 0
        or not isinstance(given[3], str)
        or len(given[3]) != 64
    ):
        raise Disagreement(number, f"a head proof at the {which} seal has no head of the format")
    return hd.Head(given[0], given[1], given[2], given[3])
