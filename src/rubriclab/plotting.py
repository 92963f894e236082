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
