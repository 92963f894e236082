"""Readers of verify's claims (seed 001, resources/replication/claims_verify.yaml).

The post's worked example has two sides in a run: its own numbers (300 of 400, 37 of 38, 8 of
12), which the calibration table's first row carries through the pipeline's Rogan-Gladen code
(arithmetic claims), and the worked example run for real (the agent's trials under the
verifier, the reply rubric's judge on the verifier passes) and the run's judge calibrated on the
human-labelled datasets (measured and qualitative claims).

Outputs read (rule `replication`'s inputs): `verify` (figures/verify/table_calibration.csv),
`verify_trials` (results/verify/trials.csv), `verify_grades` (results/verify/reply_grades.csv).
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    Reader,
    output_path,
    percent_rate,
    reads as _reads,
)

POST_SOURCE = "worked example"  # the calibration table's row of the post's own numbers


def _csv(outputs: Outputs, name: str, keep_empty: bool = False) -> pd.DataFrame:
    """The input `name` of rule `replication`; empty cells are NaN unless `keep_empty`."""
    path = output_path(outputs, name)
    if keep_empty:
        return pd.read_csv(path, keep_default_na=False)
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def _columns(table: pd.DataFrame, columns: list[str], where: str) -> None:
    absent = [c for c in columns if c not in table.columns]
    if absent:
        raise MissingEvidence(f"{where} has no column(s) {absent}")


def _post_row(outputs: Outputs) -> pd.Series:
    table = _csv(outputs, "verify")
    _columns(table, ["source"], "the calibration table")
    rows = table[table["source"].astype(str).str.startswith(POST_SOURCE)]
    if rows.empty:
        raise MissingEvidence("the calibration table has no row of the worked example")
    return rows.iloc[0]


def _number(row: pd.Series, column: str, where: str) -> float:
    if column not in row.index:
        raise MissingEvidence(f"{where} has no column {column!r}")
    return float(row[column])


# --------------------------------------------------------------------- the post's own numbers

def post_value(column: str, scale: float) -> Reader:
    """A number of the calibration table's worked-example row (the post's counts put through
    the pipeline's code), times `scale` (100 for a percent)."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        row = _post_row(outputs)
        value = scale * _number(row, column, "the worked example's row")
        _columns(row.to_frame().T, ["n_judged", "tp", "fn", "fp", "tn"],
                 "the worked example's row")
        behind = {"q": ["n_judged"], "corrected": ["n_judged"], "tpr": ["tp", "fn"],
                  "tnr": ["fp", "tn"]}.get(column, ["tp", "fn", "fp", "tn"])
        return Evidence(value, n=int(sum(row[c] for c in behind)),
                        note="the post's counts through the pipeline's code")
    return read


# --------------------------------------------------------------------- the example, run

@_reads
def verifier_pass_rate(outputs: Outputs, config: Mapping) -> Evidence:
    """The share of the agent's trials whose end state passes the verifier, with its exact
    interval over trials. Trials with no answer from the model (status `failed`) are not the
    agent's doing and are left out, counted in the note."""
    trials = _csv(outputs, "verify_trials")
    _columns(trials, ["status", "verifier_passed"], "results/verify/trials.csv")
    failed = trials["status"].astype(str) == "failed"
    kept = trials[~failed]
    passed = kept["verifier_passed"].astype(str)
    unknown = sorted(set(passed) - {"True", "False"})
    if unknown:
        raise ValueError(f"results/verify/trials.csv: verifier_passed holds {unknown}; "
                         "expected True or False")
    note = f"{int(failed.sum())} trial(s) without a model answer left out" if failed.any() else ""
    return percent_rate(int((passed == "True").sum()), len(kept), note=note)


@_reads
def reply_judge_pass_rate(outputs: Outputs, config: Mapping) -> Evidence:
    """The reply rubric's judge pass rate on the verifier passes (all four criteria pass), with
    its exact interval over the judged replies; replies an unparseable verdict leaves
    undetermined are left out, counted in the note."""
    grades = _csv(outputs, "verify_grades", keep_empty=True)
    _columns(grades, ["passed"], "results/verify/reply_grades.csv")
    passed = grades["passed"].astype(str)
    # pandas writes an undetermined (None) verdict as an empty cell
    determined = passed.isin(["True", "False"])
    unknown = sorted(set(passed[~determined]) - {"", "None"})
    if unknown:
        raise ValueError(f"results/verify/reply_grades.csv: passed holds {unknown}; "
                         "expected True, False or empty (undetermined)")
    undetermined = int((~determined).sum())
    note = f"{undetermined} undetermined repl(y/ies) left out" if undetermined else ""
    return percent_rate(int((passed == "True").sum()), int(determined.sum()), note=note)


# --------------------------------------------------------------------- the run's judges

@_reads
def correction_covers_human_rate(outputs: Outputs, config: Mapping) -> Evidence:
    """"Those two rates are enough to correct the judge's 75%": on each human-labelled dataset
    and rendering, the Rogan-Gladen interval of the judge's corrected pass rate (calibrated on
    the calibration split) holds the human pass rate of the evaluation split. A row whose
    interval is missing or flagged unstable (wider than [0, 1], failing its own coverage
    check) cannot test it."""
    table = _csv(outputs, "verify")
    needed = ["source", "dataset", "rendering", "human_pass_rate", "corrected_low",
              "corrected_high", "stable", "interval_flags", "tp", "fn", "fp", "tn"]
    _columns(table, needed, "the calibration table")
    judged = table[~table["source"].astype(str).str.startswith(POST_SOURCE)]
    judged = judged[judged["human_pass_rate"].notna()]
    if judged.empty:
        return Evidence(parts=(Part("a judge calibrated on human labels", None,
                                    "no row of the calibration table has a human pass rate"),))
    parts = []
    for row in judged.itertuples(index=False):
        name = f"{row.dataset}, {row.rendering} ({row.source})"
        human = 100 * float(row.human_pass_rate)
        if pd.isna(row.corrected_low) or pd.isna(row.corrected_high):
            parts.append(Part(name, None, f"no corrected interval: {row.interval_flags}"))
            continue
        low, high = 100 * float(row.corrected_low), 100 * float(row.corrected_high)
        if str(row.stable) != "True":
            parts.append(Part(name, None, f"interval [{low:.1f}, {high:.1f}] unstable: "
                                          f"{row.interval_flags}"))
            continue
        parts.append(Part(name, low <= human <= high,
                          f"human {human:.1f}% vs corrected [{low:.1f}, {high:.1f}]"))
    labelled = (judged["tp"] + judged["fn"] + judged["fp"] + judged["tn"]).astype(int)
    return Evidence(n=int(labelled.min()), parts=tuple(parts),
                    note="n: the smallest labelled slice")


@_reads
def post_intervals_wide(outputs: Outputs, config: Mapping) -> Evidence:
    """"The true negative rate here rests on twelve examples, so its interval is wide and the
    corrected rate inherits all of that uncertainty": on the post's counts, TNR's interval (12
    labels) is wider than TPR's (38), and the corrected rate's wider than the reported rate's."""
    row = _post_row(outputs)
    where = "the worked example's row"
    width = {name: _number(row, f"{name}_high", where) - _number(row, f"{name}_low", where)
             for name in ("tnr", "tpr", "q")}
    low, high = row.get("corrected_low"), row.get("corrected_high")
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        corrected = Part("the corrected rate's interval is wider than the reported rate's", None,
                         "the worked example's row has no corrected interval")
    else:
        corrected_width = float(high) - float(low)
        corrected = Part("the corrected rate's interval is wider than the reported rate's",
                         corrected_width > width["q"],
                         f"{100 * corrected_width:.1f} vs {100 * width['q']:.1f} points")
    return Evidence(n=int(row["tp"] + row["fn"] + row["fp"] + row["tn"]), parts=(
        Part("TNR's interval (the human fails) is wider than TPR's (the human passes)",
             width["tnr"] > width["tpr"],
             f"{100 * width['tnr']:.1f} vs {100 * width['tpr']:.1f} points"),
        corrected))


READERS: dict[str, Reader] = {
    "verify.worked_example.verifier_pass_rate": verifier_pass_rate,
    "verify.worked_example.judge_pass_rate": post_value("q", 100),
    "verify.worked_example.judge_pass_rate_run": reply_judge_pass_rate,
    "verify.calibration.agreement": post_value("agreement", 100),
    "verify.calibration.tpr": post_value("tpr", 1),
    "verify.calibration.tnr": post_value("tnr", 1),
    "verify.correction.formula": post_value("corrected", 1),
    "verify.correction.about_65": post_value("corrected", 100),
    "verify.correction.intervals_wide": post_intervals_wide,
    "verify.correction.recovers_human_rate": correction_covers_human_rate,
}
