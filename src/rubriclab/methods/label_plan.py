"""How many more labels of each class bring the corrected pass rate's interval to a target width.

The corrected rate's interval (`rubriclab.methods.correction.correct_counts`, whose default
interval this plan follows) is wide mostly through the rate that rests on fewer labels: in
verify's worked example the TNR rests on 12 human fails, so "the next labels should go into
the failing class". This module turns that into numbers: from a pilot's labelled sample (its
TPR and TNR counts) and the judge's pass rate on the judged items, it finds how many more
human-pass and human-fail labels bring the interval's width (its raw bounds, before `correct`
clips them to [0, 1] for display, since a clipped width can shrink to nothing at an estimate
outside [0, 1]) to the target, choosing the split that needs the fewest labels in total.

It is a plan, not a guarantee: the width at the planned counts is computed at the pilot's
estimates (the planned labels are assumed to show the pilot's TPR and TNR exactly; between
whole counts the width is interpolated, see `_Search`); the labels actually drawn will show
other rates and give another width. The judged
set's size sets a floor under the width that no number of labels passes: a target below it is
answered "unreachable".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rubriclab.methods.correction import correct, correct_counts
from rubriclab.methods.formatting import level_text, pipe_table
from rubriclab.verify.calibration import INTERVAL_METHODS, Confusion, corrected_pass_rate

MAX_LABELS = 100_000  # per class, the most a plan may add (and the floor's stand-in)
PLAN_COLUMNS = ["plan", "more_pass", "more_fail", "more_total", "expected_width"]


@dataclass(frozen=True)
class LabelsNeededResult:
    """What `labels_needed` and `labels_needed_counts` return.

    pilot: the pilot's cross-table (pass = positive); k_judged_pass of n_judged: the judge's
        passes on the judged set; design: "subset" or "independent" (as `correct`).
    pilot_width: the interval's width now; floor_width: its width with the most labels the
        plan may add (`max_pass`, `max_fail` more of each class), near the floor the judged
        set's size sets.
    reachable: whether some plan reaches `target_width`; then more_pass and more_fail (human
        passes and human fails to label, beyond the pilot's) are the plan with the fewest
        labels in total, and planned_width its expected width. Unreachable: they are None.
    table: the plan beside its alternatives (every label in the passing class, every label
        in the failing class, labels drawn at random in the pilot's proportion): columns
        `plan`, `more_pass`, `more_fail`, `more_total`, `expected_width` (NaN where no plan of
        that kind reaches the target within the caps).
    """

    target_width: float
    level: float
    method: str
    design: str
    pilot: Confusion
    k_judged_pass: int
    n_judged: int
    pilot_width: float
    floor_width: float
    max_pass: int
    max_fail: int
    more_pass: int | None
    more_fail: int | None
    planned_width: float | None
    table: pd.DataFrame

    @property
    def reachable(self) -> bool:
        return self.more_pass is not None

    @property
    def message(self) -> str:
        if not self.reachable:
            return (f"The target width {_points(self.target_width)} is unreachable: with "
                    f"{self.max_pass} more passing and {self.max_fail} more failing labels "
                    f"the interval is still {_points(self.floor_width)} wide. The "
                    f"{self.n_judged} judged items set a floor under the width that labels "
                    "cannot pass: judge more items, or aim for a wider interval.")
        if self.more_pass == self.more_fail == 0:
            return (f"The pilot's interval is already {_points(self.pilot_width)} wide, within "
                    f"the target {_points(self.target_width)}: no more labels are needed.")
        assert self.more_fail is not None and self.more_pass is not None
        return (f"Label {self.more_pass} more human passes and {self.more_fail} more human "
                f"fails ({self.more_pass + self.more_fail} in all): at the pilot's TPR and TNR "
                f"the interval narrows from {_points(self.pilot_width)} to "
                f"{_points(self.planned_width)} (target {_points(self.target_width)}). A plan, "
                "not a guarantee: the new labels will show their own rates.")

    def markdown(self) -> str:
        rows = [[r.plan, _count(r.more_pass), _count(r.more_fail), _count(r.more_total),
                 "unreachable" if pd.isna(r.expected_width) else _points(r.expected_width)]
                for r in self.table.itertuples(index=False)]
        header = ["plan", "more passes", "more fails", "more labels",
                  f"expected {level_text(self.level)} width"]
        pilot = self.pilot
        notes = [f"Pilot: TPR {pilot.tp} of {pilot.n_pos}, TNR {pilot.tn} of {pilot.n_neg}; the "
                 f"judge passed {self.k_judged_pass} of {self.n_judged} judged items. "
                 f"Interval: {INTERVAL_METHODS.get(self.method, self.method)}; widths of its "
                 "raw bounds (before the clip to [0, 1]), in percentage points.",
                 self.message]
        return "\n".join([*pipe_table(header, rows), "", *notes])


def labels_needed(judged: pd.DataFrame, labeled: pd.DataFrame | None = None,
                  target_width: float | None = None, *, label_column: str = "human",
                  level: float = 0.95, method: str | None = None,
                  max_labels: int = MAX_LABELS) -> LabelsNeededResult:
    """The labels of each class that bring the corrected rate's interval to `target_width`.

    judged, labeled: the pilot, as `correct` reads them (the same columns and designs); with
        `labeled` None, the one-file form: `judged` holds the people's verdicts too, in
        `label_column`, filled for the labelled items only (`correct`, tables.one_file).
    target_width: the interval's width as a fraction (0.1 = ten percentage points); required.
    method: the interval (`correct`'s methods); None: `correct`'s default.
    max_labels: the most labels of either class a plan may add.
    Raises `InputError` for a malformed table, ValueError for a bad target.
    """
    if target_width is None:
        raise ValueError("labels_needed needs a target_width: the interval's width as a "
                         "fraction in (0, 1)")
    options: dict[str, Any] = {} if method is None else {"method": method}
    pilot = correct(judged, labeled, label_column=label_column, level=level,
                    check_replicates=0, **options)
    rg = pilot.rogan_gladen
    return labels_needed_counts(rg.k_judged_pass, rg.n_judged, rg.confusion,
                                labelled_in_judged=pilot.design == "subset",
                                target_width=target_width, level=level, method=method,
                                max_labels=max_labels)


def labels_needed_counts(k_judged_pass: int, n_judged: int, confusion: Confusion, *,
                         labelled_in_judged: bool, target_width: float, level: float = 0.95,
                         method: str | None = None, max_labels: int = MAX_LABELS
                         ) -> LabelsNeededResult:
    """`labels_needed` from counts, as `correct_counts` takes them.

    In the subset design the new labels come from the judged items not yet labelled, so a
    plan may add at most the human passes and fails the corrected rate expects among them
    (and leaves one item unlabelled, as PPI needs).
    """
    if not 0 < target_width < 1 or isinstance(target_width, bool):
        raise ValueError(f"target width must be a fraction in (0, 1), got {target_width!r}")
    if isinstance(max_labels, bool) or not isinstance(max_labels, int) or max_labels < 1:
        raise ValueError(f"max_labels must be a whole number >= 1, got {max_labels!r}")
    options: dict[str, Any] = {} if method is None else {"method": method}
    pilot = correct_counts(k_judged_pass, n_judged, confusion,
                           labelled_in_judged=labelled_in_judged, level=level,
                           check_replicates=0, **options)
    rg = pilot.rogan_gladen
    if rg.interval is None or rg.rg.clipped is None:
        raise ValueError(f"the pilot gives no corrected interval to plan for ({rg.rg.message}); "
                         "label more items until the judge's TPR + TNR is above 1")
    max_pass = max_fail = max_labels
    if labelled_in_judged:
        unlabelled = n_judged - confusion.n
        max_pass = min(max_labels, max(0, math.floor(rg.rg.clipped * n_judged) - confusion.n_pos))
        max_fail = min(max_labels,
                       max(0, math.floor((1 - rg.rg.clipped) * n_judged) - confusion.n_neg))
        if max_pass + max_fail >= unlabelled:  # PPI needs one judged item without a label
            if max_pass >= max_fail:
                max_pass = max(0, unlabelled - 1 - max_fail)
            else:
                max_fail = max(0, unlabelled - 1 - max_pass)
    search = _Search(k_judged_pass, n_judged, confusion, labelled_in_judged, level,
                     rg.method, target_width, max_pass, max_fail)
    pilot_width, floor_width = search.width(0, 0), search.width(max_pass, max_fail)
    pass_only = search.along(lambda t: (t, 0), max_pass)
    fail_only = search.along(lambda t: (0, t), max_fail)
    share = confusion.n_pos / confusion.n
    random = search.along_total(lambda t: (round(share * t), t - round(share * t)),
                                max_pass + max_fail)
    known: list[tuple[int, int]] = [(pass_only, 0)] if pass_only is not None else []
    known += [(0, fail_only)] if fail_only is not None else []
    known += [random] if random is not None else []
    best = search.fewest(known) if floor_width <= target_width else None
    rows = [("fewest labels", *(best or (None, None))),
            ("passing class only", pass_only, 0 if pass_only is not None else None),
            ("failing class only", 0 if fail_only is not None else None, fail_only),
            ("at random (pilot's proportion)", *(random or (None, None)))]
    table = pd.DataFrame([_row(name, more_pass, more_fail, search) for name, more_pass,
                          more_fail in rows], columns=PLAN_COLUMNS)
    table = table.astype({"more_pass": "Int64", "more_fail": "Int64", "more_total": "Int64"})
    return LabelsNeededResult(target_width, level, rg.method, pilot.design, confusion, k_judged_pass,
                     n_judged, pilot_width, floor_width, max_pass, max_fail,
                     best[0] if best else None, best[1] if best else None,
                     search.width(*best) if best else None, table)


class _Search:
    """The interval's expected width at planned counts, memoised, and the searches over it.

    The planned labels keep the pilot's TPR and TNR exactly: with a more passes the expected
    true positives are tp + a * TPR, rarely a whole number, so the width is interpolated
    (bilinearly, in the true positives and the true negatives) between the widths at the
    whole counts on either side. Rounding instead would make the width jump with the rounding
    and the search chase its luck."""

    def __init__(self, k: int, n: int, confusion: Confusion, subset: bool, level: float,
                 method: str, target: float, max_pass: int, max_fail: int):
        self.k, self.n, self.confusion, self.subset, self.level = k, n, confusion, subset, level
        self.method = method
        self.target, self.max_pass, self.max_fail = target, max_pass, max_fail
        self._widths: dict[tuple[int, int], float] = {}
        self._corners: dict[tuple[int, int, int, int], float] = {}

    def corner(self, tp: int, n_pos: int, tn: int, n_neg: int) -> float:
        key = (tp, n_pos, tn, n_neg)
        if key not in self._corners:
            # correct_counts' own interval (verify's corrected_pass_rate, the same default
            # method), without the PPI and the table it adds: the search asks many times
            raw = corrected_pass_rate(self.k, self.n, Confusion(tp, n_pos - tp, n_neg - tn, tn),
                                      method=self.method, level=self.level,
                                      labelled_in_judged=self.subset,
                                      check_replicates=0).interval
            self._corners[key] = math.inf if raw is None else raw[1] - raw[0]
        return self._corners[key]

    def width(self, more_pass: int, more_fail: int) -> float:
        key = (more_pass, more_fail)
        if key not in self._widths:
            c = self.confusion
            n_pos, n_neg = c.n_pos + more_pass, c.n_neg + more_fail
            tp, tn = c.tp + more_pass * c.tpr, c.tn + more_fail * c.tnr
            total = 0.0
            for tp_whole, tp_weight in _sides(tp):
                for tn_whole, tn_weight in _sides(tn):
                    total += tp_weight * tn_weight * self.corner(tp_whole, n_pos, tn_whole, n_neg)
            self._widths[key] = total
        return self._widths[key]

    def fits(self, more_pass: int, more_fail: int) -> bool:
        return self.width(more_pass, more_fail) <= self.target

    def along(self, point: Callable[[int], tuple[int, int]], most: int) -> int | None:
        """The smallest t in [0, most] with point(t) within the target (the width falls as
        labels are added): binary search; None if even point(most) is not within it."""
        if most < 0 or not self.fits(*point(most)):
            return None
        low, high = -1, most  # point(low) does not fit (or is before the range), point(high) does
        while high - low > 1:
            middle = (low + high) // 2
            if self.fits(*point(middle)):
                high = middle
            else:
                low = middle
        return high

    def along_total(self, point: Callable[[int], tuple[int, int]], most: int
                    ) -> tuple[int, int] | None:
        total = self.along(lambda t: _capped(point(t), self.max_pass, self.max_fail), most)
        return None if total is None else _capped(point(total), self.max_pass, self.max_fail)

    def best_split(self, total: int) -> tuple[int, int]:
        """The split of `total` more labels with the narrowest interval (ternary search: the
        width falls, then rises, as labels move from one class to the other)."""
        low, high = max(0, total - self.max_fail), min(total, self.max_pass)
        while high - low > 4:
            third = (high - low) // 3
            if self.width(low + third, total - low - third) <= \
                    self.width(high - third, total - high + third):
                high = high - third
            else:
                low = low + third
        a = min(range(low, high + 1), key=lambda a: (self.width(a, total - a), a))
        return a, total - a

    def fewest(self, known: list[tuple[int, int]]) -> tuple[int, int]:
        """The (more passes, more fails) of fewest labels in total that reach the target:
        the smallest total whose best split reaches it (binary search over totals; `known`
        plans, which reach it, bound the search from above)."""
        most = self.max_pass + self.max_fail  # (max_pass, max_fail) fits: floor <= target
        high = min((a + b for a, b in known), default=most)
        low = -1  # no plan of `low` labels reaches the target (0 is tried by the search)
        best = min([*known, (self.max_pass, self.max_fail)], key=lambda plan: sum(plan))
        while high - low > 1:
            middle = (low + high) // 2
            split = self.best_split(middle)
            if self.fits(*split):
                high, best = middle, split
            else:
                low = middle
        if sum(best) > high:
            best = self.best_split(high)
        return best


def _sides(count: float) -> list[tuple[int, float]]:
    """The whole counts on either side of `count` with their interpolation weights."""
    whole = math.floor(count + 1e-9)
    part = count - whole
    if part < 1e-9:
        return [(whole, 1.0)]
    return [(whole, 1.0 - part), (whole + 1, part)]


def _capped(point: tuple[int, int], max_pass: int, max_fail: int) -> tuple[int, int]:
    return min(point[0], max_pass), min(point[1], max_fail)


def _row(name: str, more_pass: int | None, more_fail: int | None, search: _Search) -> tuple:
    if more_pass is None or more_fail is None:
        return (name, None, None, None, math.nan)
    return (name, more_pass, more_fail, more_pass + more_fail, search.width(more_pass, more_fail))


def _points(width: float | None) -> str:
    return "n/a" if width is None or math.isinf(width) else f"{100 * width:.1f} points"


def _count(value) -> str:
    return "" if pd.isna(value) else str(int(value))
