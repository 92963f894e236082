"""Figures 4, A.1 and A.2 of the transfer work: the existing approaches to rubric
evaluation (LLM-matching, score correlation, discrimination), LLM-matching under three
framings, and score correlation by choice of response panel.
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
from rubriclab.plotting import error_lengths as _error
from rubriclab.plotting import not_available, plural, wrapped, zero_bar_marks
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import select

from .figures import (
    EXPERT, FULL_PANEL, MATCHING_METRICS, _colors, _grouped_bars, _legend, _panel_title,
    _value_limits, _value_texts, generator_order, n_examples_of, normalized_stats, ordered,
    plain_rows, require_cells, short_name, undefined_reason,
)

PRF_TITLES = {"precision": "P", "recall": "R", "f1": "F1"}

# Figure A.1: the three LLM-matching framings, left to right.
FRAMING_METRICS = ["framing_precision", "framing_recall", "framing_f1"]
FRAMINGS = ["match_rubric", "simulate_intervention", "implies"]
FRAMING_TITLES = {"match_rubric": "measure the same thing",
                  "simulate_intervention": "changing one changes the other",
                  "implies": "one logically entails the other"}

FIG4_COLUMNS = ["subplot", "metric", "generator", "estimate", "low", "high", "n_used",
                "n_examples"]
FIG4_SUBPLOTS = ["llm_matching", "panel_correlation", "physician_correlation",
                 "discrimination"]
FIGA1_COLUMNS = ["framing", "metric", "generator", "estimate", "low", "high", "n_used",
                 "n_examples"]
FIGA2_COLUMNS = ["panel", "generator", "estimate", "low", "high", "n_used", "n_examples"]


# --------------------------------------------------------------------------- Figure 4

def fig4_table(stats: pd.DataFrame) -> pd.DataFrame:
    """Figure 4's rows: per subplot, metric and generator the plain existing-approach
    statistic. Subplots: llm_matching (P, R, F1), panel_correlation (panel_spearman on the
    full panel, panel "all"), physician_correlation (physician_spearman) and discrimination
    (every generator and the expert rubric). Every generator must have every metric."""
    frame = normalized_stats(stats)
    rows = plain_rows(frame, "Figure 4", family="existing")
    generators = generator_order(rows.loc[rows["generator"] != EXPERT, "generator"])
    if not generators:
        raise ValueError("Figure 4: no generator rows (only the expert rubric) in family "
                         "'existing'")
    parts = []
    specs = [("llm_matching", MATCHING_METRICS, {}, False),
             ("panel_correlation", ["panel_spearman"], {"panel": FULL_PANEL}, False),
             ("physician_correlation", ["physician_spearman"], {}, False),
             ("discrimination", ["discrimination"], {}, True)]
    for subplot, metrics, extra, with_expert in specs:
        what = f"Figure 4 {subplot}"
        chosen = select(rows, what, metric=metrics, **extra)
        wanted_generators = [*generators, EXPERT] if with_expert else generators
        chosen = chosen[chosen["generator"].isin(wanted_generators)]
        cells = [(m, g) for m in metrics for g in wanted_generators]
        part = require_cells(chosen, ["metric", "generator"], cells, what)
        parts.append(part.assign(subplot=subplot))
    return pd.concat(parts, ignore_index=True)[FIG4_COLUMNS]


@with_labels
def fig4_existing_approaches(stats: pd.DataFrame, out_png: Path, out_pdf: Path
                             ) -> pd.DataFrame:
    """Figure 4: published approaches to rubric evaluation, bars per generator with 95%
    paired bootstrap bars. (a) LLM-matching precision, recall and F1 (Algorithm 2);
    (b) score correlation on the full response panel (mean per-example Spearman,
    Algorithm 3, panel "all"); (c) Spearman correlation across physician responses;
    (d) discrimination between physician and degraded responses, with the expert
    rubric's bar. Returns fig4_table(stats)."""
    table = fig4_table(stats)
    generators = generator_order(table["generator"])
    colors = _colors(generators)
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.4),
                             gridspec_kw={"width_ratios": [1.6, 1, 1, 1.1]})
    try:
        titles = ["LLM-matching", "Panel score correlation\n(Spearman, full panel)",
                  "Physician score correlation\n(Spearman)",
                  "Discrimination\n(physician vs degraded)"]
        for index, (ax, subplot) in enumerate(zip(axes, FIG4_SUBPLOTS)):
            rows = table[table["subplot"] == subplot]
            reason = undefined_reason(rows)
            if reason:
                not_available(ax, reason)
                ax.set_title(_panel_title(index, titles[index]), fontsize=9)
                continue
            if subplot == "llm_matching":
                groups = MATCHING_METRICS
                _grouped_bars(ax, rows, "metric", groups, generator_order(rows["generator"]),
                              colors)
                ax.set_xticklabels([PRF_TITLES[m.rsplit("_", 1)[-1]] for m in groups])
            else:
                mine = rows.set_index("generator").loc[generator_order(rows["generator"])]
                x = np.arange(len(mine))
                heights = mine["estimate"].fillna(0)
                ax.bar(x, heights, 0.7, color=[colors[g] for g in mine.index],
                       yerr=_error(mine["estimate"], mine["low"], mine["high"]), capsize=2,
                       error_kw={"elinewidth": 0.8})
                zero_bar_marks(ax, x, heights, 0.7, [colors[g] for g in mine.index])
                ax.set_xticks(x)
                _value_texts(ax, x, mine, len(mine))
                # wrapped and level while four fit side by side: rotated labels as long as
                # a model name would leave a deep empty band under the other panels
                ax.set_xticklabels([wrapped(short_name(g), 11) for g in mine.index],
                                   rotation=0 if len(mine) <= 4 else 90, fontsize=7)
                ax.axhline(0, color="black", linewidth=0.6)
                ax.grid(axis="y", alpha=0.3)
            ax.set_ylim(*_value_limits(rows))
            ax.set_title(_panel_title(index, titles[index]), fontsize=9)
        axes[0].set_ylabel("score (1 = best)")
        _legend(fig, generators, colors)
        fig.suptitle(f"Existing approaches to rubric evaluation "
                     f"({plural(n_examples_of(table), 'HealthBench example')})", fontsize=11)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


# --------------------------------------------------------------------------- Figure A.1

def figA1_table(stats: pd.DataFrame) -> pd.DataFrame:
    """Figure A.1's rows: P, R and F1 per framing (match_rubric, simulate_intervention,
    implies, then any other in first-seen order) and generator. Every generator must have
    all three metrics under every framing."""
    frame = normalized_stats(stats)
    rows = plain_rows(frame, "Figure A.1", family="framing", metric=FRAMING_METRICS)
    framings = ordered(rows["framing"], FRAMINGS)
    if "" in framings:
        raise ValueError("Figure A.1: rows with an empty framing")
    generators = generator_order(rows["generator"])
    cells = [(f, m, g) for f in framings for m in FRAMING_METRICS for g in generators]
    table = require_cells(rows, ["framing", "metric", "generator"], cells, "Figure A.1")
    return table[FIGA1_COLUMNS]


@with_labels
def figA1_matching_framings(stats: pd.DataFrame, out_png: Path, out_pdf: Path
                            ) -> pd.DataFrame:
    """Figure A.1: LLM-matching precision, recall and F1 per generator under each framing
    of semantic similarity, one subplot per framing (left: the criteria measure the same
    thing; mid: changing one would change the other; right: one logically entails the
    other). Returns figA1_table(stats)."""
    table = figA1_table(stats)
    framings = list(dict.fromkeys(table["framing"]))
    generators = generator_order(table["generator"])
    colors = _colors(generators)
    fig, axes = plt.subplots(1, len(framings), figsize=(4.2 * len(framings), 4.2),
                             squeeze=False, sharey=True)
    try:
        limits = _value_limits(table)
        for index, (ax, framing) in enumerate(zip(axes[0], framings)):
            rows = table[table["framing"] == framing]
            _grouped_bars(ax, rows, "metric", FRAMING_METRICS, generators, colors)
            ax.set_xticklabels([PRF_TITLES[m.rsplit("_", 1)[-1]] for m in FRAMING_METRICS])
            ax.set_ylim(*limits)
            ax.set_title(_panel_title(index, f"{framing}\n"
                                             f"({FRAMING_TITLES.get(framing, framing)})"),
                         fontsize=9)
        axes[0][0].set_ylabel("LLM-matching score")
        _legend(fig, generators, colors)
        fig.suptitle(f"LLM-matching under three framings of semantic similarity "
                     f"({plural(n_examples_of(table), 'HealthBench example')})", fontsize=11)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


# --------------------------------------------------------------------------- Figure A.2

def figA2_table(stats: pd.DataFrame) -> pd.DataFrame:
    """Figure A.2's rows: panel_spearman per panel choice ("all" first, then first-seen
    order) and generator. Every generator must have every panel choice."""
    frame = normalized_stats(stats)
    rows = plain_rows(frame, "Figure A.2", family="existing", metric="panel_spearman")
    rows = rows[rows["generator"] != EXPERT]
    panels = ordered(rows["panel"], [FULL_PANEL])
    if "" in panels:
        raise ValueError("Figure A.2: panel_spearman rows with an empty panel")
    generators = generator_order(rows["generator"])
    if not generators:
        raise ValueError("Figure A.2: no generator rows for panel_spearman")
    cells = [(p, g) for p in panels for g in generators]
    table = require_cells(rows, ["panel", "generator"], cells, "Figure A.2")
    return table[FIGA2_COLUMNS]


@with_labels
def figA2_panel_sensitivity(stats: pd.DataFrame, out_png: Path, out_pdf: Path
                            ) -> pd.DataFrame:
    """Figure A.2: the score-correlation metric (mean per-example Spearman, Algorithm 3)
    for each choice of response panel (x) and generator (bars, 95% paired bootstrap bars).
    Returns figA2_table(stats)."""
    table = figA2_table(stats)
    panels = list(dict.fromkeys(table["panel"]))
    generators = generator_order(table["generator"])
    colors = _colors(generators)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(panels) + 2), 4.4))
    try:
        reason = undefined_reason(table)
        if reason:
            not_available(ax, reason)
        else:
            _grouped_bars(ax, table, "panel", panels, generators, colors)
            ax.set_xticklabels(panels, rotation=20 if len(panels) > 4 else 0,
                               ha="right" if len(panels) > 4 else "center", fontsize=8)
            ax.set_ylim(*_value_limits(table))
            ax.set_xlabel("response panel")
            ax.set_ylabel("score correlation (Spearman)")
            ax.legend(title="generator", fontsize=8, title_fontsize=8, frameon=False)
        ax.set_title(f"Score correlation by choice of response panel "
                     f"({plural(n_examples_of(table), 'HealthBench example')})", fontsize=10)
        fig.tight_layout()
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table
