"""How fast ledger.store.log.merkle appends and proves, in memory (no database).

Run from the repository root:

    .venv/bin/python -m bench.merkle                    # a million leaves
    .venv/bin/python -m bench.merkle --leaves 100000 --proofs 500

Appends `--leaves` records through `stored_hashes`, keeping the stored hashes in a
list (the cost a table adds is not here), and reports leaves a second. At 10**4 and
at the full size it times inclusion and consistency proofs (make, then check) for
`--proofs` random indexes and reports p50 and p99 in microseconds. Speed is reported,
never asserted. Standard library only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

from ledger.store.log import merkle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, default=1_000_000)
    parser.add_argument("--proofs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1757)
    args = parser.parse_args()

    hashes: list[bytes] = []

    def read(indexes: Sequence[int]) -> list[bytes]:
        return [hashes[i] for i in indexes]

    sizes = sorted({min(10_000, args.leaves), args.leaves})
    rng = random.Random(args.seed)
    start = time.perf_counter()
    for n in range(args.leaves):
        hashes.extend(merkle.stored_hashes(n, b"record %d" % n, read))
    elapsed = time.perf_counter() - start
    print(f"append   {args.leaves:>9,} leaves  {args.leaves / elapsed:>12,.0f} leaves/s")
    print(f"stored   {len(hashes):>9,} hashes  ({len(hashes) / args.leaves:.3f} a leaf)")

    for t in sizes:
        root = merkle.tree_hash(t, read)
        record_times, tree_times = [], []
        for _ in range(args.proofs):
            n = rng.randrange(t)
            began = time.perf_counter()
            proof = merkle.prove_record(t, n, read)
            merkle.check_record(proof, t, root, n, merkle.leaf_hash(b"record %d" % n))
            record_times.append(time.perf_counter() - began)
            m = rng.randrange(1, t + 1)
            old = merkle.tree_hash(m, read)  # the client's own checkpoint: not timed
            began = time.perf_counter()
            proof = merkle.prove_tree(t, m, read)
            merkle.check_tree(proof, t, root, m, old)
            tree_times.append(time.perf_counter() - began)
        for name, times in (("inclusion", record_times), ("consistency", tree_times)):
            p50, p99 = _percentiles(times)
            print(f"{name:<11} at {t:>9,}  p50 {p50:8.1f} µs  p99 {p99:8.1f} µs")


def _percentiles(times: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(times, n=100)
    return cuts[49] * 1e6, cuts[98] * 1e6


if __name__ == "__main__":
    main()
