"""What transfer's claim readers share (rubriclab.replication.readers_transfer and its
families): the seed's generators in the paper's order, reading stats.csv and the other
outputs, the one stats row for a set of keys, and parts and evidence made from such a row.
The underscored helpers are the readers' own: shared by the reader modules, not used
outside them.
"""

from __future__ import annotations

from typing import Callable, Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    output_path,
)

PAPER_GENERATORS = ("Qwen3.8-27B", "Deepseek-V4-Flash", "Opus-5")
QWEN, DEEPSEEK, OPUS = range(3)
EXPERT = "expert"


def _csv(outputs: Outputs, name: str) -> pd.DataFrame:
    path = output_path(outputs, name)
    # the analysis writes NaN for an undefined statistic and "" for an unused key column
    return pd.read_csv(path, keep_default_na=False, na_values=["NaN"])


# --------------------------------------------------------------------------- lookups

def _generators(config: Mapping) -> list[str]:
    return list(config["transfer"]["generators"])


def _generator(config: Mapping, place: int) -> str:
    generators = _generators(config)
    if place >= len(generators):
        raise MissingEvidence(
            f"the run has {len(generators)} generator(s) (transfer.generators); "
            f"{PAPER_GENERATORS[place]} is generator {place + 1} in the paper's order")
    return generators[place]


def _main_model(config: Mapping) -> str:
    return str(config["transfer"]["response_model"])


def _stat(stats: pd.DataFrame, metric: str, generator: str, generator_b: str = "",
          response_model: str | None = None, panel: str = "", framing: str = "") -> pd.Series:
    """The one row of stats.csv for these keys (response_model None: any)."""
    chosen = stats[(stats["metric"] == metric) & (stats["generator"] == generator)
                   & (stats["generator_b"] == generator_b) & (stats["panel"] == panel)
                   & (stats["framing"] == framing)]
    if response_model is not None:
        chosen = chosen[chosen["response_model"] == response_model]
    if chosen.empty:
        against = f" - {generator_b}" if generator_b else ""
        on = f" on {response_model}" if response_model else ""
        raise MissingEvidence(f"stats.csv has no {metric} of {generator}{against}{on}")
    if len(chosen) > 1:
        raise ValueError(f"stats.csv has {len(chosen)} rows of {metric} of {generator} "
                         f"(generator_b {generator_b!r}, panel {panel!r}, framing {framing!r}); "
                         "expected one")
    return chosen.iloc[0]


def _interval_text(row: pd.Series, scale: float = 1) -> str:
    return (f"{scale * row['estimate']:.3g} [{scale * row['low']:.3g}, "
            f"{scale * row['high']:.3g}]")


def _defined(row: pd.Series) -> bool:
    return not any(pd.isna(row[c]) for c in ("estimate", "low", "high"))


def _part(name: str, row: pd.Series | None, test: Callable[[pd.Series], bool],
          why_missing: str = "", scale: float = 1) -> Part:
    """A part tested on one stats row: None when the row is absent or its interval undefined."""
    if row is None:
        return Part(name, None, why_missing)
    if not _defined(row):
        return Part(name, None, f"undefined: {_interval_text(row, scale)}")
    return Part(name, bool(test(row)), _interval_text(row, scale))


def _try_stat(stats: pd.DataFrame, *args, **kwargs) -> tuple[pd.Series | None, str]:
    try:
        return _stat(stats, *args, **kwargs), ""
    except MissingEvidence as missing:
        return None, str(missing)


def _meets(low: float, high: float, seed_low: float, seed_high: float) -> bool:
    return low <= seed_high and seed_low <= high


def _measured(row: pd.Series, scale: float, note: str = "") -> Evidence:
    low = None if pd.isna(row["low"]) else scale * float(row["low"])
    high = None if pd.isna(row["high"]) else scale * float(row["high"])
    return Evidence(scale * float(row["estimate"]), low, high, int(row["n_examples"]),
                    note=note or ("no bootstrap interval (undefined on every draw)"
                                  if low is None else ""))


def _examples(stats: pd.DataFrame) -> int:
    if stats.empty:
        raise MissingEvidence("stats.csv is empty")
    return int(stats["n_examples"].max())


def _difference_part(stats: pd.DataFrame, config: Mapping, metric: str, first: int,
                     second: int, sign: int, response_model: str | None) -> Part:
    """The paired difference first - second: below 0 (sign -1), above 0 (+1) or reaching 0
    (0). stats.csv holds each pair once, in the order of transfer.generators."""
    wanted = {-1: "below 0", 1: "above 0", 0: "reaching 0"}[sign]
    name = (f"{metric}: {PAPER_GENERATORS[first]}'s place - {PAPER_GENERATORS[second]}'s "
            f"{wanted}")
    try:
        a, b = _generator(config, first), _generator(config, second)
    except MissingEvidence as missing:
        return Part(name, None, str(missing))
    flip = first > second
    row, why = _try_stat(stats, metric, *((b, a) if flip else (a, b)),
                         response_model=response_model)
    if row is None:
        return Part(name, None, why)
    if flip:
        row = row.copy()
        row["estimate"], row["low"], row["high"] = -row["estimate"], -row["high"], -row["low"]

    def test(r: pd.Series) -> bool:
        if sign < 0:
            return r["high"] < 0
        if sign > 0:
            return r["low"] > 0
        return r["low"] <= 0 <= r["high"]
    return _part(name, row, test)
