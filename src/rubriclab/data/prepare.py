"""Sample the evaluation and calibration splits of one dataset's item table."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

LABELS = ("correct", "flawed")
REQUIRED_COLUMNS = [
    "item_id", "dataset", "domain", "group", "task", "output", "label", "source_file", "source_line",
]
LEFT_OUT_COLUMNS = ["item_id", "source_file", "source_line", "reason"]
DUPLICATE_PREFIX = "duplicate of "


def prepare(
    items: pd.DataFrame,
    *,
    seed: int,
    evaluation: dict,
    calibration: dict,
    max_task_chars: int | None = None,
    domains: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Split ``items`` into evaluation and calibration samples; return (prepared, left_out, manifest).

    ``evaluation`` and ``calibration`` give the number of items per label,
    ``{"correct": n, "flawed": n}``. The procedure, fully determined by the set of input rows
    and ``seed`` (not by their order):
    1. Sort the rows by item_id.
    2. Leave out, with the first reason that applies: a domain not in ``domains`` (when given);
       an empty (or whitespace-only) output; a task longer than ``max_task_chars`` (when given);
       a (task, output) pair identical to an earlier row's ("duplicate of <that item_id>").
    3. Shuffle the eligible rows with ``numpy.random.default_rng(seed).permutation``.
    4. Evaluation: the first n correct and the first n flawed rows in shuffled order.
    5. Leave out every remaining row whose ``group`` (source document) has an evaluation item,
       so that no source document is in both splits.
    6. Calibration: the first n correct and n flawed of the rest, in the same shuffled order.
    7. Everything else is left out as "not sampled".
    A label with fewer available rows than requested raises ValueError.

    ``prepared`` has the input columns plus ``split``, sorted by split then item_id.
    ``left_out`` has item_id, source_file, source_line and reason, one row per unused input row.
    """
    _check_items(items)
    requested = {"evaluation": _check_counts(evaluation, "evaluation"),
                 "calibration": _check_counts(calibration, "calibration")}
    dataset = ",".join(sorted(items["dataset"].astype(str).unique()))
    items = items.sort_values("item_id", kind="stable").reset_index(drop=True)

    reasons = pd.Series("", index=items.index, dtype=object)
    _mark_filtered(items, reasons, max_task_chars, domains)
    eligible = items.index[reasons == ""]
    shuffled = eligible[np.random.default_rng(seed).permutation(len(eligible))]

    evaluation_rows = _take(items, shuffled, requested["evaluation"], dataset, "evaluation")
    evaluation_groups = set(items.loc[evaluation_rows, "group"])
    pool = shuffled[~shuffled.isin(evaluation_rows)]
    shares_group = items.loc[pool, "group"].isin(evaluation_groups).to_numpy()
    reasons.loc[pool[shares_group]] = "shares its group with an evaluation item"
    pool = pool[~shares_group]
    calibration_rows = _take(items, pool, requested["calibration"], dataset, "calibration")
    reasons.loc[pool[~pool.isin(calibration_rows)]] = "not sampled"

    split = pd.Series("", index=items.index, dtype=object)
    split.loc[evaluation_rows] = "evaluation"
    split.loc[calibration_rows] = "calibration"
    prepared = (
        items.assign(split=split)[split != ""]
        .sort_values(["split", "item_id"], kind="stable")
        .reset_index(drop=True)
    )
    left_out = items.assign(reason=reasons)[reasons != ""][LEFT_OUT_COLUMNS].reset_index(drop=True)
    manifest = build_manifest(dataset, seed, requested, max_task_chars, domains, len(items), prepared, left_out)
    return prepared, left_out, manifest


def build_manifest(dataset, seed, requested, max_task_chars, domains, input_rows, prepared, left_out) -> dict:
    """A JSON-able summary: what was asked for, what was selected, and why the rest was left out."""
    counts: dict = {split: {label: 0 for label in LABELS} for split in requested}
    by_domain: dict = {split: {} for split in requested}
    for (split, domain, label), n in Counter(zip(prepared["split"], prepared["domain"], prepared["label"])).items():
        counts[split][label] += int(n)
        by_domain[split].setdefault(str(domain), {label: 0 for label in LABELS})[label] = int(n)
    for split in by_domain:
        by_domain[split] = dict(sorted(by_domain[split].items()))
    left_out_counts = Counter(_reason_key(reason) for reason in left_out["reason"])
    return {
        "dataset": dataset,
        "seed": int(seed),
        "requested": requested,
        "filters": {"max_task_chars": max_task_chars, "domains": list(domains) if domains is not None else None},
        "input_rows": int(input_rows),
        "prepared_rows": int(len(prepared)),
        "counts": counts,
        "counts_by_domain": by_domain,
        "left_out": {reason: int(n) for reason, n in sorted(left_out_counts.items())},
    }


def write_prepared(prepared, left_out, manifest, out_csv, out_left_out_csv, out_manifest_json) -> None:
    for path in (out_csv, out_left_out_csv, out_manifest_json):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    prepared.to_csv(out_csv, index=False, encoding="utf-8")
    left_out.to_csv(out_left_out_csv, index=False, encoding="utf-8")
    with open(out_manifest_json, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def _mark_filtered(items: pd.DataFrame, reasons: pd.Series, max_task_chars, domains) -> None:
    """Write the filter reason of each filtered row into ``reasons`` (first reason wins)."""
    def mark(mask: pd.Series, reason) -> None:
        target = mask & (reasons == "")
        reasons.loc[target] = reason if isinstance(reason, str) else reason[target]

    if domains is not None:
        mark(~items["domain"].isin(domains), "domain not selected: " + items["domain"].astype(str))
    mark(items["output"].fillna("").astype(str).str.strip() == "", "empty output")
    if max_task_chars is not None:
        mark(items["task"].fillna("").astype(str).str.len() > max_task_chars,
             f"task longer than max_task_chars={max_task_chars}")
    candidates = items[reasons == ""]
    first_of_pair = candidates.groupby(["task", "output"], sort=False, dropna=False)["item_id"].transform("first")
    duplicate = first_of_pair != candidates["item_id"]
    reasons.loc[duplicate.index[duplicate]] = DUPLICATE_PREFIX + first_of_pair[duplicate]


def _take(items: pd.DataFrame, order: pd.Index, counts: dict, dataset: str, split: str) -> pd.Index:
    """The first counts[label] rows of each label, following ``order``."""
    labels = items.loc[order, "label"].to_numpy()
    taken = []
    for label in LABELS:
        available = order[labels == label]
        if len(available) < counts[label]:
            raise ValueError(
                f"{dataset}: split {split!r} needs {counts[label]} {label!r} items "
                f"but only {len(available)} are available"
            )
        taken.append(available[: counts[label]])
    return taken[0].append(taken[1])


def _check_items(items: pd.DataFrame) -> None:
    missing = [column for column in REQUIRED_COLUMNS if column not in items.columns]
    if missing:
        raise ValueError(f"item table lacks columns {missing}")
    bad_labels = set(items["label"]) - set(LABELS)
    if bad_labels:
        raise ValueError(f"labels must be 'correct' or 'flawed', found {sorted(map(str, bad_labels))}")
    duplicated = items["item_id"][items["item_id"].duplicated()]
    if len(duplicated):
        raise ValueError(f"item ids must be unique, repeated: {sorted(set(duplicated))[:5]}")


def _check_counts(counts: dict, split: str) -> dict:
    def is_count(n) -> bool:
        return isinstance(n, (int, np.integer)) and not isinstance(n, bool) and bool(n >= 0)

    if set(counts) != set(LABELS) or not all(is_count(counts[label]) for label in LABELS):
        raise ValueError(f"{split} counts must be {{'correct': n, 'flawed': n}} with n >= 0, got {counts!r}")
    return {label: int(counts[label]) for label in LABELS}


def _reason_key(reason: str) -> str:
    """Manifest key of a left-out reason: duplicates are counted together, not per original."""
    return "duplicate (task, output) pair" if reason.startswith(DUPLICATE_PREFIX) else reason
