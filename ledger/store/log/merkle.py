"""The Merkle tree of RFC 9162 (section 2.1) over the log's records, and its proofs.

Pure arithmetic, standard library only: the store decides where hashes live. Every
hash the tree will ever need is a *stored hash*: the hash of a complete subtree of
2**level records, numbered in Crosby and Wallach's order ("Efficient Data Structures
for Tamper-Evident Logging", section 3.3), so that appending a record writes its
hashes at the end of one sequence. A tree of n records keeps 2n - popcount(n) of
them, just under two a record; an append reads at most log2(n) of them, a root or a
proof a few dozen, each through one call of a `HashReader` so that a database can
answer in one query.

The tree's right edge, its `Frontier` (the root of each complete subtree, at most 64
hashes), is all a writer or a one-pass verifier keeps: appending to it gives the
hashes a record stores, and it gives the root without a read. Every writer (the
store, a restore) and every verifier (the log's check, an export, the offline check)
goes through it, and through `cover` for the subtrees that stand for records skipped.

Modelled on Go's golang.org/x/mod/sumdb/tlog (tlog.go), whose proofs are those of
Certificate Transparency. Records are numbered from 0; "the tree of size t" is the
tree over records 0..t-1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence

Hash = bytes
"""A SHA-256 digest, 32 bytes."""

HASH_SIZE = 32

_sha256 = hashlib.sha256

HashReader = Callable[[Sequence[int]], Sequence[Hash]]
"""Returns the stored hashes at the given indexes, in the order asked for. Indexes
come in increasing order, which lets a table answer with one range-friendly query."""

EMPTY_ROOT: Hash = hashlib.sha256(b"").digest()
"""MTH({}) = SHA-256() (RFC 9162, 2.1.1): the root of the tree of no records."""


class MerkleError(Exception):
    """Any failure of the tree's arithmetic, its storage or its proofs."""


class BadIndex(MerkleError):
    """A size, record number or stored-hash index outside what the tree holds."""


class BadRead(MerkleError):
    """The HashReader answered with the wrong number of hashes, or not with hashes."""


class ProofError(MerkleError):
    """A proof that does not prove what it was checked against."""


def leaf_hash(record: bytes) -> Hash:
    # SHA-256(0x00 || record), RFC 9162 section 2.1.1. The prefix keeps a leaf from
    # ever being mistaken for an interior node (a second-preimage guard).
    return _sha256(b"\x00" + record).digest()


def node_hash(left: Hash, right: Hash) -> Hash:
    # SHA-256(0x01 || left || right), RFC 9162 section 2.1.1.
    return _sha256(b"\x01" + left + right).digest()


# -- Stored hashes ----------------------------------------------------------------
#
# Hash (level, n) covers records n*2**level .. (n+1)*2**level - 1. It is complete,
# and so stored, when its last record r = (n+1)*2**level - 1 is appended; record r
# stores its own leaf hash (level 0) followed by one hash for every subtree it
# completes (levels 1, 2, ...: as many as r has trailing 1 bits).


def stored_hash_count(n: int) -> int:
    """How many stored hashes a tree of n records holds."""
    if n < 0:
        raise BadIndex(f"a tree cannot have {n} records")
    # Every complete subtree is stored once: at level l there are floor(n / 2**l),
    # and sum over l of floor(n / 2**l) = 2n - popcount(n).
    return 2 * n - n.bit_count()


def stored_hash_index(level: int, n: int) -> int:
    """Where hash (level, n) sits in the sequence of stored hashes."""
    if level < 0 or n < 0:
        raise BadIndex(f"no stored hash at level {level}, number {n}")
    # After every hash stored by the records before r, the level-th stored by r.
    last_record = ((n + 1) << level) - 1
    return stored_hash_count(last_record) + level


def split_stored_hash_index(index: int) -> tuple[int, int]:
    """(level, n) such that stored_hash_index(level, n) == index."""
    if index < 0:
        raise BadIndex(f"no stored hash at index {index}")
    # Find the record r that stored it: stored_hash_count(r) <= index <
    # stored_hash_count(r + 1). Since 2r - log2(r) - 1 <= stored_hash_count(r) <= 2r,
    # r lies in [index // 2, index // 2 + log2(index)]: a short walk.
    record = index // 2
    first = stored_hash_count(record)
    while True:
        after = first + 1 + trailing_ones(record)
        if after > index:
            break
        record, first = record + 1, after
    level = index - first
    return level, record >> level


def stored_hashes(n: int, record: bytes, read_hashes: HashReader) -> list[Hash]:
    """The hashes to store, from index stored_hash_index(0, n) on, when record n is
    appended to a tree of n records."""
    return stored_hashes_for_leaf(n, leaf_hash(record), read_hashes)


def stored_hashes_for_leaf(n: int, leaf: Hash, read_hashes: HashReader) -> list[Hash]:
    """As stored_hashes, given the record's leaf hash rather than the record."""
    if n < 0:
        raise BadIndex(f"no record number {n}")
    # Each trailing 1 bit of n closes a subtree: at level l, record n completes
    # (l + 1, n >> (l + 1)) from its left half (l, (n >> l) - 1), already stored,
    # and the right half just computed. Read those halves in one call, lowest
    # index (highest level) first.
    completed = trailing_ones(n)
    if completed == 0:
        return [leaf]
    indexes = [stored_hash_index(level, (n >> level) - 1) for level in range(completed)]
    left_halves = _read(read_hashes, indexes[::-1])[::-1]
    hashes = [leaf]
    for left in left_halves:
        hashes.append(node_hash(left, hashes[-1]))
    return hashes


# -- Roots and proofs ---------------------------------------------------------------
#
# RFC 9162 splits a range of records [lo, hi) at k, the largest power of two below
# hi - lo: the left part [lo, lo + k) is always a complete subtree, one stored hash;
# the right part [lo + k, hi) is a complete subtree unless hi is the tree's end.
# A proof is a list of such ranges' hashes; `_range_hashes` reads all their stored
# hashes in one call.


def tree_hash(n: int, read_hashes: HashReader) -> Hash:
    """MTH(D[0:n]), the root of the tree of the first n records (RFC 9162, 2.1.1)."""
    if n < 0:
        raise BadIndex(f"a tree cannot have {n} records")
    if n == 0:
        return EMPTY_ROOT
    return _range_hashes([(0, n)], read_hashes)[0]


def prove_record(t: int, n: int, read_hashes: HashReader) -> list[Hash]:
    """PATH(n, D[0:t]) (RFC 9162, 2.1.3.1): the inclusion proof of record n in the tree
    of size t, the sibling nearest the leaf first."""
    _check_record_inputs(t, n)
    return _range_hashes(_record_siblings(t, n), read_hashes)


def check_record(proof: Sequence[Hash], t: int, root: Hash, n: int, leaf: Hash) -> None:
    """Raise ProofError unless `proof` shows that the tree of size t whose root is
    `root` has `leaf` (a leaf_hash) as record n."""
    _check_record_inputs(t, n)
    siblings = _record_siblings(t, n)
    _check_shape(proof, len(siblings))
    # Walk back up from the leaf: a sibling range that starts before n is on the
    # left of the path, one that starts after it on the right.
    computed = leaf
    for (lo, _), sibling in zip(siblings, proof, strict=True):
        computed = node_hash(sibling, computed) if lo < n else node_hash(computed, sibling)
    if computed != root:
        raise ProofError(f"the proof does not lead from record {n} to the root of size {t}")


def prove_tree(t: int, n: int, read_hashes: HashReader) -> list[Hash]:
    """PROOF(n, D[0:t]) (RFC 9162, 2.1.4.1): the consistency proof that the tree of
    size n is a prefix of the tree of size t. Empty when n == t."""
    _check_tree_inputs(t, n)
    common, siblings = _tree_ranges(t, n)
    return _range_hashes(common + siblings, read_hashes)


def check_tree(proof: Sequence[Hash], t: int, root_t: Hash, n: int, root_n: Hash) -> None:
    """Raise ProofError unless `proof` shows that the tree of size n with root `root_n`
    is a prefix of the tree of size t with root `root_t`."""
    _check_tree_inputs(t, n)
    common, siblings = _tree_ranges(t, n)
    _check_shape(proof, len(common) + len(siblings))
    # Rebuild both roots along the path from the common subtree up. The old tree
    # ends at n, so it takes only the siblings on the left (wholly before n); the
    # new tree takes every sibling.
    if common:
        old = new = proof[0]
    else:
        old = new = root_n  # the common subtree is the whole old tree
    for (lo, _), sibling in zip(siblings, proof[len(common) :], strict=True):
        if lo < n:
            old, new = node_hash(sibling, old), node_hash(sibling, new)
        else:
            new = node_hash(new, sibling)
    if old != root_n or new != root_t:
        raise ProofError(f"the proof does not show the tree of size {n} inside that of {t}")


# -- The right edge --------------------------------------------------------------------
#
# The tree of n records is its complete subtrees side by side, one for each 1 bit of n,
# largest first (n = 13 = 8 + 4 + 1: records 0..7, 8..11 and 12). Their roots are the
# tree's *frontier*: at most 64 hashes, and all it takes to go on appending and to
# give the root, without reading anything else. Appending record n adds a subtree of
# one record, which merges with the smallest subtree while the two are of a size:
# once for each trailing 1 bit of n, the hashes record n stores.


class Frontier:
    """The right edge of the tree of `size` records: the roots of its complete
    subtrees, largest first. What a writer keeps between appends, and what a verifier
    keeps of the tree on one pass over the records (an export, the log's check).

    The hashes are taken on trust to be that tree's (a caller that reads them from
    outside checks there are `size.bit_count()` of them); `append` refuses a frontier
    found short of a left half."""

    __slots__ = ("hashes", "size")

    def __init__(self, size: int = 0, hashes: Iterable[Hash] = ()) -> None:
        self.size = size
        self.hashes = list(hashes)
        """One per 1 bit of `size`, the largest subtree first."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frontier):
            return NotImplemented
        return self.size == other.size and self.hashes == other.hashes

    def __repr__(self) -> str:
        return f"Frontier({self.size}, {[h.hex() for h in self.hashes]})"

    def copy(self) -> Frontier:
        return Frontier(self.size, self.hashes)

    def append(self, leaf: Hash) -> list[Hash]:
        """Append record `size`, whose leaf hash is `leaf`. Returns the hashes it
        stores, from stored_hash_index(0, size) on: `leaf`, then the root of each
        subtree it completes, a level up each (as `stored_hashes_for_leaf`)."""
        hashes = self.hashes
        made = [leaf]
        n = self.size
        try:
            while n & 1:  # a 1 bit: the subtree to the left is of this one's size
                # SHA-256(0x01 || left || right), RFC 9162 section 2.1.1
                leaf = _sha256(b"\x01" + hashes.pop() + leaf).digest()
                made.append(leaf)
                n >>= 1
        except IndexError:
            raise BadIndex(
                f"the frontier of {self.size} records has no left half at level {len(made) - 1}"
            ) from None
        hashes.append(leaf)
        self.size += 1
        return made

    def append_subtree(self, level: int, root: Hash) -> None:
        """Append the complete subtree of the 2**level records from record `size` on,
        whose root is `root` (a stored hash, or the hash an export gives for records
        it skips). It must be one the tree stores: `size` a multiple of 2**level."""
        n = self.size
        if level < 0 or n & ((1 << level) - 1):
            raise BadIndex(f"no complete subtree of 2**{level} records starts at record {n}")
        hashes = self.hashes
        n >>= level
        try:
            while n & 1:  # as `append`, a level up: SHA-256(0x01 || left || right)
                root = _sha256(b"\x01" + hashes.pop() + root).digest()
                n >>= 1
        except IndexError:
            raise BadIndex(f"the frontier of {self.size} records is short of a subtree") from None
        hashes.append(root)
        self.size += 1 << level

    def root(self) -> Hash:
        """MTH(D[0:size]) (RFC 9162, 2.1.1)."""
        return _fold(self.hashes)


def frontier_indexes(size: int) -> list[int]:
    """The stored-hash indexes of the frontier of the tree of `size` records, largest
    subtree first (which is increasing order)."""
    if size < 0:
        raise BadIndex(f"a tree cannot have {size} records")
    return [
        stored_hash_index(level, (size >> level) - 1)
        for level in reversed(range(size.bit_length()))
        if size >> level & 1
    ]


def cover(start: int, end: int) -> list[tuple[int, int]]:
    """The complete subtrees, as (level, number), that take the tree of `start` records
    to the tree of `end`, in order: the fewest stored hashes that stand for records
    start..end-1 (an export's skip line gives their hashes)."""
    if not 0 <= start <= end:
        raise BadIndex(f"no subtrees take a tree of {start} records to one of {end}")
    subtrees = []
    while start < end:
        # Each the largest that starts here (2**level divides start, the lowest 1 bit
        # of start) and fits (2**level <= end - start).
        level = (end - start).bit_length() - 1
        if start:
            level = min(level, (start & -start).bit_length() - 1)
        subtrees.append((level, start >> level))
        start += 1 << level
    return subtrees


# -- The shapes of proofs ------------------------------------------------------------

Range = tuple[int, int]


def _record_siblings(t: int, n: int) -> list[Range]:
    # PATH(m, D[n]) = PATH(m, D[0:k]) : MTH(D[k:n]) for m < k, else
    # PATH(m - k, D[k:n]) : MTH(D[0:k]) (RFC 9162, 2.1.3.1): walk down to the leaf
    # noting the range not taken; the proof lists them from the leaf up.
    siblings: list[Range] = []
    lo, hi = 0, t
    while hi - lo > 1:
        mid = lo + _split(hi - lo)
        if n < mid:
            siblings.append((mid, hi))
            hi = mid
        else:
            siblings.append((lo, mid))
            lo = mid
    siblings.reverse()
    return siblings


def _tree_ranges(t: int, n: int) -> tuple[list[Range], list[Range]]:
    # SUBPROOF(m, D[n], b) (RFC 9162, 2.1.4.1): walk down while the old tree's end m
    # falls strictly inside the range, noting the range not taken, until a range ends
    # exactly at m. That range is common to both trees; the proof starts with its hash
    # unless it is the whole old tree (b = true), whose root the verifier holds.
    siblings: list[Range] = []
    lo, hi = 0, t
    while hi != n:
        mid = lo + _split(hi - lo)
        if n <= mid:
            siblings.append((mid, hi))
            hi = mid
        else:
            siblings.append((lo, mid))
            lo = mid
    siblings.reverse()
    common = [(lo, hi)] if lo > 0 else []
    return common, siblings


def _range_hashes(ranges: Sequence[Range], read_hashes: HashReader) -> list[Hash]:
    """MTH of each range [lo, hi), from one read of the stored hashes they need."""
    pieces = [_complete_subtrees(lo, hi) for lo, hi in ranges]
    wanted = sorted({index for piece in pieces for index in piece})
    if not wanted:
        return []
    found = dict(zip(wanted, _read(read_hashes, wanted), strict=True))
    # Most ranges are one complete subtree, a stored hash as it stands.
    return [
        found[piece[0]] if len(piece) == 1 else _fold([found[index] for index in piece])
        for piece in pieces
    ]


def _fold(subtrees: Sequence[Hash]) -> Hash:
    # MTH of complete subtrees side by side, largest first (the binary digits of their
    # width), folded from the right: the RFC's split puts every complete left part
    # above the rest, so for subtrees S0, S1, ..., Sk
    #   MTH = SHA-256(0x01 || S0 || SHA-256(0x01 || S1 || ... Sk))
    if not subtrees:
        return EMPTY_ROOT
    root = subtrees[-1]
    for i in range(len(subtrees) - 2, -1, -1):
        root = node_hash(subtrees[i], root)
    return root


def _complete_subtrees(lo: int, hi: int) -> list[int]:
    # [lo, hi) as complete subtrees, largest first: the binary digits of hi - lo.
    # Each is aligned, so it is a stored hash: a range in a proof starts at a
    # multiple of its largest piece, and each piece is smaller than the one before.
    indexes = []
    while lo < hi:
        size = 1 << ((hi - lo).bit_length() - 1)
        level = size.bit_length() - 1
        indexes.append(stored_hash_index(level, lo >> level))
        lo += size
    return indexes


def _split(width: int) -> int:
    # k, the largest power of two smaller than width (width >= 2; RFC 9162, 2.1.1).
    return 1 << ((width - 1).bit_length() - 1)


def trailing_ones(n: int) -> int:
    """How many subtrees record n completes: the 1 bits at the end of n."""
    return ((n + 1) & -(n + 1)).bit_length() - 1


def _read(read_hashes: HashReader, indexes: list[int]) -> list[Hash]:
    hashes = list(read_hashes(indexes))
    if len(hashes) != len(indexes):
        raise BadRead(f"asked for {len(indexes)} stored hashes, got {len(hashes)}")
    for index, value in zip(indexes, hashes, strict=True):
        if not isinstance(value, bytes) or len(value) != HASH_SIZE:
            raise BadRead(f"stored hash {index} is not a {HASH_SIZE}-byte hash")
    return hashes


def _check_record_inputs(t: int, n: int) -> None:
    if not 0 <= n < t:
        raise BadIndex(f"record {n} is not in a tree of size {t}")


def _check_tree_inputs(t: int, n: int) -> None:
    # RFC 9162 defines consistency for 0 < n <= t: the empty tree is a prefix of every
    # tree, so there is nothing to prove from it.
    if not 0 < n <= t:
        raise BadIndex(f"no consistency proof from a tree of size {n} to one of size {t}")


def _check_shape(proof: Sequence[Hash], length: int) -> None:
    # The shape of a proof follows from the sizes alone: an element too many or too
    # few, or one that is not a hash, is a different proof, not a damaged one.
    if len(proof) != length:
        raise ProofError(f"the proof has {len(proof)} hashes, not {length}")
    for element in proof:
        if not isinstance(element, bytes) or len(element) != HASH_SIZE:
            raise ProofError(f"a proof element is not a {HASH_SIZE}-byte hash")
