"""Judge calibration against human labels, and the Rogan-Gladen corrected pass rate.

A judge is calibrated on a labeled slice: each item has a human verdict (pass/fail) and the
judge's verdict (pass/fail). Their cross-table gives the judge's true positive rate (TPR: the
share of human passes the judge passes) and true negative rate (TNR: the share of human fails
the judge fails). Agreement, the share of items where both agree, hides where the errors are;
TPR and TNR do not, and they are what corrects the judge's pass rate q on the full judged set:

    q = TPR * p + (1 - TNR) * (1 - p)   =>   p = (q - (1 - TNR)) / (TPR - (1 - TNR))

(Rogan and Gladen, 1978). With the verify post's numbers (TPR 37/38, TNR 8/12, q = 300/400)
p = (0.75 - 1/3) / (37/38 - 1/3) = 0.652.

Interval for the corrected pass rate
------------------------------------
The estimate combines three estimated rates: the judge's pass rate q on the judged set (k of
n) and its TPR and TNR on the labelled slice (tp of n_pos, tn of n_neg). Three interval methods
are implemented (rubriclab.stats.prevalence): the Lang-Reiczigel adjusted Wald interval (the
default), a Jeffreys parametric bootstrap over q, TPR and TNR (each drawn from Beta(x + 1/2,
n - x + 1/2), 10,000 draws, seed 0; the stage's first method), and a percentile bootstrap over
the labelled and judged items. The default was chosen by the coverage study
(benchmarks/coverage.py, docs/statistics.md): it keeps 93% coverage at nominal 95% in more of
the grid, at a smaller mean width. Bounds are kept raw (they may leave [0, 1]) and clipped for
display. Wilson intervals of q, TPR and TNR are reported alongside. Every interval is checked
by the same simulation at its own sizes and flagged when it does not keep its promise there
(`stability_flags`). Where the labelled slice is a random subset of the judged set (the post),
prediction-powered inference gives a second estimate of the human pass rate (`ppi_pass_rate`).
See docs/replication.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Literal, overload

import numpy as np
from scipy.stats import binomtest

from rubriclab.stats import exact_prevalence, prevalence
from rubriclab.stats.coverage import VerifyCell, verify_cell

# tpr + tnr must exceed 1 by more than this for the judge to count as informative; it absorbs
# float rounding in rates like 37/38 + 1/38 so that "exactly 1" is recognised as exactly 1.
INFORMATIVE_MARGIN = prevalence.INFORMATIVE_MARGIN

RGStatus = Literal["ok", "outside_unit_interval", "uninformative_judge"]


@dataclass(frozen=True)
class Confusion:
    """Human labels x judge verdicts on a labeled slice. "Positive" means pass.

    tp: human pass, judge pass    fn: human pass, judge fail
    fp: human fail, judge pass    tn: human fail, judge fail

    A rate whose denominator is zero (no human passes, or no human fails) is NaN.
    """

    tp: int
    fn: int
    fp: int
    tn: int

    def __post_init__(self) -> None:
        for name in ("tp", "fn", "fp", "tn"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"Confusion.{name} must be a non-negative integer, got {value!r}")

    @property
    def n_pos(self) -> int:
        """Human passes."""
        return self.tp + self.fn

    @property
    def n_neg(self) -> int:
        """Human fails."""
        return self.fp + self.tn

    @property
    def n(self) -> int:
        return self.n_pos + self.n_neg

    @property
    def tpr(self) -> float:
        """Share of human passes the judge passes (1 - false-fail rate)."""
        return self.tp / self.n_pos if self.n_pos else math.nan

    @property
    def tnr(self) -> float:
        """Share of human fails the judge fails (1 - false-pass rate)."""
        return self.tn / self.n_neg if self.n_neg else math.nan

    @property
    def agreement(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else math.nan

    @property
    def judge_pass_rate(self) -> float:
        return (self.tp + self.fp) / self.n if self.n else math.nan

    @property
    def human_pass_rate(self) -> float:
        return self.n_pos / self.n if self.n else math.nan

    def scaled(self, factor: int) -> Confusion:
        """The same rates on `factor` times as many labels."""
        return Confusion(self.tp * factor, self.fn * factor, self.fp * factor, self.tn * factor)

    def to_dict(self) -> dict[str, float | int]:
        return {**asdict(self), "n_pos": self.n_pos, "n_neg": self.n_neg, "n": self.n,
                "tpr": self.tpr, "tnr": self.tnr, "agreement": self.agreement}


def _as_bool(value: object, name: str, index: int) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(
        f"{name}[{index}] is {value!r}; verdicts must be True (pass) or False (fail) -- "
        "drop unparseable judge answers and count them before calibrating"
    )


def confusion_from_verdicts(human: Sequence[bool], judge: Sequence[bool]) -> Confusion:
    """Cross-tabulate human labels and judge verdicts, item by item (True = pass)."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human labels but {len(judge)} judge verdicts")
    tp = fn = fp = tn = 0
    for i, (h, j) in enumerate(zip(human, judge)):
        h, j = _as_bool(h, "human", i), _as_bool(j, "judge", i)
        if h and j:
            tp += 1
        elif h:
            fn += 1
        elif j:
            fp += 1
        else:
            tn += 1
    return Confusion(tp, fn, fp, tn)


@dataclass(frozen=True)
class RGResult:
    """A Rogan-Gladen estimate and what happened computing it.

    status "ok": `estimate` is in [0, 1] and `clipped == estimate`.
    status "outside_unit_interval": the observed q lies outside the range [1 - TNR, TPR] that a
        true rate in [0, 1] can produce (sampling noise, or rates that do not fit this set).
        `estimate` is the raw value, e.g. negative, and `clipped` is it clipped to [0, 1]. Both
        are kept on purpose: showing only the clipped 0 or 1 would hide that the correction
        does not fit the data; showing only the raw value would print an impossible rate.
    status "uninformative_judge": TPR + TNR <= 1, so the judge's verdicts carry no information
        about the true verdict (= 1) or invert it (< 1); no estimate exists (the formula's
        denominator is zero or flips sign). `estimate` and `clipped` are None.
    """

    q: float
    tpr: float
    tnr: float
    estimate: float | None
    clipped: float | None
    status: RGStatus
    message: str

    @property
    def defined(self) -> bool:
        return self.estimate is not None


def _check_rate(value: float, name: str) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be a rate in [0, 1], got {value!r}")
    return value


def rogan_gladen(q: float, tpr: float, tnr: float) -> RGResult:
    """Correct an observed pass rate q for a judge with the given TPR and TNR.

    p = (q - (1 - tnr)) / (tpr - (1 - tnr)). Never raises for valid rates and never clips
    silently; see `RGResult` for the three outcomes. A perfect judge (tpr = tnr = 1) returns q.
    Rates outside [0, 1] (or NaN) are an input error and raise ValueError.
    """
    q, tpr, tnr = _check_rate(q, "q"), _check_rate(tpr, "tpr"), _check_rate(tnr, "tnr")
    youden = tpr + tnr - 1.0
    if youden <= INFORMATIVE_MARGIN:
        relation = "carries no information about" if abs(youden) <= INFORMATIVE_MARGIN \
            else "inverts"
        return RGResult(
            q, tpr, tnr, None, None, "uninformative_judge",
            f"TPR + TNR = {tpr + tnr:.4g} <= 1: the judge {relation} the true verdict, so the "
            "pass rate cannot be corrected (the Rogan-Gladen estimate is undefined)",
        )
    raw = (q - (1.0 - tnr)) / youden
    if 0.0 <= raw <= 1.0:
        return RGResult(q, tpr, tnr, raw, raw, "ok", "")
    clipped = min(1.0, max(0.0, raw))
    return RGResult(
        q, tpr, tnr, raw, clipped, "outside_unit_interval",
        f"q = {q:.4g} lies outside [1 - TNR, TPR] = [{1 - tnr:.4g}, {tpr:.4g}]: the raw "
        f"estimate {raw:.4g} is not a rate; clipped to {clipped:g}",
    )


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k successes of n (NaNs for n = 0), by scipy.

    scipy.stats.binomtest(k, n).proportion_ci(method="wilson"); the ends at k = 0 and k = n are
    set to exactly 0 and 1 (scipy's are within rounding of them).
    """
    if n == 0:
        return (math.nan, math.nan)
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    low = 0.0 if k == 0 else max(0.0, float(ci.low))
    high = 1.0 if k == n else min(1.0, float(ci.high))
    return (low, high)


# The interval methods for the corrected pass rate (rubriclab.stats.prevalence), by the name a
# table shows. DEFAULT_METHOD is the one the coverage study (benchmarks/coverage.py,
# docs/statistics.md) found to keep its coverage where the others do not.
INTERVAL_METHODS = {
    "jeffreys_bootstrap": "Jeffreys parametric bootstrap over q, TPR and TNR",
    "labelled_bootstrap": "percentile bootstrap over labelled and judged items",
    "lang_reiczigel": "Lang-Reiczigel adjusted Wald interval",
    "exact": "exact projection interval (guaranteed coverage; docs/statistics.md)",
}
DEFAULT_METHOD = "lang_reiczigel"
BOOTSTRAPPED = ("jeffreys_bootstrap", "labelled_bootstrap")

# When an interval is flagged as unstable (see `stability_flags`): the share of undefined
# bootstrap draws above which the percentiles rest on a truncated distribution; the coverage
# below which an interval is said not to keep its promise (the 93% at nominal 95%,
# scaled for other levels), and how many simulated studies the check at the row's own sizes
# runs (Monte Carlo error about 0.006 at 95%).
UNDEFINED_DRAWS_FLAG = 0.05
UNDERCOVERAGE = 0.02  # flagged below level - 0.02
COVERAGE_CHECK_REPLICATES = 2000


@dataclass(frozen=True)
class CorrectedRate:
    """The judge's pass rate q, corrected with its TPR and TNR, with an interval.

    `interval` holds the raw bounds (which may leave [0, 1]); `interval_clipped` is it clipped
    to [0, 1]. For the bootstrap methods `n_undefined` draws (TPR* + TNR* <= 1) have no estimate
    and are left out of the percentiles, and `n_outside` of the defined draws fell outside
    [0, 1]. `interval` is None when the point estimate is undefined or every draw was.
    `flags` names each reason the interval is not to be trusted (`stability_flags`).
    """

    k_judged_pass: int
    n_judged: int
    confusion: Confusion
    rg: RGResult
    q_interval: tuple[float, float]
    tpr_interval: tuple[float, float]
    tnr_interval: tuple[float, float]
    interval: tuple[float, float] | None
    level: float
    method: str
    n_boot: int
    seed: int
    n_undefined: int
    n_outside: int
    design: str = "independent"
    check_coverage: float | None = None
    check_undefined: float | None = None
    check_replicates: int = 0
    flags: tuple[str, ...] = ()

    @property
    def q(self) -> float:
        return self.rg.q

    @property
    def tpr(self) -> float:
        return self.rg.tpr

    @property
    def tnr(self) -> float:
        return self.rg.tnr

    @property
    def estimate(self) -> float | None:
        """The raw Rogan-Gladen estimate (see `rg.status` before showing it)."""
        return self.rg.estimate

    @property
    def status(self) -> RGStatus:
        return self.rg.status

    @property
    def interval_clipped(self) -> tuple[float, float] | None:
        return _clipped(self.interval)

    @property
    def stable(self) -> bool:
        return not self.flags

    def to_dict(self) -> dict[str, object]:
        """One flat row for a results table."""
        clipped = self.interval_clipped
        return {
            "k_judged_pass": self.k_judged_pass, "n_judged": self.n_judged,
            "q": self.q, "q_low": self.q_interval[0], "q_high": self.q_interval[1],
            "tp": self.confusion.tp, "fn": self.confusion.fn,
            "fp": self.confusion.fp, "tn": self.confusion.tn,
            "tpr": self.tpr, "tpr_low": self.tpr_interval[0], "tpr_high": self.tpr_interval[1],
            "tnr": self.tnr, "tnr_low": self.tnr_interval[0], "tnr_high": self.tnr_interval[1],
            "agreement": self.confusion.agreement,
            "corrected": self.estimate, "corrected_clipped": self.rg.clipped,
            "status": self.status, "message": self.rg.message,
            "corrected_low": self.interval[0] if self.interval else None,
            "corrected_high": self.interval[1] if self.interval else None,
            "corrected_low_clipped": clipped[0] if clipped else None,
            "corrected_high_clipped": clipped[1] if clipped else None,
            "level": self.level, "method": self.method, "n_boot": self.n_boot,
            "seed": self.seed, "n_undefined": self.n_undefined, "n_outside": self.n_outside,
            "design": self.design, "check_coverage": self.check_coverage,
            "check_undefined": self.check_undefined, "check_replicates": self.check_replicates,
            "stable": self.stable, "interval_flags": "; ".join(self.flags),
        }


def corrected_pass_rate(
    k_judged_pass: int,
    n_judged: int,
    confusion: Confusion,
    *,
    method: str = DEFAULT_METHOD,
    n_boot: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
    labelled_in_judged: bool = False,
    check_replicates: int = COVERAGE_CHECK_REPLICATES,
) -> CorrectedRate:
    """Rogan-Gladen corrected pass rate of a judge that passed k of n, calibrated by `confusion`.

    method: one of INTERVAL_METHODS (rubriclab.stats.prevalence computes each). The bootstrap
    methods take n_boot draws from numpy's default_rng(seed); the Jeffreys bootstrap draws q*,
    TPR*, TNR* in that order, n_boot each, so its interval is reproducible bit for bit. Needs
    at least one human pass and one human fail label.

    labelled_in_judged: the labelled slice is a random subset of the judged set (the post's
    design) rather than apart from it. check_replicates: simulated studies of the coverage
    check at these sizes (`coverage_at_sizes`); 0 skips it.
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {', '.join(INTERVAL_METHODS)}")
    _check_judged(k_judged_pass, n_judged)
    if confusion.n_pos == 0 or confusion.n_neg == 0:
        raise ValueError(
            f"TPR and TNR need at least one human pass and one human fail label; the labeled "
            f"slice has {confusion.n_pos} passes and {confusion.n_neg} fails"
        )
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")

    rg = rogan_gladen(k_judged_pass / n_judged, confusion.tpr, confusion.tnr)
    counts = (k_judged_pass, n_judged, confusion.tp, confusion.fn, confusion.fp, confusion.tn)
    rng = np.random.default_rng(seed)
    if method == "jeffreys_bootstrap":
        result = prevalence.jeffreys_bootstrap(*counts, n_boot=n_boot, rng=rng, level=level,
                                               keep_draws=True)
    elif method == "labelled_bootstrap":
        result = prevalence.labelled_bootstrap(*counts, n_boot=n_boot, rng=rng, level=level,
                                               keep_draws=True)
    elif method == "exact":
        result = exact_prevalence.exact_projection(*counts, level=level)
    else:
        result = prevalence.lang_reiczigel(*counts, level=level)
    interval = None
    # the exact interval holds its coverage whatever the judge, so it stands without an estimate
    if (rg.defined or method == "exact") and not np.isnan(result.low):
        interval = (float(result.low), float(result.high))
    n_outside = 0
    if result.draws is not None:
        drawn = result.draws[~np.isnan(result.draws)]
        n_outside = int(((drawn < 0) | (drawn > 1)).sum())
    bootstrapped = method in BOOTSTRAPPED
    corrected = CorrectedRate(
        k_judged_pass=k_judged_pass, n_judged=n_judged, confusion=confusion, rg=rg,
        q_interval=wilson_interval(k_judged_pass, n_judged, level),
        tpr_interval=wilson_interval(confusion.tp, confusion.n_pos, level),
        tnr_interval=wilson_interval(confusion.tn, confusion.n_neg, level),
        interval=interval, level=level, method=method,
        n_boot=n_boot if bootstrapped else 0, seed=seed if bootstrapped else 0,
        n_undefined=int(result.n_undefined), n_outside=n_outside,
        design="subset" if labelled_in_judged else "independent",
    )
    if rg.defined and check_replicates:
        coverage, undefined = coverage_at_sizes(corrected, replicates=check_replicates,
                                                seed=seed)
        corrected = replace(corrected, check_coverage=coverage, check_undefined=undefined,
                            check_replicates=check_replicates)
    return replace(corrected, flags=stability_flags(corrected))


def coverage_at_sizes(corrected: CorrectedRate, *, replicates: int, seed: int,
                      ) -> tuple[float, float]:
    """(coverage, undefined share) of the interval's method in simulated studies of this size.

    The coverage study (rubriclab.stats.coverage) run on one cell: the world whose true pass
    rate is the clipped estimate and whose judge has the observed TPR and TNR, with this row's
    labelled slice, judged set and design. A study without an interval counts as not covering.
    It tells whether the method keeps its promise near these rates at these sizes.
    """
    confusion = corrected.confusion
    if corrected.rg.clipped is None:
        raise ValueError("the coverage check at these sizes needs a defined Rogan-Gladen "
                         "estimate (TPR + TNR > 1)")
    cell = VerifyCell(p=float(corrected.rg.clipped), tpr=corrected.tpr, tnr=corrected.tnr,
                      m=confusion.n, n=corrected.n_judged, design=corrected.design)
    (row,) = verify_cell(cell, replicates=replicates, n_boot=min(corrected.n_boot, 1000) or 1,
                         seed=seed, methods=(corrected.method,), level=corrected.level)
    return row["coverage"], row["undefined"]


def stability_flags(corrected: CorrectedRate) -> tuple[str, ...]:
    """Each reason the interval of `corrected` is uninformative or not to be trusted.

    - no interval: the judge is uninformative (TPR + TNR <= 1) or no draw was defined;
    - the raw interval is wider than the unit interval (it says nothing about the rate);
    - more than UNDEFINED_DRAWS_FLAG of the bootstrap draws were undefined;
    - the coverage check at the row's own sizes and rates (`coverage_at_sizes`) finds the
      method covering less than level - UNDERCOVERAGE (93% at 95%) of simulated studies;
    - the point estimate lies outside [0, 1] and is shown clipped.
    """
    flags = []
    if corrected.interval is None:
        flags.append("no interval (TPR + TNR <= 1)" if not corrected.rg.defined
                     else "no interval (every draw undefined)")
    else:
        low, high = corrected.interval
        if not corrected.rg.defined:
            flags.append("no estimate (TPR + TNR <= 1); the exact interval stands alone")
        if high - low > 1:
            flags.append(f"raw interval [{low:.3g}, {high:.3g}] wider than [0, 1]")
    if corrected.n_boot and corrected.n_undefined > UNDEFINED_DRAWS_FLAG * corrected.n_boot:
        flags.append(f"{100 * corrected.n_undefined / corrected.n_boot:.0f}% of draws undefined")
    floor = corrected.level - UNDERCOVERAGE
    if corrected.check_coverage is not None and corrected.check_coverage < floor:
        undefined = (f", {100 * corrected.check_undefined:.0f}% without one"
                     if corrected.check_undefined else "")
        flags.append(f"at {corrected.confusion.n} labels and {corrected.n_judged} judged, covers "
                     f"{100 * corrected.check_coverage:.0f}% of simulated studies{undefined} "
                     f"(below {100 * floor:.0f}%)")
    if corrected.status == "outside_unit_interval":
        flags.append("estimate outside [0, 1], shown clipped")
    return tuple(flags)


@dataclass(frozen=True)
class PPIRate:
    """Prediction-powered estimate of the human pass rate, with its normal interval.

    Uses the judge on the judged items without a human label (k_unlabelled passes of
    n_unlabelled) and the labelled slice's human and judge verdicts (rubriclab.stats.prevalence).
    `estimate`, `interval` are raw; the clipped forms are for display.
    """

    k_unlabelled: int
    n_unlabelled: int
    confusion: Confusion
    estimate: float
    interval: tuple[float, float]
    level: float
    power_tuned: bool

    @property
    def method(self) -> str:
        return "ppi_plus_plus" if self.power_tuned else "ppi"

    @property
    def clipped(self) -> float:
        return min(1.0, max(0.0, self.estimate))

    @property
    def interval_clipped(self) -> tuple[float, float]:
        return _clipped(self.interval)

    def to_dict(self) -> dict[str, object]:
        low, high = self.interval
        shown = self.interval_clipped
        return {"ppi": self.estimate, "ppi_clipped": self.clipped, "ppi_low": low,
                "ppi_high": high, "ppi_low_clipped": shown[0], "ppi_high_clipped": shown[1],
                "ppi_method": self.method, "ppi_k_unlabelled": self.k_unlabelled,
                "ppi_n_unlabelled": self.n_unlabelled}


def ppi_pass_rate(k_judged_pass: int, n_judged: int, confusion: Confusion, *,
                  level: float = 0.95, power_tuned: bool = False,
                  labelled_in_judged: bool = True) -> PPIRate:
    """PPI for a labelled slice that is a random subset of the judged set (as in the post),
    or, with labelled_in_judged=False, a random sample of the same population apart from it.

    The judge passed k_judged_pass of the n_judged items, the labelled ones included; the
    unlabelled items are the other n_judged - m, with k_judged_pass - (tp + fp) judge passes.
    Apart from it, every judged item is unlabelled.
    """
    _check_judged(k_judged_pass, n_judged)
    m = confusion.n
    if not labelled_in_judged:
        if m == 0:
            raise ValueError("PPI needs at least one labelled item")
        result = prevalence.ppi(k_judged_pass, n_judged, confusion.tp, confusion.fn,
                                confusion.fp, confusion.tn, level=level,
                                power_tuned=power_tuned)
        return PPIRate(k_judged_pass, n_judged, confusion, float(result.estimate),
                       (float(result.low), float(result.high)), level, power_tuned)
    judge_passes_labelled = confusion.tp + confusion.fp
    k_u, n_u = k_judged_pass - judge_passes_labelled, n_judged - m
    if m == 0 or n_u < 1 or not 0 <= k_u <= n_u:
        raise ValueError(
            f"PPI needs the {m} labelled items to be a subset of the {n_judged} judged ones and "
            f"at least one unlabelled item: the judge passed {k_judged_pass} judged items and "
            f"{judge_passes_labelled} labelled ones, leaving {k_u} of {n_u} unlabelled")
    result = prevalence.ppi(k_u, n_u, confusion.tp, confusion.fn, confusion.fp, confusion.tn,
                            level=level, power_tuned=power_tuned)
    return PPIRate(k_u, n_u, confusion, float(result.estimate),
                   (float(result.low), float(result.high)), level, power_tuned)


def _check_judged(k_judged_pass: int, n_judged: int) -> None:
    if not 0 <= k_judged_pass <= n_judged or n_judged == 0:
        raise ValueError(f"need 0 <= k_judged_pass <= n_judged and n_judged > 0, "
                         f"got {k_judged_pass} of {n_judged}")


@overload
def _clipped(interval: tuple[float, float]) -> tuple[float, float]: ...


@overload
def _clipped(interval: None) -> None: ...


def _clipped(interval: tuple[float, float] | None) -> tuple[float, float] | None:
    if interval is None:
        return None
    return (min(1.0, max(0.0, interval[0])), min(1.0, max(0.0, interval[1])))


# The worked example of the verify post: 50 hand-labeled replies (38 passes, 12 fails); the
# judge passes 37 of the 38 and 4 of the 12, and 300 of the 400 replies it grades.
POST_CONFUSION = Confusion(tp=37, fn=1, fp=4, tn=8)
POST_JUDGED = (300, 400)
