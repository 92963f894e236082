"""What the judge's verdicts say of carry's rubric states: rates with their 95% intervals
and paired bootstrap (`rate_rows`), the codes of rubric sets and one-call renderings, and
Shapley credit, blame and unique catches per check (`attribution_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rubriclab.carry.aggregate import FAIL, PASS, UNDETERMINED
from rubriclab.carry.attribution import shapley_attribution
from rubriclab.carry.experiment import Verdicts, items_in_scope, rubric_for
from rubriclab.carry.revision import Rubric
from rubriclab.stats.bootstrap import ratio_bootstrap
from rubriclab.stats.intervals import rate_interval


# --- rates ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class State:
    """One rubric state whose outcome is known for every item of an item set."""

    labels: dict
    codes: np.ndarray  # (n_items,) PASS / FAIL / UNDETERMINED


def rate_rows(items: pd.DataFrame, states: Sequence[State], metrics: Sequence[str],
              B: int, seed: int, **columns: object) -> list[dict]:
    """Every metric of every state over these items: low / high, the 95% interval of the rate
    (rubriclab.stats.intervals.rate_interval, the one the coverage study chose), and
    boot_low / boot_high, the paired percentile bootstrap over items (B draws)."""
    if not states:
        return []
    correct = (items["label"] == "correct").to_numpy()
    flawed = (items["label"] == "flawed").to_numpy()
    unplanned = items["unplanned"].to_numpy(dtype=bool)
    groups = {"correct_passed": (correct, PASS), "flawed_caught": (flawed, FAIL),
              "unplanned_caught": (flawed & unplanned, FAIL)}
    numerators, denominators, meta = [], [], []
    for state in states:
        determined = state.codes != UNDETERMINED
        for metric in metrics:
            members, success = groups[metric]
            denominators.append(members & determined)
            numerators.append(members & (state.codes == success))
            meta.append((state, metric, int((members & ~determined).sum())))
    table = ratio_bootstrap(np.column_stack(numerators), np.column_stack(denominators),
                            B=B, seed=seed)
    rows = []
    for (state, metric, undetermined), stats, num, den in zip(
            meta, table.itertuples(index=False), numerators, denominators, strict=True):
        low, high = rate_interval(int(num.sum()), int(den.sum()))
        rows.append(dict(columns, **state.labels, metric=metric,
                         value=100 * stats.estimate, low=100 * low, high=100 * high,
                         boot_low=100 * stats.low, boot_high=100 * stats.high,
                         n=int(den.sum()), n_undetermined=undetermined))
    return rows


def set_codes(items: pd.DataFrame, verdicts: Verdicts,
              rubric_set_for: Callable[[str], Mapping[str, Rubric]]) -> np.ndarray:
    """Per item, the code of the rubric that applies to it (rubric_set_for(item scope))."""
    return np.array([verdicts.rubric_code(row.item_id, rubric_for(rubric_set_for(row.scope),
                                                                   row.scope))
                     for row in items.itertuples(index=False)], dtype=np.int8)


def rendering_state_codes(items: pd.DataFrame, verdicts: Verdicts, source: str,
                          rendering: str) -> np.ndarray:
    codes = []
    for item_id in items["item_id"]:
        key = (item_id, source, rendering)
        if key not in verdicts.rendered:
            raise ValueError(f"no {rendering} verdict for item {item_id!r} under the {source} "
                             "rubric: the judging job did not ask it")
        codes.append(verdicts.rendered[key])
    return np.array(codes, dtype=np.int8)


# --- attribution ----------------------------------------------------------------------------

def attribution_rows(items: pd.DataFrame, verdicts: Verdicts, scope: str,
                     rubric: Rubric) -> pd.DataFrame:
    """Shapley credit, blame and unique catches of each check on the items in `scope`
    whose verdicts on every check of the rubric are determined."""
    in_scope = items_in_scope(items, scope)
    codes = verdicts.matrix(list(in_scope["item_id"]), [c.text for c in rubric.checks])
    determined = (codes != UNDETERMINED).all(axis=1)
    flawed = in_scope["label"].to_numpy()[determined] == "flawed"
    attribution = shapley_attribution(codes[determined] == FAIL, flawed)
    frame = attribution.to_frame(rubric.ids)
    frame.insert(1, "origin", [c.origin for c in rubric.checks])
    frame["n_items"] = int(determined.sum())
    return frame


def failing_positions(verdicts: Verdicts, item_id: str, rubric: Rubric) -> str:
    """JSON list of the 1-based positions of the checks answered No on the item."""
    positions = [n for n, check in enumerate(rubric.checks, start=1)
                 if verdicts.code(item_id, check.text) == FAIL]
    return json.dumps(positions)
