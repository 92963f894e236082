"""Figure 4 of the carry work: ungated self-review on Recon-108, round by round, as small
multiples per start rubric and reviser (colour = mode, line style = metric).
Conventions (rates in percent, `low`/`high` the 95% interval, bad input raises)
and the shared helpers: rubriclab.carry.figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from rubriclab.labels import ModelLabels
from rubriclab.plotting import Overlaps, ring_size
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import ensure_unique, select

from .figures import (
    CHAIN_KEYS, METRIC_LINESTYLES, METRIC_TITLES, METRICS, MODE_COLORS, MODE_ORDER, MODE_TITLES,
    SOURCE_TITLES, _panel_title, _percent_axis, chains_with_start, counts_phrase, normalized_rates,
    ordered, recon108_counts, sort_chains,
)

FIG4_COLUMNS = ["reviser", "source", "mode", "round", "metric", "value", "min", "max", "seeds"]


def fig4_table(rates: pd.DataFrame, judge_main: str,
               sources: Sequence[str] = ("hand", "label")) -> pd.DataFrame:
    """Ungated self-review on Recon-108 (all environments, variant standard) under
    judge_main: per reviser, source, mode, round and metric the mean over seeds, its min..max
    and the number of seeds."""
    frame = normalized_rates(rates)
    rows = select(frame, "Figure 4", dataset="recon", item_set="recon108", environments="all",
                  gate="none", variant="standard", judge=judge_main)
    panels = []
    for source in sources:
        what = f"Figure 4 panel from source {source!r}"
        chains = chains_with_start(select(rows, what, source=source), what)
        ensure_unique(chains, [*CHAIN_KEYS, "round", "metric"], what)
        summary = (chains.groupby(["reviser", "source", "mode", "round", "metric"],
                                  sort=False)["value"]
                   .agg(value="mean", min="min", max="max", seeds="count").reset_index())
        panels.append(summary)
    table = sort_chains(pd.concat(panels, ignore_index=True).assign(seed=0), ["round", "metric"])
    return table[FIG4_COLUMNS]


def fig4_self_review_drift(rates: pd.DataFrame, judge_main: str, out_png: Path,
                           out_pdf: Path, sources: Sequence[str] = ("hand", "label"),
                           labels: ModelLabels | None = None,
                           main_reviser: str | None = None) -> pd.DataFrame:
    """Figure 4: self-review rounds on Recon-108 as small multiples, one panel per start
    source (columns) and reviser (rows; `main_reviser` first, the others in order); in each
    panel colour = mode, line style = metric (correct passed solid, flawed caught dashed,
    unplanned caught dotted); mean over seeds, min..max shaded when there is more than one
    seed."""
    labels = labels or ModelLabels()
    table = fig4_table(rates, judge_main, sources)
    counts = recon108_counts(rates, judge_main, "all")
    revisers = list(dict.fromkeys(table["reviser"]))
    if main_reviser in revisers:
        revisers = [main_reviser, *(r for r in revisers if r != main_reviser)]
    fig, axes = plt.subplots(len(revisers), len(sources),
                             figsize=(FIG4_PANEL_WIDTH * len(sources),
                                      1.9 + FIG4_PANEL_HEIGHT * len(revisers)),
                             squeeze=False, sharey=True, sharex=True)
    try:
        for row, reviser in enumerate(revisers):
            for column, source in enumerate(sources):
                ax = axes[row][column]
                _fig4_panel(ax, table[(table["source"] == source)
                                      & (table["reviser"] == reviser)],
                            row * len(sources) + column, source, table, reviser, labels)
                if row < len(revisers) - 1:
                    ax.set_xlabel("")
                if column > 0:
                    ax.set_ylabel("")
        handles, legend_rows = _legend_columns(_fig4_legend(table), table)
        fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=9, frameon=False)
        seeds = int(table["seeds"].max())
        fig.suptitle(f"Self-review on Recon-108 ({counts_phrase(counts)}), "
                     f"{labels(judge_main)} judge\none panel per start rubric and reviser; "
                     f"{'one seed' if seeds == 1 else f'mean over {seeds} seeds'} per mode"
                     f"\n(lines of equal value lie on "
                     f"one another: their tags sit side by side along them, their round points "
                     f"are concentric rings)", fontsize=10)
        bottom = (0.25 + 0.22 * legend_rows) / (1.9 + FIG4_PANEL_HEIGHT * len(revisers))
        fig.tight_layout(rect=(0, bottom, 1, 1))
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


FIG4_PANEL_WIDTH, FIG4_PANEL_HEIGHT = 5.4, 3.3  # inches per panel
FIG4_LINE_WIDTH = 1.4
FIG4_ROUND_MARKER = "o"
# points; each coincident round point larger, the outermost at most FIG4_MARKER_LARGEST
FIG4_MARKER_SIZE, FIG4_MARKER_STEP, FIG4_MARKER_LARGEST = 4.5, 3.5, 15.0
METRIC_TAGS = {"correct_passed": "*", "flawed_caught": "X", "unplanned_caught": "p"}


def _fig4_panel(ax, rows: pd.DataFrame, index: int, source: str,
                table: pd.DataFrame | None = None, reviser: str = "",
                labels: ModelLabels | None = None) -> None:
    table = rows if table is None else table
    series_list = []
    for mode in ordered(rows["mode"], MODE_ORDER):
        for metric in ordered(rows["metric"], METRICS):
            series = rows[(rows["mode"] == mode) & (rows["metric"] == metric)].sort_values("round")
            if not series.empty:
                series_list.append((mode, metric, series))
    # Every point and segment at its true round and value. Lines of equal value lie on one
    # another, so each segment carries a tag (shape = metric, colour = mode), the tags of
    # coincident segments side by side along it; coincident round points are concentric
    # hollow rings, each a step larger.
    def segments_of(series):
        x, y = series["round"].to_numpy(float), series["value"].to_numpy(float)
        return list(zip(x[:-1], y[:-1], x[1:], y[1:]))
    sharing, stacked = Overlaps(), Overlaps()
    for *_, series in series_list:
        for segment in segments_of(series):
            sharing.layer(*segment)
        for point in zip(series["round"].to_numpy(float), series["value"].to_numpy(float)):
            stacked.layer(*point)
    segments, points = Overlaps(), Overlaps()
    for mode, metric, series in series_list:
        color = MODE_COLORS.get(mode, "black")
        x, y = series["round"].to_numpy(float), series["value"].to_numpy(float)
        ax.plot(x, y, color=color, linestyle=METRIC_LINESTYLES.get(metric, "-."),
                linewidth=FIG4_LINE_WIDTH, zorder=3, clip_on=False)
        for x0, y0, x1, y1 in segments_of(series):
            layer, count = segments.layer(x0, y0, x1, y1), sharing.count(x0, y0, x1, y1)
            where = 0.5 if count == 1 else 0.2 + 0.6 * layer / (count - 1)
            ax.plot([x0 + where * (x1 - x0)], [y0 + where * (y1 - y0)], linestyle="none",
                    marker=METRIC_TAGS.get(metric, "x"),
                    markersize=9 if METRIC_TAGS.get(metric) == "*" else 7, color=color,
                    markeredgecolor="white", markeredgewidth=0.5, zorder=5, clip_on=False)
        for x0, y0 in zip(x, y):
            layer = points.layer(x0, y0)
            ax.plot([x0], [y0], linestyle="none", marker=FIG4_ROUND_MARKER,
                    markersize=ring_size(layer, stacked.count(x0, y0), FIG4_MARKER_SIZE,
                                         FIG4_MARKER_STEP, FIG4_MARKER_LARGEST),
                    markerfacecolor="none", markeredgecolor=color, markeredgewidth=1.1,
                    zorder=4, clip_on=False)
        if series["seeds"].max() > 1:
            ax.fill_between(x, series["min"], series["max"], color=color,
                            alpha=0.1, linewidth=0)
    rounds = sorted(table["round"].unique())
    ax.set_xticks(rounds)
    ax.set_xlabel("revision round")
    ax.set_xlim(rounds[0] - 0.15, rounds[-1] + 0.15)
    _percent_axis(ax, "y", low=-8, high=108)
    ax.set_ylabel("percent of reports")
    title = f"From the {SOURCE_TITLES.get(source, source).lower()} rubric"
    if reviser:
        title += f", review by {(labels or ModelLabels())(reviser)}"
    title = _panel_title(index, title)
    if rows.empty:
        ax.text(0.5, 0.5, "no chain of this reviser from this rubric", ha="center",
                va="center", transform=ax.transAxes, fontsize=9)
    else:
        missing = [m for m in ordered(table["mode"], MODE_ORDER) if m not in set(rows["mode"])]
        if missing:  # a mode of the legend with no chain here is not a line hidden at 0
            names = " or ".join(MODE_TITLES.get(m, m).replace(" ", "-") for m in missing)
            title += f"\n(no {names} chain from this rubric)"
    ax.set_title(title, fontsize=9.5)
    ax.grid(alpha=0.3)


def _legend_columns(handles: list, table: pd.DataFrame) -> tuple[list, int]:
    """The handles padded so that a three-column legend (filled column by column) holds the
    modes in its first column, the metrics in its second and the rest in its third; and its
    number of rows."""
    modes = len(ordered(table["mode"], MODE_ORDER))
    metrics = len(ordered(table["metric"], METRICS))
    groups = [handles[:modes], handles[modes:modes + metrics], handles[modes + metrics:]]
    rows = max(len(group) for group in groups)
    blank = Line2D([], [], linestyle="none", label=" ")
    return [h for group in groups for h in group + [blank] * (rows - len(group))], rows


def _fig4_legend(table: pd.DataFrame) -> list[Artist]:
    handles: list[Artist] = [Line2D([], [], color=MODE_COLORS.get(m, "black"), linewidth=2.2,
                      label=MODE_TITLES.get(m, m))
               for m in ordered(table["mode"], MODE_ORDER)]
    handles += [Line2D([], [], color="black", linestyle=METRIC_LINESTYLES.get(m, "-."),
                       linewidth=FIG4_LINE_WIDTH, marker=METRIC_TAGS.get(m, "x"),
                       markevery=[1], markeredgecolor="white", markeredgewidth=0.5,
                       label=METRIC_TITLES.get(m, m))
                for m in ordered(table["metric"], METRICS)]
    handles.append(Line2D([], [], color="black", linestyle="none", markerfacecolor="none",
                          marker=FIG4_ROUND_MARKER, label="mean after each round"))
    if (table["seeds"] > 1).any():
        handles.append(Patch(color="gray", alpha=0.25, label="shaded: min..max over seeds"))
    return handles
