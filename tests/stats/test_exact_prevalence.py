"""The guaranteed-coverage interval of the corrected pass rate (rubriclab.stats.exact_prevalence)
and truescore's delta-method interval as the coverage study computes it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from rubriclab.stats.coverage import VerifyCell, draw_verify
from rubriclab.stats.exact_prevalence import (clopper_pearson_rows, delta_method, exact_bounds,
                                              exact_projection)
from rubriclab.stats.prevalence import rogan_gladen_estimate

TUTORIAL = (116, 160, 27, 1, 3, 9)  # docs/tutorial.md, section 3
POST = (300, 400, 37, 1, 4, 8)  # verify's worked example


def random_counts(rng, size):
    n = rng.integers(1, 300, size)
    k = rng.integers(0, n + 1)
    n_pos, n_neg = rng.integers(0, 40, size), rng.integers(0, 40, size)
    tp, tn = rng.integers(0, n_pos + 1), rng.integers(0, n_neg + 1)
    return k, n, tp, n_pos - tp, n_neg - tn, tn


def test_it_lies_in_the_unit_interval_and_holds_the_clipped_estimate():
    k, n, tp, fn, fp, tn = random_counts(np.random.default_rng(3), 20_000)
    result = exact_projection(k, n, tp, fn, fp, tn)
    low, high = result.low, result.high
    assert np.all((0 <= low) & (low <= high) & (high <= 1))
    estimate = result.estimate
    inside = (estimate >= 0) & (estimate <= 1)  # False where NaN
    assert inside.sum() > 2000
    assert np.all((low[inside] - 1e-12 <= estimate[inside])
                  & (estimate[inside] <= high[inside] + 1e-12))


def test_an_estimate_outside_the_unit_interval_need_not_be_in_it_clipped():
    """TPR 4/4, TNR 3/28, the judge passing 5 of 26: q is below both TPR and 1 - TNR, so no
    rate in [0, 1] fits the point estimates (Rogan-Gladen says -6.5, shown as 0); the set
    keeps the rates some TPR and TNR in their intervals fit, near 1 (a judge near chance)."""
    r = exact_projection(5, 26, 4, 0, 25, 3)
    assert float(r.estimate) < 0 and float(r.low) > 0.5 and float(r.high) == 1.0


def test_it_narrows_with_more_labels():
    widths = []
    for factor in (1, 4, 16):
        k, n, tp, fn, fp, tn = POST
        r = exact_projection(k, n, tp * factor, fn * factor, fp * factor, tn * factor)
        widths.append(float(r.high - r.low))
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < 0.75 * widths[1]


def test_clopper_pearson_rows_are_scipys_exact_interval():
    for k, n in [(0, 5), (1, 5), (5, 5), (17, 40), (116, 160), (0, 1)]:
        ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        low, high = clopper_pearson_rows(k, n, 0.9)
        assert (float(low), float(high)) == pytest.approx((ci.low, ci.high), abs=1e-10)
    assert tuple(map(float, clopper_pearson_rows(0, 0, 0.9))) == (0.0, 1.0)


def test_with_a_known_perfect_judge_it_is_clopper_pearson_on_the_judged_rate():
    """Se = Sp = 1 known (a billion labels, all agreeing): the set is the Clopper-Pearson
    interval of k of n at level 1 - alpha/3, the judged rate's share of the error."""
    big = 10 ** 9
    for k, n in [(116, 160), (3, 40), (0, 25), (25, 25)]:
        r = exact_projection(k, n, big, 0, 0, big, level=0.95)
        ci = binomtest(k, n).proportion_ci(confidence_level=1 - 0.05 / 3, method="exact")
        assert (float(r.low), float(r.high)) == pytest.approx((ci.low, ci.high), abs=1e-6)


def test_it_is_the_projection_a_brute_force_grid_finds():
    """Independently: every p on a grid for which some (Se, Sp) on a grid of the two
    Clopper-Pearson boxes gives a q inside q's interval."""
    for counts in (TUTORIAL, POST, (30, 100, 4, 1, 2, 3), (90, 100, 2, 3, 9, 1)):
        k, n, tp, fn, fp, tn = counts
        share = 1 - 0.05 / 3
        e, f = (binomtest(k, n).proportion_ci(share, method="exact")[i] for i in (0, 1))
        se = binomtest(tp, tp + fn).proportion_ci(share, method="exact")
        sp = binomtest(tn, fp + tn).proportion_ci(share, method="exact")
        p = np.linspace(0, 1, 2001)[:, None, None]
        s_e = np.linspace(se.low, se.high, 101)[None, :, None]
        s_p = np.linspace(sp.low, sp.high, 101)[None, None, :]
        q = s_e * p + (1 - s_p) * (1 - p)
        inside = ((q >= e) & (q <= f)).any(axis=(1, 2))
        r = exact_projection(*counts)
        assert inside.any()
        assert float(r.low) == pytest.approx(p[inside].min(), abs=2e-3)
        assert float(r.high) == pytest.approx(p[inside].max(), abs=2e-3)


def exact_coverage(p, se, sp, m, n, level=0.95):
    """Coverage with no Monte Carlo error, independent design: the probability of every
    (n_pos, tp, tn, k) whose interval holds p."""
    total = 0.0
    ks = np.arange(n + 1)
    for n_pos in range(m + 1):
        n_neg = m - n_pos
        tp, tn = np.meshgrid(np.arange(n_pos + 1), np.arange(n_neg + 1), indexing="ij")
        tp, tn, k = tp[..., None], tn[..., None], ks
        low, high, _ = exact_bounds(k, n, tp, n_pos - tp, n_neg - tn, tn, level=level)
        q = se * p + (1 - sp) * (1 - p)
        weight = (binom.pmf(n_pos, m, p) * binom.pmf(tp, n_pos, se) * binom.pmf(tn, n_neg, sp)
                  * binom.pmf(k, n, q))
        total += float((weight * ((low <= p) & (p <= high))).sum())
    return total


@pytest.mark.parametrize("p,se,sp", [(0.1, 0.99, 0.99), (0.5, 0.6, 0.6), (0.9, 0.8, 0.6),
                                     (0.3, 0.99, 0.6), (0.02, 0.7, 0.95)])
def test_its_coverage_is_at_least_nominal_at_ten_labels_exactly(p, se, sp):
    assert exact_coverage(p, se, sp, m=10, n=20) >= 0.95


def test_a_seeded_simulation_of_a_tiny_subset_design_covers_at_least_nominal():
    """12 labelled among 30 judged (the labels inside the judged set), 4,000 studies."""
    rng = np.random.default_rng(11)
    for p, se, sp in [(0.2, 0.9, 0.7), (0.7, 0.75, 0.95)]:
        cell = VerifyCell(p, se, sp, m=12, n=30, design="subset")
        c = draw_verify(cell, 4000, rng)
        r = exact_projection(c["k"], c["n"], c["tp"], c["fn"], c["fp"], c["tn"])
        coverage = float(((r.low <= p) & (p <= r.high)).mean())
        assert coverage >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 4000)


def test_an_empty_set_becomes_the_least_contradicted_rate():
    # the judge passes 199 of 200 though it passes about half the human passes it saw
    low, high, empty = exact_bounds(199, 200, 50, 50, 0, 100)
    assert bool(empty) and float(low) == float(high) == 1.0
    low, high, empty = exact_bounds(*POST)
    assert not bool(empty) and float(low) < float(high)


def test_it_refuses_counts_that_are_not_counts():
    with pytest.raises(ValueError, match="tp must hold non-negative whole counts"):
        exact_projection(3, 10, -1, 2, 2, 2)
    with pytest.raises(ValueError, match="fn must hold non-negative whole counts"):
        exact_projection(3, 10, 1, 2.5, 2, 2)
    with pytest.raises(ValueError, match="need k <= n"):
        exact_projection(11, 10, 1, 2, 2, 2)
    with pytest.raises(ValueError, match="n .the judged items. must be at least 1"):
        exact_projection(0, 0, 1, 2, 2, 2)
    with pytest.raises(ValueError, match="level"):
        exact_projection(3, 10, 1, 2, 2, 2, level=1.5)


def test_the_delta_method_is_truescores():
    """truescore 0.7.4's rogan_gladen_estimate on the same items (run in a throw-away venv,
    `pip install truescore==0.7.4`; its interval is clipped to [0, 1], these are inside)."""
    for counts, (low, high) in [(TUTORIAL, (0.5016594601282274, 0.8283405398717727)),
                                (POST, (0.48265225583215055, 0.8187176071815477))]:
        r = delta_method(*counts)
        assert (float(r.low), float(r.high)) == pytest.approx((low, high), abs=1e-12)
        assert float(r.estimate) == pytest.approx(float(rogan_gladen_estimate(
            counts[0] / counts[1], counts[2] / (counts[2] + counts[3]),
            counts[5] / (counts[4] + counts[5]))))
    assert np.isnan(delta_method(50, 100, 3, 3, 3, 3).low)  # TPR + TNR = 1: no interval


def test_rubriclab_correct_shows_it_by_default_even_without_an_estimate():
    """The default of `correct` (docs/statistics.md): with TPR + TNR = 1 there is no
    Rogan-Gladen estimate, but the exact interval still holds its coverage and is shown."""
    from rubriclab.methods import correct_counts
    from rubriclab.methods.correction import CORRECT_METHOD
    from rubriclab.verify.calibration import Confusion

    assert CORRECT_METHOD == "exact"
    result = correct_counts(30, 40, Confusion(tp=5, fn=5, fp=5, tn=5),
                            labelled_in_judged=False, check_replicates=0)
    assert result.rogan_gladen.method == "exact" and result.rogan_gladen.estimate is None
    assert result.rogan_gladen.interval == pytest.approx((0.0, 1.0))
    assert result.flags == ("no estimate (TPR + TNR <= 1); the exact interval stands alone",)
    post = correct_counts(300, 400, Confusion(tp=37, fn=1, fp=4, tn=8), labelled_in_judged=True,
                          check_replicates=0)
    low, high = exact_projection(*POST).low, exact_projection(*POST).high
    assert post.rogan_gladen.interval == (float(low), float(high))
