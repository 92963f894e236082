"""What carry's figures (rubriclab.carry.fig1, fig4, fig5, fig6) and tables share: the tidy
tables' columns, the orders, titles and colours of sources, renderings, modes, metrics and
gates, the row selection helpers, and the drawing helpers.

Every figure function reads tidy (long) pandas tables, selects the rows its figure needs,
draws them (matplotlib Agg, PNG and PDF) and returns the tidy table it plotted. Rates are
percents (0-100); `low`/`high` are the rate's 95% interval (rubriclab.stats.intervals,
Clopper-Pearson), NaN when undefined (drawn without an error bar). Bad input raises
ValueError naming the missing column or the empty selection; nothing is ever plotted
silently empty.

The row selection helpers (`normalized_rates`, `chains_with_start`, `sort_chains`, ...) are
shared with rubriclab.carry.tables.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import pandas as pd  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402
from matplotlib.typing import LineStyleType  # noqa: E402
from rubriclab.labels import ModelLabels, current_labels
from rubriclab.tidy import require_columns


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
METRIC_LINESTYLES: dict[str, LineStyleType] = {"correct_passed": "-", "flawed_caught": "--",
                                               "unplanned_caught": ":"}


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


def _as_bool(series: pd.Series, name: str) -> pd.Series:
    if series.dtype == bool:
        return series
    words = {"true": True, "false": False, "1": True, "0": False}
    mapped = series.map(lambda v: words.get(str(v).strip().lower()))
    if mapped.isna().any():
        raise ValueError(f"column {name!r} holds non-boolean values "
                         f"{sorted(set(series[mapped.isna()].astype(str)))}")
    return mapped.astype(bool)


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
