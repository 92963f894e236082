"""Selecting from tidy tables and writing tables, shared by every work's figures and tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise ValueError naming every column of `columns` that `frame` lacks."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{what} table must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{what} table is missing column(s) {missing}")


def select(frame: pd.DataFrame, what: str, **conditions) -> pd.DataFrame:
    """Rows meeting every condition (a scalar: equal; a list/tuple/set: one of); never empty."""
    mask = pd.Series(True, index=frame.index)
    for column, wanted in conditions.items():
        if isinstance(wanted, (list, tuple, set, frozenset)):
            mask &= frame[column].isin(list(wanted))
        else:
            mask &= frame[column] == wanted
    rows = frame[mask]
    if rows.empty:
        described = ", ".join(f"{column}={wanted!r}" for column, wanted in conditions.items())
        raise ValueError(f"{what}: no rows with {described}")
    return rows


def ensure_unique(rows: pd.DataFrame, keys: list[str], what: str) -> None:
    """Raise when several rows share `keys`, naming the columns that tell them apart."""
    duplicated = rows.duplicated(keys, keep=False)
    if not duplicated.any():
        return
    first = rows[duplicated].iloc[0]
    same = rows[(rows[keys] == first[keys]).all(axis=1)]
    differing = [c for c in rows.columns if c not in keys and same[c].nunique(dropna=False) > 1]
    raise ValueError(f"{what}: {len(same)} rows for {dict(first[keys])} (they differ in "
                     f"{differing or 'nothing'}); narrow the selection")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A pipe table (pandas' to_markdown, through tabulate) as a list of lines.

    Every cell is shown as str(cell), exactly: numbers are formatted by the caller, and
    tabulate's number parsing is off so that "0.10" stays "0.10".
    """
    header = [str(name) for name in header]
    cells = [[str(cell) for cell in row] for row in rows]
    for number, row in enumerate(cells, start=1):
        if len(row) != len(header):
            raise ValueError(f"table row {number} has {len(row)} cells for {len(header)} columns")
    frame = pd.DataFrame(cells, columns=range(len(header)), dtype=object)
    return frame.to_markdown(index=False, headers=header, disable_numparse=True).split("\n")


def write_table(markdown: str, frame: pd.DataFrame, out_md: Path, out_csv: Path) -> None:
    """Write a table's markdown and its frame (CSV, no index), creating parent folders."""
    for path in (Path(out_md), Path(out_csv)):
        path.parent.mkdir(parents=True, exist_ok=True)
    Path(out_md).write_text(markdown if markdown.endswith("\n") else markdown + "\n")
    frame.to_csv(out_csv, index=False)
