"""Figure 1 of the carry work: how strict the start rubrics are on Recon-72, (a) their
operating points under the main judge by source and rendering, (b) correct passed under
every judge. Conventions (rates in percent, `low`/`high` the 95% interval, bad input raises)
and the shared helpers: rubriclab.carry.figures.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from rubriclab.labels import ModelLabels
from rubriclab.plotting import error_lengths as _error
from rubriclab.plotting import Overlaps, ring_size, value_labels
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import ensure_unique, select

from .figures import (
    RENDERING_MARKERS, RENDERING_ORDER, RENDERING_TITLES, SOURCE_COLORS, SOURCE_ORDER,
    SOURCE_TITLES, _panel_title, _percent_axis, _unclipped, item_count, normalized_rates, ordered,
)

# points; each coincident marker a step larger, the outermost at most FIG1_MARKER_LARGEST
FIG1_MARKER_SIZE, FIG1_MARKER_STEP, FIG1_MARKER_LARGEST = 5.0, 4.0, 20.0

FIG1_COLUMNS = ["panel", "judge", "source", "rendering", "metric", "value", "low", "high",
                "n", "n_undetermined"]


def fig1_table(rates: pd.DataFrame, judge_main: str) -> pd.DataFrame:
    """Start rubrics on Recon-72: panel a = judge_main's two rates, panel b = every judge's
    correct passed; one row per panel, judge, source, rendering and metric."""
    frame = normalized_rates(rates)
    rows = select(frame, "Figure 1", dataset="recon", item_set="recon72", environments="all",
                  variant="standard", mode="", round=0, gate="none",
                  metric=["correct_passed", "flawed_caught"])
    select(rows, "Figure 1 panel (a)", judge=judge_main)
    ensure_unique(rows, ["judge", "source", "rendering", "metric"], "Figure 1")
    panel_a = rows[rows["judge"] == judge_main].assign(panel="a")
    panel_b = rows[rows["metric"] == "correct_passed"].assign(panel="b")
    table = pd.concat([panel_a, panel_b], ignore_index=True)
    judge_rank = {j: i for i, j in enumerate(dict.fromkeys(rows["judge"]))}
    ranks = {"judge": judge_rank,
             "source": {v: i for i, v in enumerate(ordered(rows["source"], SOURCE_ORDER))},
             "rendering": {v: i for i, v in enumerate(ordered(rows["rendering"], RENDERING_ORDER))}}
    table = table.sort_values(
        ["panel", "judge", "source", "rendering", "metric"], kind="stable",
        key=lambda c: c.map(ranks[c.name]) if c.name in ranks else c)
    return table[FIG1_COLUMNS].reset_index(drop=True)


def fig1_strictness(rates: pd.DataFrame, judge_main: str, out_png: Path,
                    out_pdf: Path, labels: ModelLabels | None = None) -> pd.DataFrame:
    """Figure 1: (a) operating points of the start rubrics under judge_main on Recon-72
    (colour = source, marker = rendering, 95% Clopper-Pearson bars); (b) correct passed per
    source x rendering under every judge (grouped bars)."""
    labels = labels or ModelLabels()
    table = fig1_table(rates, judge_main)
    panel_a = table[table["panel"] == "a"]
    n_correct, n_flawed = item_count(panel_a, "correct_passed"), item_count(panel_a, "flawed_caught")
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(13.5, 6.0),
                                     gridspec_kw={"width_ratios": [1, 1.6]})
    try:
        _fig1_points(ax_a, panel_a, judge_main, labels)
        _fig1_bars(ax_b, table[table["panel"] == "b"], labels)
        fig.suptitle(f"Strictness on Recon-72 ({n_correct} correct, {n_flawed} flawed reports)")
        fig.tight_layout()
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


def _fig1_points(ax, rows: pd.DataFrame, judge_main: str, labels: ModelLabels) -> None:
    wide = rows.pivot(index=["source", "rendering"], columns="metric",
                      values=["value", "low", "high"])
    overlaps, stacked = Overlaps(), Overlaps()
    for _, point in wide.iterrows():
        stacked.layer(point[("value", "flawed_caught")], point[("value", "correct_passed")])
    for (source, rendering), point in wide.iterrows():
        x, y = point[("value", "flawed_caught")], point[("value", "correct_passed")]
        xerr = _error(pd.Series([x]), pd.Series([point[("low", "flawed_caught")]]),
                      pd.Series([point[("high", "flawed_caught")]]))
        yerr = _error(pd.Series([y]), pd.Series([point[("low", "correct_passed")]]),
                      pd.Series([point[("high", "correct_passed")]]))
        color = SOURCE_COLORS.get(source, "black")
        # Every point at its true value; one on top of earlier ones is drawn hollow and a
        # step larger, so coincident points show as concentric rings.
        layer = overlaps.layer(x, y)
        x_bar, y_bar = (None if not err.any() else err for err in (xerr, yerr))  # no bare caps
        _unclipped(ax.errorbar([x], [y], xerr=x_bar, yerr=y_bar, linestyle="none",
                               marker=RENDERING_MARKERS.get(rendering, "x"),
                               markersize=ring_size(layer, stacked.count(x, y),
                                                    FIG1_MARKER_SIZE, FIG1_MARKER_STEP,
                                                    FIG1_MARKER_LARGEST),
                               markerfacecolor="none", markeredgecolor=color,
                               markeredgewidth=1.1, color=color, capsize=2, elinewidth=0.8,
                               zorder=3 + 0.01 * layer))
    sources = ordered(rows["source"], SOURCE_ORDER)
    renderings = ordered(rows["rendering"], RENDERING_ORDER)
    handles: list[Artist] = [Patch(color=SOURCE_COLORS.get(s, "black"),
                                   label=SOURCE_TITLES.get(s, s))
                             for s in sources]
    handles += [Line2D([], [], color="black", linestyle="none", markerfacecolor="none",
                       marker=RENDERING_MARKERS.get(r, "x"), label=RENDERING_TITLES.get(r, r))
                for r in renderings]
    handles.append(Line2D([], [], linestyle="none", label="equal points: concentric rings"))
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14),
              ncol=3, frameon=False)
    _percent_axis(ax, "x", low=-10, high=110)
    _percent_axis(ax, "y", low=-10, high=110)
    ax.set_xlabel("flawed reports caught")
    ax.set_ylabel("correct reports passed")
    ax.set_title(_panel_title(0, f"Operating point, {labels(judge_main)} judge"), fontsize=10)
    ax.grid(alpha=0.3)


def _fig1_bars(ax, rows: pd.DataFrame, labels: ModelLabels) -> None:
    groups = list(dict.fromkeys(zip(rows["source"], rows["rendering"])))
    judges = list(dict.fromkeys(rows["judge"]))
    width = 0.8 / len(judges)
    crowded = len(groups) * len(judges) > 16  # labels upright would run into each other
    for index, judge in enumerate(judges):
        mine = rows[rows["judge"] == judge].set_index(["source", "rendering"]).reindex(groups)
        positions = np.arange(len(groups)) + (index - (len(judges) - 1) / 2) * width
        bars = ax.bar(positions, mine["value"].fillna(0), width,
                      yerr=_error(mine["value"], mine["low"], mine["high"]), capsize=2,
                      label=labels(judge), error_kw={"elinewidth": 0.8})
        value_labels(ax, bars, mine["value"], fontsize=6 if crowded else 7,
                     rotation=90 if crowded else 0)
    ax.set_xticks(np.arange(len(groups)))
    # Twelve source x rendering groups: one upright line each, so no label runs into the next.
    ax.set_xticklabels([f"{SOURCE_TITLES.get(s, s)}, {RENDERING_TITLES.get(r, r)}"
                        for s, r in groups], fontsize=8, rotation=90)
    _percent_axis(ax, "y", high=118 if crowded else 110)  # room for the labels over 100%
    ax.set_ylabel("correct reports passed")
    n_correct = item_count(rows, "correct_passed")
    ax.set_title(_panel_title(1, f"Correct reports passed ({n_correct} correct), by judge"),
                 fontsize=10)
    ax.legend(title="judge", fontsize=8, title_fontsize=8, frameon=False,
              loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
