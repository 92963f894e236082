"""Figure 5 of the carry work: Shapley attribution by check origin on Recon, (a) credit and
blame per check, (b) the checks the paper's chains deleted and what they held.
Conventions (rates in percent, `low`/`high` the 95% interval, bad input raises)
and the shared helpers: rubriclab.carry.figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from rubriclab.labels import ModelLabels
from rubriclab.plotting import not_available, plural
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import require_columns, select

from .chains import paper_chain_rows
from .figures import (
    ATTRIBUTION_COLUMNS, CHAIN_KEYS, DELETIONS_COLUMNS, ORIGIN_ORDER, SOURCE_TITLES, STATE_KEYS,
    _as_bool, _panel_title, ordered,
)

FIG5_COLUMNS = ["origin", "checks", "mean_credit", "mean_blame", "deleted",
                "deleted_with_unique_catch", "deleted_with_blame"]


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
    origin_labels = [_origin_label(origin, model_labels) for origin in table["origin"]]
    long_labels = max((len(label) for label in origin_labels), default=0) > 30
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(max(12.5, 1.1 * len(origin_labels) + 4),
                                                     7.2 if long_labels else 4.8))
    try:
        _grouped_bars(ax_a, origin_labels, table, {"mean_credit": ("catch credit", "tab:green"),
                                            "mean_blame": ("false-fail blame", "tab:red")})
        ax_a.set_ylabel("mean per check (items)")
        ax_a.set_title(_panel_title(0, "Shapley credit and blame per check, by origin"))
        if table["deleted"].sum() == 0:
            not_available(ax_b, "no chain deleted a check")
        else:
            _grouped_bars(ax_b, origin_labels, table, {
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
