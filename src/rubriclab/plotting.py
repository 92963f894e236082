"""Matplotlib helpers shared by every work's figures (Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def save_figure(fig, out_png: Path, out_pdf: Path) -> None:
    for path in (Path(out_png), Path(out_pdf)):
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150)


def error_lengths(values: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    """Asymmetric error-bar lengths; undefined bounds draw no bar."""
    below = (values - low).clip(lower=0).fillna(0)
    above = (high - values).clip(lower=0).fillna(0)
    return np.vstack([below.to_numpy(float), above.to_numpy(float)])


# The papers' words for the two labels of each dataset (carry, Figure 2 and Tables 3 and 5).
LABEL_WORDS = {
    "summedits": {"correct": "consistent", "flawed": "inconsistent", "items": "summaries"},
    "ragtruth": {"correct": "faithful", "flawed": "hallucinated", "items": "responses"},
    "recon": {"correct": "correct", "flawed": "flawed", "items": "reports"},
}


def label_words(dataset: str) -> dict[str, str]:
    """{"correct": ..., "flawed": ..., "items": ...} in the paper's words for the dataset."""
    return LABEL_WORDS.get(dataset, {"correct": "correct", "flawed": "flawed", "items": "outputs"})


def not_available(ax, reason: str) -> None:
    """Mark a panel with nothing to draw: "n/a" and why, never an empty axes read as zeros."""
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_linestyle(":")
        spine.set_alpha(0.5)
    ax.text(0.5, 0.5, f"n/a\n{reason}", ha="center", va="center", transform=ax.transAxes,
            fontsize=9, color="#444444", wrap=True)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


class Overlaps:
    """Counts how many earlier drawings share a position, so coincident markers and line
    segments are drawn at their true values but each told apart (a step larger, or a tag
    further along) instead of hiding one another or being moved off their values."""

    def __init__(self) -> None:
        self._seen: dict[tuple, int] = {}

    def layer(self, *position: float) -> int:
        """0 for the first drawing at `position`, 1 for the second, ..."""
        key = tuple(round(float(v), 6) for v in position)
        layer = self._seen.get(key, 0)
        self._seen[key] = layer + 1
        return layer

    def count(self, *position: float) -> int:
        """How many drawings `layer` has counted at `position`."""
        return self._seen.get(tuple(round(float(v), 6) for v in position), 0)


def value_labels(ax, bars, values, *, tops=None, fontsize: float = 7, rotation: float = 0,
                 decimals: int = 0) -> list:
    """A percent label over every bar of `bars` (a real 0 reads "0%", a missing value
    "n/a"): above `tops` (data y of each bar's whisker top, NaN for none) where given,
    else above the bar (and its error bar, via matplotlib's bar_label)."""
    texts = ["n/a" if pd.isna(v) else f"{v:.{decimals}f}%" for v in values]
    if tops is None:
        labels = ax.bar_label(bars, labels=texts, padding=2, fontsize=fontsize,
                              rotation=rotation)
    else:
        labels = []
        for bar, text, top in zip(bars, texts, tops):
            y = bar.get_y() + bar.get_height()
            labels.append(ax.annotate(text, (bar.get_x() + bar.get_width() / 2,
                                             y if pd.isna(top) else max(y, top)),
                                      xytext=(0, 3.5), textcoords="offset points", ha="center",
                                      va="bottom", fontsize=fontsize, rotation=rotation))
    for label in labels:
        label.set_clip_on(False)
    return labels
