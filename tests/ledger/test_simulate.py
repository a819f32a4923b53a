"""The simulation's dice and statistics: the randomness lives outside the engine."""

from __future__ import annotations

from collections import Counter

from engine.dice import WAYS
from engine.rulesets import BUILTIN
from ledger.simulate import Dice, simulate, wilson


def test_dice_sample_all_36_ordered_pairs_evenly() -> None:
    dice = Dice(seed=5)
    n = 72_000
    pairs = Counter(dice.throw() for _ in range(n))
    assert set(pairs) == {(a, b) for a in range(1, 7) for b in range(1, 7)}
    # Pearson's chi-square against 36 equally likely pairs; 35 degrees of freedom,
    # 0.1% critical value 66.6. A sampler that drew totals uniformly fails badly.
    expected = n / 36
    chi2 = sum((count - expected) ** 2 / expected for count in pairs.values())
    assert chi2 < 66.6


def test_totals_follow_the_ways_of_two_dice_not_a_uniform_draw() -> None:
    dice = Dice(seed=9)
    n = 36_000
    totals = Counter(sum(dice.throw()) for _ in range(n))
    chi2 = sum((totals[t] - n * WAYS[t] / 36) ** 2 / (n * WAYS[t] / 36) for t in range(2, 13))
    assert chi2 < 29.6  # 10 degrees of freedom, 0.1%
    assert totals[7] > 5 * totals[2]


def test_wilson_interval_brackets_the_observed_rate() -> None:
    lo, hi = wilson(490, 1000)
    assert lo < 0.49 < hi
    assert lo > 0.44
    assert hi < 0.54
    assert wilson(0, 0) == (0.0, 1.0)


def test_simulate_tallies_every_round_once() -> None:
    result = simulate(BUILTIN["english"], rounds=2000, seed=3)
    assert result.overall.rounds == 2000
    assert sum(t.rounds for t in result.by_main.values()) == 2000
    assert sum(t.wins for t in result.by_main.values()) == result.overall.wins
    for tally in result.by_main.values():
        assert tally.nicks + tally.outs <= tally.rounds
        assert tally.nicks <= tally.wins


def test_first_roll_losses_count_overall_but_under_no_main() -> None:
    result = simulate(BUILTIN["history"], rounds=2000, seed=4)
    per_main = sum(t.rounds for t in result.by_main.values())
    assert result.overall.rounds == 2000
    assert 0 < per_main < 2000  # some first rolls fell outside 5..9 and lost


def test_progress_is_reported_for_every_round() -> None:
    seen: list[int] = []
    simulate(BUILTIN["french"], rounds=2500, seed=1, progress=seen.append)
    assert sum(seen) == 2500
