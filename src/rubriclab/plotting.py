"""Matplotlib helpers shared by every work's figures (Agg backend: no display needed)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.text import Text  # noqa: E402


def save_figure(fig, out_png: Path, out_pdf: Path) -> None:
    fit_to_axes(fig)
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


def wrapped(text: str, width: int) -> str:
    """`text` wrapped line by line to `width` characters (its own line breaks kept)."""
    return "\n".join(textwrap.fill(line, width) if line else line for line in text.split("\n"))


FIT_SHARE = 0.92  # of the axes' width a text fitted to it may take


def axes_text(ax, x: float, y: float, text: str, **kwargs):
    """ax.text whose text `fit_to_axes` later wraps to the axes' width.

    Matplotlib's own `wrap=True` wraps at the figure's edge, not the axes', so a note in a
    narrow panel would run over its frame; the width is only known once the figure is laid
    out, hence the wrapping at save time."""
    artist = ax.text(x, y, text, **kwargs)
    artist.unwrapped_text = text
    artist.set_in_layout(False)  # tight_layout must not make room for the unwrapped text
    return artist


def fit_to_axes(fig) -> None:
    """Wrap each `axes_text` of the laid-out figure to the widest width that fits its axes."""
    get_renderer = getattr(fig.canvas, "get_renderer", None)
    renderer = get_renderer() if get_renderer else FigureCanvasAgg(fig).get_renderer()
    for artist in fig.findobj(Text):
        raw = getattr(artist, "unwrapped_text", None)
        if raw is None or artist.axes is None:
            continue
        room = FIT_SHARE * artist.axes.get_window_extent(renderer).width
        longest = max(len(line) for line in raw.split("\n"))
        for width in range(longest, 7, -1):
            artist.set_text(wrapped(raw, width))
            if artist.get_window_extent(renderer).width <= room:
                break


def not_available(ax, reason: str, *, keep_ticks: bool = False, fontsize: float = 9) -> None:
    """Mark a panel with nothing to draw: "n/a" and why, never an empty axes read as zeros.

    The reason is wrapped to the panel's width. `keep_ticks` keeps the tick labels (rows named
    on the axis, as in a bar chart whose every bar is empty)."""
    if not keep_ticks:
        ax.set_xticks([])
        ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_linestyle(":")
        spine.set_alpha(0.5)
    axes_text(ax, 0.5, 0.5, f"n/a\n{reason}", ha="center", va="center",
              transform=ax.transAxes, fontsize=fontsize, color="#444444",
              bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 2})


def value_label(ax, x: float, top: float, text: str, *, color: str = "black",
                fontsize: float = 6) -> None:
    """A bar's value just above `top` (the higher of its bar and its error bar's upper whisker),
    on a white ground, so that no error bar runs through it and a dark bar cannot hide it."""
    ax.annotate(text, (x, top), xytext=(0, 2), textcoords="offset points", ha="center",
                va="bottom", fontsize=fontsize, color=color,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})


def zero_bar_marks(ax, x, heights, width: float, colors) -> None:
    """A thick stroke in the bar's colour where a bar has height 0, so that a value of 0 reads
    as a drawn bar (and its legend entry has something to point at), not as a missing one."""
    for position, height, color in zip(x, heights, colors):
        if height == 0:
            ax.hlines(0, position - width / 2, position + width / 2, colors=[color],
                      linewidth=3, zorder=3)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def ring_size(layer: int, count: int, base: float, step: float, largest: float) -> float:
    """Marker size of the `layer`-th of `count` coincident hollow rings: each a step larger,
    the step shrunk where there are many so the outermost ring stays within `largest` points
    (a paper-scale figure can stack 27 series on one point)."""
    if count > 1:
        step = min(step, (largest - base) / (count - 1))
    return base + step * layer


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
