"""Figures 1, 4, 5 and 6 of the carry work, drawn from the pipeline's tidy tables.

Every function here reads tidy (long) pandas tables, selects the rows its figure needs,
draws them (matplotlib Agg, PNG and PDF) and returns the tidy table it plotted. Rates are
percents (0-100); `low`/`high` are the rate's 95% interval (rubriclab.stats.intervals,
Clopper-Pearson), NaN when undefined (drawn without an error bar). Bad input raises ValueError naming the missing column or
the empty selection; nothing is ever plotted silently empty.

The row selection helpers (`normalized_rates`, `select`, `ensure_unique`,
`chains_with_start`) are shared with rubriclab.carry.tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import patheffects  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator, PercentFormatter  # noqa: E402
from rubriclab.labels import ModelLabels, current_labels
from rubriclab.plotting import error_lengths as _error
from rubriclab.plotting import Overlaps, not_available, plural, ring_size, value_labels
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import ensure_unique, require_columns, select

from .analysis import gate_evidence_short
from .chains import paper_chain_rows, split_chain

RATES_COLUMNS = [
    "dataset", "judge", "item_set", "environments", "reviser", "source", "rendering", "mode",
    "seed",
    "round", "gate", "variant", "n_no_evidence", "metric", "value", "low", "high", "n",
    "n_undetermined",
]
ATTRIBUTION_COLUMNS = [
    "dataset", "judge", "reviser", "source", "mode", "seed", "round", "scope", "check_id", "origin",
    "credit", "blame", "unique_catches", "deleted_next_round",
]
DELETIONS_COLUMNS = [
    "dataset", "judge", "reviser", "source", "mode", "seed", "round", "scope", "check_id", "origin",
    "had_unique_catch", "had_blame",
]
CHAIN_KEYS = ["reviser", "source", "mode", "seed"]
STATE_KEYS = ["reviser", "source", "mode", "seed", "round", "scope", "check_id"]
METRICS = ["correct_passed", "flawed_caught", "unplanned_caught"]
GATES = ["none", "R", "P", "S", "S+P"]

SOURCE_ORDER = ["hand", "generated", "label", "generic"]
RENDERING_ORDER = ["per_check", "all_in_one", "paragraph", "scale"]
MODE_ORDER = ["free", "fixed_count", "delete_only"]
ORIGIN_ORDER = ["hand", "generated", "label"]

SOURCE_TITLES = {"hand": "Hand-written", "generated": "Generated", "label": "Label-taught",
                 "generic": "Generic"}
RENDERING_TITLES = {"per_check": "per check", "all_in_one": "all in one",
                    "paragraph": "paragraph", "scale": "generic scale"}
MODE_TITLES = {"free": "free", "fixed_count": "fixed count", "delete_only": "delete only"}
METRIC_TITLES = {"correct_passed": "correct passed", "flawed_caught": "flawed caught",
                 "unplanned_caught": "unplanned caught"}
GATE_TITLES = {"none": "ungated", "R": "Gate R", "P": "Gate P", "S": "Gate S",
               "S+P": "Gate S+P"}

SOURCE_COLORS = {"hand": "tab:blue", "generated": "tab:orange", "label": "tab:green",
                 "generic": "tab:gray"}
RENDERING_MARKERS = {"per_check": "o", "all_in_one": "s", "paragraph": "^", "scale": "D"}
MODE_COLORS = {"free": "tab:red", "fixed_count": "tab:purple", "delete_only": "tab:blue"}
METRIC_COLORS = {"correct_passed": "tab:green", "flawed_caught": "tab:red",
                 "unplanned_caught": "tab:orange"}
FIG6_WHISKER_COLOR, FIG6_START_WIDTH = "#222222", 2.4
METRIC_LINESTYLES = {"correct_passed": "-", "flawed_caught": "--", "unplanned_caught": ":"}

# points; each coincident marker a step larger, the outermost at most FIG1_MARKER_LARGEST
FIG1_MARKER_SIZE, FIG1_MARKER_STEP, FIG1_MARKER_LARGEST = 5.0, 4.0, 20.0

FIG1_COLUMNS = ["panel", "judge", "source", "rendering", "metric", "value", "low", "high",
                "n", "n_undetermined"]
FIG4_COLUMNS = ["reviser", "source", "mode", "round", "metric", "value", "min", "max", "seeds"]
FIG5_COLUMNS = ["origin", "checks", "mean_credit", "mean_blame", "deleted",
                "deleted_with_unique_catch", "deleted_with_blame"]
FIG6_COLUMNS = ["reviser", "source", "gate", "metric", "value", "min", "max", "chains", "final_round",
                "start", "no_evidence", "no_evidence_max"]


# --------------------------------------------------------------------------- selection



def normalized_rates(rates: pd.DataFrame) -> pd.DataFrame:
    """A checked copy of a RATES table: mode NaN (an empty string read from CSV) becomes ""."""
    require_columns(rates, RATES_COLUMNS, "rates")
    frame = rates.copy()
    frame["mode"] = frame["mode"].fillna("").astype(str)
    frame["reviser"] = frame["reviser"].fillna("").astype(str)
    for column in ("seed", "round"):
        frame[column] = frame[column].astype(int)
    for column in ("value", "low", "high"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    frame["n_no_evidence"] = pd.to_numeric(frame["n_no_evidence"], errors="raise").astype(float)
    return frame






def chains_with_start(rows: pd.DataFrame, what: str) -> pd.DataFrame:
    """The revision-chain rows (mode not "") of a selection, each chain with round-0 rows.

    A chain (judge, reviser, source, mode, seed) keeps its own round-0 rows; one without
    them borrows the start rubric's (mode "", round 0, gate none, same judge, source and
    rendering), relabelled with the chain's reviser, mode and seed.
    """
    chains = rows[rows["mode"] != ""]
    if chains.empty:
        raise ValueError(f"{what}: no revision-chain rows (mode free, fixed_count or "
                         f"delete_only) in the selection")
    starts = rows[(rows["mode"] == "") & (rows["round"] == 0) & (rows["gate"] == "none")]
    borrowed = []
    for (judge, reviser, source, mode, seed), chain in chains.groupby(["judge", *CHAIN_KEYS],
                                                                      sort=False):
        if (chain["round"] == 0).any():
            continue
        start = starts[(starts["judge"] == judge) & (starts["source"] == source)
                       & starts["rendering"].isin(chain["rendering"].unique())]
        if start.empty:
            raise ValueError(f"{what}: chain {reviser}/{source}/{mode}/seed {seed} under {judge} "
                             f"has no round-0 rows and there is no start rubric (mode '') to "
                             f"borrow")
        borrowed.append(start.assign(reviser=reviser, mode=mode, seed=seed))
    return pd.concat([chains, *borrowed], ignore_index=True)


def ordered(values: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """Distinct values: those in `preferred` in its order, then the rest sorted."""
    distinct = list(dict.fromkeys(values))
    return [v for v in preferred if v in distinct] + sorted(v for v in distinct
                                                            if v not in preferred)


def sort_chains(frame: pd.DataFrame, extra: Sequence[str] = ()) -> pd.DataFrame:
    """Rows in reviser, source, mode, seed order (then `extra` columns)."""
    source_rank = {v: i for i, v in enumerate(ordered(frame["source"], SOURCE_ORDER))}
    mode_rank = {v: i for i, v in enumerate(ordered(frame["mode"], MODE_ORDER))}
    ranks = {"source": source_rank, "mode": mode_rank}
    return frame.sort_values(
        [*CHAIN_KEYS, *extra], kind="stable",
        key=lambda column: column.map(ranks[column.name]) if column.name in ranks else column,
    ).reset_index(drop=True)


def item_count(rows: pd.DataFrame, metric: str) -> int:
    """Items of a metric's kind: the largest determined + undetermined count among its rows."""
    kind = rows[rows["metric"] == metric]
    return int((kind["n"] + kind["n_undetermined"]).max()) if not kind.empty else 0


def judge_label(judge: str, labels: ModelLabels | None = None) -> str:
    return (labels or current_labels())(judge)


# --------------------------------------------------------------------------- drawing





def _percent_axis(ax, axis: str = "y", low: float = 0, high: float = 104) -> None:
    """Ticks 0..100% on limits low..high: room beyond 0 and 100 (low < 0 for points and
    lines) so that a marker or label at 0% or 100% is drawn whole, inside the frame."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(PercentFormatter(100, decimals=0))
    target.set_ticks(range(0, 101, 20))
    (ax.set_ylim if axis == "y" else ax.set_xlim)(low, high)


def _unclipped(artist) -> None:
    """Draw a line, marker or error bar whole where it sits on the axes' edge."""
    children = artist.get_children() if hasattr(artist, "get_children") else [artist]
    for child in [artist, *children]:
        if hasattr(child, "set_clip_on"):
            child.set_clip_on(False)
    for part in getattr(artist, "lines", ()) or ():
        for piece in (part if isinstance(part, (list, tuple)) else [part]):
            if hasattr(piece, "set_clip_on"):
                piece.set_clip_on(False)


def _panel_title(index: int, text: str) -> str:
    return f"({chr(ord('a') + index)}) {text}"


# --------------------------------------------------------------------------- Figure 1

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
        xerr, yerr = (None if not err.any() else err for err in (xerr, yerr))  # no bare caps
        _unclipped(ax.errorbar([x], [y], xerr=xerr, yerr=yerr, linestyle="none",
                               marker=RENDERING_MARKERS.get(rendering, "x"),
                               markersize=ring_size(layer, stacked.count(x, y),
                                                    FIG1_MARKER_SIZE, FIG1_MARKER_STEP,
                                                    FIG1_MARKER_LARGEST),
                               markerfacecolor="none", markeredgecolor=color,
                               markeredgewidth=1.1, color=color, capsize=2, elinewidth=0.8,
                               zorder=3 + 0.01 * layer))
    sources = ordered(rows["source"], SOURCE_ORDER)
    renderings = ordered(rows["rendering"], RENDERING_ORDER)
    handles = [Patch(color=SOURCE_COLORS.get(s, "black"), label=SOURCE_TITLES.get(s, s))
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


# --------------------------------------------------------------------------- Figure 4

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


def recon108_counts(rates: pd.DataFrame, judge_main: str, environments: str) -> dict[str, int]:
    """{"correct": n, "flawed": n, "unplanned": n} reports of Recon-108 behind the rates."""
    frame = normalized_rates(rates)
    rows = frame[(frame["dataset"] == "recon") & (frame["item_set"] == "recon108")
                 & (frame["environments"] == environments) & (frame["judge"] == judge_main)]
    return {kind: item_count(rows, metric) for kind, metric in
            (("correct", "correct_passed"), ("flawed", "flawed_caught"),
             ("unplanned", "unplanned_caught"))}


def counts_phrase(counts: dict[str, int]) -> str:
    """"reports: 3 correct, 6 flawed, 1 unplanned" (no "1 unplanned reports")."""
    return "reports: " + ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)


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


def _fig4_legend(table: pd.DataFrame) -> list:
    handles = [Line2D([], [], color=MODE_COLORS.get(m, "black"), linewidth=2.2,
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


# --------------------------------------------------------------------------- Figure 5

def _as_bool(series: pd.Series, name: str) -> pd.Series:
    if series.dtype == bool:
        return series
    words = {"true": True, "false": False, "1": True, "0": False}
    mapped = series.map(lambda v: words.get(str(v).strip().lower()))
    if mapped.isna().any():
        raise ValueError(f"column {name!r} holds non-boolean values "
                         f"{sorted(set(series[mapped.isna()].astype(str)))}")
    return mapped.astype(bool)


def _with_mode(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(mode=frame["mode"].fillna("").astype(str))


def fig5_table(attribution: pd.DataFrame, deletions: pd.DataFrame,
               judge_main: str, paper_chains: Sequence[str] | None = None) -> pd.DataFrame:
    """Per check origin on Recon under judge_main: the number of check states, their mean
    credit and blame (every chain), and the checks the paper's chains (`paper_chains`,
    "<source>:<mode>"; None: every chain) deleted, with a unique catch / with any blame.

    Each distinct (reviser, source, mode, seed, round, scope, check_id) state counts once, in
    the attribution and in the deletions (a repeated row is dropped, the first kept).
    """
    require_columns(attribution, ATTRIBUTION_COLUMNS, "attribution")
    require_columns(deletions, DELETIONS_COLUMNS, "deletions")
    states = select(_with_mode(attribution), "Figure 5 (a) attribution", dataset="recon",
                    judge=judge_main).drop_duplicates(STATE_KEYS)
    # No chain deleting a check is a result (the title then says "0 of the 0"), not an error.
    deletions = paper_chain_rows(_with_mode(deletions), paper_chains)
    deleted = deletions[(deletions["dataset"] == "recon")
                        & (deletions["judge"] == judge_main)].drop_duplicates(STATE_KEYS)
    deleted = deleted.assign(had_unique_catch=_as_bool(deleted["had_unique_catch"],
                                                       "had_unique_catch"),
                             had_blame=_as_bool(deleted["had_blame"], "had_blame"))
    per_check = states.groupby("origin").agg(checks=("check_id", "size"),
                                             mean_credit=("credit", "mean"),
                                             mean_blame=("blame", "mean"))
    per_deleted = deleted.groupby("origin").agg(deleted=("check_id", "size"),
                                                deleted_with_unique_catch=("had_unique_catch", "sum"),
                                                deleted_with_blame=("had_blame", "sum"))
    table = per_check.join(per_deleted, how="outer")
    counts = ["checks", "deleted", "deleted_with_unique_catch", "deleted_with_blame"]
    table[counts] = table[counts].fillna(0).astype(int)
    table = table.reindex(ordered(table.index, ORIGIN_ORDER)).rename_axis("origin").reset_index()
    return table[FIG5_COLUMNS]


def fig5_title(table: pd.DataFrame, chains: int | None = None) -> str:
    """"78 of the 186 checks deleted across the 12 Recon revision chains held a unique catch
    and 2 carried blame" (without `chains`: "... deleted checks ...")."""
    total = int(table["deleted"].sum())
    unique = int(table["deleted_with_unique_catch"].sum())
    blamed = int(table["deleted_with_blame"].sum())
    where = ("deleted checks" if chains is None
             else f"checks deleted across the {plural(chains, 'Recon revision chain')}")
    return f"{unique} of the {total} {where} held a unique catch and {blamed} carried blame"


def paper_chain_count(attribution: pd.DataFrame, judge_main: str,
                      paper_chains: Sequence[str] | None) -> int:
    """The Recon chains (reviser, source, mode, seed) behind Figure 5b: the paper's chains of
    the attribution under judge_main."""
    rows = paper_chain_rows(_with_mode(attribution), paper_chains)
    rows = rows[(rows["dataset"] == "recon") & (rows["judge"] == judge_main)
                & (rows["mode"] != "")]
    return len(rows.drop_duplicates(CHAIN_KEYS))


def fig5_attribution_by_origin(attribution: pd.DataFrame, deletions: pd.DataFrame,
                               judge_main: str, out_png: Path, out_pdf: Path,
                               labels: ModelLabels | None = None,
                               paper_chains: Sequence[str] | None = None) -> pd.DataFrame:
    """Figure 5: (a) mean Shapley catch credit and false-fail blame per check, by origin
    (every chain); (b) the checks the paper's chains (`paper_chains`) deleted, by origin, with
    how many held a unique catch or carried blame. Dataset recon, judge judge_main; each
    distinct (reviser, source, mode, seed, round, scope, check_id) state counts once."""
    model_labels = labels or ModelLabels()
    table = fig5_table(attribution, deletions, judge_main, paper_chains)
    chains = paper_chain_count(attribution, judge_main, paper_chains)
    labels = [_origin_label(origin, model_labels) for origin in table["origin"]]
    long_labels = max((len(label) for label in labels), default=0) > 30
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(max(12.5, 1.1 * len(labels) + 4),
                                                     7.2 if long_labels else 4.8))
    try:
        _grouped_bars(ax_a, labels, table, {"mean_credit": ("catch credit", "tab:green"),
                                            "mean_blame": ("false-fail blame", "tab:red")})
        ax_a.set_ylabel("mean per check (items)")
        ax_a.set_title(_panel_title(0, "Shapley credit and blame per check, by origin"))
        if table["deleted"].sum() == 0:
            not_available(ax_b, "no chain deleted a check")
        else:
            _grouped_bars(ax_b, labels, table, {
                "deleted": ("deleted", "tab:gray"),
                "deleted_with_unique_catch": ("held a unique catch", "tab:green"),
                "deleted_with_blame": ("carried blame", "tab:red")})
            ax_b.set_ylabel("number of checks")
            ax_b.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_b.set_title(_panel_title(1, "Deleted checks by origin:\n"
                                       + fig5_title(table, chains).replace(" held", "\nheld")),
                       fontsize=10)
        states = int(table["checks"].sum())
        fig.suptitle(f"Attribution by check origin on Recon, {model_labels(judge_main)} judge "
                     f"({plural(states, 'check state')}: each check in each round of each chain)",
                     fontsize=11)
        fig.tight_layout()
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


def _origin_label(origin: str, labels: ModelLabels | None = None) -> str:
    """"Hand-written", or "review by <reviser label> of <start>" wrapped to short lines."""
    import textwrap
    if origin in SOURCE_TITLES:
        return SOURCE_TITLES[origin]
    text = str(origin)
    if text.startswith("review by ") and " of " in text:
        reviser, start = text[len("review by "):].rsplit(" of ", 1)
        text = f"review by {(labels or ModelLabels())(reviser)} of {start}"
    text = text.replace(" by ", " by\n").replace(" of ", "\nof ")
    return "\n".join(textwrap.fill(line, 32, break_on_hyphens=False, break_long_words=True)
                     for line in text.split("\n"))


def _grouped_bars(ax, labels: list[str], table: pd.DataFrame, columns: dict) -> None:
    width = 0.8 / len(columns)
    for index, (column, (label, color)) in enumerate(columns.items()):
        positions = np.arange(len(labels)) + (index - (len(columns) - 1) / 2) * width
        ax.bar(positions, table[column].fillna(0), width, label=label, color=color)
    ax.set_xticks(np.arange(len(labels)))
    if any(label.count("\n") > 1 for label in labels):  # reviser origins: slanted
        ax.set_xticklabels(labels, fontsize=7, rotation=35, ha="right",
                           rotation_mode="anchor")
    else:
        ax.set_xticklabels(labels, fontsize=8)
    ax.legend(fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)


# --------------------------------------------------------------------------- Figure 6

def fig6_table(rates: pd.DataFrame, judge_main: str,
               sources: Sequence[str] = ("hand", "label"),
               paper_chains: Sequence[str] | None = None) -> pd.DataFrame:
    """Gated rubrics after each chain's final round on Recon-108's evaluation environments
    (variant standard, judge_main), over the paper's chains (`paper_chains`, "<source>:<mode>",
    carry.chains.recon.chains; None: every chain): per reviser, source, gate and metric the
    mean over the chains (their seeds), its min..max, the number of chains, the final round
    (the largest if chains differ), the mean start value (round 0, gate none) and the changes
    the gate refused for want of evidence (n_no_evidence at the final round: the mean per
    chain and the largest)."""
    frame = paper_chain_rows(normalized_rates(rates), paper_chains)
    rows = select(frame, "Figure 6", dataset="recon", item_set="recon108",
                  environments="evaluation", variant="standard", judge=judge_main,
                  gate=GATES)
    panels = [_fig6_source(rows, source) for source in sources]
    table = pd.concat(panels, ignore_index=True)
    gate_rank = {g: i for i, g in enumerate(GATES)}
    metric_rank = {m: i for i, m in enumerate(ordered(table["metric"], METRICS))}
    source_rank = {s: i for i, s in enumerate(sources)}
    reviser_rank = {r: i for i, r in enumerate(dict.fromkeys(table["reviser"]))}
    ranks = {"gate": gate_rank, "metric": metric_rank, "source": source_rank,
             "reviser": reviser_rank}
    table = table.sort_values(["reviser", "source", "gate", "metric"], kind="stable",
                              key=lambda c: c.map(ranks[c.name]))
    return table[FIG6_COLUMNS].reset_index(drop=True)


def _fig6_source(rows: pd.DataFrame, source: str) -> pd.DataFrame:
    what = f"Figure 6 panel from source {source!r}"
    chains = chains_with_start(select(rows, what, source=source), what)
    ensure_unique(chains, [*CHAIN_KEYS, "round", "gate", "metric"], what)
    final = chains.groupby(CHAIN_KEYS)["round"].transform("max")
    if (final == 0).all():
        raise ValueError(f"{what}: no revision round after round 0")
    last = chains[(chains["round"] == final) & (final > 0)]
    start = chains[(chains["round"] == 0) & (chains["gate"] == "none")]
    summary = (last.groupby(["reviser", "gate", "metric"], sort=False)["value"]
               .agg(value="mean", min="min", max="max", chains="count").reset_index())
    summary["final_round"] = int(last["round"].max())
    summary["start"] = summary["metric"].map(start.groupby("metric")["value"].mean())
    per_chain = last.groupby([*CHAIN_KEYS, "gate"], sort=False)["n_no_evidence"].max()
    refused = per_chain.groupby(["reviser", "gate"], sort=False).agg(["mean", "max"])
    index = pd.MultiIndex.from_frame(summary[["reviser", "gate"]])
    summary["no_evidence"] = refused["mean"].reindex(index).to_numpy()
    summary["no_evidence_max"] = refused["max"].reindex(index).to_numpy()
    return summary.assign(source=source)


def fig6_gated_quality(rates: pd.DataFrame, judge_main: str, out_png: Path, out_pdf: Path,
                       sources: Sequence[str] = ("hand", "label"),
                       labels: ModelLabels | None = None,
                       paper_chains: Sequence[str] | None = None,
                       gate_evidence: str | None = None) -> pd.DataFrame:
    """Figure 6: rubric quality after the final round, per gate (ungated, R, P, S, S+P),
    on Recon-108's evaluation environments, one row of panels per reviser. Bars are the mean
    over the paper's chains of the source (`paper_chains`; their seeds), whiskers min..max over
    those chains; dotted lines are the start values (round 0), as a black tick across each
    bar. Under each gate: the changes it refused for want of evidence, mean per chain. The
    title says what the gates decided with (`gate_evidence`, carry.recon.gate_evidence)."""
    labels = labels or ModelLabels()
    evidence = ("" if gate_evidence is None
                else f"\ngate evidence: {gate_evidence_short(gate_evidence)}")
    table = fig6_table(rates, judge_main, sources, paper_chains)
    counts = recon108_counts(rates, judge_main, "evaluation")
    revisers = list(dict.fromkeys(table["reviser"]))
    fig, axes = plt.subplots(len(revisers), len(sources),
                             figsize=(5.8 * len(sources), 0.6 + 4.2 * len(revisers)),
                             squeeze=False, sharey=True)
    try:
        for row, reviser in enumerate(revisers):
            for column, source in enumerate(sources):
                index = row * len(sources) + column
                _fig6_panel(axes[row][column], table[(table["source"] == source)
                                                     & (table["reviser"] == reviser)],
                            index, source, labels(reviser) if len(revisers) > 1 else "")
        handles = [Patch(color=METRIC_COLORS.get(m, "black"), label=METRIC_TITLES.get(m, m))
                   for m in ordered(table["metric"], METRICS)]
        handles.append(Line2D([], [], color="black", linewidth=FIG6_START_WIDTH,
                              solid_capstyle="butt", label="start rubric (round 0), over its own bar"))
        if (table["max"] > table["min"]).any():
            handles.append(Line2D([], [], color=FIG6_WHISKER_COLOR, linewidth=1.3,
                                  marker="_", markersize=8, markeredgewidth=1.3,
                                  label="min..max over chains"))
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
                   frameon=False)
        chains = int(table["chains"].max())
        modes = ("every mode" if paper_chains is None else " and ".join(
            MODE_TITLES.get(m, m) for m in ordered([split_chain(c)[1] for c in paper_chains],
                                                   MODE_ORDER)))
        fig.suptitle(f"Gated rubrics after round {int(table['final_round'].max())} on the "
                     f"Recon-108 evaluation environments ({counts_phrase(counts)}), "
                     f"{labels(judge_main)} judge\nmean over {plural(chains, 'chain')} per "
                     f"panel: {modes} revision, each seed (whiskers: min..max over chains, none "
                     f"where all agree)\nunder each gate: the changes it refused for want of "
                     f"evidence, mean per chain{evidence}", fontsize=10)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


def refused_label(gate: str, refused: float) -> str:
    """A Figure 6 gate's tick label: "Gate S\nrefused 73" (mean refusals for want of evidence
    per chain; one decimal where the mean is not whole); ungated has no gate to refuse."""
    if gate == "none" or pd.isna(refused):
        return GATE_TITLES[gate]
    count = f"{refused:.0f}" if float(refused).is_integer() else f"{refused:.1f}"
    return f"{GATE_TITLES[gate]}\nrefused {count}"


def _fig6_panel(ax, rows: pd.DataFrame, index: int, source: str, reviser: str = "") -> None:
    if rows.empty:  # this reviser has no chain from this source
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"no {SOURCE_TITLES.get(source, source).lower()} chain"
                          f"{' of ' + reviser if reviser else ''}", ha="center", va="center",
                transform=ax.transAxes, fontsize=9)
        return
    gates = [g for g in GATES if g in set(rows["gate"])]
    metrics = ordered(rows["metric"], METRICS)
    width = 0.8 / len(metrics)
    for position, metric in enumerate(metrics):
        mine = rows[rows["metric"] == metric].set_index("gate").reindex(gates)
        x = np.arange(len(gates)) + (position - (len(metrics) - 1) / 2) * width
        bars = ax.bar(x, mine["value"].fillna(0), width, color=METRIC_COLORS.get(metric, "black"),
                      zorder=2)
        # Whiskers only where the chains differ (min < max); a dark line with caps, over
        # the bar. Where every chain agrees there is no whisker to draw.
        spread = (mine["max"] > mine["min"]).to_numpy()
        if spread.any():
            _unclipped(ax.errorbar(x[spread], mine["value"][spread],
                                   yerr=_error(mine["value"], mine["min"], mine["max"])[:, spread],
                                   linestyle="none", color=FIG6_WHISKER_COLOR, elinewidth=1.3,
                                   capsize=4, capthick=1.3, zorder=4))
        # The start value: a short black tick across each bar (white-edged, over the bar),
        # so it reads on a bar top and on the 0 baseline alike.
        for centre, value in zip(x, mine["start"]):
            if pd.notna(value):
                ax.plot([centre - 0.42 * width, centre + 0.42 * width], [value, value],
                        color="black", linewidth=FIG6_START_WIDTH, solid_capstyle="butt",
                        zorder=5, clip_on=False, gid="start rubric",
                        path_effects=[patheffects.withStroke(linewidth=FIG6_START_WIDTH + 1.6,
                                                             foreground="white")])
        # The label over the highest of the bar, its whisker and its start tick.
        tops = np.fmax(np.fmax(mine["value"].to_numpy(float),
                               np.where(spread, mine["max"], np.nan)),
                       mine["start"].to_numpy(float))
        value_labels(ax, bars, mine["value"], tops=tops, fontsize=7, rotation=90)
    ax.set_xticks(np.arange(len(gates)))
    refused = rows.groupby("gate")["no_evidence"].first()
    ax.set_xticklabels([refused_label(g, refused.get(g)) for g in gates], fontsize=8)
    _percent_axis(ax, "y", low=-4, high=118)  # room for the value labels over 100%
    ax.set_ylabel("percent of reports")
    by = f",\nreview by {reviser}" if reviser else ""
    ax.set_title(_panel_title(index, f"From the {SOURCE_TITLES.get(source, source).lower()} "
                                     f"rubric{by}"), fontsize=9 if by else None)
    ax.grid(axis="y", alpha=0.3)
