"""Figures 5 and A.4 of the transfer work: whole-rubric interventional transfer Q per
generator (with stars for paired differences that exclude 0), and Q by response model.
Conventions (the STATS table, intervals, bad input raises, labels) and the shared
helpers: rubriclab.transfer.figures.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from rubriclab.labels import with_labels
from rubriclab.plotting import not_available, plural
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import ensure_unique, select

from .figures import (
    IT_METRICS, IT_SYMBOLS, IT_TASKS, _colors, _grouped_bars, _legend, _panel_title,
    _response_suffix, _value_limits, excludes_zero, generator_order, n_examples_of,
    normalized_stats, plain_rows, require_cells, short_name, undefined_reason,
)

# Figure A.4 order (its caption).
FIGA4_ORDER = ["Q+(Cg->C*)", "Q+(C*->Cg)", "Q-(C*->Cg)", "Q-(Cg->C*)"]
FIG5_COLUMNS = ["metric", "generator", "generator_b", "estimate", "low", "high", "n_used",
                "n_examples", "star", "star_level"]
FIGA4_COLUMNS = ["metric", "response_model", "generator", "estimate", "low", "high",
                 "n_used", "n_examples"]


# --------------------------------------------------------------------------- Figure 5

def fig5_table(stats: pd.DataFrame, response_model: str) -> pd.DataFrame:
    """Figure 5's rows on `response_model`'s responses: the four Q metrics per generator
    (generator_b "", star False) followed by the paired differences between plotted
    generators (generator_b set). A difference row has star True when its interval
    excludes 0, and star_level its bracket's stacking level within its metric group
    (0 lowest; NaN when not starred). A pair given in both orientations keeps its first."""
    frame = normalized_stats(stats)
    rows = select(frame, "Figure 5", family="it", response_model=response_model)
    values = plain_rows(rows, "Figure 5", metric=IT_METRICS)
    generators = generator_order(values["generator"])
    cells = [(m, g) for m in IT_METRICS for g in generators]
    values = require_cells(values, ["metric", "generator"], cells, "Figure 5")
    values = values.assign(star=False, star_level=np.nan)
    differences = rows[(rows["generator_b"] != "") & rows["metric"].isin(IT_METRICS)]
    ensure_unique(differences, ["metric", "generator", "generator_b"], "Figure 5 differences")
    unknown = sorted((set(differences["generator"]) | set(differences["generator_b"]))
                     - set(generators))
    if unknown:
        raise ValueError(f"Figure 5: paired differences name generator(s) {unknown} that "
                         f"have no plain Q rows on {response_model!r}")
    parts = [values]
    for metric in IT_METRICS:
        mine = differences[differences["metric"] == metric]
        pairs = pd.Series([frozenset(pair) for pair in zip(mine["generator"],
                                                           mine["generator_b"])],
                          index=mine.index, dtype=object)
        mine = mine[~pairs.duplicated().to_numpy(bool)].copy()
        mine["star"] = [excludes_zero(lo, hi) for lo, hi in zip(mine["low"], mine["high"])]
        mine["star_level"] = np.nan
        starred = mine[mine["star"]]
        if not starred.empty:
            rank = {g: i for i, g in enumerate(generators)}
            span = {i: (abs(rank[a] - rank[b]), min(rank[a], rank[b]))
                    for i, a, b in zip(starred.index, starred["generator"],
                                       starred["generator_b"])}
            order = sorted(starred.index, key=lambda i: span[i])
            for level, index in enumerate(order):
                mine.loc[index, "star_level"] = level
        parts.append(mine)
    table = pd.concat(parts, ignore_index=True)
    table["metric"] = pd.Categorical(table["metric"], IT_METRICS, ordered=True)
    table["is_difference"] = table["generator_b"] != ""
    table = table.sort_values(["is_difference", "metric"], kind="stable")
    table["metric"] = table["metric"].astype(str)
    return table[FIG5_COLUMNS].reset_index(drop=True)


@with_labels
def fig5_interventional_transfer(stats: pd.DataFrame, response_model: str, out_png: Path,
                                 out_pdf: Path) -> pd.DataFrame:
    """Figure 5: the four whole-rubric interventional-transfer metrics Q (Equation 1) on
    `response_model`'s responses. Four groups (Q+(Cg->C*) training target, Q-(Cg->C*)
    degradation flag, Q+(C*->Cg) detecting good responses, Q-(C*->Cg) detecting bad
    responses), one bar per generator with its 95% paired bootstrap bar.

    Stars: for each paired difference between two plotted generators within a group
    whose 95% interval excludes 0 (both bounds defined and low > 0 or high < 0), a
    bracket joins the two generators' bars with a "*" at its middle. The brackets of a
    group start one and a half steps above the group's highest bar top or upper bound
    (step = 6% of the value range; the value labels sit in the half step) and stack upwards
    one step per starred pair, the pair of nearest
    neighbours (then the leftmost) lowest; `star_level` in the returned table is that
    stacking level. Returns fig5_table(stats, response_model)."""
    table = fig5_table(stats, response_model)
    values = table[table["generator_b"] == ""]
    stars = table[table["star"]]
    generators = generator_order(values["generator"])
    colors = _colors(generators)
    fig, ax = plt.subplots(figsize=(9, 4.8))
    try:
        positions = _grouped_bars(ax, values, "metric", IT_METRICS, generators, colors)
        ax.set_xticklabels([f"{IT_SYMBOLS[m]}\n{IT_TASKS[m]}" for m in IT_METRICS],
                           fontsize=9)
        bottom, top = _value_limits(values)
        step = 0.06 * (top - bottom)
        highest = top
        for metric in IT_METRICS:
            group = values[values["metric"] == metric]
            base = float(np.nanmax(np.r_[group["estimate"].to_numpy(float),
                                         group["high"].to_numpy(float), 0.0]))
            for row in stars[stars["metric"] == metric].itertuples(index=False):
                y = base + step * (row.star_level + 1.5)
                x1 = positions[(metric, row.generator)]
                x2 = positions[(metric, row.generator_b)]
                left, right = min(x1, x2), max(x1, x2)
                ax.plot([left, left, right, right], [y - step * 0.3, y, y, y - step * 0.3],
                        color="black", linewidth=0.8)
                ax.text((left + right) / 2, y, "*", ha="center", va="bottom", fontsize=12)
                highest = max(highest, y + step)
        ax.set_ylim(bottom, highest + 0.05 * (top - bottom))
        ax.set_ylabel("Q: net share of measurement criteria moved")
        _legend(fig, generators, colors)
        ax.set_title(f"Interventional transfer, whole-rubric interventions on "
                     f"{_response_suffix(response_model)}\n"
                     f"({plural(n_examples_of(values), 'HealthBench example')}; "
                     f"* paired difference interval excludes 0)", fontsize=10)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


# --------------------------------------------------------------------------- Figure A.4

def figA4_table(stats: pd.DataFrame) -> pd.DataFrame:
    """Figure A.4's rows: the four Q metrics in the caption's order (training target
    Q+(Cg->C*), detecting good responses Q+(C*->Cg), detecting bad responses Q-(C*->Cg),
    degradation flag Q-(Cg->C*)) per response model (first-seen order) and generator.
    Every generator must have every metric on every response model."""
    frame = normalized_stats(stats)
    rows = plain_rows(frame, "Figure A.4", family="it", metric=IT_METRICS)
    models = list(dict.fromkeys(rows["response_model"]))
    if "" in models:
        raise ValueError("Figure A.4: Q rows with an empty response_model")
    generators = generator_order(rows["generator"])
    cells = [(m, r, g) for m in FIGA4_ORDER for r in models for g in generators]
    table = require_cells(rows, ["metric", "response_model", "generator"], cells,
                          "Figure A.4")
    return table[FIGA4_COLUMNS]


@with_labels
def figA4_by_response_model(stats: pd.DataFrame, out_png: Path, out_pdf: Path
                            ) -> pd.DataFrame:
    """Figure A.4: the IT metrics per response model (x) and generator (bars, 95% paired
    bootstrap bars), one row per task from top to bottom: training target, detecting good
    responses, detecting bad responses, degradation flag. Returns figA4_table(stats)."""
    table = figA4_table(stats)
    models = list(dict.fromkeys(table["response_model"]))
    generators = generator_order(table["generator"])
    colors = _colors(generators)
    fig, axes = plt.subplots(4, 1, figsize=(max(7.0, 1.3 * len(models) + 2.5), 11),
                             sharex=True)
    try:
        for index, (ax, metric) in enumerate(zip(axes, FIGA4_ORDER)):
            rows = table[table["metric"] == metric]
            reason = undefined_reason(rows)
            if reason:
                not_available(ax, reason)
                ax.set_title(_panel_title(index, IT_TASKS[metric]), fontsize=9, loc="left")
                continue
            _grouped_bars(ax, rows, "response_model", models, generators, colors)
            ax.set_ylim(*_value_limits(rows))
            ax.set_ylabel(IT_SYMBOLS[metric])
            ax.set_title(_panel_title(index, IT_TASKS[metric]), fontsize=9, loc="left")
        axes[-1].set_xticks(np.arange(len(models)))
        axes[-1].set_xticklabels([short_name(m) for m in models], rotation=25, ha="right",
                                 fontsize=8, rotation_mode="anchor")
        axes[-1].set_xlabel("response model")
        _legend(fig, generators, colors)
        fig.suptitle(f"Interventional transfer by response model "
                     f"({plural(n_examples_of(table), 'HealthBench example')})", fontsize=11)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table
