"""Interventional transfer metrics (transfer work, Section 3 and Section 4.4).

Equation 1 / Algorithm 1 (the four Q metrics of Figure 3 and Figure 5). For one target
rubric C^t, its measurement rubric C^m (the other one) and a direction with end state b
((a, b) = (0, 1) for '+', (1, 0) for '-'), per example i:

    h_i = sum over c in C^m_i of 1[c(R_i) != b]                      (line 4, denominator)
    g_i = sum over c in C^m_i of 1[c(R'_i) = b] - 1[c(R_i) = b]      (line 6, numerator)
    Q   = sum_i g_i / sum_i h_i                                      (line 7, micro-average)

g_i is a NET count: a measurement criterion that starts at b and leaves it after the edit
(moves the wrong way) takes one off a criterion that moved from a to b.

Figure 6 (criteria-level categories). Every target criterion c gets its own edit R_{+c} or
R_{-c} of the original response. Counting the measurement criteria that move in the
intervention direction (from a on R to b on the edit):
    between rubrics: 0 -> irrelevant, 1 -> matched, 2 or more -> general;
    within c's own rubric, leaving c out: 0 -> none, 1 -> one, 2 or more -> several.
Shares are percentages of the row's criteria, pooled over criteria (Appendix D preamble).

Verdict tables are long: one row per judged (example, [target criterion,] measured
criterion) with integer 0/1 columns `before` (verdict on the original response R) and
`after` (verdict on the edited response R').
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np
import pandas as pd

from rubriclab.stats.bootstrap import Statistic

DIRECTIONS = ("+", "-")
RECORD_COLUMNS = ["numerator", "denominator"]
MOVEMENT_CATEGORIES = ("irrelevant", "matched", "general")
REDUNDANCY_CATEGORIES = ("none", "one", "several")

# The four Q metrics: name -> (target rubric, measured rubric, direction).
Q_METRICS = {
    "Q+(Cg->C*)": ("generated", "expert", "+"),
    "Q-(Cg->C*)": ("generated", "expert", "-"),
    "Q+(C*->Cg)": ("expert", "generated", "+"),
    "Q-(C*->Cg)": ("expert", "generated", "-"),
}

# Figure 3: (target rubric, direction) -> the downstream task its Q measures.
FIGURE3_TASKS = {
    ("generated", "+"): "training target",           # Q+(C^g -> C^*)
    ("generated", "-"): "degradation flag",          # Q-(C^g -> C^*)
    ("expert", "+"): "detecting good responses",     # Q+(C^* -> C^g)
    ("expert", "-"): "detecting bad responses",      # Q-(C^* -> C^g)
}


def end_states(direction: str) -> tuple[int, int]:
    """(a, b) of Equation 1: (0, 1) for '+' (intervene to pass), (1, 0) for '-' (to fail)."""
    if direction == "+":
        return 0, 1
    if direction == "-":
        return 1, 0
    raise ValueError(f"direction must be '+' or '-', got {direction!r}")


# --- Equation 1 / Algorithm 1 ---------------------------------------------------------

def transfer_records(verdicts: pd.DataFrame, direction: str) -> pd.DataFrame:
    """Per-example numerator g_i and denominator h_i of Algorithm 1 (lines 4 and 6).

    verdicts: the measurement rubric's criteria after a whole-rubric intervention, one row
    per (example_id, criterion_id), with 0/1 columns `before` = c(R_i), `after` = c(R'_i).
    Returns a frame indexed by example_id (order of first appearance) with integer columns
    numerator (g_i, may be negative) and denominator (h_i).
    """
    _, b = end_states(direction)
    _check_verdicts(verdicts, ["example_id", "criterion_id"], "transfer verdicts")
    frame = pd.DataFrame({
        "example_id": verdicts["example_id"],
        "numerator": (verdicts["after"] == b).astype(np.int64)
        - (verdicts["before"] == b).astype(np.int64),
        "denominator": (verdicts["before"] != b).astype(np.int64),
    })
    return frame.groupby("example_id", sort=False)[RECORD_COLUMNS].sum()


def micro_average(records: pd.DataFrame) -> float:
    """sum(numerator) / sum(denominator) (Algorithm 1, line 7); NaN when the sum is 0.

    NaN means undefined (no measurement criterion could move), which Algorithm 4 leaves
    out of the percentiles.
    """
    _check_records(records)
    total = records["denominator"].sum()
    if total == 0:
        return float("nan")
    return float(records["numerator"].sum() / total)


def transfer_q(verdicts: pd.DataFrame, direction: str) -> float:
    """Q^{direction}(C^t -> C^m) of Equation 1, micro-averaged over examples (Algorithm 1)."""
    return micro_average(transfer_records(verdicts, direction))


def align_records(records: pd.DataFrame, examples: Sequence[Hashable]) -> pd.DataFrame:
    """The records reordered to `examples`; raises unless both hold exactly the same ids.

    Algorithm 4 draws positions into one list of examples shared by every generator, so
    the records of every generator must be laid out on that same list.
    """
    _check_records(records)
    examples = list(examples)
    if len(set(examples)) != len(examples):
        raise ValueError("the example order lists an example id more than once")
    if not records.index.is_unique:
        duplicated = records.index[records.index.duplicated()].unique().tolist()
        raise ValueError(f"records hold example ids more than once: {duplicated[:5]}")
    missing = [e for e in examples if e not in records.index]
    if missing:
        raise ValueError(f"records lack examples {missing[:5]} (of {len(missing)} missing)")
    extra = [e for e in records.index if e not in set(examples)]
    if extra:
        raise ValueError(f"records hold examples not in the order: {extra[:5]}")
    return records.loc[examples]


def micro_average_statistic(records: pd.DataFrame, examples: Sequence[Hashable]) -> Statistic:
    """A bootstrap statistic (rubriclab.stats.bootstrap): the micro-average on a draw.

    indices are positions into `examples`; repeated examples count as often as drawn.
    Returns None (undefined) on a draw whose denominators sum to 0.
    """
    aligned = align_records(records, examples)
    numerator = aligned["numerator"].to_numpy(dtype=np.float64)
    denominator = aligned["denominator"].to_numpy(dtype=np.float64)

    def statistic(indices: np.ndarray) -> float | None:
        total = denominator[indices].sum()
        if total == 0:
            return None
        return float(numerator[indices].sum() / total)

    return statistic


# --- Figure 6: criteria-level categories ------------------------------------------------

def moved_counts(verdicts: pd.DataFrame, direction: str) -> pd.DataFrame:
    """Per target criterion: how many measured criteria moved from a (on R) to b (on R_{+-c}).

    verdicts: single-criterion interventions, one row per (example_id, target_id,
    criterion_id) where target_id is the criterion intervened on and criterion_id a
    measured criterion, with 0/1 columns `before` and `after`. `before` is the verdict
    on the one original response, so it must agree across targets of an example.
    Returns columns example_id, target_id, n_moved (order of first appearance).
    """
    a, b = end_states(direction)
    keys = ["example_id", "target_id", "criterion_id"]
    _check_verdicts(verdicts, keys, "single-criterion verdicts")
    _check_same_original_verdicts(verdicts)
    moved = ((verdicts["before"] == a) & (verdicts["after"] == b)).astype(np.int64)
    frame = verdicts[["example_id", "target_id"]].assign(n_moved=moved)
    return frame.groupby(["example_id", "target_id"], sort=False, as_index=False)["n_moved"].sum()


def transfer_categories(verdicts: pd.DataFrame, direction: str) -> pd.DataFrame:
    """Figure 6, upper chart: each target criterion irrelevant / matched / general.

    verdicts as in `moved_counts`, measured on the OTHER rubric. Returns example_id,
    target_id, n_moved and a categorical `category` (0 / 1 / 2+ moved criteria).
    """
    counts = moved_counts(verdicts, direction)
    return counts.assign(category=_categorize(counts["n_moved"], MOVEMENT_CATEGORIES))


def redundancy_categories(verdicts: pd.DataFrame, direction: str) -> pd.DataFrame:
    """Figure 6, lower chart: within-rubric redundancy of each target criterion.

    verdicts as in `moved_counts`, measured on the target's OWN rubric, so each target
    has a row for itself; that row is left out of the count ("excluding itself") and is
    checked to start at a (a criterion edited to pass must fail on R, and vice versa).
    Returns example_id, target_id, n_moved (other criteria only), target_moved (whether
    the target itself reached b; reported, never used to filter) and a categorical
    `category`: none / one / several.
    """
    a, b = end_states(direction)
    keys = ["example_id", "target_id", "criterion_id"]
    _check_verdicts(verdicts, keys, "within-rubric verdicts")
    is_self = verdicts["criterion_id"] == verdicts["target_id"]
    own = verdicts[is_self].set_index(["example_id", "target_id"])
    targets = verdicts[["example_id", "target_id"]].drop_duplicates()
    lacking = targets.set_index(["example_id", "target_id"]).index.difference(own.index)
    if len(lacking):
        raise ValueError(
            f"within-rubric verdicts lack the target's own row for (example_id, target_id) "
            f"{list(lacking[:5])}; is this a table measured on another rubric?")
    wrong_start = own[own["before"] != a]
    if len(wrong_start):
        raise ValueError(
            f"direction {direction!r} targets criteria at {a} on the original response, but "
            f"(example_id, target_id) {list(wrong_start.index[:5])} start at {1 - a}")
    counts = moved_counts(verdicts[~is_self], direction)
    counts = targets.merge(counts, on=["example_id", "target_id"], how="left")
    counts["n_moved"] = counts["n_moved"].fillna(0).astype(np.int64)  # rubric of one criterion
    reached = (own["after"] == b).rename("target_moved")
    counts = counts.join(reached, on=["example_id", "target_id"])
    return counts.assign(category=_categorize(counts["n_moved"], REDUNDANCY_CATEGORIES))


def category_shares(categories: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Percent of criteria in each category per row (Figure 6), pooled over criteria.

    categories: output of `transfer_categories` or `redundancy_categories`, possibly
    concatenated with extra columns (generator, rubric, direction) named in `by`.
    Returns one row per group with one column per category (percent, rows sum to 100)
    and n_criteria.
    """
    labels = _category_labels(categories)
    by = list(by)
    missing = [column for column in by if column not in categories.columns]
    if missing:
        raise ValueError(f"category_shares: no column(s) {missing} to group by")
    if categories.empty:
        raise ValueError("category_shares: no criteria to share out")
    if not by:
        counts = categories["category"].value_counts(sort=False).reindex(labels)
        counts = counts.to_frame().T.reset_index(drop=True)
    else:
        counts = (categories.groupby(by + ["category"], observed=False, sort=True)
                  .size().unstack("category").reindex(columns=labels).fillna(0))
        counts = counts[counts.sum(axis=1) > 0].reset_index()  # groups absent from the data
    totals = counts[list(labels)].sum(axis=1)
    shares = counts[list(labels)].div(totals, axis=0) * 100.0
    result = pd.concat([counts[by], shares], axis=1) if by else shares
    result.columns.name = None
    return result.assign(n_criteria=totals.astype(np.int64).to_numpy())


def category_records(categories: pd.DataFrame, label: str) -> pd.DataFrame:
    """Per-example records (numerator: criteria in `label`, denominator: all criteria).

    With `micro_average` / `micro_average_statistic` these give the pooled share of
    `label` as a fraction (x100 for Figure 6's percent), resampled by example.
    """
    labels = _category_labels(categories)
    if label not in labels:
        raise ValueError(f"unknown category {label!r}; the categories are {list(labels)}")
    frame = pd.DataFrame({
        "example_id": categories["example_id"],
        "numerator": (categories["category"] == label).astype(np.int64),
        "denominator": np.ones(len(categories), dtype=np.int64),
    })
    return frame.groupby("example_id", sort=False)[RECORD_COLUMNS].sum()


# --- validation ------------------------------------------------------------------------

def _categorize(n_moved: pd.Series, labels: Sequence[str]) -> pd.Categorical:
    codes = np.minimum(n_moved.to_numpy(dtype=np.int64), 2)
    return pd.Categorical.from_codes(codes, categories=list(labels))


def _category_labels(categories: pd.DataFrame) -> tuple[str, ...]:
    if "category" not in categories.columns:
        raise ValueError("categories need a 'category' column (from *_categories)")
    column = categories["category"]
    if not isinstance(column.dtype, pd.CategoricalDtype):
        raise ValueError("the 'category' column must be categorical, as *_categories return it")
    return tuple(column.cat.categories)


def _check_records(records: pd.DataFrame) -> None:
    missing = [column for column in RECORD_COLUMNS if column not in records.columns]
    if missing:
        raise ValueError(f"records lack column(s) {missing}")
    if records[RECORD_COLUMNS].isna().any().any():
        where = records.index[records[RECORD_COLUMNS].isna().any(axis=1)].tolist()
        raise ValueError(f"records have missing values at examples {where[:5]}")
    negative = records.index[records["denominator"] < 0].tolist()
    if negative:
        raise ValueError(f"records have negative denominators at examples {negative[:5]}")


def _check_verdicts(verdicts: pd.DataFrame, keys: list[str], what: str) -> None:
    needed = keys + ["before", "after"]
    missing = [column for column in needed if column not in verdicts.columns]
    if missing:
        raise ValueError(f"{what} lack column(s) {missing}")
    for column in keys:
        if verdicts[column].isna().any():
            rows = verdicts.index[verdicts[column].isna()].tolist()
            raise ValueError(f"{what}: missing {column} at rows {rows[:5]}")
    for column in ("before", "after"):
        values = verdicts[column]
        bad = ~values.isin([0, 1]) | values.isna()
        if bad.any():
            where = verdicts.loc[bad, keys].head(5).to_dict("records")
            raise ValueError(
                f"{what}: {column} must be 0 or 1; bad values {values[bad].head(5).tolist()} "
                f"at {where}")
    duplicated = verdicts.duplicated(subset=keys, keep=False)
    if duplicated.any():
        where = verdicts.loc[duplicated, keys].drop_duplicates().head(5).to_dict("records")
        raise ValueError(f"{what}: more than one verdict for {where}")


def _check_same_original_verdicts(verdicts: pd.DataFrame) -> None:
    spread = verdicts.groupby(["example_id", "criterion_id"], sort=False)["before"].nunique()
    inconsistent = spread[spread > 1]
    if len(inconsistent):
        raise ValueError(
            "`before` is the verdict on the one original response, yet it differs across "
            f"targets for (example_id, criterion_id) {list(inconsistent.index[:5])}")
