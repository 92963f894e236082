"""Intervals for one rate (successes of n), and the flags a table prints beside an interval.

Single rates. carry reports every rate of a rubric state (correct passed, flawed caught,
unplanned caught) over a fixed set of labelled items. The coverage study (docs/statistics.md,
"carry: single rates") measured carry's percentile bootstrap over items at the sizes the
tables use (8 and 12 unplanned reports, 24 to 72 correct or flawed ones) and found it far
short of 95% near 0 and 1 (when every item passes, every resample does, and the interval is
[100, 100]); `RATE_METHOD` is the binomial interval the study chose instead.
`binomial_interval` is scipy's: Clopper-Pearson and Wilson from
`scipy.stats.binomtest(k, n).proportion_ci` ("exact", "wilson"), Jeffreys from the
Beta(k + 1/2, n - k + 1/2) quantiles with the ends at k = 0 and k = n set to 0 and 1 (Brown,
Cai and DasGupta 2001).

Flags. An interval that says less than a 95% interval should is marked in the table cell,
and the table adds a footnote line per marker it shows (`flag_footnotes`):

- AT_BOUND: the estimate is at an end of its range (a rate of 0% or 100%): the interval is
  one-sided, and is the only part of the cell that says how far from 0 or 100 the rate may be;
- ZERO_WIDTH: the interval has no width as printed (e.g. a bootstrap whose every resample gave
  the same value, [100, 100] or [0.00, 0.00]): it says nothing about the spread;
- FEW_ITEMS: the interval rests on fewer units than the coverage study found enough for the
  method to hold 93% coverage (`held_from`, e.g. transfer's Algorithm 4 below
  TRANSFER_HELD_FROM examples).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import lru_cache

import numpy as np
from scipy.stats import beta, binomtest

RATE_METHODS = ("clopper_pearson", "wilson", "jeffreys")
# chosen by the coverage study (docs/statistics.md, "What the study decided", carry)
RATE_METHOD = "clopper_pearson"
RATE_METHOD_TITLES = {"clopper_pearson": "Clopper-Pearson", "wilson": "Wilson",
                      "jeffreys": "Jeffreys"}

# The fewest examples from which transfer's Algorithm 4 (percentile bootstrap over examples)
# held 93% coverage in every world of the coverage study, at that size and every larger one
# studied (docs/statistics.md, "transfer").
TRANSFER_HELD_FROM = 35

AT_BOUND, ZERO_WIDTH, FEW_ITEMS = "†", "§", "‡"
MARKERS = (AT_BOUND, ZERO_WIDTH, FEW_ITEMS)


def binomial_interval(successes: int, n: int, method: str = RATE_METHOD,
                      level: float = 0.95) -> tuple[float, float]:
    """(low, high) of the rate successes / n as fractions in [0, 1]; (NaN, NaN) for n = 0."""
    _check_method(method)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    k, n = _count(successes, "successes"), _count(n, "n")
    if k > n:
        raise ValueError(f"need successes <= n, got successes={k}, n={n}")
    if n == 0:
        return math.nan, math.nan
    return _interval(k, n, method, float(level))


@lru_cache(maxsize=65536)  # the coverage study asks the same few (k, n) pairs many times
def _interval(k: int, n: int, method: str, level: float) -> tuple[float, float]:
    if method == "jeffreys":
        tail = (1 - level) / 2
        low = 0.0 if k == 0 else float(beta.ppf(tail, k + 0.5, n - k + 0.5))
        high = 1.0 if k == n else float(beta.ppf(1 - tail, k + 0.5, n - k + 0.5))
        return low, high
    ci = binomtest(k, n).proportion_ci(confidence_level=level,
                                       method="exact" if method == "clopper_pearson"
                                       else "wilson")
    # the ends at k = 0 and k = n are exactly 0 and 1 (scipy's Wilson ones are within rounding)
    low = 0.0 if k == 0 else min(max(float(ci.low), 0.0), 1.0)
    high = 1.0 if k == n else min(max(float(ci.high), 0.0), 1.0)
    return low, high


def binomial_intervals(successes, n, method: str = RATE_METHOD,
                       level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """`binomial_interval` element-wise over arrays of counts (each distinct pair once)."""
    successes, n = np.broadcast_arrays(np.asarray(successes), np.asarray(n))
    low, high = np.full(successes.shape, math.nan), np.full(successes.shape, math.nan)
    cache: dict[tuple[int, int], tuple[float, float]] = {}
    for index in np.ndindex(successes.shape):
        key = (successes[index], n[index])
        if key not in cache:
            cache[key] = binomial_interval(key[0], key[1], method, level)
        low[index], high[index] = cache[key]
    return low, high


def rate_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The interval of a single rate (carry's rate rows): `RATE_METHOD` at `level`."""
    return binomial_interval(successes, n, RATE_METHOD, level)


# --- flags ------------------------------------------------------------------------------------

def interval_flags(estimate, low, high, *, bounds: tuple[float, float] | None = None,
                   n: int | None = None, held_from: int | None = None,
                   decimals: int | None = None) -> str:
    """The markers (in MARKERS order, "" for none) an interval's cell gets.

    bounds: the range of the estimate (carry's percents: (0, 100)), for AT_BOUND; n and
    held_from: the interval's units and the fewest with which its method held coverage, for
    FEW_ITEMS; decimals: the cell prints its bounds to that many places, so that bounds
    printed alike count as ZERO_WIDTH too. A missing estimate or bound gets no marker (the
    cell prints "n/a")."""
    values = [_number(v) for v in (estimate, low, high)]
    if any(v is None or math.isnan(v) for v in values):
        return ""
    estimate, low, high = values
    marks = []
    if bounds is not None and estimate in bounds:
        marks.append(AT_BOUND)
    if high == low or (decimals is not None and round(low, decimals) == round(high, decimals)):
        marks.append(ZERO_WIDTH)
    if held_from is not None and n is not None and not _is_missing(n) and int(n) < held_from:
        marks.append(FEW_ITEMS)
    return "".join(marks)


def flag_notes(method: str | None = None, held_from: int | None = None,
               units: str = "items") -> dict[str, str]:
    """The footnote text of each marker; `method` names the interval the table shows."""
    interval = f"the {method} interval" if method else "the interval"
    return {
        AT_BOUND: (f"{AT_BOUND} the rate is 0% or 100% (every one of its {units} went the same "
                   f"way): {interval} is one-sided, and only its other end says how far from "
                   "0 or 100 the rate may be."),
        ZERO_WIDTH: (f"{ZERO_WIDTH} the interval has zero width as printed (e.g. every "
                     "bootstrap resample gave the same value): it says nothing about the spread "
                     "and is not a 95% interval."),
        FEW_ITEMS: (f"{FEW_ITEMS} fewer than {held_from if held_from is not None else 'enough'} "
                    f"{units}: in the coverage study (docs/statistics.md) the percentile "
                    "bootstrap covered less than 93% at this size, so the interval is likely "
                    "too narrow."),
    }


def flag_footnotes(cells: Iterable[object], notes: Mapping[str, str]) -> list[str]:
    """The footnote lines (in MARKERS order) of the markers that occur in `cells`; [] if none.
    Each line is followed by an empty one, so that markdown keeps them apart."""
    text = "".join(str(cell) for cell in cells)
    return [line for marker in MARKERS if marker in text for line in (notes[marker], "")]


# carry: rates in percent, intervals by RATE_METHOD
RATE_TITLE = RATE_METHOD_TITLES[RATE_METHOD]


def rate_flags(value, low, high) -> str:
    """The markers of a carry rate's interval (percents): AT_BOUND at 0 or 100, ZERO_WIDTH."""
    return interval_flags(value, low, high, bounds=(0.0, 100.0), decimals=1)


def rate_footnotes(cells: Iterable[object], units: str = "items") -> list[str]:
    """The footnote lines of the markers in a carry table's interval cells."""
    return flag_footnotes(cells, flag_notes(RATE_TITLE, units=units))


def _check_method(method: str) -> None:
    if method not in RATE_METHODS:
        raise ValueError(f"unknown interval method {method!r}; methods: {', '.join(RATE_METHODS)}")


def _count(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a count, got {value!r}")
    number = float(value)
    if math.isnan(number) or number < 0 or not number.is_integer():
        raise ValueError(f"{name} must be a count (a whole number >= 0), got {value!r}")
    return int(number)


def _number(value) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# transfer: Algorithm 4's percentile intervals over examples

def algorithm4_flags(estimate, low, high, n_examples) -> str:
    """The markers of an Algorithm 4 interval: ZERO_WIDTH, and FEW_ITEMS below
    TRANSFER_HELD_FROM examples."""
    return interval_flags(estimate, low, high, n=n_examples, held_from=TRANSFER_HELD_FROM,
                          decimals=2)


def algorithm4_footnotes(cells: Iterable[object]) -> list[str]:
    """The footnote lines of the markers in a transfer table's cells."""
    return flag_footnotes(cells, flag_notes("Algorithm 4", held_from=TRANSFER_HELD_FROM,
                                            units="examples"))
