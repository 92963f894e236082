"""The attribution table of one checklist: Shapley credit, blame and unique catches per check.

From Figure 2's verdicts (rubriclab.carry.judge_fig2): the per-check verdicts of the checklist's
judged checks (positions 1 .. the longest length) on the evaluation items, one attribution per
run (rubriclab.carry.attribution), the markdown table their mean over runs. An item with an
unparseable verdict on a judged check has no failing set and is left out of its run, counted.
Check ids are the checklist's own, so a checklist of your own shows the names you gave it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rubriclab.carry.aggregate import fails_any, validate_verdicts
from rubriclab.carry.attribution import shapley_attribution
from rubriclab.carry.checklists import Checklist
from rubriclab.tidy import markdown_table

TABLE_COLUMNS = ["run", "position", "check_id", "text", "credit", "blame", "unique_catches",
                 "fail_counts", "n_correct", "n_flawed", "correct_passed", "flawed_caught",
                 "n_left_out"]


def checklist_attribution(verdicts: pd.DataFrame, checklist: Checklist) -> pd.DataFrame:
    """One row per run and judged check, in TABLE_COLUMNS; rates are fractions of the run's
    determined items (n_correct, n_flawed), n_left_out the items left out."""
    validate_verdicts(verdicts)
    per_check = verdicts[verdicts["rendering"] == "per_check"]
    if per_check.empty:
        raise ValueError("no per-check verdicts: the attribution needs one verdict per check")
    positions = sorted(per_check["length"].unique())
    checks = checklist.prefix(int(max(positions))).checks
    expected = [c.id for c in checks]
    judged = per_check.drop_duplicates("length").set_index("length")["check_id"]
    for position, check_id in judged.items():
        if expected[position - 1] != check_id:
            raise ValueError(f"position {position} holds verdicts of check {check_id!r}, but "
                             f"the checklist's check there is {expected[position - 1]!r}")
    rows = []
    for run, table in per_check.groupby("run", sort=True):
        wide = table.pivot(index="item_id", columns="length", values="verdict")
        wide = wide.reindex(columns=range(1, len(checks) + 1))
        if wide.isna().to_numpy().any():
            item = wide.index[wide.isna().any(axis=1)][0]
            raise ValueError(f"run {run}: item {item!r} lacks a verdict of some judged check")
        determined = ~(wide == "unparseable").any(axis=1)
        wide = wide[determined]
        labels = table.drop_duplicates("item_id").set_index("item_id")["label"]
        flawed = (labels.loc[wide.index] == "flawed").to_numpy()
        fails = (wide == "no").to_numpy()
        result = shapley_attribution(fails, flawed)
        failed = fails_any(fails)
        n_correct, n_flawed = int((~flawed).sum()), int(flawed.sum())
        for k, check in enumerate(checks):
            rows.append({
                "run": int(run), "position": k + 1, "check_id": check.id, "text": check.text,
                "credit": float(result.credit[k]), "blame": float(result.blame[k]),
                "unique_catches": int(result.unique_catches[k]),
                "fail_counts": int(result.fail_counts[k]),
                "n_correct": n_correct, "n_flawed": n_flawed,
                "correct_passed": (np.count_nonzero(~failed & ~flawed) / n_correct
                                   if n_correct else np.nan),
                "flawed_caught": (np.count_nonzero(failed & flawed) / n_flawed
                                  if n_flawed else np.nan),
                "n_left_out": int((~determined).sum()),
            })
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def attribution_markdown(table: pd.DataFrame, checklist_name: str, dataset_title: str,
                         judge_label: str, words: Mapping[str, str] | None = None) -> str:
    """The table's mean over runs, one row per check, with the rubric's two rates; `words`
    name the labels and the items ({"correct", "flawed", "items"}; default correct, flawed,
    outputs)."""
    words = {"correct": "correct", "flawed": "flawed", "items": "outputs", **(words or {})}
    runs = table["run"].nunique()
    mean = (table.groupby(["position", "check_id", "text"], sort=True)
            [["credit", "blame", "unique_catches", "fail_counts"]].mean().reset_index())
    rows = [[r.check_id, r.text, f"{r.credit:.2f}", f"{r.blame:.2f}", _count(r.unique_catches),
             _count(r.fail_counts)] for r in mean.itertuples(index=False)]
    first = table.drop_duplicates("run")
    over = "" if runs == 1 else f", mean of {runs} runs"
    lines = [f"# Attribution of the checklist \"{checklist_name}\" on {dataset_title}", "",
             f"{judge_label} judge, one call per check, all-must-pass{over}. Credit: each flawed "
             "output the checklist fails, shared equally by the checks that fail it; blame: the "
             "same over correct outputs; a unique catch is a flawed output one check alone "
             "fails (carry, Section 6).", "",
             *markdown_table(["check", "text", "credit", "blame", "unique catches", "fails"],
                             rows), "",
             f"{words['correct'].capitalize()} {words['items']} passed: "
             f"{_percent(first['correct_passed'].mean())} of {_count(first['n_correct'].mean())};"
             f" {words['flawed']} {words['items']} caught: "
             f"{_percent(first['flawed_caught'].mean())} of {_count(first['n_flawed'].mean())}."]
    left_out = int(first["n_left_out"].sum())
    if left_out:
        lines.append(f"Left out: {left_out} of the {words['items']} (over all runs), with an "
                     "unparseable verdict.")
    return "\n".join(lines) + "\n"


def _count(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def _percent(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{100 * value:.1f}%"
