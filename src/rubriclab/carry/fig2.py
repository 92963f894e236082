"""Figure 2 of the carry work: generic checklists of increasing length.

Each panel shows, per checklist length, the percent of correct outputs passed and of
flawed outputs caught, for the per-check rendering (solid) and the paragraph rendering
(dashed), with the min..max over runs shaded when there is more than one run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from rubriclab.labels import DATASET_TITLES  # noqa: E402
from rubriclab.plotting import Overlaps, label_words, ring_size  # noqa: E402

FIG2_COLUMNS = [
    "dataset", "rendering", "length", "runs",
    "n_correct", "n_flawed", "n_undetermined", "correct_passed", "flawed_caught",
    "correct_passed_min", "correct_passed_max", "flawed_caught_min", "flawed_caught_max",
]
RENDERING_STYLES = {
    "per_check": {"linestyle": "-", "marker": "o", "label": "one call per check"},
    "paragraph": {"linestyle": "--", "marker": "s", "label": "paragraph"},
}
FIG2_MARKER_SIZE = 4.5  # points; a ring for each further series at the same point
RATE_STYLES = {
    "correct_passed": {"color": "tab:green", "label": "{correct} {items} passed"},
    "flawed_caught": {"color": "tab:red", "label": "{flawed} {items} caught"},
}


def fig2_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The tidy Figure 2 table: every dataset's mean-over-runs rows, in FIG2_COLUMNS order."""
    if not tables:
        raise ValueError("fig2_table needs at least one dataset table")
    frames = [_with_dataset(name, table) for name, table in tables.items()]
    combined = pd.concat(frames, ignore_index=True)
    dataset_order = {name: index for index, name in enumerate(tables)}
    combined = combined.sort_values(
        ["dataset", "rendering", "length"],
        key=lambda column: column.map(dataset_order) if column.name == "dataset" else column,
        kind="stable",
    )
    return combined[FIG2_COLUMNS].reset_index(drop=True)


def plot_fig2(tables: dict[str, pd.DataFrame], png: Path, pdf: Path, judge_label: str,
              titles: Mapping[str, str] | None = None,
              words: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """Draw one panel per dataset and save the figure as PNG and PDF. Each panel names its
    labels in its paper's words (consistent / inconsistent summaries, faithful / hallucinated
    responses) and its item counts. `titles` and `words` name a dataset of your own (its
    panel title; its {"correct", "flawed", "items"} words), over the papers' names."""
    titles, words_of = {**DATASET_TITLES, **(titles or {})}, dict(words or {})
    table = fig2_table(tables)
    datasets = list(dict.fromkeys(table["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.6 * len(datasets), 5.4), squeeze=False)
    try:
        for index, (ax, dataset) in enumerate(zip(axes[0], datasets)):
            rows = table[table["dataset"] == dataset]
            panel_words = {**label_words(dataset), **words_of.get(dataset, {})}
            title = (f"({chr(ord('a') + index)}) {titles.get(dataset, dataset)}: "
                     f"{int(rows['n_correct'].max())} {panel_words['correct']}, "
                     f"{int(rows['n_flawed'].max())} {panel_words['flawed']}")
            _draw_panel(ax, rows, title, panel_words)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, fontsize=8,
                      frameon=False)
        # a checklist of your own is not one of the papers' generic ones
        kind = "Generic checklists" if set(datasets) <= set(DATASET_TITLES) else "Checklists"
        fig.suptitle(f"{kind} of increasing length: {judge_label} judge, "
                     f"{_runs_phrase(table['runs'])}", fontsize=11)
        fig.tight_layout()
        for path in (Path(png), Path(pdf)):
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=150)
    finally:
        plt.close(fig)


def _draw_panel(ax, rows: pd.DataFrame, title: str, words: dict[str, str]) -> None:
    drawn = [(rendering, rate, rows[rows["rendering"] == rendering].sort_values("length"))
             for rendering in RENDERING_STYLES for rate in RATE_STYLES]
    drawn = [entry for entry in drawn if not entry[2].empty]

    def points(series, rate):
        return [(x, y) for x, y in zip(series["length"], series[rate]) if pd.notna(y)]

    # Hollow markers; a point where an earlier series already has one gets a larger ring
    # too, so equal values (a rate of one rendering equal to another's) stay visible.
    stacked, layers = Overlaps(), Overlaps()
    for _, rate, series in drawn:
        for point in points(series, rate):
            stacked.layer(*point)
    for rendering, rate, series in drawn:
        rendering_style, rate_style = RENDERING_STYLES[rendering], RATE_STYLES[rate]
        ax.plot(
            series["length"], series[rate],
            color=rate_style["color"], linestyle=rendering_style["linestyle"],
            marker=rendering_style["marker"], markersize=FIG2_MARKER_SIZE,
            markerfacecolor="none", clip_on=False,
            label=f"{rate_style['label'].format(**words)} ({rendering_style['label']})",
        )
        for x, y in points(series, rate):
            layer = layers.layer(x, y)
            if layer:
                ax.plot([x], [y], linestyle="none", marker=rendering_style["marker"],
                        markersize=ring_size(layer, stacked.count(x, y), FIG2_MARKER_SIZE,
                                             3.0, 12.0),
                        markerfacecolor="none", markeredgecolor=rate_style["color"],
                        clip_on=False, zorder=3)
        if series["runs"].max() > 1:
            ax.fill_between(
                series["length"], series[f"{rate}_min"], series[f"{rate}_max"],
                color=rate_style["color"], alpha=0.12, linewidth=0,
            )
    lengths = sorted(rows["length"].unique())
    ax.set_xticks(lengths)
    ax.set_xlabel("number of checks")
    ax.set_ylim(-3, 103)
    ax.set_ylabel(f"percent of {words['items']}")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


def _with_dataset(name: str, table: pd.DataFrame) -> pd.DataFrame:
    if "dataset" not in table.columns:
        table = table.assign(dataset=name)
    others = sorted(set(table["dataset"]) - {name})
    if others:
        raise ValueError(f"table for {name!r} has rows for other datasets: {others}")
    missing = [column for column in FIG2_COLUMNS if column not in table.columns]
    if missing:
        raise ValueError(f"table for {name!r} is missing column(s) {missing}")
    return table


def _runs_phrase(runs: pd.Series) -> str:
    low, high = int(runs.min()), int(runs.max())
    if low == high:
        return f"mean of {low} run{'s' if low != 1 else ''}"
    return f"mean of {low}-{high} runs"
