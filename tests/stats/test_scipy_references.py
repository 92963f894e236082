"""The project's statistics against scipy, where scipy computes the same thing.

- transfer's Spearman rho and Kendall tau-b (Algorithm 3, Table A.2) are scipy.stats.spearmanr
  and scipy.stats.kendalltau (variant "b"); what the project adds is checked here: a constant
  score vector gives NaN without scipy's warning, and tau-b, not tau-c, is the variant
  (tests/transfer/test_baselines.py works both out by hand);
- Algorithm 4's percentile interval (rubriclab.stats.bootstrap) against
  scipy.stats.bootstrap(method="percentile") on a mean and on a paired difference;
- verify's Wilson interval is scipy's own (tests/verify/test_calibration.py checks it against
  the score formula).
"""

import warnings

import numpy as np
import pytest
from scipy import stats

from rubriclab.stats.bootstrap import difference, paired_bootstrap
from rubriclab.transfer.baselines import kendall_tau_b, spearman_rho


def tied_scores(rng, size):
    """Pass fractions of rubrics with 3 to 6 criteria: many ties."""
    criteria = rng.integers(3, 7, size=size)
    return rng.integers(0, criteria + 1) / criteria


@pytest.mark.parametrize("seed", range(5))
def test_rank_correlations_are_scipys_on_tied_scores(seed):
    rng = np.random.default_rng(seed)
    x = tied_scores(rng, 8)
    y = np.clip(x + rng.normal(0, 0.2, 8), 0, 1).round(1)
    assert spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert kendall_tau_b(x, y) == pytest.approx(
        stats.kendalltau(x, y, variant="b").statistic, abs=1e-12)


def test_tau_b_is_not_tau_c_on_ties():
    x, y = [1, 1, 2, 3], [1, 2, 2, 3]  # by hand: tau-b = 4 / sqrt(5 * 5) = 0.8
    assert kendall_tau_b(x, y) == pytest.approx(0.8)
    assert stats.kendalltau(x, y, variant="c").statistic == pytest.approx(0.75)


def test_constant_scores_give_nan_without_scipys_warning():
    x, y = np.array([0.5, 0.5, 0.5, 0.5]), np.array([0.1, 0.4, 0.2, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's ConstantInputWarning would fail here
        assert np.isnan(spearman_rho(x, y)) and np.isnan(kendall_tau_b(x, y))
        assert np.isnan(spearman_rho(y, x)) and np.isnan(kendall_tau_b(y, x))


def test_algorithm4_percentile_interval_agrees_with_scipy_bootstrap():
    rng = np.random.default_rng(0)
    a = rng.beta(2, 5, size=105)
    b = np.clip(a + rng.normal(0.05, 0.1, size=105), 0, 1)
    mean_a = lambda idx: float(a[idx].mean())  # noqa: E731
    mean_b = lambda idx: float(b[idx].mean())  # noqa: E731
    ours = paired_bootstrap(105, {"a": mean_a, "b - a": difference(mean_b, mean_a)},
                            B=8000, seed=0).set_index("statistic")
    reference_a = stats.bootstrap((a,), np.mean, n_resamples=8000, method="percentile",
                                  random_state=np.random.default_rng(1)).confidence_interval
    reference_diff = stats.bootstrap((b, a), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis),
                                     paired=True, n_resamples=8000, method="percentile",
                                     random_state=np.random.default_rng(1)).confidence_interval
    # Monte Carlo error of a 2.5% percentile at B = 8000 is about 0.001 here
    assert ours.loc["a", "low"] == pytest.approx(reference_a.low, abs=0.004)
    assert ours.loc["a", "high"] == pytest.approx(reference_a.high, abs=0.004)
    assert ours.loc["b - a", "low"] == pytest.approx(reference_diff.low, abs=0.003)
    assert ours.loc["b - a", "high"] == pytest.approx(reference_diff.high, abs=0.003)
