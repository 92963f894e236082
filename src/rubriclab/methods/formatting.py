"""How the methods' tables are shown: percents, intervals and pipe tables."""

from __future__ import annotations

import pandas as pd

from rubriclab.tidy import markdown_table


def pipe_table(header, rows) -> list[str]:
    """A markdown pipe table as lines (rubriclab.tidy.markdown_table)."""
    return markdown_table(header, rows)


def percent(value: float | None) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{100 * value:.1f}%"


def interval_text(low: float | None, high: float | None) -> str:
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return "n/a"
    return f"[{100 * low:.1f}%, {100 * high:.1f}%]"


def level_text(level: float) -> str:
    return f"{100 * level:g}%"
