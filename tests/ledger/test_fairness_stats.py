"""ledger.audit.stats against scipy.stats, the oracle: the chi-square survival function
over a grid of statistics and degrees of freedom, and the exact binomial test over a
grid of counts. scipy is a test dependency only: no module of the service imports it."""

from __future__ import annotations

import math

import pytest
from scipy import special
from scipy import stats as oracle

from ledger.audit.stats import beta_i, binomial_p, chi2_sf, chi_square, gamma_q
from tests.importkit import the_code

DEGREES = [1, 2, 3, 4, 5, 7, 10, 15, 20, 35, 50, 100, 250, 1000]
# From far below the mean to far above it, for every df above: both of gamma_q's
# branches (series where x/2 < df/2 + 1, the continued fraction beyond) and the tails.
STATISTICS = [1e-6, 1e-3, 0.05, 0.5, 1.0, 2.0, 3.5, 5.0, 8.0, 10.0, 15.0, 20.0, 30.0]
STATISTICS += [45.0, 60.0, 80.0, 100.0, 150.0, 200.0, 300.0, 500.0, 800.0, 1200.0, 2000.0]


@pytest.mark.parametrize("df", DEGREES)
def test_chi2_sf_matches_scipy_over_a_grid(df: int) -> None:
    for x in [*STATISTICS, df - 0.5, float(df), df + 0.5, df + 2.0]:
        if x <= 0:
            continue
        ours, theirs = chi2_sf(x, df), float(oracle.chi2.sf(x, df))
        # Relative where the value is a usable float; a tail below 1e-290 is zero to both
        # in all but the last digits of the exponent.
        assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-290), (x, df, ours, theirs)


def test_chi2_sf_at_its_ends() -> None:
    assert chi2_sf(0.0, 10) == 1.0
    assert chi2_sf(-3.0, 10) == 1.0  # a statistic is never negative; no mass below 0
    assert chi2_sf(1e6, 1) == 0.0
    assert gamma_q(3.0, 0.0) == 1.0
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="degrees of freedom"):
            chi2_sf(1.0, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a number"):
        chi2_sf(math.nan, 3)


def test_the_critical_values_the_texts_quote() -> None:
    """Independent of scipy: the 5% and 1% points of chi-square tables."""
    assert chi2_sf(3.841459, 1) == pytest.approx(0.05, rel=1e-6)
    assert chi2_sf(18.307038, 10) == pytest.approx(0.05, rel=1e-6)
    assert chi2_sf(23.209251, 10) == pytest.approx(0.01, rel=1e-6)
    assert chi2_sf(57.342073, 35) == pytest.approx(0.01, rel=1e-6)
    # With 2 df the survival function is exp(-x/2) exactly.
    assert chi2_sf(7.0, 2) == pytest.approx(math.exp(-3.5), rel=1e-13)


def test_chi_square_is_pearsons_statistic() -> None:
    assert chi_square([10, 20, 30], [20.0, 20.0, 20.0]) == pytest.approx(10.0)
    assert chi_square([5, 5], [5.0, 5.0]) == 0.0
    with pytest.raises(ValueError, match="one expected"):
        chi_square([1, 2], [1.0])


@pytest.mark.parametrize("p", [0.5, 244 / 495, 1396 / 2835, 6961 / 14256, 0.1, 0.9, 0.01, 1 / 36])
def test_binomial_p_matches_scipy_over_a_grid(p: float) -> None:
    for n in (1, 2, 5, 10, 37, 100, 1000, 20_000):
        for k in sorted({0, 1, n // 3, round(n * p), round(n * p) + 1, n // 2, n - 1, n}):
            if not 0 <= k <= n:
                continue
            ours, theirs = binomial_p(k, n, p), float(oracle.binomtest(k, n, p).pvalue)
            assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-300), (k, n, p, ours, theirs)


def test_binomial_p_at_its_ends() -> None:
    assert binomial_p(0, 0, 0.3) == 1.0
    assert binomial_p(4, 4, 1.0) == 1.0
    assert binomial_p(3, 4, 1.0) == 0.0
    assert binomial_p(0, 4, 0.0) == 1.0
    assert binomial_p(40, 40, 0.5) == pytest.approx(2 * 0.5**40)  # both tails alike
    for k, n, p in ((5, 4, 0.5), (-1, 4, 0.5), (1, 4, 1.5)):
        with pytest.raises(ValueError):
            binomial_p(k, n, p)


def test_the_service_never_imports_scipy() -> None:
    importers = [
        module
        for module, targets in the_code().items()
        if any(t == "scipy" or t.startswith("scipy.") for t in targets)
    ]
    assert importers == []


@pytest.mark.parametrize("p", [244 / 495, 6961 / 14256, 1 / 36])
def test_binomial_p_matches_scipy_for_a_club_of_many_rounds(p: float) -> None:
    """The whole club's report tests every round it has decided: millions, over the
    years. The tails are summed at once, not a term a trial. To seven digits: at millions
    of trials the logarithms of the factorials (about 10^8) keep eight digits fewer
    after the point than at thousands."""
    for n in (123_457, 5_000_000):
        mean = round(n * p)
        for k in (mean // 2, mean - 300, mean - 1, mean, mean + 2, mean + 250, mean + 5000):
            ours, theirs = binomial_p(k, n, p), float(oracle.binomtest(k, n, p).pvalue)
            assert ours == pytest.approx(theirs, rel=1e-7, abs=1e-300), (k, n, p, ours, theirs)


@pytest.mark.parametrize("x", [0.0, 1e-6, 0.01, 0.3, 0.5, 0.77, 0.999, 1.0])
def test_beta_i_matches_scipy(x: float) -> None:
    for a, b in ((0.5, 0.5), (1, 1), (2.5, 7), (40, 3), (1000, 1200), (250_000, 9_000)):
        theirs = float(special.betainc(a, b, x))
        assert beta_i(a, b, x) == pytest.approx(theirs, rel=1e-9, abs=1e-300), (a, b, x)
