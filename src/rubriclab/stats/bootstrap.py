"""The paired bootstrap over examples, as Algorithm 4 of the transfer work.

Algorithm 4 (transfer, Appendix D), "Paired bootstrap over examples":

    input: per-example records for all n examples, a procedure that computes every
           reported statistic and every paired difference from a set of records,
           B = 1000 replicates, seed 0
    1. compute the point estimates from all n records
    2. for b = 1..B:
         draw n records with replacement, ONE draw shared by every statistic in the replicate;
         recompute every statistic and difference on the draw; a statistic undefined on
         the draw is left out of its own percentiles
    3. return for each statistic its point estimate and the 2.5th and 97.5th percentiles
       of its replicates

Here the records stay with the caller: a statistic is a function of an array of unit
indices (positions 0..n_units-1 into the caller's records, with repeats) that returns a
number, or None / NaN where it is undefined on that draw (for example a mean over an empty
subset). The procedure, fixed so that intervals are reproducible bit for bit:

- generator: numpy.random.default_rng(seed);
- replicate b: indices = rng.integers(0, n_units, size=n_units), one call per replicate,
  in order b = 1..B; the same read-only array is passed to every statistic, in the order
  of the `statistics` mapping, so a paired difference and its two statistics see the same
  draw (see `difference`);
- the point estimate is each statistic on numpy.arange(n_units);
- interval: numpy.quantile (linear interpolation) at (1 - level)/2 and (1 + level)/2 over
  the replicates on which that statistic is defined; n_used counts them. A statistic
  undefined on every replicate gets NaN bounds.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import pandas as pd

Statistic = Callable[[np.ndarray], "float | None"]

BOOTSTRAP_COLUMNS = ["statistic", "estimate", "low", "high", "n_used", "B"]


def paired_bootstrap(
    n_units: int,
    statistics: Mapping[str, Statistic],
    *,
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """Point estimate and paired percentile interval of every statistic (Algorithm 4).

    Returns one row per statistic, in the mapping's order, with BOOTSTRAP_COLUMNS:
    estimate (on all n_units), low and high (percentiles at the given level over the
    replicates where the statistic is defined), n_used (that count) and B.
    """
    _check_level(level)
    estimates = point_estimates(n_units, statistics)
    replicates = replicate_values(n_units, statistics, B=B, seed=seed)
    rows = []
    for name in statistics:
        low, high, n_used = percentile_interval(replicates[name].to_numpy(), level)
        rows.append({"statistic": name, "estimate": estimates[name],
                     "low": low, "high": high, "n_used": n_used, "B": B})
    return pd.DataFrame(rows, columns=BOOTSTRAP_COLUMNS)


def difference(stat_a: Statistic, stat_b: Statistic) -> Statistic:
    """The paired difference stat_a - stat_b on the same draw; undefined if either is."""

    def paired_difference(indices: np.ndarray) -> float:
        a = _as_value(stat_a(indices), "difference (first)")
        b = _as_value(stat_b(indices), "difference (second)")
        return a - b  # NaN, i.e. undefined, when either side is

    return paired_difference


def point_estimates(n_units: int, statistics: Mapping[str, Statistic]) -> dict[str, float]:
    """Every statistic on the full sample (indices 0..n_units-1); NaN where undefined."""
    _check_statistics(statistics)
    everything = _read_only(np.arange(_checked_count(n_units, "n_units")))
    return {name: _as_value(statistic(everything), name) for name, statistic in statistics.items()}


def replicate_values(
    n_units: int, statistics: Mapping[str, Statistic], *, B: int = 1000, seed: int = 0,
) -> pd.DataFrame:
    """B rows (replicates) by one column per statistic; NaN where a statistic is undefined.

    Within a row every statistic saw the same draw of unit indices.
    """
    _check_statistics(statistics)
    names = list(statistics)
    values = np.full((_checked_count(B, "B"), len(names)), np.nan)
    for b, indices in enumerate(resample_indices(n_units, B, seed)):
        for column, name in enumerate(names):
            values[b, column] = _as_value(statistics[name](indices), name)
    return pd.DataFrame(values, columns=names).rename_axis("replicate")


def resample_indices(n_units: int, B: int, seed: int) -> Iterator[np.ndarray]:
    """The B draws of n_units indices with replacement, each a read-only array."""
    n_units, B = _checked_count(n_units, "n_units"), _checked_count(B, "B")
    rng = np.random.default_rng(seed)
    for _ in range(B):
        yield _read_only(rng.integers(0, n_units, size=n_units))


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float, int]:
    """(low, high, n_used): percentiles of the defined (non-NaN) values at `level`."""
    _check_level(level)
    defined = np.asarray(values, dtype=np.float64)
    defined = defined[~np.isnan(defined)]
    if defined.size == 0:
        return math.nan, math.nan, 0
    tail = (1 - level) / 2
    low, high = np.quantile(defined, [tail, 1 - tail])
    return float(low), float(high), int(defined.size)


def percentile_rows(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`percentile_interval` along the last axis of an array of replicates, vectorised.

    values: (..., B) with NaN for undefined replicates. Returns (low, high, n_used), each of
    shape (...): for every row the linear-interpolation percentiles of its defined values, as
    numpy.quantile gives them, and NaN bounds where a row has none.
    """
    _check_level(level)
    ordered = np.sort(np.asarray(values, dtype=np.float64), axis=-1)  # NaN sorts last
    n_used = np.sum(~np.isnan(ordered), axis=-1)
    tail = (1 - level) / 2
    bounds = []
    for share in (tail, 1 - tail):
        position = np.maximum(n_used - 1, 0) * share
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(n_used - 1, 0))
        fraction = position - below
        lower = np.take_along_axis(ordered, below[..., None], axis=-1)[..., 0]
        upper = np.take_along_axis(ordered, above[..., None], axis=-1)[..., 0]
        # numpy's own "linear" form, so that the bounds equal numpy.quantile's bit for bit
        value = np.where(fraction >= 0.5, upper - (upper - lower) * (1 - fraction),
                         lower + (upper - lower) * fraction)
        value = np.where(fraction == 0, lower, value)
        bounds.append(np.where(n_used > 0, value, np.nan))
    return bounds[0], bounds[1], n_used


def _as_value(result: Any, name: str) -> float:
    if result is None:
        return math.nan
    try:
        return float(result)
    except (TypeError, ValueError):
        raise TypeError(
            f"statistic {name!r} must return a number or None, got {result!r}") from None


def _read_only(indices: np.ndarray) -> np.ndarray:
    indices.flags.writeable = False
    return indices


def _check_statistics(statistics: Mapping[str, Statistic]) -> None:
    if not statistics:
        raise ValueError("the bootstrap needs at least one statistic")
    for name, statistic in statistics.items():
        if not isinstance(name, str):
            raise TypeError(f"statistic names must be strings, got {name!r}")
        if not callable(statistic):
            raise TypeError(f"statistic {name!r} is not callable")


def _checked_count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def ratio_bootstrap(
    numerators: np.ndarray,
    denominators: np.ndarray,
    *,
    B: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """Paired bootstrap of many ratio statistics at once, with the draws of `paired_bootstrap`.

    numerators, denominators: (n_units, n_statistics) arrays; statistic s on a draw is
    sum(numerators[draw, s]) / sum(denominators[draw, s]), undefined (left out of its own
    percentiles) where that denominator sum is 0. Every statistic sees the same draws as
    `paired_bootstrap(n_units, ..., B=B, seed=seed)` would give it, so intervals of rates of
    several rubrics on the same items are paired. Returns one row per statistic (column
    order) with "estimate", "low", "high", "n_used", "B".
    """
    _check_level(level)
    numerators = np.asarray(numerators, dtype=np.float64)
    denominators = np.asarray(denominators, dtype=np.float64)
    if numerators.shape != denominators.shape or numerators.ndim != 2:
        raise ValueError(f"numerators {numerators.shape} and denominators {denominators.shape} "
                         "must be 2-D arrays of the same shape (units x statistics)")
    n_units, n_statistics = numerators.shape
    with np.errstate(invalid="ignore", divide="ignore"):
        estimates = _ratio(numerators.sum(axis=0), denominators.sum(axis=0))
        replicates = np.empty((B, n_statistics))
        for b, indices in enumerate(resample_indices(n_units, B, seed)):
            replicates[b] = _ratio(numerators[indices].sum(axis=0),
                                   denominators[indices].sum(axis=0))
    rows = []
    for s in range(n_statistics):
        low, high, n_used = percentile_interval(replicates[:, s], level)
        rows.append({"estimate": estimates[s], "low": low, "high": high, "n_used": n_used, "B": B})
    return pd.DataFrame(rows, columns=["estimate", "low", "high", "n_used", "B"])


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan)
