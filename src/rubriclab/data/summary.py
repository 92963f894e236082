"""figures/data_summary.md: every prepared dataset, its items per split and label, per category
(domain, theme or flaw type), and the rows left out with their reasons."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

DUPLICATE_PREFIX = "duplicate"


@dataclass(frozen=True)
class PreparedDataset:
    name: str
    items: pd.DataFrame
    left_out: pd.DataFrame
    category: str  # the column to break counts down by: domain, theme, flaw_type


def _label_column(items: pd.DataFrame) -> pd.Series:
    if "label" in items.columns:
        return items["label"].astype(str)
    return pd.Series("unlabelled", index=items.index)


def split_label_counts(items: pd.DataFrame) -> pd.DataFrame:
    table = pd.crosstab(items["split"], _label_column(items), margins=True, margins_name="total")
    table.index.name, table.columns.name = "split", None
    return table


def category_counts(items: pd.DataFrame, category: str) -> pd.DataFrame:
    table = pd.crosstab([items["split"], items[category].replace("", "(none)")],
                        _label_column(items))
    table.columns.name = None
    return table


def reason_key(reason: str) -> str:
    """Duplicates name their original row; the summary counts them under one reason."""
    return "duplicate row" if reason.startswith(DUPLICATE_PREFIX) else reason


def left_out_counts(left_out: pd.DataFrame) -> pd.Series:
    if left_out.empty:
        return pd.Series(dtype=int, name="rows")
    return left_out["reason"].astype(str).map(reason_key).value_counts().rename("rows")


def _markdown(frame: pd.DataFrame | pd.Series) -> str:
    frame = frame.to_frame() if isinstance(frame, pd.Series) else frame
    return frame.reset_index().to_markdown(index=False)


def data_summary_markdown(datasets: list[PreparedDataset]) -> str:
    lines = ["# Prepared data", "",
             "Every prepared dataset: items per split and label, per category, and the rows of the",
             "original files that were left out, with their reason (full lists beside each table in",
             "`data/prepared/<dataset>_left_out.csv`).", ""]
    for dataset in datasets:
        lines += [f"## {dataset.name}", "", f"{len(dataset.items)} items.", "",
                  _markdown(split_label_counts(dataset.items)), "",
                  f"By {dataset.category.replace('_', ' ')}:", "",
                  _markdown(category_counts(dataset.items, dataset.category)), ""]
        counts = left_out_counts(dataset.left_out)
        if counts.empty:
            lines += ["Rows left out: none.", ""]
        else:
            counts.index.name = "reason left out"
            lines += [f"Rows left out: {int(counts.sum())}.", "", _markdown(counts), ""]
    return "\n".join(lines)
