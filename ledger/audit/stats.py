"""The tests the dice-fairness report makes, on the standard library alone.

- Pearson's chi-square: `chi_square(observed, expected)` and its p-value
  `chi2_sf(x, df)`, the survival function of the chi-square distribution with `df`
  degrees of freedom: Q(df/2, x/2), the regularised upper incomplete gamma function,
  computed as Numerical Recipes (2nd ed., section 6.2, gammq) does: by its series
  where x < a + 1, by Lentz's continued fraction beyond.
- The exact two-sided binomial test, `binomial_p(k, n, p)`: the probability of a
  result no likelier than the one seen, as scipy.stats.binomtest's default, its two
  tails as regularised incomplete beta functions (NR section 6.4, betai and betacf).
- The order of the throws (below): the runs test above and below the median, and the
  serial-correlation test of consecutive totals, exact while the counts are small;
  Holm's adjustment when many are tested together.

Floats, not fractions: these are statistics, not money. scipy is the oracle in the
tests (tests/ledger/test_fairness_stats.py) and never imported here: the service
does not depend on it.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

EPS = 1e-15
"""Relative size of the last term (series) or step (fraction) at which each stops."""
FPMIN = 1e-300
"""Near the smallest float: keeps Lentz's method from dividing by zero."""
MAX_ITERATIONS = 10_000
"""Both converge in about sqrt(a) steps; far more means an argument out of reach."""


def chi_square(observed: Sequence[int], expected: Sequence[float]) -> float:
    """Pearson's statistic: the sum over cells of (observed - expected)^2 / expected."""
    if len(observed) != len(expected):
        raise ValueError("one expected count for each observed count")
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with `df` degrees of freedom: the test's p-value."""
    if type(df) is not int or df < 1:
        raise ValueError(f"degrees of freedom are a whole number, 1 or more, not {df!r}")
    if math.isnan(x):
        raise ValueError("the statistic is not a number")
    if x <= 0:
        return 1.0
    return gamma_q(df / 2, x / 2)


def gamma_q(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a), for a > 0 and x >= 0."""
    if a <= 0 or x < 0:
        raise ValueError("Q(a, x) takes a > 0 and x >= 0")
    if x == 0:
        return 1.0
    if x < a + 1:
        # The series converges fast here, and P is at most about one half, so 1 - P
        # loses nothing that matters.
        return 1.0 - _p_series(a, x)
    return _q_fraction(a, x)


def _prefactor(a: float, x: float) -> float:
    # x^a e^-x / Gamma(a), in logarithms so that neither overflows on its own.
    return math.exp(a * math.log(x) - x - math.lgamma(a))


def _p_series(a: float, x: float) -> float:
    """P(a, x) = x^a e^-x / Gamma(a) * sum_n x^n / (a (a+1) ... (a+n)) (NR gser)."""
    term = total = 1.0 / a
    denominator = a
    for _ in range(MAX_ITERATIONS):
        denominator += 1
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * EPS:
            return total * _prefactor(a, x)
    raise ArithmeticError(f"P({a}, {x}): the series did not converge")


def _q_fraction(a: float, x: float) -> float:
    """Q(a, x) = x^a e^-x / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...)))
    by the modified Lentz method (NR gcf)."""
    b = x + 1 - a
    c = 1 / FPMIN
    d = 1 / b
    h = d
    for i in range(1, MAX_ITERATIONS):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        if abs(d) < FPMIN:
            d = FPMIN
        c = b + an / c
        if abs(c) < FPMIN:
            c = FPMIN
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < EPS:
            return h * _prefactor(a, x)
    raise ArithmeticError(f"Q({a}, {x}): the continued fraction did not converge")


RELATIVE_ERROR = 1 + 1e-7
"""Outcomes whose probability is within this factor of the observed one's count as
no likelier than it (as scipy.stats.binomtest), so rounding cannot split a tie."""


def binomial_p(k: int, n: int, p: float) -> float:
    """The exact two-sided p-value of `k` successes in `n` trials of probability `p`:
    the sum of the probabilities of every count no likelier than `k`.

    The counts no likelier than `k` are the two tails of a distribution with one peak
    (its mode, floor((n + 1) p)): every count up to some `a` and every count from some
    `b`, each end found by bisection of the probabilities on its side of the mode. The
    tails are then summed at once, as regularised incomplete beta functions (below),
    as scipy.stats.binomtest does: a few hundred steps however many trials, where a
    sum term by term takes one a trial (the whole club's report counts every round)."""
    if not 0 <= k <= n:
        raise ValueError(f"{k} successes in {n} trials")
    if not 0 <= p <= 1:
        raise ValueError(f"a probability is between 0 and 1, not {p}")
    if p in (0, 1):
        return 1.0 if k == n * p else 0.0
    threshold = _log_pmf(k, n, p) + math.log(RELATIVE_ERROR)
    mode = min(n, math.floor((n + 1) * p))
    if _log_pmf(mode, n, p) <= threshold:
        return 1.0  # no count is likelier than k
    below = 0.0
    if _log_pmf(0, n, p) <= threshold:  # the last count up to the mode no likelier than k
        a, likelier = 0, mode
        while likelier - a > 1:
            middle = (a + likelier) // 2
            a, likelier = (middle, likelier) if _log_pmf(middle, n, p) <= threshold else (a, middle)
        below = _binomial_cdf(a, n, p)
    above = 0.0
    if _log_pmf(n, n, p) <= threshold:  # the first count past the mode no likelier than k
        likelier, b = mode, n
        while b - likelier > 1:
            middle = (likelier + b) // 2
            likelier, b = (likelier, middle) if _log_pmf(middle, n, p) <= threshold else (middle, b)
        above = _binomial_sf(b, n, p)
    return min(1.0, below + above)


def _log_pmf(i: int, n: int, p: float) -> float:
    """log P(X = i), X binomial(n, p)."""
    return (
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(p)
        + (n - i) * math.log1p(-p)
    )


def _binomial_cdf(a: int, n: int, p: float) -> float:
    """P(X <= a) = I_(1-p)(n - a, a + 1)."""
    return 1.0 if a >= n else beta_i(n - a, a + 1, 1 - p)


def _binomial_sf(b: int, n: int, p: float) -> float:
    """P(X >= b) = I_p(b, n - b + 1)."""
    return 1.0 if b <= 0 else beta_i(b, n - b + 1, p)


def beta_i(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and x in [0, 1],
    as Numerical Recipes (2nd ed., section 6.4, betai) computes it: its continued
    fraction where it converges fast, x < (a + 1) / (a + b + 2), and by the symmetry
    I_x(a, b) = 1 - I_(1-x)(b, a) beyond."""
    if a <= 0 or b <= 0 or not 0 <= x <= 1:
        raise ValueError("I_x(a, b) takes a, b > 0 and x in [0, 1]")
    if x in (0, 1):
        return float(x)
    # x^a (1-x)^b / (a B(a, b)) without the fraction, in logarithms.
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) by the modified Lentz method (NR betacf)."""
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) >= FPMIN else FPMIN)
    h = d
    for m in range(1, MAX_ITERATIONS):
        for numerator in (
            m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) >= FPMIN else FPMIN)
            c = 1 + numerator / c
            c = c if abs(c) >= FPMIN else FPMIN
            step = d * c
            h *= step
        if abs(step - 1) < EPS:
            return h
    raise ArithmeticError(f"I_{x}({a}, {b}): the continued fraction did not converge")


# -- the throws' order --------------------------------------------------------------
#
# Whether the totals come in an order chance would give: a croupier who calls throws
# from a pattern, or dice that stick, shows as too few or too many runs above and
# below the median, or as consecutive totals that move together. Both tests are exact
# (fractions) while the counts are small, and a normal approximation beyond.

MEDIAN = 7
"""2d6's median (and mean): a throw is above it or below it; a seven is neither and is
left out of the runs test, as the Wald-Wolfowitz runs test does with ties."""
DEVIATIONS = {d: 6 - abs(d) for d in range(-5, 6)}
"""The ways out of 36 that a throw's total is 7 + d."""
VARIANCE = Fraction(35, 6)
"""2d6's variance: the sum over d of d^2 (6 - |d|) / 36."""
EXACT_RUNS_MAX = 200
"""Up to this many throws above and below the median together the runs test's p-value
is exact (the runs' distribution by its closed form in binomial coefficients, as
fractions); beyond it, the normal approximation with a continuity correction, which
the tests hold within 0.05 of the exact (0.041 at worst) for 15 to 40 of each."""
EXACT_SERIAL_MAX = 20
"""Up to this many throws the serial test's p-value is exact (the distribution of the
sum of products of consecutive deviations, by recursion over the throws, in whole
numbers of 36^n); beyond it, the normal approximation, which the tests hold within
0.03 of the exact (0.027 at worst) at 20 throws."""


class PValue(NamedTuple):
    p_value: float
    exact: bool


@dataclass(frozen=True)
class RunsResult:
    """Runs above and below the median: how many throws each side, the runs, the runs
    chance would give on average for those counts, and the two-sided p-value (None
    with nothing on one side: no order to test)."""

    above: int
    below: int
    runs: int
    expected_runs: float | None
    p_value: float | None
    exact: bool


@dataclass(frozen=True)
class SerialResult:
    """The serial test: S, the sum over consecutive throws of (total - 7) times the
    next (total - 7); their lag-1 correlation about 7 (S over the sum of squares); the
    two-sided p-value of |S| (None below two throws)."""

    throws: int
    statistic: int
    correlation: float
    p_value: float | None
    exact: bool


def runs_test(totals: Sequence[int], exact_max: int = EXACT_RUNS_MAX) -> RunsResult:
    """The runs test of `totals`, in the order thrown, above and below 7."""
    signs = [t > MEDIAN for t in totals if t != MEDIAN]
    above = sum(signs)
    below = len(signs) - above
    runs = 1 + sum(a != b for a, b in itertools.pairwise(signs)) if signs else 0
    if not above or not below:
        return RunsResult(above, below, runs, None, None, False)
    p = runs_p(runs, above, below, exact_max)
    expected = 2 * above * below / (above + below) + 1
    return RunsResult(above, below, runs, expected, p.p_value, p.exact)


@functools.lru_cache(maxsize=256)
def runs_distribution(n1: int, n2: int) -> dict[int, Fraction]:
    """P(R = r) for the runs R in a random arrangement of n1 of one kind and n2 of the
    other (both at least 1): 2k runs are k runs of each, 2 C(n1-1, k-1) C(n2-1, k-1)
    ways; 2k + 1 are k + 1 runs of one and k of the other; over C(n1 + n2, n1)."""
    if n1 < 1 or n2 < 1:
        raise ValueError("the runs need at least one of each kind")
    total = math.comb(n1 + n2, n1)
    dist: dict[int, Fraction] = {}
    for k in range(1, min(n1, n2) + 1):
        dist[2 * k] = Fraction(2 * math.comb(n1 - 1, k - 1) * math.comb(n2 - 1, k - 1), total)
        odd = math.comb(n1 - 1, k) * math.comb(n2 - 1, k - 1)
        odd += math.comb(n1 - 1, k - 1) * math.comb(n2 - 1, k)
        if odd:
            dist[2 * k + 1] = Fraction(odd, total)
    return dist


def runs_p(runs: int, n1: int, n2: int, exact_max: int = EXACT_RUNS_MAX) -> PValue:
    """The two-sided p-value of `runs`: twice the smaller tail, at most 1."""
    if n1 + n2 <= exact_max:
        dist = runs_distribution(n1, n2)
        low = sum((p for r, p in dist.items() if r <= runs), Fraction(0))
        high = sum((p for r, p in dist.items() if r >= runs), Fraction(0))
        return PValue(float(min(Fraction(1), 2 * min(low, high))), True)
    n = n1 + n2
    mean = 2 * n1 * n2 / n + 1
    variance = 2 * n1 * n2 * (2 * n1 * n2 - n) / (n * n * (n - 1))
    return PValue(_normal_two_sided(abs(runs - mean), variance), False)


def serial_test(totals: Sequence[int], exact_max: int = EXACT_SERIAL_MAX) -> SerialResult:
    """The serial test of `totals`, in the order thrown, against 2d6's own mean and
    variance (known, so nothing is estimated from the throws)."""
    deviations = [t - MEDIAN for t in totals]
    statistic = sum(a * b for a, b in itertools.pairwise(deviations))
    squares = sum(d * d for d in deviations[:-1])
    correlation = statistic / squares if squares else 0.0
    if len(deviations) < 2:
        return SerialResult(len(deviations), statistic, correlation, None, False)
    p = serial_p(statistic, len(deviations), exact_max)
    return SerialResult(len(deviations), statistic, correlation, p.p_value, p.exact)


@functools.lru_cache(maxsize=EXACT_SERIAL_MAX + 1)
def serial_distribution(n: int) -> dict[int, Fraction]:
    """P(S = s) for n fair throws, S the sum of products of consecutive deviations:
    by recursion over the throws, keeping for each last deviation the ways (out of
    36^k) to reach each partial sum."""
    if n < 1:
        raise ValueError("the serial test needs a throw")
    ways: dict[int, Counter[int]] = {d: Counter({0: w}) for d, w in DEVIATIONS.items()}
    for _ in range(n - 1):
        following: dict[int, Counter[int]] = {d: Counter() for d in DEVIATIONS}
        for last, sums in ways.items():
            for d, w in DEVIATIONS.items():
                into, product = following[d], last * d
                for s, count in sums.items():
                    into[s + product] += count * w
        ways = following
    whole: Counter[int] = Counter()
    for sums in ways.values():
        whole.update(sums)
    return {s: Fraction(count, 36**n) for s, count in whole.items()}


def serial_p(statistic: int, n: int, exact_max: int = EXACT_SERIAL_MAX) -> PValue:
    """The two-sided p-value of S over n throws: P(|S| >= |statistic|). S is symmetric
    about 0 (changing the sign of every other deviation changes S's sign and not its
    chances), with variance (n - 1) times 2d6's variance squared (the products are
    uncorrelated)."""
    if n <= exact_max:
        dist = serial_distribution(n)
        tail = sum((p for s, p in dist.items() if abs(s) >= abs(statistic)), Fraction(0))
        return PValue(float(tail), True)
    return PValue(_normal_two_sided(abs(statistic), float((n - 1) * VARIANCE**2)), False)


def _normal_two_sided(distance: float, variance: float) -> float:
    """P(|Z| >= distance), with a half-step continuity correction (the statistics are
    whole numbers), for Z normal about 0 with `variance`."""
    if variance <= 0:
        return 1.0
    z = max(0.0, distance - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2)))


# -- many tables at once ------------------------------------------------------------


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given: the k-th smallest of m times
    (m - k + 1), at most 1, and never below the one before it. A test flagged when its
    adjusted value is below alpha keeps the chance of any false flag among the m at
    most alpha (the family-wise rate), whatever their dependence."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def chance_flags(tests: int, alpha: float) -> float:
    """How many of `tests` fair tests chance alone flags at `alpha`, on average."""
    return tests * alpha
