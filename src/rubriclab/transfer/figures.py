"""What the transfer work's figures and tables share: the STATS table's columns, the
metrics' orders and titles, row selection, number formats and drawing helpers.

The figures: rubriclab.transfer.figures_existing (Figures 4, A.1, A.2),
figures_interventional (Figures 5, A.4) and figures_criteria (Figure 6).

Every figure function reads tidy (long) pandas tables written by the transfer pipeline, selects
the rows its figure needs, draws them (matplotlib Agg, PNG and PDF) and returns the tidy
table it plotted. No model is called here.

Inputs (values are fractions in [0, 1] unless said otherwise; `low`/`high` are 95% paired
bootstrap percentile bounds, NaN when undefined and then drawn without an error bar):

- STATS: one row per bootstrapped statistic (STATS_COLUMNS). `generator_b` is "" for a
  plain statistic and, for a paired difference, the second generator (the statistic is
  generator minus generator_b). `response_model`, `panel` and `framing` are "" where they
  do not apply (an empty cell read back from CSV as NaN counts as "").
- CATEGORIES (Figure 6): figures_criteria.CATEGORIES_COLUMNS, `share` a percent
  (0-100).

Bad input raises ValueError naming the missing column or the empty selection; nothing is
ever plotted silently empty, and a selection that holds two rows for one bar raises too.
Legends and labels name models by their display labels (rubriclab.labels: the config's
`labels:` map, else provider kept and query string dropped), the same as carry's.
Generators keep their order of first appearance in the table; the expert rubric, where it
appears, comes last.

The helpers (`normalized_stats`, `select`, `ensure_unique`, `short_name`, `interval_cell`
...) are shared with rubriclab.transfer.tables.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.typing import ColorType  # noqa: E402
from rubriclab.labels import current_labels
from rubriclab.plotting import error_lengths as _error
from rubriclab.plotting import plural, value_label, zero_bar_marks
from rubriclab.tidy import ensure_unique, require_columns, select

STATS_COLUMNS = ["family", "metric", "generator", "generator_b", "response_model", "panel",
                 "framing", "estimate", "low", "high", "n_used", "B", "n_examples"]
STATS_TEXT_COLUMNS = ["family", "metric", "generator", "generator_b", "response_model",
                      "panel", "framing"]

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

# Figure 5 / Table A.8 order (target generated first).
IT_METRICS = ["Q+(Cg->C*)", "Q-(Cg->C*)", "Q+(C*->Cg)", "Q-(C*->Cg)"]
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


def _colors(generators: Sequence[str]) -> dict[str, ColorType]:
    tab10 = plt.get_cmap("tab10")
    palette = tab10.colors if isinstance(tab10, ListedColormap) else None
    if not isinstance(palette, (list, tuple)):
        raise TypeError(f"expected tab10 to list its colours, got {tab10!r}")
    colors: dict[str, ColorType] = {}
    index = 0
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
                  generators: Sequence[str], colors: dict[str, ColorType]) -> dict:
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


def _legend(fig, generators: Sequence[str], colors: dict[str, ColorType]) -> None:
    handles = [Patch(color=colors[g], label=short_name(g)) for g in generators]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize=8,
               frameon=False)


def _response_suffix(response_model: str) -> str:
    return f"responses from {short_name(response_model)}"
