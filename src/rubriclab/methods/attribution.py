"""Which checks of a checklist do the work: Shapley credit, blame and unique catches.

A thin layer over carry's closed form (rubriclab.carry.attribution) and its rate intervals
(rubriclab.stats.intervals): it turns a long table of verdicts and a table of labels into the
fails matrix that code takes, and its results back into tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rubriclab.carry.aggregate import fails_any
from rubriclab.carry.attribution import shapley_attribution
from rubriclab.methods import tables
from rubriclab.methods.formatting import interval_text, level_text, percent, pipe_table
from rubriclab.methods.tables import InputError
from rubriclab.stats.intervals import RATE_METHOD, RATE_METHOD_TITLES, rate_interval

CHECK_COLUMNS = ["check_id", "credit", "blame", "unique_catches", "fail_counts"]
RATE_COLUMNS = ["rate", "count", "n", "estimate", "low", "high"]


@dataclass(frozen=True)
class Evidence:
    """Verdicts as a matrix: `fails[i, j]` is True where check j fails item i."""

    item_ids: list[str]
    check_ids: list[str]
    fails: np.ndarray   # bool (n_items x n_checks)
    flawed: np.ndarray  # bool (n_items,)


@dataclass(frozen=True)
class AttributionResult:
    """What `attribute` returns.

    checks: one row per check, in the order the verdicts first name them: check_id, credit
        (catch credit, summed over flawed items), blame (false-fail blame, over correct
        items), unique_catches (flawed items this check alone fails), fail_counts (items of
        either label it fails).
    rates: the rubric under all-must-pass (an item fails when any check fails it): rate
        ("correct passed", "flawed caught"), count, n, estimate (count / n) and the interval
        (low, high), all as fractions; the interval is `method` at `level`.
    """

    checks: pd.DataFrame
    rates: pd.DataFrame
    level: float
    method: str

    def markdown(self) -> str:
        check_rows = [[r.check_id, f"{r.credit:.2f}", f"{r.blame:.2f}", r.unique_catches,
                       r.fail_counts] for r in self.checks.itertuples(index=False)]
        rate_rows = [[r.rate, f"{r.count} of {r.n}", percent(r.estimate),
                      interval_text(r.low, r.high)] for r in self.rates.itertuples(index=False)]
        return "\n".join([
            *pipe_table(["check", "credit", "blame", "unique catches", "fails"], check_rows),
            "",
            *pipe_table(["rubric", "items", "rate",
                              f"{level_text(self.level)} interval "
                              f"({RATE_METHOD_TITLES[self.method]})"], rate_rows),
            "",
            f"Credit sums to {self.checks['credit'].sum():.2f} (flawed items caught), blame to "
            f"{self.checks['blame'].sum():.2f} (correct items failed).",
        ])


def attribute(verdicts: pd.DataFrame, labels: pd.DataFrame, *,
              level: float = 0.95) -> AttributionResult:
    """Shapley credit, blame and unique catches of every check, and the rubric's two rates.

    verdicts: one row per (item, check): ``item_id``, ``check_id``, ``verdict`` ("pass" or
        "fail"). Every item needs a verdict from every check.
    labels: one row per item: ``item_id``, ``label`` ("correct" or "flawed"). Every item of
        the verdicts needs a label, and every labelled item verdicts.
    level: of the rates' Clopper-Pearson intervals (the coverage study's choice for a single
        rate, docs/statistics.md).

    Aggregation is all-must-pass. Raises `InputError` naming the column at fault.
    """
    evidence = verdict_matrix(verdicts, labels)
    result = shapley_attribution(evidence.fails, evidence.flawed)
    failed = fails_any(evidence.fails)
    correct, flawed = ~evidence.flawed, evidence.flawed
    rows = []
    for rate, count, n in (("correct passed", int((~failed & correct).sum()), int(correct.sum())),
                           ("flawed caught", int((failed & flawed).sum()), int(flawed.sum()))):
        low, high = rate_interval(count, n, level) if n else (np.nan, np.nan)
        rows.append({"rate": rate, "count": count, "n": n,
                     "estimate": count / n if n else np.nan, "low": low, "high": high})
    return AttributionResult(result.to_frame(evidence.check_ids)[CHECK_COLUMNS],
                             pd.DataFrame(rows, columns=RATE_COLUMNS), level, RATE_METHOD)


def _every_item_in(ids: pd.Series, source, others: pd.Series, missing: str) -> None:
    """Raise InputError naming the first row of `source` whose item is not among `others`."""
    absent = ~ids.isin(set(others)).to_numpy()
    if absent.any():
        position = int(absent.nonzero()[0][0])
        raise InputError(source.name, "item_id",
                         f"{source.row(position)}: item {ids.iloc[position]!r} {missing}")


def verdict_matrix(verdicts: pd.DataFrame, labels: pd.DataFrame, *,
                   verdicts_name: str = "verdicts", labels_name: str = "labels") -> Evidence:
    """The long verdict table and the labels as a fails matrix (items x checks).

    Items follow the labels' order, checks the verdicts' first mention.
    """
    label_source = tables.require_columns(labels, ["item_id", "label"], labels_name)
    label_ids = tables.ids(labels, "item_id", label_source)
    flawed = tables.flawed_labels(labels, "label", label_source)
    tables.unique_rows(pd.DataFrame({"item_id": label_ids}), label_source, "item_id", "item")

    source = tables.require_columns(verdicts, ["item_id", "check_id", "verdict"], verdicts_name)
    item_ids = tables.ids(verdicts, "item_id", source)
    check_ids = tables.ids(verdicts, "check_id", source)
    passed = tables.verdicts(verdicts, "verdict", source)
    keys = pd.DataFrame({"item_id": item_ids, "check_id": check_ids})
    tables.unique_rows(keys, source, "check_id", "item and check")

    _every_item_in(item_ids, source, label_ids, f"has no row in {label_source.name}")
    _every_item_in(label_ids, label_source, item_ids, f"has no verdicts in {source.name}")

    checks = list(dict.fromkeys(check_ids))
    wide = (pd.DataFrame({"item_id": item_ids, "check_id": check_ids, "fails": ~passed})
            .pivot(index="item_id", columns="check_id", values="fails")
            .reindex(index=list(label_ids), columns=checks))
    if wide.isna().to_numpy().any():
        item, check = next((i, c) for i in wide.index for c in wide.columns
                           if pd.isna(wide.at[i, c]))
        raise InputError(source.name, "check_id",
                         f"no verdict of check {check!r} on item {item!r}: every item needs a "
                         "verdict from every check")
    return Evidence(list(label_ids), checks, wide.to_numpy(dtype=bool),
                    flawed.to_numpy(dtype=bool))
