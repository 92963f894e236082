"""Intervals for a judge's pass rate corrected by human labels: the methods the study compares.

The setting (verify, "Verifiers First, Rubrics Second"): a judge passes k of the n items of a
judged set; on a labelled slice a person's verdict and the judge's are cross-tabulated as
tp (both pass), fn (human pass, judge fail), fp (human fail, judge pass), tn (both fail).
TPR = tp / (tp + fn), TNR = tn / (fp + tn), q = k / n, and the Rogan-Gladen estimate of the
true pass rate is p = (q - (1 - TNR)) / (TPR + TNR - 1).

Every function here takes counts as numpy arrays (or scalars) that broadcast against each other,
so that one call computes the intervals of many replicates of a simulation at once
(rubriclab.stats.coverage) and the same code, on arrays of one element, gives the verify
table's interval (rubriclab.verify.calibration). Bounds are raw: they may leave [0, 1]; the
caller clips for display. NaN marks an interval that does not exist.

Methods (names as in `METHODS`):

- "jeffreys_bootstrap": q*, TPR*, TNR* drawn independently from their Jeffreys posteriors
  Beta(x + 1/2, n - x + 1/2), p* computed with the formula, the central percentile range of
  p* over the draws where TPR* + TNR* > 1 (the project's interval since the verify stage was
  written; see docs/replication.md).
- "labelled_bootstrap": the nonparametric percentile bootstrap: the labelled items resampled
  with replacement (a multinomial draw of the four cells), the judged set resampled
  (k* ~ Binomial(n, q)), p* as above; draws with no human pass or no human fail, or with
  TPR* + TNR* <= 1, are undefined and left out (the `judgy` package's approach, with q
  resampled too).
- "lang_reiczigel": the adjusted Wald interval of Lang and Reiczigel (2014, Preventive
  Veterinary Medicine 113:13-22): add z^2/2 successes and failures to the judged set and 1 to
  each cell count of TPR and TNR, a delta-method standard error of the adjusted estimate, and a
  shift of the centre that corrects the ratio's skew. Undefined when TPR + TNR <= 1.
- "ppi" and "ppi_plus_plus": prediction-powered inference (Angelopoulos et al., 2023, Science
  382:669) for the mean of the human verdict: the judge's pass rate on the judged items
  without a label, plus the mean of (human - judge) on the labelled items, with the normal
  interval from the two independent variances (population variances, as the ppi_py package);
  PPI++ (Angelopoulos, Duchi and Zrnic, 2023) scales the judge's part by the power-tuning
  lambda = Cov(human, judge) / ((1 + m / n_u) Var(judge)), clipped to [0, 1]. It needs the
  labelled items to be a random sample of the same population as the judged set (true when
  they are a random subset of it); it does not use TPR and TNR and is defined whenever m >= 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from rubriclab.stats.bootstrap import _check_level, _checked_count, percentile_rows

# TPR + TNR must exceed 1 by more than this for the judge to count as informative; it absorbs
# float rounding in rates like 37/38 + 1/38 so that "exactly 1" is recognised as exactly 1.
INFORMATIVE_MARGIN = 1e-12

METHODS = ("jeffreys_bootstrap", "labelled_bootstrap", "lang_reiczigel", "ppi", "ppi_plus_plus")
BOOTSTRAP_METHODS = ("jeffreys_bootstrap", "labelled_bootstrap")


@dataclass(frozen=True)
class Intervals:
    """Per-replicate results of one method; arrays of one shape.

    estimate: the method's point estimate (Rogan-Gladen for the Rogan-Gladen methods, the PPI
    estimate for PPI), raw, NaN where undefined. low, high: raw bounds, NaN where no interval
    exists. n_undefined / n_draws: bootstrap draws left out (zeros for closed-form methods).
    """

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_undefined: np.ndarray
    n_draws: int
    draws: np.ndarray | None = None  # the bootstrap draws (..., n_draws), when asked to keep


def z_value(level: float) -> float:
    _check_level(level)
    return float(norm.ppf(0.5 + level / 2))


def rogan_gladen_estimate(q, tpr, tnr):
    """p = (q - (1 - TNR)) / (TPR + TNR - 1), NaN where TPR + TNR <= 1 (or a rate is NaN)."""
    q, tpr, tnr = (np.asarray(v, dtype=np.float64) for v in (q, tpr, tnr))
    youden = tpr + tnr - 1.0
    informative = youden > INFORMATIVE_MARGIN
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(informative, (q - (1.0 - tnr)) / np.where(informative, youden, 1.0),
                        np.nan)


def _rates(k, n, tp, fn, fp, tn):
    k, n, tp, fn, fp, tn = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64)
                                                 for v in (k, n, tp, fn, fp, tn)))
    with np.errstate(invalid="ignore", divide="ignore"):
        q = k / n
        tpr = np.where(tp + fn > 0, tp / np.where(tp + fn > 0, tp + fn, 1), np.nan)
        tnr = np.where(fp + tn > 0, tn / np.where(fp + tn > 0, fp + tn, 1), np.nan)
    return k, n, tp, fn, fp, tn, q, tpr, tnr


def jeffreys_bootstrap(k, n, tp, fn, fp, tn, *, n_boot: int, rng: np.random.Generator,
                       level: float = 0.95, keep_draws: bool = False) -> Intervals:
    """The parametric bootstrap over Jeffreys posteriors of q, TPR and TNR (see module doc).

    Draws, in this order and with array shape (..., n_boot): q*, then TPR*, then TNR*, so that
    with scalar counts and default_rng(seed) the draws are those of
    rng.beta(k + 1/2, n - k + 1/2, size=n_boot) and so on.
    """
    k, n, tp, fn, fp, tn, q, tpr, tnr = _rates(k, n, tp, fn, fp, tn)
    _check_counts(k, n, tp, fn, fp, tn)
    shape = k.shape + (_checked_count(n_boot, "n_boot"),)
    q_star = rng.beta((k + 0.5)[..., None], (n - k + 0.5)[..., None], size=shape)
    tpr_star = rng.beta((tp + 0.5)[..., None], (fn + 0.5)[..., None], size=shape)
    tnr_star = rng.beta((tn + 0.5)[..., None], (fp + 0.5)[..., None], size=shape)
    p_star = rogan_gladen_estimate(q_star, tpr_star, tnr_star)
    # no TPR (or TNR) without a human pass (fail): every draw is then undefined
    p_star[~((tp + fn > 0) & (fp + tn > 0))] = np.nan
    return _bootstrap_result(rogan_gladen_estimate(q, tpr, tnr), p_star, level, keep_draws)


def labelled_bootstrap(k, n, tp, fn, fp, tn, *, n_boot: int, rng: np.random.Generator,
                       level: float = 0.95, keep_draws: bool = False) -> Intervals:
    """The nonparametric percentile bootstrap over labelled items and judged items."""
    k, n, tp, fn, fp, tn, q, tpr, tnr = _rates(k, n, tp, fn, fp, tn)
    _check_counts(k, n, tp, fn, fp, tn)
    n_boot = _checked_count(n_boot, "n_boot")
    m = tp + fn + fp + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        cells = np.stack([tp, fn, fp, tn], axis=-1) / np.where(m > 0, m, 1)[..., None]
    cells[m == 0] = 0.25  # no labels: every draw is undefined below, whatever it draws
    drawn = rng.multinomial(m.astype(np.int64)[..., None], cells[..., None, :],
                            size=k.shape + (n_boot, ))
    k_star = rng.binomial(n.astype(np.int64)[..., None], np.nan_to_num(q)[..., None],
                          size=k.shape + (n_boot,))
    tp_s, fn_s, fp_s, tn_s = (drawn[..., i].astype(np.float64) for i in range(4))
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr_star = np.where(tp_s + fn_s > 0, tp_s / (tp_s + fn_s), np.nan)
        tnr_star = np.where(fp_s + tn_s > 0, tn_s / (fp_s + tn_s), np.nan)
    p_star = rogan_gladen_estimate(k_star / n[..., None], tpr_star, tnr_star)
    return _bootstrap_result(rogan_gladen_estimate(q, tpr, tnr), p_star, level, keep_draws)


def lang_reiczigel(k, n, tp, fn, fp, tn, *, level: float = 0.95) -> Intervals:
    """The Lang-Reiczigel adjusted interval (see module doc); estimate is Rogan-Gladen's."""
    k, n, tp, fn, fp, tn, q, tpr, tnr = _rates(k, n, tp, fn, fp, tn)
    _check_counts(k, n, tp, fn, fp, tn)
    z = z_value(level)
    n_pos, n_neg = tp + fn + 2.0, fp + tn + 2.0
    q_a = (k + z * z / 2) / (n + z * z)
    tpr_a = (tp + 1.0) / n_pos
    tnr_a = (tn + 1.0) / n_neg
    youden_a = tpr_a + tnr_a - 1.0
    p_a = rogan_gladen_estimate(q_a, tpr_a, tnr_a)
    with np.errstate(invalid="ignore"):
        se = np.sqrt(q_a * (1 - q_a) / (n + z * z) + tpr_a * (1 - tpr_a) / n_pos * p_a ** 2
                     + tnr_a * (1 - tnr_a) / n_neg * (1 - p_a) ** 2) / np.abs(youden_a)
    shift = 2 * z * z * (p_a * tpr_a * (1 - tpr_a) / n_pos
                         - (1 - p_a) * tnr_a * (1 - tnr_a) / n_neg)
    estimate = rogan_gladen_estimate(q, tpr, tnr)
    exists = ~np.isnan(estimate) & ~np.isnan(p_a)
    low = np.where(exists, p_a + shift - z * se, np.nan)
    high = np.where(exists, p_a + shift + z * se, np.nan)
    return Intervals(estimate, low, high, np.zeros(k.shape, dtype=np.int64), 0)


def ppi(k_unlabelled, n_unlabelled, tp, fn, fp, tn, *, level: float = 0.95,
        power_tuned: bool = False) -> Intervals:
    """Prediction-powered estimate and normal interval of the human pass rate.

    k_unlabelled of n_unlabelled: the judge's passes on the judged items that carry no human
    label (in the subset design, the judged set less the labelled slice). The labelled slice's
    cells give the human verdict y and the judge's f on each of its m items.
    power_tuned: PPI++ (lambda estimated and clipped to [0, 1]) instead of PPI (lambda = 1).
    """
    k_u, n_u, tp, fn, fp, tn = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in
                                                     (k_unlabelled, n_unlabelled, tp, fn, fp, tn)))
    _check_counts(k_u, n_u, tp, fn, fp, tn)
    z = z_value(level)
    m = tp + fn + fp + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        f_u = k_u / n_u
        y_l = (tp + fn) / m
        f_l = (tp + fp) / m
        var_f_u = f_u * (1 - f_u)
        if power_tuned:
            cov_yf = tp / m - y_l * f_l
            f_all = (k_u + tp + fp) / (n_u + m)
            var_f_all = f_all * (1 - f_all)
            lam = np.where(var_f_all > 0, cov_yf / ((1 + m / n_u) * np.where(var_f_all > 0,
                                                                            var_f_all, 1)), 0.0)
            lam = np.clip(lam, 0.0, 1.0)
        else:
            lam = np.ones_like(m)
        # per labelled item, y - lam f takes the values 1 - lam (tp), 1 (fn), -lam (fp), 0 (tn)
        rect = (tp * (1 - lam) + fn - fp * lam) / m
        rect_sq = (tp * (1 - lam) ** 2 + fn + fp * lam ** 2) / m
        var_rect = np.maximum(rect_sq - rect ** 2, 0.0)
        estimate = lam * f_u + rect
        se = np.sqrt(lam ** 2 * var_f_u / n_u + var_rect / m)
    exists = (m > 0) & (n_u > 0)
    estimate = np.where(exists, estimate, np.nan)
    low = np.where(exists, estimate - z * se, np.nan)
    high = np.where(exists, estimate + z * se, np.nan)
    return Intervals(estimate, low, high, np.zeros(k_u.shape, dtype=np.int64), 0)


def _bootstrap_result(estimate: np.ndarray, p_star: np.ndarray, level: float,
                      keep_draws: bool) -> Intervals:
    low, high, n_used = percentile_rows(p_star, level)
    low = np.where(np.isnan(estimate), np.nan, low)  # no interval around no estimate
    high = np.where(np.isnan(estimate), np.nan, high)
    return Intervals(estimate, low, high, p_star.shape[-1] - n_used, p_star.shape[-1],
                     p_star if keep_draws else None)


def _check_counts(*arrays: np.ndarray) -> None:
    names = ("k", "n", "tp", "fn", "fp", "tn")
    for name, values in zip(names, arrays):
        if np.any(values < 0) or np.any(values != np.floor(values)):
            raise ValueError(f"{name} must hold non-negative whole counts, got {values!r}")
    if np.any(arrays[0] > arrays[1]):
        raise ValueError(f"need k <= n, got k={arrays[0]!r}, n={arrays[1]!r}")
