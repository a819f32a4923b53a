"""ledger.audit.stats' tests of the throws' order: the runs test above and below the
median, the serial-correlation test of consecutive totals, and Holm's correction for
many tables tested at once. The exact distributions are held against an enumeration
of every arrangement (small cases, by hand and by brute force), the approximations
against the exact ones where both apply."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.dice import PAIRS
from ledger.audit.stats import (
    EXACT_RUNS_MAX,
    EXACT_SERIAL_MAX,
    holm,
    runs_distribution,
    runs_p,
    runs_test,
    serial_distribution,
    serial_p,
    serial_test,
)


def _runs(signs: tuple[bool, ...]) -> int:
    return 1 + sum(a != b for a, b in itertools.pairwise(signs))


def test_runs_distribution_by_hand_for_two_and_two() -> None:
    # AABB BBAA: 2 runs; ABBA BAAB: 3; ABAB BABA: 4. Six arrangements in all.
    assert runs_distribution(2, 2) == {2: Fraction(1, 3), 3: Fraction(1, 3), 4: Fraction(1, 3)}


@pytest.mark.parametrize("n1,n2", [(1, 1), (1, 4), (3, 2), (4, 4), (5, 3), (6, 6), (7, 2)])
def test_runs_distribution_matches_every_arrangement(n1: int, n2: int) -> None:
    counted: dict[int, int] = {}
    for above in itertools.combinations(range(n1 + n2), n1):
        signs = tuple(i in above for i in range(n1 + n2))
        counted[_runs(signs)] = counted.get(_runs(signs), 0) + 1
    total = math.comb(n1 + n2, n1)
    assert runs_distribution(n1, n2) == {r: Fraction(c, total) for r, c in counted.items()}


def test_runs_p_swed_eisenhart_ten_and_ten() -> None:
    # Swed and Eisenhart's table (1943): with 10 and 10, P(R <= 6) = 0.019 and
    # P(R >= 16) = 0.019 (the distribution is symmetric when n1 = n2).
    dist = runs_distribution(10, 10)
    assert float(sum(p for r, p in dist.items() if r <= 6)) == pytest.approx(0.0185, abs=5e-4)
    assert runs_p(6, 10, 10).exact
    assert runs_p(6, 10, 10).p_value == pytest.approx(2 * 0.0185, abs=1e-3)
    assert runs_p(11, 10, 10).p_value == 1.0


def test_runs_test_drops_the_sevens_and_counts_the_runs() -> None:
    # 2d6's median is 7: 8 9 | 3 | 12 | 7 (dropped) 2 4 | 11 -> + + - + - - + : 5 runs.
    result = runs_test([8, 9, 3, 12, 7, 2, 4, 11])
    assert (result.above, result.below, result.runs) == (4, 3, 5)
    # Of the 35 arrangements of 4 and 3, 16 have 5 runs or more: p = 2 * 16/35.
    assert result.exact and result.p_value == pytest.approx(32 / 35)


def test_runs_test_with_too_few() -> None:
    assert runs_test([]).p_value is None
    assert runs_test([7, 7, 7]).p_value is None
    assert runs_test([8, 9, 10]).p_value is None  # all above: no arrangement to test


def test_runs_p_normal_beyond_the_exact_bound() -> None:
    n = EXACT_RUNS_MAX + 2
    approximate = runs_p(n // 2, n // 2, n // 2 + 2)
    assert not approximate.exact
    assert 0 < approximate.p_value < 1


def _serial_by_enumeration(n: int) -> dict[int, Fraction]:
    deviations = [a + b - 7 for a, b in PAIRS]
    counted: dict[int, int] = {}
    for throws in itertools.product(deviations, repeat=n):
        s = sum(x * y for x, y in itertools.pairwise(throws))
        counted[s] = counted.get(s, 0) + 1
    return {s: Fraction(c, 36**n) for s, c in counted.items()}


@pytest.mark.parametrize("n", [2, 3])
def test_serial_distribution_matches_every_sequence_of_throws(n: int) -> None:
    assert serial_distribution(n) == _serial_by_enumeration(n)


def test_serial_distribution_is_symmetric_and_sums_to_one() -> None:
    dist = serial_distribution(8)
    assert sum(dist.values()) == 1
    assert all(dist[s] == dist.get(-s) for s in dist)


def test_serial_test_by_hand() -> None:
    # 7 then anything: every product is 0, the statistic is 0, the p-value 1.
    result = serial_test([7, 12, 7, 2, 7])
    assert result.statistic == 0 and result.p_value == 1.0 and result.exact
    # 12 12: one product, 25, the largest there is: |S| >= 25 by 12 12, 2 2, 12 2, 2 12.
    two = serial_test([12, 12])
    assert two.statistic == 25
    assert two.p_value == pytest.approx(float(Fraction(4, 36 * 36)))
    assert serial_test([9]).p_value is None


def test_serial_test_flags_alternating_throws() -> None:
    throws = [12, 2] * 20
    result = serial_test(throws)
    assert not result.exact and result.p_value < 1e-6
    assert result.correlation < -0.9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([a + b for a, b in PAIRS]), max_size=80))
def test_p_values_are_probabilities(throws: list[int]) -> None:
    for result in (runs_test(throws), serial_test(throws)):
        assert result.p_value is None or 0 <= result.p_value <= 1


@settings(max_examples=40, deadline=None)
@given(st.integers(15, 40), st.integers(15, 40), st.data())
def test_runs_exact_and_normal_agree_for_large_counts(
    n1: int, n2: int, data: st.DataObject
) -> None:
    dist = runs_distribution(n1, n2)
    r = data.draw(st.sampled_from(sorted(dist)))
    exact = runs_p(r, n1, n2).p_value
    normal = runs_p(r, n1, n2, exact_max=0).p_value
    assert normal == pytest.approx(exact, abs=0.05)  # at worst 0.041 over 15..40


def test_serial_exact_and_normal_agree_at_the_bound() -> None:
    n = EXACT_SERIAL_MAX
    dist = serial_distribution(n)
    for s in range(0, max(dist) + 1):  # at worst 0.027
        exact = serial_p(s, n).p_value
        normal = serial_p(s, n, exact_max=0).p_value
        assert normal == pytest.approx(exact, abs=0.03), s


def test_holm_by_hand() -> None:
    # Sorted 0.01 0.02 0.03 0.04 of four: 0.04, 0.06, 0.06 (kept monotone), 0.06 ...
    assert holm([0.04, 0.01, 0.03, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([]) == []
    assert holm([0.5, 0.9]) == [1.0, 1.0]


@given(st.lists(st.floats(0, 1), max_size=30))
def test_holm_is_monotone_and_never_below_the_raw(raw: list[float]) -> None:
    adjusted = holm(raw)
    assert all(a >= r and 0 <= a <= 1 for a, r in zip(adjusted, raw, strict=True))
    ordered = sorted(zip(raw, adjusted, strict=True))
    assert all(x[1] <= y[1] for x, y in itertools.pairwise(ordered))
