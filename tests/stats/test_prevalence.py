"""The corrected-pass-rate interval methods, against references computed another way."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from rubriclab.stats.bootstrap import percentile_interval, percentile_rows
from rubriclab.stats.prevalence import (
    jeffreys_bootstrap,
    labelled_bootstrap,
    lang_reiczigel,
    ppi,
    rogan_gladen_estimate,
)

POST = dict(k=300, n=400, tp=37, fn=1, fp=4, tn=8)
Z95 = 1.959963984540054


def post_counts():
    return tuple(POST[key] for key in ("k", "n", "tp", "fn", "fp", "tn"))


def test_percentile_rows_equal_percentile_interval_row_by_row():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(300, 41))
    values[rng.random(values.shape) < 0.3] = np.nan
    values[3] = np.nan  # a row with no defined value
    values[4] = np.nan
    values[4, 7] = 2.0  # a row with one
    low, high, n_used = percentile_rows(values, 0.9)
    for row in range(values.shape[0]):
        expected = percentile_interval(values[row], 0.9)
        np.testing.assert_allclose([low[row], high[row]], expected[:2], rtol=0, atol=1e-15)
        assert n_used[row] == expected[2]
    assert math.isnan(low[3]) and low[4] == high[4] == 2.0


def test_rogan_gladen_estimate_is_undefined_without_an_informative_judge():
    estimate = rogan_gladen_estimate([0.75, 0.6, 0.6], [37 / 38, 0.5, 0.3], [8 / 12, 0.5, 0.5])
    assert estimate[0] == pytest.approx((0.75 - 1 / 3) / (37 / 38 - 1 / 3))
    assert np.isnan(estimate[1:]).all()


def test_jeffreys_bootstrap_is_the_percentiles_of_beta_draws():
    result = jeffreys_bootstrap(*post_counts(), n_boot=5000, rng=np.random.default_rng(4))
    rng = np.random.default_rng(4)
    q = rng.beta(300.5, 100.5, 5000)
    tpr = rng.beta(37.5, 1.5, 5000)
    tnr = rng.beta(8.5, 4.5, 5000)
    p = (q - (1 - tnr)) / (tpr + tnr - 1)
    p = p[tpr + tnr > 1]
    assert (float(result.low), float(result.high)) == pytest.approx(
        tuple(np.quantile(p, [0.025, 0.975])), abs=1e-12)
    assert int(result.n_undefined) == 5000 - p.size


def test_many_replicates_at_once_equal_one_at_a_time_in_distribution():
    # vectorised over replicates: each row is an independent interval of its own counts
    k = np.array([300, 10, 50])
    n = np.array([400, 100, 100])
    tp, fn, fp, tn = np.array([37, 45, 3]), np.array([1, 5, 3]), np.array([4, 15, 3]), \
        np.array([8, 35, 3])
    result = jeffreys_bootstrap(k, n, tp, fn, fp, tn, n_boot=4000, rng=np.random.default_rng(0))
    assert result.low.shape == (3,)
    assert result.low[0] < 0.651 < result.high[0]
    assert result.estimate[1] < result.high[1] < 0  # estimate below 0, raw bounds too
    assert np.isnan(result.estimate[2]) and np.isnan(result.low[2])  # TPR = TNR = 1/2
    assert 1000 < result.n_undefined[2] < 3000


def test_labelled_bootstrap_agrees_with_scipy_bootstrap():
    """scipy.stats.bootstrap resamples each sample on its own: the labelled items (as cells)
    and the judged items, with the percentile method, as labelled_bootstrap does."""
    labelled = np.repeat([0, 1, 2, 3], [37, 1, 4, 8])  # tp, fn, fp, tn
    judged = np.repeat([1, 0], [300, 100])

    def corrected(cells, verdicts, axis=-1):
        tp, fn = (cells == 0).sum(axis), (cells == 1).sum(axis)
        fp, tn = (cells == 2).sum(axis), (cells == 3).sum(axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            return rogan_gladen_estimate(verdicts.mean(axis), tp / (tp + fn), tn / (fp + tn))

    with warnings.catch_warnings():
        # the few undefined (NaN) draws make scipy warn that its interval is degenerate
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap((labelled, judged), corrected, n_resamples=20000,
                                 method="percentile", random_state=np.random.default_rng(1),
                                 vectorized=True, batch=2000)
    # a few draws have TPR* + TNR* <= 1; both leave them out of the percentiles
    distribution = result.bootstrap_distribution
    reference = np.quantile(distribution[~np.isnan(distribution)], [0.025, 0.975])
    ours = labelled_bootstrap(*post_counts(), n_boot=20000, rng=np.random.default_rng(2))
    # TNR* takes only 13 values, so the lower percentile moves in steps of about 0.01 from
    # seed to seed; 0.02 is two such steps
    assert float(ours.low) == pytest.approx(reference[0], abs=0.02)
    assert float(ours.high) == pytest.approx(reference[1], abs=0.01)
    assert int(ours.n_undefined) == pytest.approx(np.isnan(distribution).sum(), abs=30)


def test_lang_reiczigel_on_the_post():
    result = lang_reiczigel(*post_counts())
    assert float(result.estimate) == pytest.approx((0.75 - 1 / 3) / (37 / 38 - 1 / 3))
    # computed step by step: q' = (300 + z^2/2) / (400 + z^2), TPR' = 38/40, TNR' = 9/14
    q_a, tpr_a, tnr_a = (300 + Z95 ** 2 / 2) / (400 + Z95 ** 2), 38 / 40, 9 / 14
    p_a = (q_a + tnr_a - 1) / (tpr_a + tnr_a - 1)
    se = math.sqrt(q_a * (1 - q_a) / (400 + Z95 ** 2) + tpr_a * (1 - tpr_a) / 40 * p_a ** 2
                   + tnr_a * (1 - tnr_a) / 14 * (1 - p_a) ** 2) / (tpr_a + tnr_a - 1)
    shift = 2 * Z95 ** 2 * (p_a * tpr_a * (1 - tpr_a) / 40 - (1 - p_a) * tnr_a * (1 - tnr_a) / 14)
    assert float(result.low) == pytest.approx(p_a + shift - Z95 * se, abs=1e-12)
    assert float(result.high) == pytest.approx(p_a + shift + Z95 * se, abs=1e-12)
    assert (float(result.low), float(result.high)) == pytest.approx((0.4438, 0.7995), abs=1e-4)


def test_lang_reiczigel_with_known_rates_is_the_agresti_coull_interval_mapped():
    # a million labels of each class: TPR and TNR are as good as known, the interval is the
    # Agresti-Coull interval of q put through the Rogan-Gladen formula
    tp, fn, tn, fp = 900_000, 100_000, 800_000, 200_000
    result = lang_reiczigel(150, 400, tp, fn, fp, tn)
    q_t = (150 + Z95 ** 2 / 2) / (400 + Z95 ** 2)
    half = Z95 * math.sqrt(q_t * (1 - q_t) / (400 + Z95 ** 2))
    expected = [(bound - 0.2) / 0.7 for bound in (q_t - half, q_t + half)]
    assert [float(result.low), float(result.high)] == pytest.approx(expected, abs=1e-4)


def test_lang_reiczigel_is_undefined_for_an_uninformative_judge():
    result = lang_reiczigel(50, 100, 3, 3, 3, 3)
    assert np.isnan(result.low) and np.isnan(result.estimate)


def test_ppi_equals_the_item_level_formula():
    """The ppi_py form: mean of the judge on unlabelled items + mean(y - f) on labelled ones,
    standard errors from population standard deviations."""
    rng = np.random.default_rng(3)
    y = rng.random(60) < 0.6
    f = np.where(rng.random(60) < 0.8, y, ~y)
    f_unlabelled = rng.random(500) < 0.62
    tp, fn = int((y & f).sum()), int((y & ~f).sum())
    fp, tn = int((~y & f).sum()), int((~y & ~f).sum())
    result = ppi(int(f_unlabelled.sum()), 500, tp, fn, fp, tn, level=0.9)
    estimate = f_unlabelled.mean() + (y.astype(float) - f).mean()
    se = math.sqrt(f_unlabelled.std() ** 2 / 500 + (y.astype(float) - f).std() ** 2 / 60)
    z = stats.norm.ppf(0.95)
    assert float(result.estimate) == pytest.approx(estimate, abs=1e-12)
    assert (float(result.low), float(result.high)) == pytest.approx(
        (estimate - z * se, estimate + z * se), abs=1e-12)

    tuned = ppi(int(f_unlabelled.sum()), 500, tp, fn, fp, tn, level=0.9, power_tuned=True)
    f_all = np.concatenate([f, f_unlabelled]).astype(float)
    lam = np.clip(np.mean((y - y.mean()) * (f - f.mean())) / ((1 + 60 / 500) * f_all.var()), 0, 1)
    estimate = lam * f_unlabelled.mean() + (y - lam * f).mean()
    se = math.sqrt(lam ** 2 * f_unlabelled.var() / 500 + (y - lam * f).var() / 60)
    assert float(tuned.estimate) == pytest.approx(estimate, abs=1e-12)
    assert float(tuned.high) == pytest.approx(estimate + z * se, abs=1e-12)


def test_bad_counts_are_refused_with_their_name():
    with pytest.raises(ValueError, match="need k <= n"):
        lang_reiczigel(5, 4, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="tp must hold non-negative whole counts"):
        lang_reiczigel(2, 4, -1, 1, 1, 1)
    with pytest.raises(ValueError, match="n_boot must be a positive integer"):
        jeffreys_bootstrap(*post_counts(), n_boot=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="level must be in"):
        ppi(5, 10, 1, 1, 1, 1, level=1.5)
