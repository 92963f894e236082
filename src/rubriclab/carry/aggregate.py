"""All-must-pass aggregation of judge verdicts into per-length pass and catch rates.

A verdict table has one row per judge answer:

    item_id    str   the graded output
    label      str   "correct" or "flawed" (human or ground-truth label)
    run        int   repeat index, >= 0
    rendering  str   "per_check" (one call per check) or "paragraph" (one call for all)
    length     int   per_check: 1-based position of the check in the checklist;
                     paragraph: number of checks rendered into the paragraph
    check_id   str   the check's id for per_check rows, "" for paragraph rows
    verdict    str   "yes", "no" or "unparseable"
"""

from __future__ import annotations

import numpy as np
import pandas as pd

VERDICT_COLUMNS = ("item_id", "label", "run", "rendering", "length", "check_id", "verdict")
LABELS = ("correct", "flawed")
RENDERINGS = ("per_check", "paragraph")
VERDICTS = ("yes", "no", "unparseable")
OUTCOMES = ("pass", "fail", "undetermined")
VERDICT_KEY = ["item_id", "run", "rendering", "length"]

OUTCOME_COLUMNS = ["item_id", "label", "run", "rendering", "length", "outcome"]
RATE_COLUMNS = [
    "rendering", "length", "run",
    "n_correct", "n_flawed", "n_undetermined", "correct_passed", "flawed_caught",
]
MEAN_COLUMNS = [
    "rendering", "length", "runs",
    "n_correct", "n_flawed", "n_undetermined", "correct_passed", "flawed_caught",
    "correct_passed_min", "correct_passed_max", "flawed_caught_min", "flawed_caught_max",
]

# Outcome codes, ordered so that all-must-pass is the maximum over a rubric's checks.
PASS, UNDETERMINED, FAIL = 0, 1, 2
_VERDICT_SEVERITY = {"yes": PASS, "unparseable": UNDETERMINED, "no": FAIL}
_OUTCOME_OF_SEVERITY = {PASS: "pass", UNDETERMINED: "undetermined", FAIL: "fail"}


def all_must_pass(codes, axis: int = -1) -> np.ndarray:
    """The one all-must-pass aggregation of the package: an output fails if some check fails
    it, is undetermined if none fails and some verdict is undetermined, and passes if every
    check passes; codes PASS < UNDETERMINED < FAIL along `axis` (the checks)."""
    codes = np.asarray(codes)
    if codes.shape[axis] == 0:
        raise ValueError("all-must-pass needs at least one check")
    return codes.max(axis=axis)


def fails_any(fails: np.ndarray) -> np.ndarray:
    """All-must-pass of a boolean (outputs x checks) fails matrix: True where the output fails."""
    fails = np.asarray(fails, dtype=bool)
    if fails.shape[1] == 0:
        return np.zeros(fails.shape[0], dtype=bool)
    return all_must_pass(np.where(fails, FAIL, PASS), axis=1) == FAIL


def balanced_accuracy(correct_passed, flawed_caught):
    """Mean of the two rates (fractions in [0, 1]; exact for Fractions): the accuracy at a
    flawed share of one half."""
    for value, name in ((correct_passed, "correct_passed"), (flawed_caught, "flawed_caught")):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r} "
                             "(percents? divide by 100)")
    return (correct_passed + flawed_caught) / 2


def validate_verdicts(df: pd.DataFrame) -> None:
    """Raise ValueError naming the column and an example row for any malformed verdict."""
    _require_columns(df, VERDICT_COLUMNS, "verdict table")
    _require_values(df, "label", LABELS)
    _require_values(df, "rendering", RENDERINGS)
    _require_values(df, "verdict", VERDICTS)
    _require_integers(df, "run", minimum=0)
    _require_integers(df, "length", minimum=1)
    per_check = df[df["rendering"] == "per_check"]
    missing_id = ~per_check["check_id"].map(lambda value: isinstance(value, str) and value != "")
    _raise_on_first(per_check, missing_id, "check_id", "per_check rows need a non-empty check id")
    duplicated = df.duplicated(subset=VERDICT_KEY, keep=False)
    _raise_on_first(df, duplicated, "length", f"duplicate verdict for key {VERDICT_KEY}")
    labels_per_item = df.groupby("item_id")["label"].transform("nunique")
    _raise_on_first(df, labels_per_item > 1, "label", "item has both labels")


def item_outcomes(df: pd.DataFrame, lengths: list[int]) -> pd.DataFrame:
    """Pass, fail or undetermined for every item, run, rendering and checklist length.

    per_check at length L aggregates the verdicts at positions 1..L (all must pass: any
    "no" fails; otherwise any "unparseable" leaves it undetermined); paragraph at length
    L is its own single verdict. A verdict needed but missing raises ValueError.
    """
    validate_verdicts(df)
    lengths = _checked_lengths(lengths)
    parts = [
        _per_check_outcomes(df[df["rendering"] == "per_check"], lengths),
        _paragraph_outcomes(df[df["rendering"] == "paragraph"], lengths),
    ]
    outcomes = pd.concat([part for part in parts if not part.empty], ignore_index=True)
    if outcomes.empty:
        return pd.DataFrame(columns=OUTCOME_COLUMNS)
    labels = df.drop_duplicates("item_id").set_index("item_id")["label"]
    outcomes["label"] = outcomes["item_id"].map(labels)
    outcomes = outcomes.sort_values(["rendering", "length", "run", "item_id"], kind="stable")
    return outcomes[OUTCOME_COLUMNS].reset_index(drop=True)


def length_rates(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Correct passed and flawed caught (percent of determined items) per rendering, length, run."""
    _require_columns(outcomes, OUTCOME_COLUMNS, "outcome table")
    _require_values(outcomes, "outcome", OUTCOMES)
    determined = outcomes["outcome"] != "undetermined"
    correct = outcomes["label"] == "correct"
    flawed = outcomes["label"] == "flawed"
    flags = pd.DataFrame({
        "rendering": outcomes["rendering"],
        "length": outcomes["length"],
        "run": outcomes["run"],
        "n_correct": correct & determined,
        "n_flawed": flawed & determined,
        "n_undetermined": ~determined,
        "n_correct_passed": correct & (outcomes["outcome"] == "pass"),
        "n_flawed_caught": flawed & (outcomes["outcome"] == "fail"),
    })
    counts = flags.groupby(["rendering", "length", "run"], as_index=False).sum()
    counts["correct_passed"] = _percent(counts["n_correct_passed"], counts["n_correct"])
    counts["flawed_caught"] = _percent(counts["n_flawed_caught"], counts["n_flawed"])
    return counts[RATE_COLUMNS].reset_index(drop=True)


def mean_over_runs(rates: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max of the rates over runs for each rendering and length.

    Counts (n_correct, n_flawed, n_undetermined) are summed over runs, so together they
    equal items x runs. A run whose rate is NaN (empty denominator) is left out of the
    mean, min and max of that rate.
    """
    _require_columns(rates, RATE_COLUMNS, "rate table")
    summary = rates.groupby(["rendering", "length"], as_index=False).agg(
        runs=("run", "nunique"),
        n_correct=("n_correct", "sum"),
        n_flawed=("n_flawed", "sum"),
        n_undetermined=("n_undetermined", "sum"),
        correct_passed=("correct_passed", "mean"),
        flawed_caught=("flawed_caught", "mean"),
        correct_passed_min=("correct_passed", "min"),
        correct_passed_max=("correct_passed", "max"),
        flawed_caught_min=("flawed_caught", "min"),
        flawed_caught_max=("flawed_caught", "max"),
    )
    return summary[MEAN_COLUMNS].reset_index(drop=True)


def _per_check_outcomes(per_check: pd.DataFrame, lengths: list[int]) -> pd.DataFrame:
    if per_check.empty:
        return pd.DataFrame()
    severity = per_check.assign(severity=per_check["verdict"].map(_VERDICT_SEVERITY))
    wide = severity.pivot(index=["item_id", "run"], columns="length", values="severity")
    every_item_and_run = pd.MultiIndex.from_product(
        [per_check["item_id"].unique(), sorted(per_check["run"].unique())],
        names=["item_id", "run"],
    )
    wide = wide.reindex(index=every_item_and_run, columns=range(1, max(lengths) + 1))
    _raise_on_missing(wide, "position", f"needed for lengths up to {max(lengths)}")
    codes = wide.to_numpy(dtype=int)
    worst_up_to = pd.DataFrame({length: all_must_pass(codes[:, :length], axis=1)
                                for length in lengths}, index=wide.index)
    worst_up_to.columns.name = "length"
    long = worst_up_to.stack().rename("severity").reset_index()
    return long.assign(
        rendering="per_check", outcome=long["severity"].map(_OUTCOME_OF_SEVERITY)
    ).drop(columns="severity")


def _paragraph_outcomes(paragraph: pd.DataFrame, lengths: list[int]) -> pd.DataFrame:
    if paragraph.empty:
        return pd.DataFrame()
    needed = paragraph[paragraph["length"].isin(lengths)]
    wide = needed.pivot(index=["item_id", "run"], columns="length", values="verdict")
    every_item_and_run = pd.MultiIndex.from_product(
        [paragraph["item_id"].unique(), sorted(paragraph["run"].unique())],
        names=["item_id", "run"],
    )
    wide = wide.reindex(index=every_item_and_run, columns=lengths)
    _raise_on_missing(wide, "paragraph length", "")
    wide.columns.name = "length"
    long = wide.stack().rename("verdict").reset_index()
    outcome = long["verdict"].map({"yes": "pass", "no": "fail", "unparseable": "undetermined"})
    return long.assign(rendering="paragraph", outcome=outcome).drop(columns="verdict")


def _raise_on_missing(wide: pd.DataFrame, column_meaning: str, note: str) -> None:
    missing = wide.isna()
    if not missing.to_numpy().any():
        return
    stacked = missing.stack()
    item_id, run, column = stacked[stacked].index[0]
    count = int(missing.to_numpy().sum())
    suffix = f" ({note})" if note else ""
    raise ValueError(
        f"missing verdict for item {item_id!r}, run {run}, {column_meaning} {column}{suffix}; "
        f"{count} missing in all"
    )


def _checked_lengths(lengths: list[int]) -> list[int]:
    def is_length(value) -> bool:
        return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and bool(value >= 1)

    if not lengths or not all(is_length(length) for length in lengths):
        raise ValueError(f"lengths must be a non-empty list of integers >= 1, got {lengths!r}")
    return sorted({int(length) for length in lengths})


def _percent(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    return 100.0 * numerator / denominator.where(denominator > 0, np.nan)


def _require_columns(df: pd.DataFrame, columns, what: str) -> None:
    missing = [column for column in columns if column not in df.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing}; it has {list(df.columns)}")


def _require_values(df: pd.DataFrame, column: str, allowed) -> None:
    bad = ~df[column].isin(allowed)
    _raise_on_first(df, bad, column, f"values must be one of {list(allowed)}")


def _require_integers(df: pd.DataFrame, column: str, minimum: int) -> None:
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna() | (values < minimum) | (values != values.round())
    _raise_on_first(df, bad, column, f"values must be integers >= {minimum}")


def _raise_on_first(df: pd.DataFrame, bad: pd.Series, column: str, rule: str) -> None:
    if not bad.any():
        return
    example = df[bad].iloc[0]
    raise ValueError(
        f"column {column!r}: {rule}; {int(bad.sum())} bad row(s), e.g. row {example.name}: "
        f"{example.to_dict()}"
    )
