"""Figure 6 of the transfer work: criteria-level transfer between and within rubrics, as
stacked bars of the shares of criteria an intervention moves.
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
from matplotlib.patches import Patch  # noqa: E402
from rubriclab.labels import with_labels
from rubriclab.plotting import not_available, plural
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import ensure_unique, require_columns, select

from .figures import EXPERT, _response_suffix, _text, generator_order, short_name

CATEGORIES_COLUMNS = ["generator", "response_model", "row_kind", "target_rubric", "direction",
                      "category", "share", "n_criteria"]

# Figure 6.
ROW_KINDS = ["gen->expert", "expert->gen", "within"]
BETWEEN_CATEGORIES = ["irrelevant", "matched", "general"]
WITHIN_CATEGORIES = ["none", "one", "several"]
CATEGORY_COLORS = {"irrelevant": "#c7c7c7", "matched": "tab:blue", "general": "tab:green",
                   "none": "#c7c7c7", "one": "tab:orange", "several": "tab:purple"}
DIRECTION_TITLES = {"+": "Intervene to pass, R+c", "-": "Intervene to fail, R-c"}
FIG6_EMPTY_REASONS = {"+": "none failed before the edit", "-": "none passed before the edit"}
SHARE_TOLERANCE = 1.0  # percent: a bar's shares must sum to 100 within this

FIG6_COLUMNS = ["chart", "row", "row_kind", "row_label", "generator", "target_rubric",
                "measured_rubric", "direction", "category", "share", "n_criteria"]


def normalized_categories(categories: pd.DataFrame) -> pd.DataFrame:
    """A checked copy of a CATEGORIES table (text NaN -> "", share float)."""
    require_columns(categories, CATEGORIES_COLUMNS, "categories")
    frame = _text(categories.copy(),
                  ["generator", "response_model", "row_kind", "target_rubric", "direction",
                   "category"])
    frame["share"] = pd.to_numeric(frame["share"], errors="coerce").astype(float)
    return frame

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
