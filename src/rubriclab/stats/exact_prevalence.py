"""An interval for the corrected pass rate whose coverage is guaranteed at every sample size.

The setting is rubriclab.stats.prevalence's: a judge passes k of n judged items; on a labelled
slice, tp of the tp + fn human passes pass the judge and tn of the fp + tn human fails fail it.
With true pass rate p, sensitivity Se (TPR) and specificity Sp (TNR), an item passes the judge
with probability q = Se p + (1 - Sp)(1 - p), and

    k ~ Binomial(n, q),   tp ~ Binomial(tp + fn, Se),   tn ~ Binomial(fp + tn, Sp).

`exact_projection` (method name "exact"): a Bonferroni projection of three exact intervals
(the test-inversion idea of Cai et al., J Appl Stat 2022, and of Reiczigel, Foldi and Ozsvari,
Epidemiol Infect 2010, with Clopper-Pearson tests and a Bonferroni split of the error):

1. Clopper-Pearson intervals at level 1 - alpha/3 each: [e, f] for q from k of n, [a, b] for
   Se from tp of tp + fn, [c, d] for Sp from tn of fp + tn (an interval of 0 of 0 is [0, 1]).
2. The confidence set is every p in [0, 1] that some (Se, Sp) in [a, b] x [c, d] maps to a q
   in [e, f]. For fixed p, q is increasing in Se and decreasing in Sp, so over the box it
   spans [h(p), g(p)] with h(p) = (1 - d) + (a + d - 1) p and g(p) = (1 - c) + (b + c - 1) p,
   and p is in the set iff g(p) >= e and h(p) <= f: two linear inequalities, so the set is an
   interval found in closed form (no grid, no optimiser; vectorised over replicates).

The guarantee: whenever the three intervals hold the true q, Se and Sp, the set holds the true
p; by Bonferroni that happens with probability at least 1 - alpha for every p, Se and Sp and
every n, tp + fn and fp + tn (each Clopper-Pearson interval covers at least 1 - alpha/3, and
the union bound needs no independence, so it holds when the labelled slice is part of the
judged set too). It holds conditionally on the slice's class counts, hence also unconditionally.

Where the set is empty (the judged pass rate lies beyond what any Se, Sp in their intervals can
produce; the data then contradict the model at the chosen level) the interval is the single
rate that contradicts it least, the p in [0, 1] maximising min(g(p) - e, f - h(p)); adding a
point to an empty set cannot lower the coverage. Cost: six beta quantiles per interval.

`delta_method` is truescore's interval (truescore 0.7.4, truescore/correct.py,
`rogan_gladen_estimate`): Rogan-Gladen with a delta-method normal interval treating the
three rates as independent, undefined where TPR + TNR <= 1 or a class has no label; the
coverage study compares it.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta

from rubriclab.stats.bootstrap import _check_level
from rubriclab.stats.prevalence import (Intervals, _check_counts, _rates, rogan_gladen_estimate,
                                        z_value)


def rate_level(level: float) -> float:
    """The level of each of the three rates' intervals: Bonferroni's 1 - (1 - level) / 3."""
    return 1 - (1 - level) / 3


def clopper_pearson_rows(successes, n, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson (low, high) for arrays of counts; [0, 1] where n = 0.

    The Beta-quantile form of scipy.stats.binomtest(k, n).proportion_ci(method="exact"):
    low = Beta(alpha/2; k, n - k + 1), high = Beta(1 - alpha/2; k + 1, n - k), with the
    ends 0 at k = 0 and 1 at k = n.
    """
    _check_level(level)
    k, n = np.broadcast_arrays(np.asarray(successes, dtype=np.float64),
                               np.asarray(n, dtype=np.float64))
    tail = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        low = np.where(k > 0, beta.ppf(tail, np.maximum(k, 1), n - k + 1), 0.0)
        high = np.where(k < n, beta.ppf(1 - tail, k + 1, np.maximum(n - k, 1)), 1.0)
    return low, high


def exact_bounds(k, n, tp, fn, fp, tn, *, level: float = 0.95
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, empty) of the projection interval (module doc); empty marks where the
    confidence set was empty and (low, high) is the least contradicted single rate."""
    _check_level(level)
    k, n, tp, fn, fp, tn = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64)
                                                 for v in (k, n, tp, fn, fp, tn)))
    share = rate_level(level)
    e, f = clopper_pearson_rows(k, n, share)
    a, b = clopper_pearson_rows(tp, tp + fn, share)
    c, d = clopper_pearson_rows(tn, fp + tn, share)
    # g(p) = (1 - c) + s p >= e   and   h(p) = (1 - d) + t p <= f
    s, r = b + c - 1.0, e - (1.0 - c)
    t, u = a + d - 1.0, f - (1.0 - d)
    low, high = np.zeros_like(s), np.ones_like(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(s > 0, np.maximum(low, r / np.where(s > 0, s, 1)), low)
        high = np.where(s < 0, np.minimum(high, r / np.where(s < 0, s, 1)), high)
        high = np.where(t > 0, np.minimum(high, u / np.where(t > 0, t, 1)), high)
        low = np.where(t < 0, np.maximum(low, u / np.where(t < 0, t, 1)), low)
    never = ((s == 0) & (r > 0)) | ((t == 0) & (u < 0))
    empty = never | (low > high)
    if empty.any():
        point = _least_contradicted(s, r, t, u)
        low = np.where(empty, point, low)
        high = np.where(empty, point, high)
    return low, high, empty


def _least_contradicted(s, r, t, u) -> np.ndarray:
    """argmax over p in [0, 1] of min(s p - r, u - t p): at an end or where the two cross."""
    with np.errstate(invalid="ignore", divide="ignore"):
        cross = np.where(s + t != 0, (r + u) / np.where(s + t != 0, s + t, 1), 0.0)
    candidates = np.stack([np.zeros_like(s), np.ones_like(s), np.clip(cross, 0, 1)], axis=-1)
    slack = np.minimum(s[..., None] * candidates - r[..., None],
                       u[..., None] - t[..., None] * candidates)
    best = np.argmax(slack, axis=-1)
    return np.take_along_axis(candidates, best[..., None], axis=-1)[..., 0]


def exact_projection(k, n, tp, fn, fp, tn, *, level: float = 0.95) -> Intervals:
    """The guaranteed-coverage interval (module doc) with the Rogan-Gladen estimate.

    Bounds lie in [0, 1]; the interval exists for any counts (with no label of a class its
    rate's interval is [0, 1], and the interval is as wide as that leaves it).
    """
    k, n, tp, fn, fp, tn, q, tpr, tnr = _rates(k, n, tp, fn, fp, tn)
    _check_counts(k, n, tp, fn, fp, tn)
    if np.any(n == 0):
        raise ValueError("n (the judged items) must be at least 1")
    low, high, _ = exact_bounds(k, n, tp, fn, fp, tn, level=level)
    return Intervals(rogan_gladen_estimate(q, tpr, tnr), low, high,
                     np.zeros(k.shape, dtype=np.int64), 0)


def delta_method(k, n, tp, fn, fp, tn, *, level: float = 0.95) -> Intervals:
    """truescore's delta-method interval (module doc); bounds raw (truescore clips them)."""
    k, n, tp, fn, fp, tn, q, tpr, tnr = _rates(k, n, tp, fn, fp, tn)
    _check_counts(k, n, tp, fn, fp, tn)
    estimate = rogan_gladen_estimate(q, tpr, tnr)
    youden = tpr + tnr - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (q * (1 - q) / n / youden ** 2
               + (estimate / youden) ** 2 * tpr * (1 - tpr) / (tp + fn)
               + ((1 - estimate) / youden) ** 2 * tnr * (1 - tnr) / (fp + tn))
        half = z_value(level) * np.sqrt(np.maximum(var, 0.0))
    exists = ~np.isnan(estimate)
    return Intervals(estimate, np.where(exists, estimate - half, np.nan),
                     np.where(exists, estimate + half, np.nan),
                     np.zeros(k.shape, dtype=np.int64), 0)
