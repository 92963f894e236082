"""Figures 4, 5, 6, A.1, A.2 and A.4 of the transfer work, drawn from its tidy tables.

Every function reads tidy (long) pandas tables written by the transfer pipeline, selects
the rows its figure needs, draws them (matplotlib Agg, PNG and PDF) and returns the tidy
table it plotted. No model is called here.

Inputs (values are fractions in [0, 1] unless said otherwise; `low`/`high` are 95% paired
bootstrap percentile bounds, NaN when undefined and then drawn without an error bar):

- STATS: one row per bootstrapped statistic (STATS_COLUMNS). `generator_b` is "" for a
  plain statistic and, for a paired difference, the second generator (the statistic is
  generator minus generator_b). `response_model`, `panel` and `framing` are "" where they
  do not apply (an empty cell read back from CSV as NaN counts as "").
- CATEGORIES (Figure 6): CATEGORIES_COLUMNS, `share` a percent (0-100).

Bad input raises ValueError naming the missing column or the empty selection; nothing is
ever plotted silently empty, and a selection that holds two rows for one bar raises too.
Legends and labels name models by their display labels (rubriclab.labels: the config's
`labels:` map, else provider kept and query string dropped), the same as carry's. Generators keep their order of first appearance in the table; the expert
rubric, where it appears, comes last.

The helpers (`normalized_stats`, `select`, `ensure_unique`, `short_name`, `interval_cell`
...) are shared with rubriclab.transfer.tables.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from rubriclab.labels import current_labels, with_labels
from rubriclab.plotting import error_lengths as _error
from rubriclab.plotting import not_available, plural, value_label, wrapped, zero_bar_marks
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import ensure_unique, require_columns, select

STATS_COLUMNS = ["family", "metric", "generator", "generator_b", "response_model", "panel",
                 "framing", "estimate", "low", "high", "n_used", "B", "n_examples"]
STATS_TEXT_COLUMNS = ["family", "metric", "generator", "generator_b", "response_model",
                      "panel", "framing"]
CATEGORIES_COLUMNS = ["generator", "response_model", "row_kind", "target_rubric", "direction",
                      "category", "share", "n_criteria"]

EXPERT = "expert"
FULL_PANEL = "all"

# Figure 4 (and Table A.4): the existing approaches of Section 4.2.
MATCHING_METRICS = ["llm_matching_precision", "llm_matching_recall", "llm_matching_f1"]
EXISTING_METRICS = [*MATCHING_METRICS, "embedding_precision", "embedding_recall",
                    "embedding_f1", "panel_spearman", "panel_kendall_tau_b", "panel_top1",
                    "panel_pairwise", "physician_spearman", "discrimination"]
PANEL_METRICS = ["panel_spearman", "panel_kendall_tau_b", "panel_top1", "panel_pairwise"]
EXISTING_TITLES = {
    "llm_matching_precision": "LLM-matching precision",
    "llm_matching_recall": "LLM-matching recall",
    "llm_matching_f1": "LLM-matching F1",
    "embedding_precision": "Embedding precision",
    "embedding_recall": "Embedding recall",
    "embedding_f1": "Embedding F1",
    "panel_spearman": "Panel Spearman",
    "panel_kendall_tau_b": "Panel Kendall tau-b",
    "panel_top1": "Panel top-1 agreement",
    "panel_pairwise": "Panel pairwise accuracy",
    "physician_spearman": "Physician Spearman",
    "discrimination": "Discrimination (physician vs degraded)",
}
PRF_TITLES = {"precision": "P", "recall": "R", "f1": "F1"}

# Figure A.1: the three LLM-matching framings, left to right.
FRAMING_METRICS = ["framing_precision", "framing_recall", "framing_f1"]
FRAMINGS = ["match_rubric", "simulate_intervention", "implies"]
FRAMING_TITLES = {"match_rubric": "measure the same thing",
                  "simulate_intervention": "changing one changes the other",
                  "implies": "one logically entails the other"}

# Figure 5 / Table A.8 order (target generated first) and Figure A.4 order (its caption).
IT_METRICS = ["Q+(Cg->C*)", "Q-(Cg->C*)", "Q+(C*->Cg)", "Q-(C*->Cg)"]
FIGA4_ORDER = ["Q+(Cg->C*)", "Q+(C*->Cg)", "Q-(C*->Cg)", "Q-(Cg->C*)"]
IT_TASKS = {
    "Q+(Cg->C*)": "training target",
    "Q-(Cg->C*)": "degradation flag",
    "Q+(C*->Cg)": "detecting good responses",
    "Q-(C*->Cg)": "detecting bad responses",
}
IT_SYMBOLS = {
    "Q+(Cg->C*)": "Q⁺(Cᵍ→C*)",
    "Q-(Cg->C*)": "Q⁻(Cᵍ→C*)",
    "Q+(C*->Cg)": "Q⁺(C*→Cᵍ)",
    "Q-(C*->Cg)": "Q⁻(C*→Cᵍ)",
}

# Figure 6.
ROW_KINDS = ["gen->expert", "expert->gen", "within"]
BETWEEN_CATEGORIES = ["irrelevant", "matched", "general"]
WITHIN_CATEGORIES = ["none", "one", "several"]
CATEGORY_COLORS = {"irrelevant": "#c7c7c7", "matched": "tab:blue", "general": "tab:green",
                   "none": "#c7c7c7", "one": "tab:orange", "several": "tab:purple"}
DIRECTION_TITLES = {"+": "Intervene to pass, R+c", "-": "Intervene to fail, R-c"}
FIG6_EMPTY_REASONS = {"+": "none failed before the edit", "-": "none passed before the edit"}
SHARE_TOLERANCE = 1.0  # percent: a bar's shares must sum to 100 within this

FIG4_COLUMNS = ["subplot", "metric", "generator", "estimate", "low", "high", "n_used",
                "n_examples"]
FIG4_SUBPLOTS = ["llm_matching", "panel_correlation", "physician_correlation",
                 "discrimination"]
FIG5_COLUMNS = ["metric", "generator", "generator_b", "estimate", "low", "high", "n_used",
                "n_examples", "star", "star_level"]
FIG6_COLUMNS = ["chart", "row", "row_kind", "row_label", "generator", "target_rubric",
                "measured_rubric", "direction", "category", "share", "n_criteria"]
FIGA1_COLUMNS = ["framing", "metric", "generator", "estimate", "low", "high", "n_used",
                 "n_examples"]
FIGA2_COLUMNS = ["panel", "generator", "estimate", "low", "high", "n_used", "n_examples"]
FIGA4_COLUMNS = ["metric", "response_model", "generator", "estimate", "low", "high",
                 "n_used", "n_examples"]

EXPERT_COLOR = "#555555"


# --------------------------------------------------------------------------- selection



def _text(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    for column in columns:
        values = frame[column].astype(object)
        frame[column] = values.where(values.notna(), "").astype(str)
    return frame


def normalized_stats(stats: pd.DataFrame) -> pd.DataFrame:
    """A checked copy of a STATS table: text columns NaN -> "", estimate/low/high floats."""
    require_columns(stats, STATS_COLUMNS, "stats")
    frame = _text(stats.copy(), STATS_TEXT_COLUMNS)
    for column in ("estimate", "low", "high"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def normalized_categories(categories: pd.DataFrame) -> pd.DataFrame:
    """A checked copy of a CATEGORIES table (text NaN -> "", share float)."""
    require_columns(categories, CATEGORIES_COLUMNS, "categories")
    frame = _text(categories.copy(),
                  ["generator", "response_model", "row_kind", "target_rubric", "direction",
                   "category"])
    frame["share"] = pd.to_numeric(frame["share"], errors="coerce").astype(float)
    return frame






def ordered(values: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """Distinct values: those in `preferred` in its order, then the rest in first-seen order."""
    distinct = list(dict.fromkeys(values))
    return [v for v in preferred if v in distinct] + [v for v in distinct if v not in preferred]


def generator_order(values: Iterable[str]) -> list[str]:
    """Distinct generators in first-seen order, the expert rubric (if present) last."""
    distinct = list(dict.fromkeys(values))
    return [g for g in distinct if g != EXPERT] + [g for g in distinct if g == EXPERT]


def short_name(model: str) -> str:
    """A model's display label (rubriclab.labels); "expert" reads "Expert"."""
    return current_labels()(model)


def plain_rows(stats: pd.DataFrame, what: str, **conditions) -> pd.DataFrame:
    """The plain statistics (generator_b "") of a normalized STATS table meeting conditions."""
    return select(stats, what, generator_b="", **conditions)


def difference_rows(stats: pd.DataFrame, what: str, **conditions) -> pd.DataFrame:
    """The paired differences (generator_b not "") of a normalized STATS table."""
    rows = stats[stats["generator_b"] != ""]
    if rows.empty:
        raise ValueError(f"{what}: no paired-difference rows (generator_b not '')")
    return select(rows, what, **conditions)


def require_cells(rows: pd.DataFrame, keys: list[str], wanted: Iterable[tuple],
                  what: str) -> pd.DataFrame:
    """rows indexed by `keys`, reindexed to `wanted`; raise naming the first missing cell."""
    ensure_unique(rows, keys, what)
    wanted = list(wanted)
    indexed = rows.set_index(keys)
    present = set(indexed.index)
    missing = [cell for cell in wanted if cell not in present]
    if missing:
        named = ", ".join(str(dict(zip(keys, cell))) for cell in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ValueError(f"{what}: no row for {named}{more}")
    return indexed.loc[wanted].reset_index()


# --------------------------------------------------------------------------- numbers

def is_missing(value) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def number_text(value, decimals: int = 2) -> str:
    """A number to `decimals` places ("n/a" when missing, never "-0.00")."""
    if is_missing(value):
        return "n/a"
    text = f"{float(value):.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def interval_cell(estimate, low, high, decimals: int = 2) -> str:
    """"0.42 [0.31, 0.55]"; "n/a" when the estimate is missing, "n/a" for a missing bound."""
    if is_missing(estimate):
        return "n/a"
    return (f"{number_text(estimate, decimals)} [{number_text(low, decimals)}, "
            f"{number_text(high, decimals)}]")


def excludes_zero(low, high) -> bool:
    """True when both bounds are defined and the interval [low, high] leaves out 0."""
    if is_missing(low) or is_missing(high):
        return False
    return bool(low > 0 or high < 0)


# --------------------------------------------------------------------------- drawing





def _colors(generators: Sequence[str]) -> dict[str, str]:
    palette = plt.get_cmap("tab10").colors
    colors, index = {}, 0
    for generator in generators:
        if generator == EXPERT:
            colors[generator] = EXPERT_COLOR
        else:
            colors[generator] = palette[index % len(palette)]
            index += 1
    return colors


def _offsets(count: int, width: float = 0.8) -> tuple[np.ndarray, float]:
    bar = width / max(count, 1)
    return (np.arange(count) - (count - 1) / 2) * bar, bar


def _grouped_bars(ax, rows: pd.DataFrame, group_column: str, groups: Sequence[str],
                  generators: Sequence[str], colors: dict[str, str]) -> dict:
    """Bars per generator within each group; returns {(group, generator): x position}."""
    offsets, bar = _offsets(len(generators))
    positions = {}
    for offset, generator in zip(offsets, generators):
        mine = rows[rows["generator"] == generator].set_index(group_column)
        mine = mine.reindex([g for g in groups if g in mine.index])
        if mine.empty:
            continue
        x = np.array([groups.index(g) for g in mine.index], dtype=float) + offset
        heights = mine["estimate"].fillna(0)
        ax.bar(x, heights, bar, color=colors[generator],
               yerr=_error(mine["estimate"], mine["low"], mine["high"]), capsize=2,
               error_kw={"elinewidth": 0.8}, label=short_name(generator))
        zero_bar_marks(ax, x, heights, bar, [colors[generator]] * len(x))
        _value_texts(ax, x, mine, len(groups) * len(generators))
        for group, position in zip(mine.index, x):
            positions[(group, generator)] = float(position)
    ax.set_xticks(np.arange(len(groups)))
    ax.axhline(0, color="black", linewidth=0.6)
    ax.grid(axis="y", alpha=0.3)
    return positions


def _value_texts(ax, x, rows: pd.DataFrame, bars: int) -> None:
    """Each bar's value ("n/a" where undefined) printed above its bar and its error bar's
    upper whisker, so that a bar of 0 and a missing bar never look alike and no whisker runs
    through the number; left out when the axes holds too many bars to read."""
    if bars > 24:
        return
    for position, value, high in zip(x, rows["estimate"], rows["high"]):
        top = max([0.0] + [float(v) for v in (value, high) if not is_missing(v)])
        value_label(ax, position, top, number_text(value),
                    color="black" if not is_missing(value) else "#aa0000")


def undefined_reason(rows: pd.DataFrame) -> str | None:
    """Why a panel has nothing to draw (every estimate undefined), or None when it has."""
    if rows.empty:
        return "no statistic in this run"
    if rows["estimate"].notna().any():
        return None
    examples = int(pd.to_numeric(rows["n_examples"], errors="coerce").max())
    return (f"undefined on all {plural(examples, 'example')}\n"
            f"(e.g. tied scores have no rank correlation)")


def n_examples_of(rows: pd.DataFrame) -> int:
    return int(pd.to_numeric(rows["n_examples"], errors="coerce").max())


def _value_limits(rows: pd.DataFrame, floor: float = 0.0, ceiling: float = 1.0
                  ) -> tuple[float, float]:
    values = pd.concat([rows["estimate"], rows["low"], rows["high"]]).dropna()
    bottom = min(floor, float(values.min())) if not values.empty else floor
    top = max(ceiling, float(values.max())) if not values.empty else ceiling
    span = top - bottom
    # 10% headroom: a value label sits above its bar's upper whisker
    return (bottom - 0.05 * span if bottom < floor else bottom), top + 0.1 * span


def _panel_title(index: int, text: str) -> str:
    return f"({chr(ord('a') + index)}) {text}"


def _legend(fig, generators: Sequence[str], colors: dict[str, str]) -> None:
    handles = [Patch(color=colors[g], label=short_name(g)) for g in generators]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize=8,
               frameon=False)


def _response_suffix(response_model: str) -> str:
    return f"responses from {short_name(response_model)}"


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


# --------------------------------------------------------------------------- Figure 6

def fig6_table(categories: pd.DataFrame, response_model: str) -> pd.DataFrame:
    """Figure 6's rows on `response_model`'s responses, one per chart row, direction and
    category (shares in percent; a category missing from a present bar counts 0).

    Upper chart ("between"): rows 0..k-1 intervene on each generated rubric and measure the
    expert rubric (row_kind gen->expert, target_rubric = the generator); rows k..2k-1
    intervene on the expert rubric and measure each generated rubric (expert->gen, target
    expert). Lower chart ("within"): each generated rubric, then the expert rubric
    (row_kind within, target_rubric the rubric). Within-expert rows may carry any
    generator value; repeats of them must agree (they are one measurement) and are kept
    once. A bar with no criterion (none started at that state) is empty with n_criteria 0;
    every other bar's shares must sum to 100."""
    frame = normalized_categories(categories)
    rows = select(frame, "Figure 6", response_model=response_model)
    bad_kind = sorted(set(rows["row_kind"]) - set(ROW_KINDS))
    if bad_kind:
        raise ValueError(f"Figure 6: unknown row_kind(s) {bad_kind}; expected {ROW_KINDS}")
    bad_direction = sorted(set(rows["direction"]) - {"+", "-"})
    if bad_direction:
        raise ValueError(f"Figure 6: unknown direction(s) {bad_direction}; expected '+', '-'")
    forward = select(rows, "Figure 6", row_kind="gen->expert")
    generators = generator_order(forward["generator"])
    specs = []  # (chart, row_kind, row_label, generator, target, measured, selection)
    for g in generators:
        specs.append(("between", "gen->expert", f"{short_name(g)} → expert", g, g, EXPERT,
                      dict(row_kind="gen->expert", generator=g, target_rubric=g)))
    for g in generators:
        specs.append(("between", "expert->gen", f"expert → {short_name(g)}", g, EXPERT, g,
                      dict(row_kind="expert->gen", generator=g, target_rubric=EXPERT)))
    for g in generators:
        specs.append(("within", "within", f"{short_name(g)} within", g, g, g,
                      dict(row_kind="within", generator=g, target_rubric=g)))
    specs.append(("within", "within", "expert within", "", EXPERT, EXPERT,
                  dict(row_kind="within", target_rubric=EXPERT)))
    parts = []
    for index, (chart, kind, label, generator, target, measured, conditions) in \
            enumerate(specs):
        labels = BETWEEN_CATEGORIES if chart == "between" else WITHIN_CATEGORIES
        for direction in ("+", "-"):
            what = f"Figure 6 row {label!r}, direction {direction!r}"
            mask = rows["direction"] == direction
            for column, wanted in conditions.items():
                mask &= rows[column] == wanted
            bar = rows[mask]
            if bar.empty:
                # No criterion of this row started at that state (a small run can have none):
                # an empty bar, labelled n=0, never a made-up share.
                parts.append(pd.DataFrame({
                    "chart": chart, "row": index, "row_kind": kind, "row_label": label,
                    "generator": generator, "target_rubric": target, "measured_rubric": measured,
                    "direction": direction, "category": labels, "share": 0.0, "n_criteria": 0}))
                continue
            bad = sorted(set(bar["category"]) - set(labels))
            if bad:
                raise ValueError(f"{what}: unknown category(ies) {bad}; expected {labels}")
            if target == EXPERT and kind == "within":
                bar = _one_expert_bar(bar, what)
            ensure_unique(bar, ["category"], what)
            shares = bar.set_index("category")["share"].reindex(labels).fillna(0.0)
            total = float(shares.sum())
            if abs(total - 100.0) > SHARE_TOLERANCE:
                raise ValueError(f"{what}: shares sum to {total:.2f}, not 100")
            n_criteria = int(pd.to_numeric(bar["n_criteria"]).max())
            parts.append(pd.DataFrame({
                "chart": chart, "row": index, "row_kind": kind, "row_label": label,
                "generator": generator, "target_rubric": target, "measured_rubric": measured,
                "direction": direction, "category": labels, "share": shares.to_numpy(float),
                "n_criteria": n_criteria}))
    return pd.concat(parts, ignore_index=True)[FIG6_COLUMNS]


def _one_expert_bar(bar: pd.DataFrame, what: str) -> pd.DataFrame:
    """The within-expert rows once, checking that copies under several generators agree."""
    copies = bar.groupby("category")[["share", "n_criteria"]].nunique(dropna=False)
    if (copies > 1).any().any():
        raise ValueError(f"{what}: the within-expert rows differ between generators "
                         f"{sorted(set(bar['generator']))}; they must be one measurement")
    return bar.drop_duplicates("category")


@with_labels
def fig6_criteria_level(categories: pd.DataFrame, response_model: str, out_png: Path,
                        out_pdf: Path, n_examples: int | None = None) -> pd.DataFrame:
    """Figure 6: criteria-level transfer between and within rubrics on `response_model`'s
    responses, as stacked horizontal bars of percentages of each row's criteria.
    Columns: intervene to pass (R+c, left) and to fail (R-c, right). Upper chart: each
    generated rubric's criteria measured on the expert rubric, then the expert criteria
    measured on each generated rubric (irrelevant / matched / general). Lower chart: within
    each rubric, whether none, one or several other criteria move. Segments of 5% or more
    are labelled with their share; each bar's tick label gives its criterion count n (the
    passing and failing criteria differ in number). A bar with n=0 reads "n/a"; a panel
    whose every bar has n=0 says "n/a" and why, its rows still named.
    Returns fig6_table(categories, response_model)."""
    table = fig6_table(categories, response_model)
    n_between = table.loc[table["chart"] == "between", "row"].nunique()
    n_within = table.loc[table["chart"] == "within", "row"].nunique()
    fig, axes = plt.subplots(2, 2, figsize=(12, 1.0 + 0.55 * (n_between + n_within) + 1.2),
                             gridspec_kw={"height_ratios": [n_between, n_within]},
                             sharex=True)
    try:
        for column, direction in enumerate(("+", "-")):
            for line, chart in enumerate(("between", "within")):
                ax = axes[line][column]
                mine = table[(table["chart"] == chart) & (table["direction"] == direction)]
                _fig6_bars(ax, mine, chart, with_names=column == 0)
                if (mine["n_criteria"] == 0).all():
                    not_available(ax, f"no criterion to intervene on in any row\n"
                                      f"({FIG6_EMPTY_REASONS[direction]})", keep_ticks=True)
                if line == 0:
                    ax.set_title(DIRECTION_TITLES[direction], fontsize=10)
            axes[1][column].set_xlabel("percent of the row's criteria")
        for line, (labels, title) in enumerate(((BETWEEN_CATEGORIES, "other rubric"),
                                                (WITHIN_CATEGORIES, "same rubric"))):
            handles = [Patch(color=CATEGORY_COLORS[c], label=c) for c in labels]
            axes[line][1].legend(handles=handles, title=f"criteria moved in the {title}",
                                 fontsize=8, title_fontsize=8, frameon=False,
                                 loc="center left", bbox_to_anchor=(1.01, 0.5))
        examples = f" of {plural(n_examples, 'HealthBench example')}" if n_examples else ""
        fig.suptitle(f"Criteria-level transfer between (upper) and within (lower) rubrics, "
                     f"{_response_suffix(response_model)}{examples}\n"
                     f"(n: criteria in each bar; an empty bar with n=0 had no criterion to "
                     f"intervene on)", fontsize=10)
        fig.tight_layout()
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


def _fig6_bars(ax, rows: pd.DataFrame, chart: str, with_names: bool) -> None:
    """One direction's stacked bars; tick labels "row (n=..)" or, without names, "n=.."."""
    labels = BETWEEN_CATEGORIES if chart == "between" else WITHIN_CATEGORIES
    order = list(dict.fromkeys(rows["row"]))
    names = rows.drop_duplicates("row").set_index("row")["row_label"].reindex(order)
    counts = rows.drop_duplicates("row").set_index("row")["n_criteria"].reindex(order)
    y = np.arange(len(order))
    left = np.zeros(len(order))
    for category in labels:
        shares = rows[rows["category"] == category].set_index("row")["share"].reindex(order)
        shares = shares.fillna(0).to_numpy(float)
        ax.barh(y, shares, left=left, color=CATEGORY_COLORS[category], edgecolor="white",
                linewidth=0.5)
        for position, (start, share) in enumerate(zip(left, shares)):
            if share >= 5:
                ax.text(start + share / 2, position, f"{share:.0f}", ha="center",
                        va="center", fontsize=7)
        left += shares
    if not (counts == 0).all():  # an all-empty panel says n/a once, for all its rows
        for position, count in enumerate(counts):
            if count == 0:
                ax.text(50, position, "n/a: no criterion to intervene on (n=0)", ha="center",
                        va="center", fontsize=7, color="#444444")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{name} (n={count})" if with_names else f"n={count}"
                        for name, count in zip(names, counts)], fontsize=8)
    ax.set_xlim(0, 100)
    ax.invert_yaxis()


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
