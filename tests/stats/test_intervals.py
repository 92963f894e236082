"""Single-rate intervals against scipy's reference values, and the flags tables print."""

import math

import numpy as np
import pytest
from scipy import stats

from rubriclab.stats.intervals import (
    AT_BOUND, FEW_ITEMS, RATE_METHOD, RATE_METHODS, RATE_TITLE, TRANSFER_HELD_FROM, ZERO_WIDTH,
    algorithm4_flags, algorithm4_footnotes, binomial_interval, binomial_intervals,
    flag_footnotes, flag_notes, interval_flags, rate_flags, rate_footnotes, rate_interval,
)

# Clopper-Pearson by its definition (the Beta quantiles), computed here independently of
# binomtest: low = Beta(a/2; k, n - k + 1), high = Beta(1 - a/2; k + 1, n - k).
def clopper_pearson(k, n, level=0.95):
    tail = (1 - level) / 2
    low = 0.0 if k == 0 else stats.beta.ppf(tail, k, n - k + 1)
    high = 1.0 if k == n else stats.beta.ppf(1 - tail, k + 1, n - k)
    return low, high


def wilson(k, n, level=0.95):
    z = stats.norm.ppf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


CASES = [(0, 12), (1, 12), (11, 12), (12, 12), (0, 8), (8, 8), (3, 8), (35, 36), (36, 36),
         (70, 72), (25, 51), (56, 56), (1, 1), (0, 1)]


@pytest.mark.parametrize("k, n", CASES)
def test_clopper_pearson_is_the_beta_quantile_interval(k, n):
    assert binomial_interval(k, n, "clopper_pearson") == pytest.approx(clopper_pearson(k, n),
                                                                       abs=1e-9)
    ci = stats.binomtest(k, n).proportion_ci(method="exact")
    assert binomial_interval(k, n, "clopper_pearson") == pytest.approx((ci.low, ci.high),
                                                                       abs=1e-12)


@pytest.mark.parametrize("k, n", CASES)
def test_wilson_is_the_score_interval(k, n):
    low, high = binomial_interval(k, n, "wilson")
    ref_low, ref_high = wilson(k, n)
    assert (low, high) == pytest.approx((max(ref_low, 0), min(ref_high, 1)), abs=1e-9)
    assert (k > 0 or low == 0.0) and (k < n or high == 1.0)


@pytest.mark.parametrize("k, n", CASES)
def test_jeffreys_is_the_beta_posterior_interval(k, n):
    low, high = binomial_interval(k, n, "jeffreys")
    posterior = stats.beta(k + 0.5, n - k + 0.5)
    assert low == (0.0 if k == 0 else pytest.approx(posterior.ppf(0.025), abs=1e-12))
    assert high == (1.0 if k == n else pytest.approx(posterior.ppf(0.975), abs=1e-12))


def test_known_values_at_the_tables_sizes():
    """Printed values: every correct report of 36 passed, and none of 12 unplanned caught.
    A percentile bootstrap over reports gives [100, 100] and [0, 0] there."""
    low, high = binomial_interval(36, 36, "clopper_pearson")
    assert (low, high) == pytest.approx((0.025 ** (1 / 36), 1.0))  # (a / 2) ** (1 / n)
    assert round(100 * low, 1) == 90.3
    low, high = binomial_interval(0, 12, "clopper_pearson")
    assert low == 0.0 and round(100 * high, 1) == 26.5  # 1 - 0.025 ** (1 / 12)
    assert high == pytest.approx(1 - 0.025 ** (1 / 12))


def test_the_default_is_the_studys_choice_and_the_intervals_nest():
    assert RATE_METHOD in RATE_METHODS
    assert rate_interval(7, 12) == binomial_interval(7, 12, RATE_METHOD)
    # Clopper-Pearson contains the Wilson interval at every k of the sizes used
    for n in (8, 12, 36):
        for k in range(n + 1):
            cp, w = binomial_interval(k, n, "clopper_pearson"), binomial_interval(k, n, "wilson")
            assert cp[0] <= w[0] + 1e-12 and w[1] <= cp[1] + 1e-12


def test_vectorised_intervals_match_the_scalar_ones():
    k = np.array([[0, 3], [12, 5]])
    n = np.array([[12, 12], [12, 8]])
    low, high = binomial_intervals(k, n, "wilson")
    for index in np.ndindex(k.shape):
        assert (low[index], high[index]) == binomial_interval(k[index], n[index], "wilson")
    low, high = binomial_intervals(np.array([0]), np.array([0]))
    assert math.isnan(low[0]) and math.isnan(high[0])


def test_bad_counts_are_refused():
    assert all(math.isnan(v) for v in binomial_interval(0, 0))
    with pytest.raises(ValueError, match="successes <= n"):
        binomial_interval(5, 4)
    with pytest.raises(ValueError, match="n must be a count"):
        binomial_interval(1, 2.5)
    with pytest.raises(ValueError, match="successes must be a count"):
        binomial_interval(-1, 4)
    with pytest.raises(ValueError, match="unknown interval method 'wald'"):
        binomial_interval(1, 4, "wald")
    with pytest.raises(ValueError, match="level"):
        binomial_interval(1, 4, level=95)


def test_flags():
    assert interval_flags(100.0, 90.3, 100.0, bounds=(0, 100)) == AT_BOUND
    assert interval_flags(0.0, 0.0, 26.5, bounds=(0, 100)) == AT_BOUND
    assert interval_flags(100.0, 100.0, 100.0, bounds=(0, 100)) == AT_BOUND + ZERO_WIDTH
    assert interval_flags(50.0, 33.0, 67.0, bounds=(0, 100)) == ""
    assert interval_flags(0.0, 0.0, 0.0) == ZERO_WIDTH  # a difference: no bounds
    assert interval_flags(0.1, -0.05, 0.2, n=15, held_from=35) == FEW_ITEMS
    assert interval_flags(0.1, -0.05, 0.2, n=35, held_from=35) == ""
    assert interval_flags(0.5, 0.501, 0.503) == ""
    assert interval_flags(0.5, 0.501, 0.503, decimals=2) == ZERO_WIDTH  # "[0.50, 0.50]"
    assert interval_flags(0.0, -0.001, 0.001, decimals=2) == ZERO_WIDTH  # "[0.00, 0.00]"
    assert interval_flags(0.5, 0.49, 0.51, decimals=2) == ""
    assert interval_flags(math.nan, 1, 2, bounds=(0, 100)) == ""
    assert interval_flags(100.0, math.nan, math.nan, bounds=(0, 100)) == ""


def test_footnotes_name_only_the_markers_shown():
    notes = flag_notes("Clopper-Pearson", units="reports")
    cells = ["97.2 / 100.0", f"[90.3, 100.0]{AT_BOUND} / [80.5, 92.0]"]
    lines = flag_footnotes(cells, notes)
    assert lines == [notes[AT_BOUND], ""]
    assert "Clopper-Pearson" in lines[0] and "reports" in lines[0]
    assert flag_footnotes(["[1.0, 2.0]"], notes) == []
    both = flag_footnotes([f"x{FEW_ITEMS}", f"y{ZERO_WIDTH}"], flag_notes(held_from=35))[::2]
    assert [line[0] for line in both] == [ZERO_WIDTH, FEW_ITEMS]
    assert "fewer than 35" in both[1]
    carry = rate_footnotes([f"[73.5, 100.0]{rate_flags(100.0, 73.5, 100.0)}"], units="reports")
    assert carry[0].startswith(AT_BOUND) and RATE_TITLE in carry[0] and "reports" in carry[0]
    assert rate_flags(100.0, 100.0, 100.0) == AT_BOUND + ZERO_WIDTH
    assert rate_flags(97.2, 85.5, 99.9) == ""
    assert rate_flags(99.98, 99.96, 99.99) == ZERO_WIDTH  # prints [100.0, 100.0]
    assert algorithm4_flags(0.0, 0.0, 0.0, 105) == ZERO_WIDTH
    assert algorithm4_flags(0.1, 0.0, 0.2, 34) == FEW_ITEMS
    assert algorithm4_flags(0.1, 0.0, 0.2, TRANSFER_HELD_FROM) == ""
    transfer = algorithm4_footnotes([f"0.00 [0.00, 0.00]{ZERO_WIDTH}{FEW_ITEMS}"])[::2]
    assert [line[0] for line in transfer] == [ZERO_WIDTH, FEW_ITEMS]
    assert f"fewer than {TRANSFER_HELD_FROM} examples" in transfer[1]
