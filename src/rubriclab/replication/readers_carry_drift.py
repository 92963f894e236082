"""Readers of carry's claims on ungated self-review drift: Figure 4 (drift by start rubric
and mode), Figure 5 (attribution by check origin, deleted checks) and the abstract's "every
reviser adds and deletes checks". See rubriclab.replication.readers_carry for the
conventions.
"""

from __future__ import annotations

import math
from typing import Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    Reader,
    percent_rate,
    reads as _reads,
)
from rubriclab.replication.readers_carry_common import (
    METRICS,
    NEAR,
    _columns,
    _csv,
    _decisions,
    _flag,
    _fmt,
    _main_judge,
    _main_reviser,
    _nan,
    _paper_chains,
    _recon_items,
    _revisers,
    _text,
)


# --------------------------------------------------------------------------- Figure 4

def _fig4(outputs: Outputs) -> pd.DataFrame:
    table = _csv(outputs, "fig4")
    _columns(table, ["reviser", "source", "mode", "round", "metric", "value"], "Figure 4")
    return table.assign(mode=_text(table["mode"]))


def _drift(rows: pd.DataFrame, metric: str) -> float:
    """The metric's final-round value minus its round-0 value (mean over seeds)."""
    mine = rows[rows["metric"] == metric].sort_values("round")
    if mine.empty or mine["round"].max() == 0:
        return math.nan
    return float(mine["value"].iloc[-1] - mine[mine["round"] == 0]["value"].iloc[0])


def _attribution(outputs: Outputs, config: Mapping) -> pd.DataFrame:
    table = _csv(outputs, "carry_attribution")
    _columns(table, ["dataset", "judge", "reviser", "source", "mode", "seed", "round", "scope",
                     "check_id", "origin", "credit", "blame", "unique_catches",
                     "deleted_next_round"], "results/carry/attribution.csv")
    table = table.assign(mode=_text(table["mode"]), reviser=_text(table["reviser"]),
                         origin=_text(table["origin"]))
    return table[table["judge"] == _main_judge(config)]


def _deletions(outputs: Outputs, config: Mapping) -> pd.DataFrame:
    table = _csv(outputs, "carry_deletions")
    _columns(table, ["dataset", "judge", "reviser", "source", "mode", "seed", "round",
                     "check_id", "origin", "had_unique_catch", "had_blame"],
             "results/carry/deletions.csv")
    table = table.assign(mode=_text(table["mode"]), reviser=_text(table["reviser"]),
                         origin=_text(table["origin"]))
    return table[table["judge"] == _main_judge(config)]


def _added(attribution: pd.DataFrame, dataset: str, reviser: str, source: str | None = None,
           mode: str | None = None) -> int:
    rows = attribution[(attribution["dataset"] == dataset)
                       & (attribution["reviser"] == reviser)
                       & attribution["origin"].str.startswith("review by ")]
    if source is not None:
        rows = rows[rows["source"] == source]
    if mode is not None:
        rows = rows[rows["mode"] == mode]
    return int(rows.drop_duplicates(["seed", "scope", "check_id"]).shape[0])


@_reads
def fig4_hand_strict(outputs: Outputs, config: Mapping) -> Evidence:
    """(a) From the hand-written rubric free revision adds requirements and correct reports
    stop passing (falls by more than 6 points)."""
    fig4, attribution = _fig4(outputs), _attribution(outputs, config)
    free = fig4[(fig4["source"] == "hand") & (fig4["mode"] == "free")]
    if free.empty:
        raise MissingEvidence("Figure 4 has no free chain from the hand-written rubric")
    parts = []
    for reviser, rows in free.groupby("reviser", sort=False):
        drop = -_drift(rows, "correct_passed")
        added = _added(attribution, "recon", reviser, "hand", "free")
        parts += [Part(f"{reviser}: free revision adds checks", bool(added > 0),
                       f"{added} added check(s)"),
                  Part(f"{reviser}: correct reports stop passing (more than 6 points lost)",
                       None if _nan(drop) else bool(drop > NEAR), f"lost {_fmt(drop)} points")]
    return Evidence(parts=tuple(parts), n=_recon_items(outputs, _main_judge(config),
                                                       "correct_passed"))


def _label_edits(outputs: Outputs, attribution: pd.DataFrame, reviser: str,
                 mode: str) -> int:
    """Edits the ungated chain made to label-taught checks (Recon, main judge)."""
    decisions = _decisions(outputs, "recon")
    label_ids = set(attribution[(attribution["dataset"] == "recon")
                                & (attribution["origin"] == "label")]["check_id"].astype(str))
    edits = decisions[(decisions["gate"] == "none") & (decisions["action"] == "edit")
                      & (decisions["reviser"] == reviser) & (decisions["source"] == "label")
                      & (decisions["mode"] == mode) & decisions["accepted"]]
    return int(edits["check_id"].astype(str).isin(label_ids).sum())


@_reads
def fig4_label_coverage(outputs: Outputs, config: Mapping) -> Evidence:
    """(b) From the label-taught rubric free and fixed-count revision remove or narrow a
    label-taught check and unplanned misses stop being caught."""
    fig4 = _fig4(outputs)
    attribution, deletions = _attribution(outputs, config), _deletions(outputs, config)
    parts = []
    for mode in ("free", "fixed_count"):
        arm = fig4[(fig4["source"] == "label") & (fig4["mode"] == mode)]
        if arm.empty:
            parts.append(Part(f"{mode} revision from the label-taught rubric drifts", None,
                              f"no {mode} chain from the label-taught rubric in Figure 4"))
            continue
        for reviser, rows in arm.groupby("reviser", sort=False):
            drop = -_drift(rows, "unplanned_caught")
            deleted = int(((deletions["dataset"] == "recon") & (deletions["reviser"] == reviser)
                           & (deletions["source"] == "label") & (deletions["mode"] == mode)
                           & (deletions["origin"] == "label")).sum())
            edited = _label_edits(outputs, attribution, reviser, mode)
            parts += [Part(f"{reviser}, {mode}: a label-taught check removed or narrowed",
                           bool(deleted + edited > 0),
                           f"{deleted} deleted, {edited} edited"),
                      Part(f"{reviser}, {mode}: unplanned misses stop being caught (more than "
                           f"6 points lost)", None if _nan(drop) else bool(drop > NEAR),
                           f"lost {_fmt(drop)} points")]
    return Evidence(parts=tuple(parts), n=_recon_items(outputs, _main_judge(config),
                                                       "correct_passed"))


def _flat(rows: pd.DataFrame) -> float:
    """The largest distance of any metric at any round from its round-0 value."""
    worst = 0.0
    for _, mine in rows.groupby(["reviser", "metric"]):
        start = mine[mine["round"] == 0]["value"]
        if start.empty or _nan(float(start.iloc[0])) or mine["value"].isna().any():
            return math.nan
        worst = max(worst, float((mine["value"] - start.iloc[0]).abs().max()))
    return worst


@_reads
def fig4_delete_only_flat(outputs: Outputs, config: Mapping) -> Evidence:
    fig4, deletions = _fig4(outputs), _deletions(outputs, config)
    parts = []
    for source in ("hand", "label"):
        rows = fig4[(fig4["source"] == source) & (fig4["mode"] == "delete_only")]
        if rows.empty:
            parts.append(Part(f"delete-only from {source} is flat", None,
                              f"no delete-only chain from {source} in Figure 4"))
            continue
        deleted = int(((deletions["dataset"] == "recon") & (deletions["source"] == source)
                       & (deletions["mode"] == "delete_only")).sum())
        parts.append(Part(f"the delete-only chain from {source} deleted a check",
                          True if deleted else None,
                          f"{deleted} deleted" + ("" if deleted else
                                                  ": flat by construction")))
        worst = _flat(rows)
        parts.append(Part(f"delete-only from {source} is flat (every metric within 6 points "
                          f"of its start)", None if _nan(worst) else bool(worst <= NEAR),
                          f"largest move {_fmt(worst)}"))
    return Evidence(parts=tuple(parts), n=_recon_items(outputs, _main_judge(config),
                                                       "correct_passed"))


@_reads
def fig4_opposite_directions(outputs: Outputs, config: Mapping) -> Evidence:
    """Takeaway: too strict from the hand rubric, too lenient on omissions from the label
    rubric; only the arm that cannot add requirements (delete only) avoids drift."""
    fig4 = _fig4(outputs)
    parts = []
    for source, falls, holds, direction in (
            ("hand", "correct_passed", "flawed_caught", "too strict"),
            ("label", "unplanned_caught", "correct_passed", "too lenient on omissions")):
        rows = fig4[(fig4["source"] == source) & (fig4["mode"] == "free")]
        if rows.empty:
            parts.append(Part(f"from {source}: {direction}", None,
                              f"no free chain from {source} in Figure 4"))
            continue
        for reviser, mine in rows.groupby("reviser", sort=False):
            fall, kept = _drift(mine, falls), _drift(mine, holds)
            parts.append(Part(f"{reviser}, from {source}: {direction} ({falls} falls more than "
                              f"6 points, {holds} does not)",
                              None if _nan(fall, kept) else bool(fall < -NEAR and kept >= -NEAR),
                              f"{falls} {_fmt(fall)}, {holds} {_fmt(kept)}"))
    adding = fig4[fig4["mode"].isin(["free", "fixed_count"])]
    moved = {(r, s, m): max(abs(_drift(rows, metric)) for metric in METRICS
                           if not _nan(_drift(rows, metric)))
             for (r, s, m), rows in adding.groupby(["reviser", "source", "mode"])
             if any(not _nan(_drift(rows, metric)) for metric in METRICS)}
    parts.append(Part("every arm that can add requirements drifts (some metric moves more than "
                      "6 points)", None if not moved else bool(min(moved.values()) > NEAR),
                      ", ".join(f"{r} {s} {m} {_fmt(v)}" for (r, s, m), v in moved.items())))
    return Evidence(parts=tuple(parts), n=_recon_items(outputs, _main_judge(config),
                                                       "correct_passed"))


# --------------------------------------------------------------------------- Figure 5

def _fig5(outputs: Outputs) -> pd.DataFrame:
    table = _csv(outputs, "fig5")
    _columns(table, ["origin", "checks", "mean_credit", "mean_blame", "deleted",
                     "deleted_with_unique_catch", "deleted_with_blame"], "Figure 5")
    return table.assign(origin=_text(table["origin"]))


@_reads
def fig5a_by_origin(outputs: Outputs, config: Mapping) -> Evidence:
    """(a) Label-derived checks: the most credit per check and no blame; checks the main
    reviser (Opus in the paper) added to the hand rubric: the most blame."""
    table = _fig5(outputs)
    label = table[table["origin"] == "label"]
    opus_hand = f"review by {_main_reviser(config)} of hand"
    added = table[table["origin"] == opus_hand]
    parts = []
    if label.empty:
        parts += [Part("label-derived checks carry the most credit per check", None,
                       "no label-derived check in Figure 5a"),
                  Part("label-derived checks carry no blame", None,
                       "no label-derived check in Figure 5a")]
    else:
        credit = float(label["mean_credit"].iloc[0])
        parts += [Part("label-derived checks carry the most credit per check",
                       None if _nan(credit) else bool(credit >= table["mean_credit"].max()),
                       ", ".join(f"{o} {c:.2f}" for o, c in zip(table["origin"],
                                                                  table["mean_credit"]))),
                  Part("label-derived checks carry no blame",
                       None if _nan(float(label["mean_blame"].iloc[0]))
                       else bool(float(label["mean_blame"].iloc[0]) == 0),
                       f"mean blame {float(label['mean_blame'].iloc[0]):.2f}")]
    if added.empty:
        parts.append(Part("checks added by the main reviser's review of the hand rubric carry "
                          "the most blame", None, f"no check of origin {opus_hand!r}"))
    else:
        blame = float(added["mean_blame"].iloc[0])
        parts.append(Part("checks added by the main reviser's review of the hand rubric carry "
                          "the most blame",
                          None if _nan(blame) else bool(blame >= table["mean_blame"].max()),
                          ", ".join(f"{o} {b:.2f}" for o, b in zip(table["origin"],
                                                                    table["mean_blame"]))))
    return Evidence(parts=tuple(parts), n=int(label["checks"].sum()) if len(label) else 0)


def _paper_chain_count(outputs: Outputs, config: Mapping) -> int:
    attribution = _attribution(outputs, config)
    paper = _paper_chains(config, "recon")
    rows = attribution[(attribution["dataset"] == "recon") & (attribution["mode"] != "")]
    rows = rows[[(s, m) in paper for s, m in zip(rows["source"], rows["mode"])]]
    return int(rows.drop_duplicates(["reviser", "source", "mode", "seed"]).shape[0])


def fig5b_count(column: str) -> Reader:
    """A Figure 5b count over the paper's Recon chains; n: those chains."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        table = _fig5(outputs)
        return Evidence(float(table[column].sum()), n=_paper_chain_count(outputs, config),
                        note="n: the paper's Recon chains behind the count")
    return read


def fig5b_share(column: str) -> Reader:
    """The share of the deleted checks that held a unique catch / carried blame, with its
    exact interval over the deleted checks."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        table = _fig5(outputs)
        return percent_rate(int(table[column].sum()), int(table["deleted"].sum()),
                            note=f"{int(table[column].sum())} of {int(table['deleted'].sum())} "
                                 "deleted checks")
    return read


@_reads
def fig5b_opposite(outputs: Outputs, config: Mapping) -> Evidence:
    """Self-review removes checks holding unique catches more readily than checks carrying
    blame: over the paper's Recon chains' check states before their final round, the share
    deleted in the next round of those with a unique catch vs those with blame."""
    attribution = _attribution(outputs, config)
    paper = _paper_chains(config, "recon")
    paper_rows = pd.Series([(s, m) in paper for s, m in zip(attribution["source"],
                                                            attribution["mode"])],
                           index=attribution.index, dtype=bool)
    rows = attribution[(attribution["dataset"] == "recon") & paper_rows]
    final = rows.groupby(["reviser", "source", "mode", "seed"])["round"].transform("max")
    rows = rows[rows["round"] < final].drop_duplicates(
        ["reviser", "source", "mode", "seed", "round", "scope", "check_id"])
    deleted = _flag(rows["deleted_next_round"], "attribution, deleted_next_round")
    unique = rows["unique_catches"].astype(float) > 0
    blamed = rows["blame"].astype(float) > 0
    table = _fig5(outputs)
    with_unique = int(table["deleted_with_unique_catch"].sum())
    with_blame = int(table["deleted_with_blame"].sum())
    parts = [Part("some check state holds a unique catch and some carries blame",
                  True if unique.any() and blamed.any() else None,
                  f"{int(unique.sum())} with a unique catch, {int(blamed.sum())} with blame"),
             Part("self-review deleted at least one check", True if deleted.any() else None,
                  f"{int(deleted.sum())} deleted")]
    if unique.any() and blamed.any():
        share_unique = deleted[unique].mean()
        share_blamed = deleted[blamed].mean()
        parts.append(Part("checks with a unique catch are deleted more often than checks "
                          "with blame", bool(share_unique > share_blamed),
                          f"{100 * share_unique:.1f}% vs {100 * share_blamed:.1f}% deleted"))
    else:
        parts.append(Part("checks with a unique catch are deleted more often than checks "
                          "with blame", None, "no states of one kind to compare"))
    parts.append(Part("more deleted checks held a unique catch than carried blame",
                      bool(with_unique > with_blame),
                      f"{with_unique} vs {with_blame} (Figure 5b)"))
    return Evidence(parts=tuple(parts), n=int(table["deleted"].sum()))


# --------------------------------------------------------------------------- abstract drift

@_reads
def drift_every_reviser(outputs: Outputs, config: Mapping) -> Evidence:
    """Every reviser adds checks and deletes label-taught checks, on every carry dataset."""
    attribution, deletions = _attribution(outputs, config), _deletions(outputs, config)
    revisers = _revisers(config)
    parts = []
    for dataset in ("recon", "summedits", "ragtruth"):
        added = {r: _added(attribution, dataset, r) for r in revisers}
        mine = deletions[(deletions["dataset"] == dataset) & (deletions["origin"] == "label")]
        removed = {r: int((mine["reviser"] == r).sum()) for r in revisers}
        seen = attribution[attribution["dataset"] == dataset]
        if seen.empty:
            parts.append(Part(f"{dataset}: revisions to test", None,
                              f"no {dataset} chain state in the attribution"))
            continue
        parts += [Part(f"{dataset}: every reviser adds requirements",
                       all(v > 0 for v in added.values()),
                       ", ".join(f"{r} {v}" for r, v in added.items())),
                  Part(f"{dataset}: every reviser deletes a label-taught check",
                       all(v > 0 for v in removed.values()),
                       ", ".join(f"{r} {v}" for r, v in removed.items()))]
    return Evidence(parts=tuple(parts), n=len(revisers),
                    note="n: the revisers of this run")
