"""Properties of interventions and of generated criteria (transfer work, Tables A.6, A.7, A.9).

Table A.9 (edit sizes). Words are whitespace-separated tokens (str.split()). For one
intervention R -> R':
    R' - R   = words deleted + words inserted by a word-level diff (difflib.SequenceMatcher
               over the two token lists, autojunk off), so a replaced word counts twice;
    |R'|/|R| = words of R' over words of R.
Per row (one intervention kind): |c| is the mean words of a targeted criterion, R' - R and
|R'|/|R| are means over interventions, and (R' - R)/|C| or (R' - R)/|c| is the row's total
diff words over the row's total words of targeted criteria ("summed over the row").

Tables A.6 and A.7. For each generated criterion, its maximum LLM-matching similarity (0-9,
Algorithm 2's scores) to any expert criterion of its example, split by whether it passes
on the original response: the mean per status (A.6), pooled over criteria, and the share
of criteria at or above each cutoff (A.7).
"""

from __future__ import annotations

import difflib
from typing import Sequence

import numpy as np
import pandas as pd

EDIT_ROW_COLUMNS = ["n_interventions", "mean_criterion_words", "mean_edit_words",
                    "edit_words_per_criterion_word", "mean_length_ratio"]


# --- Table A.9 ---------------------------------------------------------------------------

def words(text: str) -> list[str]:
    """The word tokens of a text: split on runs of whitespace."""
    if not isinstance(text, str):
        raise ValueError(f"expected a text, got {type(text).__name__}: {text!r}")
    return text.split()


def word_edit_size(original: str, perturbed: str) -> int:
    """R' - R of Table A.9: words deleted plus words inserted by a word-level diff.

    difflib.SequenceMatcher over the word lists, autojunk off (its default would treat
    frequent words of responses over 200 words as junk and inflate the diff). A replaced
    word is one deletion and one insertion, so it counts twice.
    """
    before, after = words(original), words(perturbed)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    size = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            size += (i2 - i1) + (j2 - j1)
    return size


def length_ratio(original: str, perturbed: str) -> float:
    """|R'| / |R| of Table A.9, in words; below 1 when the edit shortened the response."""
    n_original = len(words(original))
    if n_original == 0:
        raise ValueError("the original response has no words, |R'|/|R| is undefined")
    return len(words(perturbed)) / n_original


def edit_size_row(interventions: pd.DataFrame) -> dict[str, float]:
    """One row of Table A.9 from the interventions of one kind (target, direction, level).

    interventions: one row per intervention with columns original (R), perturbed (R') and
    targeted_criteria (the list of criterion texts the edit targets: one for a
    single-criterion intervention, every criterion of the target rubric for a whole-rubric
    one). Returns EDIT_ROW_COLUMNS.
    """
    missing = [c for c in ("original", "perturbed", "targeted_criteria") if c not in interventions]
    if missing:
        raise ValueError(f"interventions lack column(s) {missing}")
    if interventions.empty:
        raise ValueError("no interventions in this row of Table A.9")
    edit_words, ratios, criterion_words = [], [], []
    for position, row in enumerate(interventions.itertuples(index=False)):
        targeted = row.targeted_criteria
        if isinstance(targeted, str) or len(targeted) == 0:
            raise ValueError(f"intervention {interventions.index[position]!r}: targeted_criteria "
                             f"must be a non-empty list of criterion texts, got {targeted!r}")
        lengths = [len(words(text)) for text in targeted]
        if 0 in lengths:
            raise ValueError(f"intervention {interventions.index[position]!r}: a targeted "
                             "criterion has no words")
        edit_words.append(word_edit_size(row.original, row.perturbed))
        try:
            ratios.append(length_ratio(row.original, row.perturbed))
        except ValueError as error:
            raise ValueError(f"intervention {interventions.index[position]!r}: {error}") from None
        criterion_words.extend(lengths)
    return {
        "n_interventions": len(edit_words),
        "mean_criterion_words": float(np.mean(criterion_words)),
        "mean_edit_words": float(np.mean(edit_words)),
        "edit_words_per_criterion_word": float(np.sum(edit_words) / np.sum(criterion_words)),
        "mean_length_ratio": float(np.mean(ratios)),
    }


# --- Tables A.6 and A.7 -----------------------------------------------------------------

def max_similarity_by_criterion(similarities: pd.DataFrame,
                                initial_verdicts: pd.DataFrame) -> pd.DataFrame:
    """Each generated criterion's best similarity to an expert criterion, with its status.

    similarities: Algorithm 2's scores, one row per (example_id, generated_id, expert_id)
    with an integer `similarity` 0..9. initial_verdicts: one row per (example_id,
    generated_id) with `passed` 0/1 on the original response. Both must cover exactly the
    same generated criteria. Returns example_id, generated_id, passed, max_similarity.
    """
    keys = ["example_id", "generated_id"]
    _require(similarities, keys + ["expert_id", "similarity"], "similarities")
    _require(initial_verdicts, keys + ["passed"], "initial verdicts")
    scores = similarities["similarity"]
    bad = scores.isna() | (scores < 0) | (scores > 9) | (scores != np.round(scores))
    if bad.any():
        where = similarities.loc[bad, keys + ["expert_id"]].head(5).to_dict("records")
        raise ValueError(f"similarities: similarity must be an integer 0..9, bad at {where}")
    passed = initial_verdicts["passed"]
    bad = passed.isna() | ~passed.isin([0, 1])
    if bad.any():
        where = initial_verdicts.loc[bad, keys].head(5).to_dict("records")
        raise ValueError(f"initial verdicts: passed must be 0 or 1, bad at {where}")
    if initial_verdicts.duplicated(subset=keys).any():
        where = initial_verdicts.loc[initial_verdicts.duplicated(subset=keys, keep=False), keys]
        raise ValueError(f"initial verdicts: more than one verdict for "
                         f"{where.drop_duplicates().head(5).to_dict('records')}")
    best = (similarities.groupby(keys, sort=False)["similarity"].max()
            .rename("max_similarity").reset_index())
    merged = initial_verdicts[keys + ["passed"]].merge(best, on=keys, how="outer", indicator=True)
    no_scores = merged[merged["_merge"] == "left_only"]
    if len(no_scores):
        raise ValueError("generated criteria without similarity scores: "
                         f"{no_scores[keys].head(5).to_dict('records')}")
    no_verdict = merged[merged["_merge"] == "right_only"]
    if len(no_verdict):
        raise ValueError("generated criteria without an initial verdict: "
                         f"{no_verdict[keys].head(5).to_dict('records')}")
    merged = merged.drop(columns="_merge")
    merged["passed"] = merged["passed"].astype(np.int64)
    return merged


def mean_max_similarity(by_criterion: pd.DataFrame) -> dict[str, float]:
    """Table A.6: mean best similarity of passing and of failing criteria, and their difference.

    Pooled over criteria. A status with no criterion has an undefined (NaN) mean.
    """
    _require(by_criterion, ["passed", "max_similarity"], "criteria")
    passing = by_criterion.loc[by_criterion["passed"] == 1, "max_similarity"]
    failing = by_criterion.loc[by_criterion["passed"] == 0, "max_similarity"]
    mean_passing = float(passing.mean()) if len(passing) else float("nan")
    mean_failing = float(failing.mean()) if len(failing) else float("nan")
    return {"passing": mean_passing, "failing": mean_failing,
            "difference": mean_passing - mean_failing,
            "n_passing": int(len(passing)), "n_failing": int(len(failing))}


def similarity_records(by_criterion: pd.DataFrame, passed: int) -> pd.DataFrame:
    """Per-example records for Table A.6's bootstrap: numerator = sum of best similarities
    of the criteria with that status, denominator = their number (zero where none).

    Use with rubriclab.transfer.metrics.micro_average_statistic; `difference` of the passing
    and failing statistics gives the interval of the difference.
    """
    _require(by_criterion, ["example_id", "passed", "max_similarity"], "criteria")
    if passed not in (0, 1):
        raise ValueError(f"passed must be 0 or 1, got {passed!r}")
    selected = by_criterion["passed"] == passed
    frame = pd.DataFrame({
        "example_id": by_criterion["example_id"],
        "numerator": by_criterion["max_similarity"].where(selected, 0).astype(np.float64),
        "denominator": selected.astype(np.int64),
    })
    return frame.groupby("example_id", sort=False)[["numerator", "denominator"]].sum()


def share_at_or_above(by_criterion: pd.DataFrame, cutoffs: Sequence[int]) -> pd.DataFrame:
    """Table A.7: percent of passing and failing criteria with best similarity >= each cutoff.

    One row per cutoff with columns cutoff, passing_pct, failing_pct (NaN for a status with
    no criterion), pooled over criteria.
    """
    _require(by_criterion, ["passed", "max_similarity"], "criteria")
    cutoffs = list(cutoffs)
    if not cutoffs:
        raise ValueError("no cutoffs given")
    passing = by_criterion.loc[by_criterion["passed"] == 1, "max_similarity"].to_numpy()
    failing = by_criterion.loc[by_criterion["passed"] == 0, "max_similarity"].to_numpy()

    def percent(values: np.ndarray, cutoff: float) -> float:
        return float(np.mean(values >= cutoff) * 100.0) if values.size else float("nan")

    return pd.DataFrame({
        "cutoff": cutoffs,
        "passing_pct": [percent(passing, cutoff) for cutoff in cutoffs],
        "failing_pct": [percent(failing, cutoff) for cutoff in cutoffs],
    })


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{what} lack column(s) {missing}")
