"""Are server dice fair? A chi-square test over a million throws of `engine.serverdice`.

Run from the repository root (scipy is in the `bench` extra):

    .venv/bin/python -m bench.dice                       # 1,000,000 throws (about 10 s)
    .venv/bin/python -m bench.dice --throws 5000000 --seed 7
    .venv/bin/python -m bench.dice --json > dice.json

Throws are drawn as the ledger draws them: turns of 1 to 40 throws, each turn with a
fresh 32-byte server seed, each throw with a fresh client seed (1 to 64 printable ASCII
characters) and the turn's next nonce. (The seeds come from a seeded generator, so that
a run can be repeated; HMAC-SHA256's output does not depend on where its key came from.)

It reports the chi-square statistic of the 36 ordered outcomes (die 1, die 2) against
1/36 each (35 degrees of freedom), of the totals 2 to 12 against the exact 2d6
distribution (10 degrees of freedom) and of each die's faces against 1/6 (5 each),
with their p-values (scipy.stats.chi2.sf), and how many throws a second `draw` makes.
A p-value is a statistic, not a verdict: a fair draw gives a p-value below 0.01 in one
run of a hundred. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from collections.abc import Sequence
from typing import Any

from scipy.stats import chi2

from engine.dice import WAYS
from engine.serverdice import draw

PRINTABLE = string.printable[:95]  # space to tilde: what a client seed may hold
CHUNK = 20_000


def inputs(rng: random.Random, count: int) -> list[tuple[bytes, str, int]]:
    """`count` throws' inputs: (server seed, client seed, nonce), turn by turn."""
    out: list[tuple[bytes, str, int]] = []
    while len(out) < count:
        seed = rng.randbytes(32)
        for nonce in range(min(rng.randint(1, 40), count - len(out))):
            client = "".join(rng.choices(PRINTABLE, k=rng.randint(1, 64)))
            out.append((seed, client, nonce))
    return out


def chi_square(observed: Sequence[int], expected: Sequence[float]) -> float:
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))


def run(throws: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    pairs = [0] * 36
    drawing = 0.0
    done = 0
    while done < throws:
        batch = inputs(rng, min(CHUNK, throws - done))
        start = time.perf_counter()
        dice = [draw(s, c, n) for s, c, n in batch]
        drawing += time.perf_counter() - start
        for d1, d2 in dice:
            pairs[(d1 - 1) * 6 + d2 - 1] += 1
        done += len(batch)
    totals = [sum(pairs[i * 6 + j] for i in range(6) for j in range(6) if i + j + 2 == t)
              for t in range(2, 13)]  # fmt: skip
    die1 = [sum(pairs[i * 6 : i * 6 + 6]) for i in range(6)]
    die2 = [sum(pairs[j::6]) for j in range(6)]
    tests = {
        "ordered pairs": (pairs, [throws / 36] * 36),
        "totals": (totals, [throws * WAYS[t] / 36 for t in range(2, 13)]),
        "die 1": (die1, [throws / 6] * 6),
        "die 2": (die2, [throws / 6] * 6),
    }
    result: dict[str, Any] = {"throws": throws, "seed": seed, "tests": {}}
    for name, (observed, expected) in tests.items():
        statistic = chi_square(observed, expected)
        df = len(observed) - 1
        result["tests"][name] = {
            "statistic": statistic,
            "df": df,
            "p_value": float(chi2.sf(statistic, df)),
            "observed": observed,
        }
    result["throws_per_second"] = throws / drawing
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dice", description=__doc__)
    parser.add_argument("--throws", type=int, default=1_000_000, help="throws drawn")
    parser.add_argument("--seed", type=int, default=2026, help="the generator's seed")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    args = parser.parse_args(argv)
    result = run(args.throws, args.seed)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(f"{result['throws']:,} server throws (generator seed {result['seed']})")
    for name, test in result["tests"].items():
        print(
            f"  {name:14} chi-square {test['statistic']:8.2f}  df {test['df']:2}  "
            f"p = {test['p_value']:.4f}"
        )
    totals = result["tests"]["totals"]["observed"]
    print("  totals   " + "  ".join(f"{t}:{n / result['throws']:.4f}" for t, n in
                                    zip(range(2, 13), totals, strict=True)))  # fmt: skip
    print("  exact    " + "  ".join(f"{t}:{WAYS[t] / 36:.4f}" for t in range(2, 13)))
    print(f"  draw: {result['throws_per_second']:,.0f} throws a second (one core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
