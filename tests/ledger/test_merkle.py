"""ledger.store.log.merkle against RFC 9162 itself.

The `rfc_*` functions below are written from the RFC's text alone (section 2.1: MTH,
PATH and SUBPROOF, and the verification algorithms of 2.1.3.2 and 2.1.4.2), with
hashlib and no project code, as Go's tlog checks itself against Certificate
Transparency. Every root, inclusion proof and consistency proof the module makes for
trees of 1..130 records is compared with them; larger trees are sampled. So is the
right edge (`merkle.Frontier`, `merkle.cover`) that every writer and every one-pass
verifier keeps of the tree: against the RFC's MTH of each complete subtree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.store.log import merkle

SMALL = 130  # every size and every index up to here
ALTERED = 64  # every proof altered up to here; beyond, a few indexes per size
LARGE = 3000  # sampled beyond


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# -- RFC 9162, section 2.1, from its text ----------------------------------------------

RECORDS = [f"record {i}".encode() for i in range(LARGE)]  # distinct, so no two leaves agree


def rfc_k(n: int) -> int:
    # "k be the largest power of two smaller than n (i.e., k < n <= 2k)"
    k = 1
    while 2 * k < n:
        k *= 2
    return k


@cache
def rfc_mth(lo: int, hi: int) -> bytes:
    # MTH(D[n]) over D[lo:hi] of RECORDS.
    n = hi - lo
    if n == 0:
        return sha256(b"")
    if n == 1:
        return sha256(b"\x00" + RECORDS[lo])
    k = rfc_k(n)
    return sha256(b"\x01" + rfc_mth(lo, lo + k) + rfc_mth(lo + k, hi))


def rfc_path(m: int, lo: int, hi: int) -> list[bytes]:
    # PATH(m, D[n]) over D[lo:hi], m counted from lo.
    n = hi - lo
    if n == 1:
        return []
    k = rfc_k(n)
    if m < k:
        return [*rfc_path(m, lo, lo + k), rfc_mth(lo + k, hi)]
    return [*rfc_path(m - k, lo + k, hi), rfc_mth(lo, lo + k)]


def rfc_subproof(m: int, lo: int, hi: int, b: bool) -> list[bytes]:
    # SUBPROOF(m, D[n], b) over D[lo:hi].
    n = hi - lo
    if m == n:
        return [] if b else [rfc_mth(lo, hi)]
    k = rfc_k(n)
    if m <= k:
        return [*rfc_subproof(m, lo, lo + k, b), rfc_mth(lo + k, hi)]
    return [*rfc_subproof(m - k, lo + k, hi, False), rfc_mth(lo, lo + k)]


def rfc_proof(m: int, n: int) -> list[bytes]:
    # PROOF(m, D[n]) = SUBPROOF(m, D[n], true)
    return rfc_subproof(m, 0, n, True)


def rfc_verify_inclusion(
    leaf_index: int, tree_size: int, leaf: bytes, path: Sequence[bytes], root: bytes
) -> bool:
    # Section 2.1.3.2, step by step.
    if leaf_index >= tree_size:
        return False
    fn, sn = leaf_index, tree_size - 1
    r = leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = sha256(b"\x01" + p + r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = sha256(b"\x01" + r + p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def rfc_verify_consistency(
    first: int, second: int, first_hash: bytes, second_hash: bytes, path: Sequence[bytes]
) -> bool:
    # Section 2.1.4.2 is for 0 < first < second; for first == second, PROOF is the
    # empty list (SUBPROOF with m == n and b true) and the two heads must agree.
    if first == second:
        return not path and first_hash == second_hash
    if not path:
        return False
    path = list(path)
    if first & (first - 1) == 0:
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = sha256(b"\x01" + c + fr)
            sr = sha256(b"\x01" + c + sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = sha256(b"\x01" + sr + c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0


# -- The module's tree, stored in a list -------------------------------------------------


class Log:
    """Stored hashes in a list, as a table would hold them, counting every read."""

    def __init__(self) -> None:
        self.size = 0
        self.hashes: list[bytes] = []
        self.reads: list[list[int]] = []

    def read(self, indexes: Sequence[int]) -> list[bytes]:
        self.reads.append(list(indexes))
        return [self.hashes[i] for i in indexes]

    def append(self, record: bytes) -> list[bytes]:
        new = merkle.stored_hashes(self.size, record, self.read)
        self.hashes.extend(new)
        self.size += 1
        return new


def build(count: int) -> Log:
    log = Log()
    for record in RECORDS[:count]:
        log.append(record)
    return log


LOG = build(LARGE)


def root(t: int) -> bytes:
    return merkle.tree_hash(t, LOG.read)


def flip(proof: Sequence[bytes], i: int, bit: int) -> list[bytes]:
    changed = bytearray(proof[i])
    changed[bit // 8] ^= 1 << (bit % 8)
    return [*proof[:i], bytes(changed), *proof[i + 1 :]]


def altered(proof: Sequence[bytes], salt: int) -> list[list[bytes]]:
    """A flipped bit in every element, each end cut off, a hash added at each end."""
    flipped = [flip(proof, i, (37 * i + salt) % 256) for i in range(len(proof))]
    cut = [list(proof[1:]), list(proof[:-1])] if proof else []
    extra = sha256(b"extra")
    return [*flipped, *cut, [*proof, extra], [extra, *proof]]


# -- Known answers ------------------------------------------------------------------------


def test_the_empty_tree_has_the_hash_of_nothing_as_its_root() -> None:
    empty = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    assert empty == merkle.EMPTY_ROOT
    assert merkle.tree_hash(0, Log().read) == empty


def test_leaf_and_node_hashes_carry_their_prefix_byte() -> None:
    assert merkle.leaf_hash(b"a") == sha256(b"\x00a")
    assert merkle.node_hash(b"L" * 32, b"R" * 32) == sha256(b"\x01" + b"L" * 32 + b"R" * 32)


def test_small_trees_worked_by_hand() -> None:
    log = Log()
    a, b, c, d, e = (sha256(b"\x00" + r) for r in (b"a", b"b", b"c", b"d", b"e"))
    for record in (b"a", b"b", b"c", b"d", b"e"):
        log.append(record)
    ab = sha256(b"\x01" + a + b)
    cd = sha256(b"\x01" + c + d)
    abcd = sha256(b"\x01" + ab + cd)
    assert merkle.tree_hash(1, log.read) == a
    assert merkle.tree_hash(2, log.read) == ab
    assert merkle.tree_hash(3, log.read) == sha256(b"\x01" + ab + c)
    assert merkle.tree_hash(4, log.read) == abcd
    assert merkle.tree_hash(5, log.read) == sha256(b"\x01" + abcd + e)
    # c in the tree of five: its sibling d, then ab, then e above the complete four.
    assert merkle.prove_record(5, 2, log.read) == [d, ab, e]
    # The tree of three inside the tree of five: c, d, ab, then e.
    assert merkle.prove_tree(5, 3, log.read) == [c, d, ab, e]
    # The stored hashes, in Crosby and Wallach's order.
    assert log.hashes == [a, b, ab, c, d, cd, abcd, e]


# -- Stored hashes ----------------------------------------------------------------------


def test_stored_hash_index_and_its_split_are_inverses() -> None:
    for index in range(5000):
        level, n = merkle.split_stored_hash_index(index)
        assert merkle.stored_hash_index(level, n) == index
    for level in range(12):
        for n in range(200):
            assert merkle.split_stored_hash_index(merkle.stored_hash_index(level, n)) == (level, n)


def test_stored_hash_count_counts_the_complete_subtrees() -> None:
    for n in range(600):
        complete = sum(n // 2**level for level in range(n.bit_length() + 1))
        assert merkle.stored_hash_count(n) == complete


def test_every_stored_hash_is_the_rfc_hash_of_its_subtree() -> None:
    for index, stored in enumerate(LOG.hashes):
        level, n = merkle.split_stored_hash_index(index)
        assert stored == rfc_mth(n << level, (n + 1) << level)
    assert len(LOG.hashes) == merkle.stored_hash_count(LARGE)


def test_an_append_reads_at_most_log2_n_hashes_in_one_call_and_stores_the_difference() -> None:
    log = Log()
    for n, record in enumerate(RECORDS[:2100]):
        log.reads.clear()
        new = log.append(record)
        assert len(new) == merkle.stored_hash_count(n + 1) - merkle.stored_hash_count(n)
        assert len(log.reads) <= 1
        read = sum(len(indexes) for indexes in log.reads)
        assert read <= (n.bit_length() if n else 0)  # floor(log2 n) + 1 for n >= 1
        assert all(
            index < merkle.stored_hash_count(n) for indexes in log.reads for index in indexes
        )
    # Record 2047 = 0b11111111111 completes eleven subtrees, up to the first 2048
    # records: the worst case, met.
    log = build(2047)
    log.reads.clear()
    new = log.append(RECORDS[2047])
    assert [len(indexes) for indexes in log.reads] == [11]
    assert log.reads[0] == sorted(log.reads[0])
    assert len(new) == 12
    assert new[-1] == rfc_mth(0, 2048)


# -- Roots and inclusion proofs -----------------------------------------------------------


def test_every_root_is_the_rfc_root() -> None:
    for t in range(SMALL + 1):
        assert root(t) == rfc_mth(0, t)


def test_every_inclusion_proof_is_the_rfc_path_and_checks_both_ways() -> None:
    for t in range(1, SMALL + 1):
        head = rfc_mth(0, t)
        for n in range(t):
            proof = merkle.prove_record(t, n, LOG.read)
            leaf = rfc_mth(n, n + 1)
            assert proof == rfc_path(n, 0, t)
            assert rfc_verify_inclusion(n, t, leaf, proof, head)
            merkle.check_record(rfc_path(n, 0, t), t, head, n, leaf)


def some(first: int, last: int) -> list[int]:
    """Every number in first..last for small trees; the ends and a few between for
    larger ones, so that the altered-proof tests stay fast."""
    if last < ALTERED:
        return list(range(first, last + 1))
    return sorted({first, first + 1, last // 3, last // 2, last - 1, last})


def test_altered_inclusion_proofs_are_refused() -> None:
    for t in range(1, SMALL + 1):
        head = rfc_mth(0, t)
        for n in some(0, t - 1):
            proof = rfc_path(n, 0, t)
            leaf = rfc_mth(n, n + 1)
            for bad in altered(proof, salt=t + n):
                assert not rfc_verify_inclusion(n, t, leaf, bad, head)
                with pytest.raises(merkle.ProofError):
                    merkle.check_record(bad, t, head, n, leaf)
            for other in {0, n - 1, n + 1, n ^ 1, t - 1} - {n}:
                if 0 <= other < t:
                    assert not rfc_verify_inclusion(other, t, leaf, proof, head)
                    with pytest.raises(merkle.ProofError):
                        merkle.check_record(proof, t, head, other, leaf)
            with pytest.raises(merkle.ProofError):
                merkle.check_record(proof, t, head, n, rfc_mth(n, n + 1)[::-1])
            for size in (t - 1, t + 1, 2 * t):
                if size <= n:
                    continue
                # Against the honest root of the other size: refused unless that
                # size happens to have the very same path (n's part of both trees
                # alike), which is then a true proof.
                honest = rfc_path(n, 0, size) == proof
                _expect(honest, merkle.check_record, proof, size, rfc_mth(0, size), n, leaf)
                # Against this root at the wrong size: whatever the RFC says.
                rfc = rfc_verify_inclusion(n, size, leaf, proof, head)
                _expect(rfc, merkle.check_record, proof, size, head, n, leaf)


def _expect(valid: bool, check: object, *args: object) -> None:
    assert callable(check)
    if valid:
        check(*args)
    else:
        with pytest.raises(merkle.ProofError):
            check(*args)


# -- Consistency proofs ------------------------------------------------------------------


def test_every_consistency_proof_is_the_rfc_proof_and_checks_both_ways() -> None:
    for t in range(1, SMALL + 1):
        head = rfc_mth(0, t)
        for n in range(1, t + 1):
            old = rfc_mth(0, n)
            proof = merkle.prove_tree(t, n, LOG.read)
            assert proof == rfc_proof(n, t)
            assert rfc_verify_consistency(n, t, old, head, proof)
            merkle.check_tree(rfc_proof(n, t), t, head, n, old)


def test_altered_consistency_proofs_are_refused() -> None:
    for t in range(1, SMALL + 1):
        head = rfc_mth(0, t)
        for n in some(1, t):
            old = rfc_mth(0, n)
            proof = rfc_proof(n, t)
            for bad in altered(proof, salt=t + n):
                assert not rfc_verify_consistency(n, t, old, head, bad)
                with pytest.raises(merkle.ProofError):
                    merkle.check_tree(bad, t, head, n, old)
            with pytest.raises(merkle.ProofError):
                merkle.check_tree(proof, t, head, n, old[::-1])
            with pytest.raises(merkle.ProofError):
                merkle.check_tree(proof, t, head[::-1], n, old)
            for size in (n - 1, n + 1):
                if 0 < size <= t:
                    honest = rfc_proof(size, t) == proof
                    _expect(honest, merkle.check_tree, proof, t, head, size, rfc_mth(0, size))
                    rfc = rfc_verify_consistency(size, t, old, head, proof)
                    _expect(rfc, merkle.check_tree, proof, t, head, size, old)
            for size in (t - 1, t + 1):
                if n <= size:
                    honest = rfc_proof(n, size) == proof
                    _expect(honest, merkle.check_tree, proof, size, rfc_mth(0, size), n, old)
                    rfc = rfc_verify_consistency(n, size, old, head, proof)
                    _expect(rfc, merkle.check_tree, proof, size, head, n, old)


# -- Larger trees, sampled -------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_larger_trees_agree_with_the_rfc(data: st.DataObject) -> None:
    t = data.draw(st.integers(SMALL + 1, LARGE), label="t")
    n = data.draw(st.integers(0, t - 1), label="n")
    m = data.draw(st.integers(1, t), label="m")
    head = root(t)
    assert head == rfc_mth(0, t)
    record_proof = merkle.prove_record(t, n, LOG.read)
    assert record_proof == rfc_path(n, 0, t)
    merkle.check_record(record_proof, t, head, n, merkle.leaf_hash(RECORDS[n]))
    tree_proof = merkle.prove_tree(t, m, LOG.read)
    assert tree_proof == rfc_proof(m, t)
    assert rfc_verify_consistency(m, t, root(m), head, tree_proof)
    merkle.check_tree(tree_proof, t, head, m, root(m))


def test_a_root_or_a_proof_is_one_read_of_a_few_hashes() -> None:
    t = LARGE
    for call in (
        lambda: merkle.tree_hash(t, LOG.read),
        lambda: merkle.prove_record(t, 1234, LOG.read),
        lambda: merkle.prove_tree(t, 1234, LOG.read),
    ):
        LOG.reads.clear()
        call()
        assert len(LOG.reads) == 1
        assert len(LOG.reads[0]) <= 2 * t.bit_length()
        assert LOG.reads[0] == sorted(LOG.reads[0])


# -- The right edge: Frontier and cover ------------------------------------------------


def rfc_frontier(n: int) -> list[bytes]:
    # The tree of n records is its complete subtrees, one per 1 bit of n, largest
    # first: MTH of each, from the RFC's definition.
    out, lo = [], 0
    for bit in reversed(range(n.bit_length())):
        if n >> bit & 1:
            out.append(rfc_mth(lo, lo + (1 << bit)))
            lo += 1 << bit
    return out


def fewest_aligned(lo: int, hi: int) -> int:
    # The fewest subtrees a tree stores (2**l records starting at a multiple of 2**l)
    # that tile records lo..hi-1, by trying at each record every one that starts there.
    fewest = {hi: 0}
    for at in reversed(range(lo, hi)):
        width, best = 1, hi - at
        while at + width <= hi and at % width == 0:
            best = min(best, 1 + fewest[at + width])
            width *= 2
        fewest[at] = best
    return fewest[lo]


def test_the_frontier_appended_leaf_by_leaf_is_the_rfc_tree() -> None:
    frontier = merkle.Frontier()
    assert frontier.root() == rfc_mth(0, 0)
    for n in range(LARGE):
        made = frontier.append(merkle.leaf_hash(RECORDS[n]))
        # What record n stores: its leaf, then the subtree it completes at each level.
        assert made == [rfc_mth(((n >> level) << level), n + 1) for level in range(len(made))]
        assert len(made) == merkle.stored_hash_count(n + 1) - merkle.stored_hash_count(n)
        assert frontier.size == n + 1
        assert frontier.hashes == rfc_frontier(n + 1)
        assert frontier.root() == rfc_mth(0, n + 1)


def test_the_frontier_is_read_from_its_stored_hashes() -> None:
    for n in range(LARGE):
        indexes = merkle.frontier_indexes(n)
        assert indexes == sorted(indexes)
        assert [LOG.hashes[i] for i in indexes] == rfc_frontier(n)


def test_a_copy_of_a_frontier_grows_alone() -> None:
    frontier = merkle.Frontier(5, rfc_frontier(5))
    copy = frontier.copy()
    copy.append(merkle.leaf_hash(RECORDS[5]))
    assert frontier == merkle.Frontier(5, rfc_frontier(5))
    assert copy == merkle.Frontier(6, rfc_frontier(6))


def _check_cover(start: int, end: int) -> None:
    subtrees = merkle.cover(start, end)
    at = start
    for level, number in subtrees:
        assert number << level == at  # starts where the last ended, and is stored
        at += 1 << level
    assert at == end
    assert len(subtrees) == fewest_aligned(start, end)
    frontier = merkle.Frontier(start, rfc_frontier(start))
    for level, number in subtrees:
        frontier.append_subtree(level, rfc_mth(number << level, (number + 1) << level))
    assert frontier.size == end
    assert frontier.hashes == rfc_frontier(end)
    assert frontier.root() == rfc_mth(0, end)


def test_the_cover_of_every_range_is_the_fewest_stored_subtrees_and_builds_the_rfc_tree() -> None:
    for start in range(SMALL):
        for end in range(start, SMALL + 1):
            _check_cover(start, end)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_larger_covers_build_the_rfc_tree(data: st.DataObject) -> None:
    start = data.draw(st.integers(0, LARGE), label="start")
    end = data.draw(st.integers(start, LARGE), label="end")
    _check_cover(start, end)


def test_a_subtree_the_tree_does_not_store_there_is_a_bad_index() -> None:
    h = sha256(b"h")
    for size, level in [(1, 1), (2, 2), (6, 2), (12, 3), (3, -1)]:
        frontier = merkle.Frontier(size, rfc_frontier(size))
        with pytest.raises(merkle.BadIndex):
            frontier.append_subtree(level, h)
    for start, end in [(-1, 3), (5, 4)]:
        with pytest.raises(merkle.BadIndex):
            merkle.cover(start, end)
    with pytest.raises(merkle.BadIndex):
        merkle.frontier_indexes(-1)


def test_a_frontier_short_of_a_left_half_is_a_bad_index() -> None:
    h = sha256(b"h")
    with pytest.raises(merkle.BadIndex, match="no left half at level 1"):
        merkle.Frontier(3, [h]).append(h)
    with pytest.raises(merkle.BadIndex):
        merkle.Frontier(4, []).append_subtree(2, h)


# -- Bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (merkle.prove_record, (0, 0)),
        (merkle.prove_record, (5, 5)),
        (merkle.prove_record, (5, -1)),
        (merkle.prove_tree, (5, 0)),
        (merkle.prove_tree, (5, 6)),
        (merkle.tree_hash, (-1,)),
        (merkle.stored_hashes, (-1, b"x")),
    ],
)
def test_sizes_and_indexes_outside_the_tree_are_bad_indexes(
    call: object, args: tuple[int, ...]
) -> None:
    assert callable(call)
    with pytest.raises(merkle.BadIndex):
        call(*args, LOG.read)


def test_checks_outside_the_tree_are_bad_indexes() -> None:
    h = sha256(b"h")
    with pytest.raises(merkle.BadIndex):
        merkle.check_record([], 0, h, 0, h)
    with pytest.raises(merkle.BadIndex):
        merkle.check_record([], 3, h, 3, h)
    with pytest.raises(merkle.BadIndex):
        merkle.check_tree([], 3, h, 0, h)
    with pytest.raises(merkle.BadIndex):
        merkle.check_tree([], 3, h, 4, h)
    for call in (
        lambda: merkle.stored_hash_index(-1, 0),
        lambda: merkle.stored_hash_index(0, -1),
        lambda: merkle.split_stored_hash_index(-1),
        lambda: merkle.stored_hash_count(-1),
    ):
        with pytest.raises(merkle.BadIndex):
            call()


def test_a_reader_that_answers_wrongly_is_a_bad_read() -> None:
    for reader in (
        lambda indexes: LOG.read(indexes)[:-1],
        lambda indexes: [*LOG.read(indexes), sha256(b"")],
        lambda indexes: [h.hex() for h in LOG.read(indexes)],
        lambda indexes: [h[:31] for h in LOG.read(indexes)],
    ):
        with pytest.raises(merkle.BadRead):
            merkle.tree_hash(100, reader)
        with pytest.raises(merkle.BadRead):
            merkle.stored_hashes(99, b"x", reader)


def test_a_proof_element_that_is_not_a_hash_is_refused() -> None:
    # A proof read from JSON may hold text or a cut hash: a ProofError, not a TypeError.
    record_proof = merkle.prove_record(100, 7, LOG.read)
    tree_proof = merkle.prove_tree(100, 7, LOG.read)
    leaf = merkle.leaf_hash(RECORDS[7])
    for damage in (bytes.hex, lambda h: h[:31], lambda h: h + b"\x00"):
        bad = [damage(record_proof[0]), *record_proof[1:]]
        with pytest.raises(merkle.ProofError):
            merkle.check_record(bad, 100, root(100), 7, leaf)
        bad = [damage(tree_proof[0]), *tree_proof[1:]]
        with pytest.raises(merkle.ProofError):
            merkle.check_tree(bad, 100, root(100), 7, root(7))


def test_every_error_is_a_merkle_error() -> None:
    for error in (merkle.BadIndex, merkle.BadRead, merkle.ProofError):
        assert issubclass(error, merkle.MerkleError)
