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
