"""The heads of the log: where every stream and every account's postings stand, as one
Merkle tree whose root each write's seal commits inside the log.

A partial export (a table's, a player's) must prove that it holds every event of its
scope, and the log itself can prove that only for what it commits to. So the log keeps
one *head* per stream (its version and the chain hash of its newest event) and one per
account (how many events have posted to it, and the *account chain* over their hashes,
across every stream), and every write ends with a seal (ledger.store.log.sealing) whose
payload is the root of the tree of all of them. The seal is an event like any other: a
leaf of the log's tree, under the checkpoint the write signs, so what witnesses cosign
covers it. An export then carries, for each stream and account in its scope, the
inclusion proof of its head in a seal's tree; the reader holds the file's events to it.

The tree is RFC 9162's (ledger.store.log.merkle's leaf and node hashes) over the heads
in the order each first appeared in the log, so that a head is added by appending a
leaf and moved by rewriting one: O(log n) hashing either way. A head's leaf is the hash
of its canonical JSON array:

    ["stream", "table:t1", 57, "<64 hex: the chain hash of version 57>"]
    ["account", "player:ann", 12, "<64 hex: ann's account chain after 12 events>"]

An account's chain starts at 64 zeros; each event that posts to it (an event whose
transfers, in ledger accounts, have it as a source or a target; counted once however
many of its transfers do) steps it to hex(SHA-256(chain ‖ 0x0A ‖ event hash)), both in
ASCII hex; an account's head appears at its `AccountOpened`, at 0 and 64 zeros, if
nothing has posted to it before. Escrows have no head: no statement is ever of one.
The seals' own stream, `log`, has none either (a seal cannot commit to itself); the
checkpoints number it.

This module is the arithmetic, with no database: the store keeps a `Heads` in memory
(ledger.store.log.sealing), and the verifiers build their own from the events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _quote  # what the canonical encoder uses
from typing import Any

from ledger.store.log import merkle

_sha256 = hashlib.sha256

GENESIS = "0" * 64
"""An account chain before its first event (as a stream's chain before its first)."""
STREAM, ACCOUNT = "stream", "account"
SEALS = "log"
"""The seals' stream: not a head of the tree (the checkpoints number it)."""
ESCROW_PREFIX = "escrow:"
ACCOUNT_STREAM = "account:"
"""An account's own stream is `account:<account>` (ledger.books.accounts)."""
OPENED = "AccountOpened"
"""The event that gives a player's account its head, before anything posts to it."""


@dataclass(frozen=True, slots=True)
class Head:
    kind: str
    """STREAM or ACCOUNT."""
    name: str
    count: int
    """A stream's version; how many events have posted to an account."""
    hash: str
    """A stream's chain hash at that version; an account's chain after that many."""

    def leaf(self) -> bytes:
        return leaf_hash(self.kind, self.name, self.count, self.hash)

    def view(self) -> list[Any]:
        return [self.kind, self.name, self.count, self.hash]


def leaf_hash(kind: str, name: str, count: int, digest: str) -> bytes:
    """SHA-256(0x00 ‖ the head's canonical JSON array). Written out: json.dumps with its
    separators builds an encoder a call, which cost a write's seal more than its hashes
    (bench.appendcpu --seals); a test holds the two equal."""
    text = f"[{_quote(kind)},{_quote(name)},{int.__repr__(count)},{_quote(digest)}]"
    return _sha256(b"\x00" + text.encode()).digest()


def account_step(chain: str, event_hash: str) -> str:
    """An account chain after one more event that posts to the account."""
    return _sha256(f"{chain}\n{event_hash}".encode()).hexdigest()


def chained(account: str) -> bool:
    """Whether an account has a head: every account but a bet's escrow."""
    return not account.startswith(ESCROW_PREFIX)


class Heads:
    """The heads tree, kept whole in memory: each level of the RFC 9162 tree built
    bottom up (a lone last node is carried up a level unchanged, which gives the same
    root as RFC 9162's split at the largest power of two). Heads moved since the root
    was last asked for are rehashed together when it is, each node above them once:
    a write moves a few heads, a verifier folding a whole log thousands between seals.

    `size` is the log size the heads stand at: the position of the last event they
    include (seals are not heads, so a seal's position too)."""

    def __init__(self, size: int = 0) -> None:
        self.size = size
        self.seals = 0
        """How many seals the log holds at `size`: the last one's version."""
        self.seal_hash = GENESIS
        """The last seal's chain hash (the `log` stream's), which the next one follows."""
        self.heads: list[Head] = []
        self.index: dict[tuple[str, str], int] = {}
        self._levels: list[list[bytes]] = [[]]
        self._dirty: set[int] = set()

    def __len__(self) -> int:
        return len(self.heads)

    def get(self, kind: str, name: str) -> Head | None:
        i = self.index.get((kind, name))
        return None if i is None else self.heads[i]

    def set(self, head: Head) -> int:
        """Add `head`, or move the one of its kind and name to it; its index."""
        key = (head.kind, head.name)
        i = self.index.get(key)
        leaf = head.leaf()
        if i is None:
            i = self.index[key] = len(self.heads)
            self.heads.append(head)
            self._levels[0].append(leaf)
        else:
            self.heads[i] = head
            self._levels[0][i] = leaf
        self._dirty.add(i)
        return i

    def _rehash(self) -> None:
        dirty, levels = self._dirty, self._levels
        level = 0
        while len(levels[level]) > 1:
            below = levels[level]
            if level + 1 == len(levels):
                levels.append([])
            above = levels[level + 1]
            width = (len(below) + 1) // 2
            if len(above) < width:
                above.extend([b""] * (width - len(above)))
            # A node whose children moved, and the last node (a lone child carried up
            # changes when a sibling is added beside it).
            parents = {i // 2 for i in dirty}
            parents.add(width - 1)
            node = merkle.node_hash
            for j in parents:
                left = 2 * j
                above[j] = (
                    node(below[left], below[left + 1]) if left + 1 < len(below) else below[left]
                )
            dirty, level = parents, level + 1
        del levels[level + 1 :]
        self._dirty = set()

    def root(self) -> bytes:
        if not self.heads:
            return hashlib.sha256(b"").digest()
        if self._dirty:
            self._rehash()
        return self._levels[-1][0]

    def prove(self, i: int) -> list[bytes]:
        """The RFC 9162 inclusion proof of head `i` in the tree of every head, leaf
        side first (merkle.check_record checks it)."""
        if self._dirty:
            self._rehash()
        path: list[bytes] = []
        for below in self._levels[:-1]:
            sibling = i ^ 1
            if sibling < len(below):
                path.append(below[sibling])
            i //= 2
        return path

    def step_stream(self, stream: str, version: int, digest: str) -> None:
        self.set(Head(STREAM, stream, version, digest))

    def step_account(self, account: str, event_hash: str) -> None:
        head = self.get(ACCOUNT, account)
        count, chain = (0, GENESIS) if head is None else (head.count, head.hash)
        self.set(Head(ACCOUNT, account, count + 1, account_step(chain, event_hash)))


def changes(rows: Iterable[Any], accounts_of: Any) -> Iterator[tuple[int, str, str, int, str]]:
    """What each event moves in the heads, in the order they move: (position, kind,
    name, count, hash) of its stream's head, then (for an account opened) the account's
    own at 0, then of each account it posts to, in name order (count -1: a step).
    `accounts_of(row)` names the accounts an event's transfers touch (ledger accounts);
    seals move nothing."""
    for row in rows:
        if row.stream == SEALS:
            continue
        yield row.position, STREAM, row.stream, row.version, row.hash
        if row.type == OPENED:
            yield row.position, ACCOUNT, row.stream.removeprefix(ACCOUNT_STREAM), 0, GENESIS
        accounts = accounts_of(row)
        if accounts:  # most events post to no account: no set to build and sort
            for account in sorted({a for a in accounts if chained(a)}):
                yield row.position, ACCOUNT, account, -1, row.hash


def move(heads: Heads, kind: str, name: str, count: int, digest: str) -> bool:
    """Move `heads` by one of `changes`; whether a head moved."""
    if kind == STREAM:
        heads.step_stream(name, count, digest)
    elif count == 0:  # an account opened: its head, if nothing has posted to it yet
        if heads.get(ACCOUNT, name) is not None:
            return False
        heads.set(Head(ACCOUNT, name, 0, GENESIS))
    else:
        heads.step_account(name, digest)
    return True


def apply(heads: Heads, rows: Sequence[Any], accounts_of: Any) -> list[Head]:
    """Move `heads` by the events `rows` (in position order), returning each head that
    moved as it ends, in the order each was first moved (the rows the store keeps of
    them). Each head is set once: a write of a hundred deposits hashes its stream's
    leaf once, not a hundred times (the chains still step once per event)."""
    # (count, hash) of each head as it moves, made a Head once at the end: a verifier
    # folding a whole log steps a player's chain thousands of times between two seals.
    ended: dict[tuple[str, str], tuple[int, str]] = {}
    for _position, kind, name, count, digest in changes(rows, accounts_of):
        key = (kind, name)
        if kind == STREAM:
            ended[key] = (count, digest)
            continue
        current = ended.get(key)
        if current is None:
            head = heads.get(kind, name)
            if head is not None:
                current = (head.count, head.hash)
        if count == 0:  # an account opened: its head, if nothing has posted to it yet
            if current is None:
                ended[key] = (0, GENESIS)
            continue
        before, chain = (0, GENESIS) if current is None else current
        ended[key] = (before + 1, account_step(chain, digest))
    moved = [Head(kind, name, count, digest) for (kind, name), (count, digest) in ended.items()]
    for head in moved:
        heads.set(head)
    if rows:
        heads.size = max(heads.size, max(r.position for r in rows))
    return moved


class Pending:
    """Events read but not yet folded into a `Heads`: kept until the next seal (or the
    end), then folded by `apply`, each head set once however many of them moved it. A
    check that folds a whole log (hazard verify, the offline check of a backup) would
    otherwise hash a head's leaf at every event."""

    def __init__(self) -> None:
        self.rows: list[_Posting] = []

    def add(
        self, position: int, stream: str, version: int, type_: str, digest: str, accounts: Any
    ) -> None:
        self.rows.append(_Posting(position, stream, version, type_, digest, accounts))

    def fold(self, heads: Heads) -> None:
        if self.rows:
            apply(heads, self.rows, _posted)
            self.rows = []


@dataclass(slots=True)
class _Posting:
    """What `changes` reads of an event, with the accounts it posts to. Not frozen: a
    frozen dataclass is built at a sixth of the speed, and a check builds one an event."""

    position: int
    stream: str
    version: int
    type: str
    hash: str
    accounts: Any


def _posted(row: _Posting) -> Any:
    return row.accounts
