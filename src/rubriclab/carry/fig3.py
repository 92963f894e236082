"""Figure 3 of the carry work: accuracy as a function of the validation set's flawed share.

A rubric's two rates (correct outputs passed, flawed outputs caught) fix its accuracy on a
validation set of any composition: with a flawed share s,

    accuracy(s) = (1 - s) * correct_passed + s * flawed_caught,

a straight line from correct_passed (s = 0) to flawed_caught (s = 1). Two rubrics' lines
cross at most once, so a rubric that fails almost everything (balanced accuracy near 0.5)
outscores one that works on every set flawed enough. Rates and shares are fractions in
[0, 1]; the aggregate tables of rubriclab.carry.aggregate hold percents (divide by 100).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Iterable, Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rubriclab.carry.aggregate import balanced_accuracy  # noqa: E402
from rubriclab.labels import ModelLabels  # noqa: E402

FIG3_COLUMNS = [
    "rubric", "flawed_share", "accuracy", "correct_passed", "flawed_caught",
    "balanced_accuracy",
]
DEFAULT_SHARES = np.linspace(0.0, 1.0, 101)

Rates = tuple[float, float]  # (correct_passed, flawed_caught)


def accuracy_at_share(correct_passed: float, flawed_caught: float,
                      share: float | np.ndarray) -> float | np.ndarray:
    """Accuracy on a set whose flawed share is `share`."""
    return (1 - share) * correct_passed + share * flawed_caught


def crossover_share(a: Rates, b: Rates) -> float | None:
    """The flawed share at which rubrics a and b have equal accuracy.

    a and b are (correct_passed, flawed_caught). None when the lines are parallel (equal
    rate differences, identical lines included) or cross outside [0, 1], where a share
    cannot lie: then one rubric is at least as accurate at every share. Exact for
    fractions.Fraction inputs.
    """
    (passed_a, caught_a), (passed_b, caught_b) = _checked_rates(a), _checked_rates(b)
    gap_at_zero = passed_a - passed_b         # accuracy(a) - accuracy(b) at s = 0
    gap_at_one = caught_a - caught_b          # ... at s = 1
    if gap_at_zero == gap_at_one:
        return None
    share = gap_at_zero / (gap_at_zero - gap_at_one)
    return share if 0 <= share <= 1 else None


def accuracy_vs_flawed_share(
    rates: Mapping[str, Rates], shares: Iterable[float] = DEFAULT_SHARES,
) -> pd.DataFrame:
    """The tidy Figure 3 table: one row per rubric and share, in FIG3_COLUMNS order."""
    if not rates:
        raise ValueError("accuracy_vs_flawed_share needs at least one rubric")
    shares = np.asarray(list(shares), dtype=np.float64)
    if shares.size == 0 or np.any((shares < 0) | (shares > 1)) or np.any(np.isnan(shares)):
        raise ValueError("shares must be a non-empty list of fractions in [0, 1]")
    frames = []
    for rubric, pair in rates.items():
        passed, caught = (float(x) for x in _checked_rates(pair, rubric))
        frames.append(pd.DataFrame({
            "rubric": rubric,
            "flawed_share": shares,
            "accuracy": accuracy_at_share(passed, caught, shares),
            "correct_passed": passed,
            "flawed_caught": caught,
            "balanced_accuracy": balanced_accuracy(passed, caught),
        }))
    return pd.concat(frames, ignore_index=True)[FIG3_COLUMNS]


def crossovers(table: pd.DataFrame) -> pd.DataFrame:
    """Every pair of rubrics in a Figure 3 table whose lines cross within [0, 1]."""
    rates = _rates_of_table(table)
    rows = []
    for first, second in combinations(rates, 2):
        share = crossover_share(rates[first], rates[second])
        if share is not None:
            rows.append({"rubric_a": first, "rubric_b": second, "flawed_share": share,
                         "accuracy": accuracy_at_share(*rates[first], share)})
    return pd.DataFrame(rows, columns=["rubric_a", "rubric_b", "flawed_share", "accuracy"])


def plot_fig3(table: pd.DataFrame, png: Path, pdf: Path, title: str | None = None) -> None:
    """One line per rubric (x: flawed share, y: accuracy), crossovers marked; PNG and PDF."""
    missing = [column for column in FIG3_COLUMNS if column not in table.columns]
    if missing:
        raise ValueError(f"Figure 3 table lacks columns {missing}")
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    try:
        # Each rubric its own dash and marker (thicker first), so that equal lines stay visible.
        for index, (rubric, rows) in enumerate(table.groupby("rubric", sort=False)):
            rows = rows.sort_values("flawed_share")
            balanced = rows["balanced_accuracy"].iloc[0]
            linestyle, marker = LINE_STYLES[index % len(LINE_STYLES)]
            step = max(len(rows) // 5, 3)  # markers of equal lines fall at different shares
            ax.plot(rows["flawed_share"], rows["accuracy"], linestyle=linestyle, marker=marker,
                    markevery=(index * step // 3, step), markersize=5,
                    linewidth=3.0 - 0.8 * (index % 3), clip_on=False,
                    label=f"{rubric} (balanced accuracy {100 * balanced:.0f})")
        points = crossovers(table)
        _mark_crossovers(ax, points)
        if not points.empty:
            ax.plot([], [], linestyle="none", marker="o", color="black", markersize=5,
                    label="crossing: the flawed share where two rubrics are equally accurate")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.03, 1.05)
        ax.set_xlabel("flawed share of the validation set")
        ax.set_ylabel("accuracy")
        ax.set_title(title or "Accuracy as a function of the flawed share")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8, frameon=False)
        fig.tight_layout()
        for path in (png, pdf):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=150)
    finally:
        plt.close(fig)


LINE_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]


def _mark_crossovers(ax, points: pd.DataFrame) -> None:
    for point in points.itertuples(index=False):
        ax.plot(point.flawed_share, point.accuracy, marker="o", color="black", markersize=5,
                clip_on=False)
        share = max(float(point.flawed_share), 0.0)  # never "-0.00"
        left = share > 0.3  # the label on the side with room
        ax.annotate(f"equal at share {share:.2f}", (point.flawed_share, point.accuracy),
                    textcoords="offset points", xytext=(-4 if left else 6, 8),
                    ha="right" if left else "left", fontsize=8)


def _rates_of_table(table: pd.DataFrame) -> dict[str, Rates]:
    first_rows = table.drop_duplicates("rubric")
    return {row.rubric: (row.correct_passed, row.flawed_caught)
            for row in first_rows.itertuples(index=False)}


def _checked_rates(pair: Rates, rubric: str = "rubric") -> Rates:
    try:
        passed, caught = pair
    except (TypeError, ValueError):
        raise ValueError(
            f"{rubric}: rates must be a pair (correct_passed, flawed_caught), got {pair!r}"
        ) from None
    _check_fraction(passed, f"{rubric} correct_passed")
    _check_fraction(caught, f"{rubric} flawed_caught")
    return passed, caught


def _check_fraction(value: float, name: str) -> None:
    if not 0 <= value <= 1:
        raise ValueError(
            f"{name} must be a fraction in [0, 1], got {value!r} (percents? divide by 100)")


FIG3_SOURCES = {"hand": "hand-written", "generated": "generated draft", "label": "label-taught"}


def fig3_from_rates(rates: pd.DataFrame, judge_main: str, out_png: Path,
                    out_pdf: Path, labels: ModelLabels | None = None) -> pd.DataFrame:
    """Figure 3 from the pipeline's rates: the start rubrics on Recon-72, one call per check,
    under the main judge; each line from its two rates alone."""
    rows = rates[(rates["dataset"] == "recon") & (rates["judge"] == judge_main)
                 & (rates["item_set"] == "recon72") & (rates["rendering"] == "per_check")
                 & (rates["round"] == 0) & (rates["gate"] == "none")]
    pairs = {}
    for source, label in FIG3_SOURCES.items():
        of_source = rows[rows["source"] == source].set_index("metric")["value"]
        if of_source.empty:
            continue
        missing = [m for m in ("correct_passed", "flawed_caught") if m not in of_source]
        if missing or of_source[["correct_passed", "flawed_caught"]].isna().any():
            raise ValueError(f"Figure 3: the {source} rubric has no defined {missing or 'rates'} "
                             f"under {judge_main} on Recon-72")
        pairs[label] = (of_source["correct_passed"] / 100, of_source["flawed_caught"] / 100)
    if not pairs:
        raise ValueError(f"Figure 3: no start-rubric rates of judge {judge_main} on Recon-72")
    table = accuracy_vs_flawed_share(pairs)
    counts = {metric: int((rows.loc[rows["metric"] == metric, "n"]
                           + rows.loc[rows["metric"] == metric, "n_undetermined"]).max())
              for metric in ("correct_passed", "flawed_caught")}
    judge = (labels or ModelLabels())(judge_main)
    plot_fig3(table, out_png, out_pdf,
              title=f"Accuracy vs flawed share, {judge} judge\n(rates from Recon-72: "
                    f"{counts['correct_passed']} correct, {counts['flawed_caught']} flawed "
                    f"reports)")
    return table
