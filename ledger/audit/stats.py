"""The two tests the dice-fairness report makes, on the standard library alone.

- Pearson's chi-square: `chi_square(observed, expected)` and its p-value
  `chi2_sf(x, df)`, the survival function of the chi-square distribution with `df`
  degrees of freedom: Q(df/2, x/2), the regularised upper incomplete gamma function,
  computed as Numerical Recipes (2nd ed., section 6.2, gammq) does: by its series
  where x < a + 1, by Lentz's continued fraction beyond.
- The exact two-sided binomial test, `binomial_p(k, n, p)`: the probability of a
  result no likelier than the one seen, as scipy.stats.binomtest's default.

Floats, not fractions: these are statistics, not money. scipy is the oracle in the
tests (tests/ledger/test_fairness_stats.py) and never imported here: the service
does not depend on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
    the sum of the probabilities of every count no likelier than `k`."""
    if not 0 <= k <= n:
        raise ValueError(f"{k} successes in {n} trials")
    if not 0 <= p <= 1:
        raise ValueError(f"a probability is between 0 and 1, not {p}")
    if p in (0, 1):
        return 1.0 if k == n * p else 0.0
    logs = _log_pmf(n, p)
    threshold = logs[k] + math.log(RELATIVE_ERROR)
    # Summed from the smallest up, so the tiny far tail is not lost beside the rest.
    return min(1.0, math.fsum(math.exp(v) for v in logs if v <= threshold))


def _log_pmf(n: int, p: float) -> list[float]:
    """log P(X = i) for i in 0..n, X binomial(n, p)."""
    log_p, log_q, top = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    return [
        top - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(n + 1)
    ]
