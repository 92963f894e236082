"""Readers of carry's claims on the start rubrics and checklists: Table 1 (the worked
Shapley example), Figure 1 (judges and renderings), Figure 2 (checklist length), Figure 3
(the generated draft against the hand-written rubric) and the abstract's range of correct
passed and "a few points". See rubriclab.replication.readers_carry for the conventions.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    Reader,
    cannot,
    percent_rate,
    reads as _reads,
)
from rubriclab.replication.readers_carry_common import (
    NEAR,
    _columns,
    _csv,
    _fmt,
    _nan,
    _text,
)


# --------------------------------------------------------------------------- Table 1

def _table1(outputs: Outputs, column: str) -> pd.DataFrame:
    table = _csv(outputs, "table1")
    _columns(table, ["check_id", column], "Table 1")
    return table


def table1_value(check: str, column: str) -> Reader:
    """A number of Table 1's worked example (the seed's own outputs through the pipeline's
    Shapley code): arithmetic."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        table = _table1(outputs, column)
        rows = table[_text(table["check_id"]) == check]
        if rows.empty:
            raise MissingEvidence(f"Table 1 has no check {check!r}")
        return Evidence(float(rows[column].iloc[0]), n=5, note="the seed's five outputs")
    return read


def table1_sum(column: str) -> Reader:
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        table = _table1(outputs, column)
        checks = ", ".join(map(str, table["check_id"]))
        return Evidence(float(table[column].sum()), n=5,
                        note=f"{column} summed over checks {checks}")
    return read


def table1_count(column: str) -> Reader:
    """How many checks have `column` > 0, naming them."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        table = _table1(outputs, column)
        which = table[table[column].astype(float) > 0]["check_id"].astype(str).tolist()
        return Evidence(float(len(which)), n=5,
                        note=f"checks with {column} > 0: {', '.join(which) or 'none'}")
    return read


# --------------------------------------------------------------------------- Figure 1

def _fig1(outputs: Outputs) -> pd.DataFrame:
    table = _csv(outputs, "fig1")
    _columns(table, ["panel", "judge", "source", "rendering", "metric", "value", "low", "high",
                     "n"], "Figure 1")
    return table


def fig1_correct_passed(source: str) -> Reader:
    """Figure 1a: correct passed of a start rubric, one call per check, main judge."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        rows = _fig1(outputs)
        row = rows[(rows["panel"] == "a") & (rows["source"] == source)
                   & (rows["rendering"] == "per_check") & (rows["metric"] == "correct_passed")]
        if row.empty:
            raise MissingEvidence(f"Figure 1a has no {source} per-check row")
        r = row.iloc[0]
        return Evidence(float(r["value"]), float(r["low"]), float(r["high"]), int(r["n"]))
    return read


def _spread(values: pd.Series) -> float:
    return float(values.max() - values.min()) if len(values) else math.nan


def _judge_parts(rows: pd.DataFrame, scale_apart: bool) -> list[Part]:
    """Figure 1b: per rubric (source x rendering) the judges' spread of correct passed."""
    panel = rows[(rows["panel"] == "b") & (rows["metric"] == "correct_passed")]
    judges = panel["judge"].nunique()
    if judges < 2:
        return [Part("judges agree within 6 points (not the scale)", None,
                     f"{judges} judge in Figure 1b: nothing to compare")]
    spreads = panel.groupby(["source", "rendering"])["value"].agg(_spread)
    plain = spreads[[r != "scale" for _, r in spreads.index]]
    worst = plain.max() if len(plain) else math.nan
    detail = ", ".join(f"{s}/{r} {_fmt(v)}" for (s, r), v in plain.items())
    parts = [Part("judges agree within 6 points on every rubric but the scale",
                  None if _nan(worst) else bool(worst <= NEAR), f"spreads: {detail}")]
    if scale_apart:
        scale = spreads[[r == "scale" for _, r in spreads.index]]
        parts.append(Part("the judges disagree by more than 6 points with the generic scale",
                          None if scale.empty or scale.isna().all()
                          else bool(scale.max() > NEAR),
                          "no scale rendering in Figure 1b" if scale.empty else
                          ", ".join(f"{s} {_fmt(v)}" for (s, _), v in scale.items())))
    return parts


def _rendering_parts(rows: pd.DataFrame, sources: Iterable[str] | None,
                     metrics: Iterable[str]) -> list[Part]:
    panel = rows[rows["panel"] == "a"]
    parts = []
    for source in sources or list(dict.fromkeys(panel["source"])):
        for metric in metrics:
            mine = panel[(panel["source"] == source) & (panel["metric"] == metric)]
            if mine["rendering"].nunique() < 2:
                parts.append(Part(f"rendering moves {source} {metric} by at most 6 points",
                                  None, f"{mine['rendering'].nunique()} rendering(s) in Figure 1a"))
                continue
            spread = _spread(mine["value"])
            parts.append(Part(f"rendering moves {source} {metric} by at most 6 points",
                              None if _nan(spread) else bool(spread <= NEAR),
                              f"spread {_fmt(spread)} over {', '.join(mine['rendering'])}"))
    return parts


def _correct_count(rows: pd.DataFrame) -> int | None:
    counts = rows[(rows["panel"] == "a") & (rows["metric"] == "correct_passed")]["n"]
    return int(counts.min()) if len(counts) else None


@_reads
def fig1_judges_agree(outputs: Outputs, config: Mapping) -> Evidence:
    rows = _fig1(outputs)
    return Evidence(parts=tuple(_judge_parts(rows, scale_apart=True)), n=_correct_count(rows))


@_reads
def fig1_clusters(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure 1a: hand-written and generated checks two clusters rendering does not move."""
    rows = _fig1(outputs)
    parts = _rendering_parts(rows, ["hand", "generated"], ["correct_passed", "flawed_caught"])
    panel = rows[(rows["panel"] == "a") & (rows["metric"] == "correct_passed")]
    hand = panel[panel["source"] == "hand"]["value"]
    generated = panel[panel["source"] == "generated"]["value"]
    if hand.empty or generated.empty:
        parts.append(Part("the two clusters lie more than 6 points apart", None,
                          "Figure 1a lacks the hand-written or the generated rubric"))
    else:
        gap = float(hand.min() - generated.max())
        parts.append(Part("the two clusters lie more than 6 points apart (correct passed)",
                          None if _nan(gap) else bool(abs(gap) > NEAR and
                                                      (hand.min() > generated.max()
                                                       or generated.min() > hand.max())),
                          f"hand {_fmt(hand.min())}-{_fmt(hand.max())}, generated "
                          f"{_fmt(generated.min())}-{_fmt(generated.max())}"))
    return Evidence(parts=tuple(parts), n=_correct_count(rows))


@_reads
def few_points(outputs: Outputs, config: Mapping) -> Evidence:
    """The abstract: judge model and rendering move correct passed by a few points (Figure 1:
    judges on every rubric but the generic scale, which Figure 1b sets apart; renderings of
    every start rubric under the main judge)."""
    rows = _fig1(outputs)
    parts = _judge_parts(rows, scale_apart=False)
    parts += _rendering_parts(rows, None, ["correct_passed"])
    return Evidence(parts=tuple(parts), n=_correct_count(rows))


# --------------------------------------------------------------------------- Figure 2

def _fig2(outputs: Outputs, dataset: str) -> pd.DataFrame:
    table = _csv(outputs, "fig2")
    _columns(table, ["dataset", "rendering", "length", "runs", "n_correct", "n_flawed",
                     "correct_passed", "flawed_caught"], "Figure 2")
    rows = table[table["dataset"] == dataset]
    if rows.empty:
        raise MissingEvidence(f"Figure 2 has no {dataset} rows")
    return rows.set_index(["rendering", "length"]).sort_index()


def _fig2_row(rows: pd.DataFrame, rendering: str, length: int, dataset: str) -> pd.Series:
    if (rendering, length) not in rows.index:
        raise MissingEvidence(f"Figure 2 lacks {dataset}'s {length} checks ({rendering})")
    return rows.loc[(rendering, length)]


def _items(row: pd.Series, kind: str) -> int:
    """Items behind a Figure 2 rate: its determined count summed over runs, per run."""
    return int(round(float(row[f"n_{kind}"]) / max(int(row["runs"]), 1)))


def _rate(value: float, n: int, note: str = "") -> Evidence:
    """A percent over n items with its exact interval (successes: the rate times n, rounded,
    when the rate is a mean over runs)."""
    if _nan(value):
        return cannot("the run's rate is NaN")
    return percent_rate(int(round(value * n / 100)), n, note=note)


def _lengths(rows: pd.DataFrame, rendering: str) -> list[int]:
    return sorted(int(length) for r, length in rows.index if r == rendering)


def fig2_nested_change(dataset: str, metric: str) -> Reader:
    """From the shortest to the longest per-check checklist (3 and 10 in the seed): the points
    of `metric` lost (correct passed) or gained (flawed caught). Checklists are nested (length
    L asks checks 1..L, all must pass), so the change is the share of items passed at 3 and
    failed at 10: a rate over items with its exact interval."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        rows = _fig2(outputs, dataset)
        lengths = _lengths(rows, "per_check")
        if len(lengths) < 2:
            raise MissingEvidence(f"Figure 2 has fewer than two {dataset} checklist lengths")
        short = _fig2_row(rows, "per_check", 3 if 3 in lengths else lengths[0], dataset)
        long = _fig2_row(rows, "per_check", 10 if 10 in lengths else lengths[-1], dataset)
        kind = "correct" if metric == "correct_passed" else "flawed"
        change = (float(short[metric]) - float(long[metric]) if metric == "correct_passed"
                  else float(long[metric]) - float(short[metric]))
        evidence = _rate(change, _items(long, kind),
                         note=f"lengths {short.name[1]} -> {long.name[1]}: "
                              f"{_fmt(short[metric])} -> {_fmt(long[metric])}")
        return evidence
    return read


def fig2_rate(dataset: str, rendering: str, length: int, metric: str) -> Reader:
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        row = _fig2_row(_fig2(outputs, dataset), rendering, length, dataset)
        kind = "correct" if metric == "correct_passed" else "flawed"
        return _rate(float(row[metric]), _items(row, kind),
                     note=f"mean of {int(row['runs'])} run(s)")
    return read


def _cost(rows: pd.DataFrame, dataset: str) -> float:
    lengths = _lengths(rows, "per_check")
    if len(lengths) < 2:
        raise MissingEvidence(f"Figure 2 has fewer than two {dataset} checklist lengths")
    return float(_fig2_row(rows, "per_check", lengths[0], dataset)["correct_passed"]
                 - _fig2_row(rows, "per_check", lengths[-1], dataset)["correct_passed"])


@_reads
def fig2_summedits_trade(outputs: Outputs, config: Mapping) -> Evidence:
    """(a) SummEdits: each added check trades a few consistent summaries for catches."""
    rows = _fig2(outputs, "summedits")
    lengths = _lengths(rows, "per_check")
    if len(lengths) < 2:
        raise MissingEvidence("Figure 2 has fewer than two SummEdits checklist lengths")
    series = rows.loc["per_check"].sort_index()
    first, last = series.iloc[0], series.iloc[-1]
    steps = series["correct_passed"].diff().dropna().abs()
    parts = (
        Part("correct passed falls from the shortest to the longest checklist",
             None if _nan(first["correct_passed"], last["correct_passed"])
             else bool(last["correct_passed"] < first["correct_passed"]),
             f"{_fmt(first['correct_passed'])} -> {_fmt(last['correct_passed'])}"),
        Part("flawed caught rises from the shortest to the longest checklist",
             None if _nan(first["flawed_caught"], last["flawed_caught"])
             else bool(last["flawed_caught"] > first["flawed_caught"]),
             f"{_fmt(first['flawed_caught'])} -> {_fmt(last['flawed_caught'])}"),
        Part("no added check costs more than 6 points of correct passed ('a few')",
             None if steps.empty else bool(steps.max() <= NEAR),
             f"largest step {_fmt(steps.max()) if len(steps) else 'none'}"),
    )
    return Evidence(parts=parts, n=_items(last, "correct"))


@_reads
def fig2_content_effect(outputs: Outputs, config: Mapping) -> Evidence:
    """Takeaway: the content effect is small on SummEdits and large on RAGTruth."""
    summedits, ragtruth = _fig2(outputs, "summedits"), _fig2(outputs, "ragtruth")
    small, large = _cost(summedits, "summedits"), _cost(ragtruth, "ragtruth")
    detail = f"cost of the longest checklist: SummEdits {_fmt(small)}, RAGTruth {_fmt(large)}"
    parts = (
        Part("the effect is there on SummEdits (correct passed falls)",
             None if _nan(small) else bool(small > 0), detail),
        Part("it is larger on RAGTruth than on SummEdits",
             None if _nan(small, large) else bool(large > small), detail),
        Part("it is large on RAGTruth (more than 6 points)",
             None if _nan(large) else bool(large > NEAR), detail),
    )
    n = min(_items(r.loc["per_check"].iloc[-1], "correct") for r in (summedits, ragtruth))
    return Evidence(parts=parts, n=n)


@_reads
def fig2_rendering_only_ragtruth(outputs: Outputs, config: Mapping) -> Evidence:
    """RAGTruth is the one place where rendering mattered: per check vs paragraph."""
    parts = []
    counts = []
    for dataset, matters in (("ragtruth", True), ("summedits", False)):
        rows = _fig2(outputs, dataset)
        shared = sorted(set(_lengths(rows, "per_check")) & set(_lengths(rows, "paragraph")))
        if not shared:
            parts.append(Part(f"{dataset}: rendering {'moves' if matters else 'keeps'} correct "
                              f"passed", None, "no length in both renderings"))
            continue
        lengths = [10 if 10 in shared else shared[-1]] if matters else shared
        gaps = {length: abs(float(rows.loc[("per_check", length), "correct_passed"]
                                  - rows.loc[("paragraph", length), "correct_passed"]))
                for length in lengths}
        detail = ", ".join(f"{length} checks {_fmt(g)}" for length, g in gaps.items())
        values = list(gaps.values())
        if matters:
            parts.append(Part("RAGTruth: paragraph and per-check differ by more than 6 points",
                              None if _nan(*values) else bool(min(values) > NEAR), detail))
        else:
            parts.append(Part("SummEdits: paragraph and per-check within 6 points at every "
                              "length", None if _nan(*values) else bool(max(values) <= NEAR),
                              detail))
        counts.append(_items(rows.loc["per_check"].iloc[-1], "correct"))
    fig1 = _fig1(outputs)
    parts += _rendering_parts(fig1, None, ["correct_passed"])
    return Evidence(parts=tuple(parts), n=min(counts) if counts else None)


# --------------------------------------------------------------------------- abstract range

def content_extreme(lowest: bool) -> Reader:
    """The lowest (highest) correct passed of any rubric under the main judge: Figure 1a's
    start rubrics (every rendering) and Figure 2's checklists (every length and rendering),
    with that rubric's exact interval over its items."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        fig1 = _fig1(outputs)
        arms: list[tuple[float, Evidence, str]] = []
        panel = fig1[(fig1["panel"] == "a") & (fig1["metric"] == "correct_passed")]
        for r in panel.itertuples(index=False):
            if not _nan(float(r.value)):
                arms.append((float(r.value), Evidence(float(r.value), float(r.low),
                                                      float(r.high), int(r.n)),
                             f"Recon-72 {r.source}, {r.rendering}"))
        fig2 = _csv(outputs, "fig2")
        for r in fig2.to_dict("records"):
            if not _nan(float(r["correct_passed"])):
                n = int(round(float(r["n_correct"]) / max(int(r["runs"]), 1)))
                arms.append((float(r["correct_passed"]), _rate(float(r["correct_passed"]), n),
                             f"{r['dataset']} generic {int(r['length'])} checks, "
                             f"{r['rendering']}"))
        if not arms:
            raise MissingEvidence("no defined correct-passed rate in Figures 1a and 2")
        value, evidence, where = (min if lowest else max)(arms, key=lambda a: a[0])
        return Evidence(evidence.value, evidence.low, evidence.high, evidence.n,
                        note=f"{where}; {len(arms)} rubrics compared")
    return read


# --------------------------------------------------------------------------- Figure 3

def _fig3_rates(outputs: Outputs) -> dict[str, tuple[float, float]]:
    table = _csv(outputs, "fig3")
    _columns(table, ["rubric", "correct_passed", "flawed_caught", "balanced_accuracy"],
             "Figure 3")
    rates = {}
    for rubric, rows in table.groupby("rubric"):
        rates[str(rubric)] = (float(rows["correct_passed"].iloc[0]),
                              float(rows["flawed_caught"].iloc[0]))
    for needed in ("generated draft", "hand-written"):
        if needed not in rates:
            raise MissingEvidence(f"Figure 3 has no {needed} rubric")
    return rates


def _fig3_items(outputs: Outputs) -> int | None:
    fig1 = _fig1(outputs)
    rows = fig1[(fig1["panel"] == "a") & (fig1["source"] == "generated")
                & (fig1["rendering"] == "per_check")]
    return int(rows["n"].sum()) if len(rows) else None


@_reads
def fig3_balanced_accuracy(outputs: Outputs, config: Mapping) -> Evidence:
    correct, flawed = _fig3_rates(outputs)["generated draft"]
    return Evidence(100 * (correct + flawed) / 2, n=_fig3_items(outputs),
                    note="(correct passed + flawed caught) / 2 of the generated draft")


def crossover(hand: tuple[float, float], generated: tuple[float, float]) -> float:
    """The flawed share s (0..1) above which the generated draft's accuracy
    (1 - s) cp + s fc exceeds the hand-written rubric's; NaN if it never does in [0, 1)."""
    lost = hand[0] - generated[0]  # correct passed the draft gives up
    gained = generated[1] - hand[1]  # flawed caught it adds
    if gained <= 0 or lost + gained <= 0:
        return math.nan
    share = lost / (lost + gained)
    return share if share < 1 else math.nan


@_reads
def fig3_crossover(outputs: Outputs, config: Mapping) -> Evidence:
    rates = _fig3_rates(outputs)
    share = crossover(rates["hand-written"], rates["generated draft"])
    if _nan(share):
        return cannot("the generated draft never outscores the hand-written rubric")
    return Evidence(100 * share, n=_fig3_items(outputs),
                    note="where the two accuracy lines cross")


@_reads
def fig3_ranking(outputs: Outputs, config: Mapping) -> Evidence:
    rates = _fig3_rates(outputs)
    hand, generated = rates["hand-written"], rates["generated draft"]
    share = crossover(hand, generated)
    parts = (
        Part("the generated draft fails almost every correct report (passes at most 6%)",
             None if _nan(generated[0]) else bool(100 * generated[0] <= NEAR),
             f"correct passed {_fmt(100 * generated[0])}"),
        Part("the hand-written rubric works better (higher balanced accuracy)",
             None if _nan(*hand, *generated) else bool(sum(hand) > sum(generated)),
             f"balanced accuracy {_fmt(50 * sum(hand))} vs {_fmt(50 * sum(generated))}"),
        Part("on a defect-heavy set the draft's accuracy is the higher",
             bool(not _nan(share)), "crossover at "
             + ("none" if _nan(share) else f"{_fmt(100 * share)}% flawed")),
    )
    return Evidence(parts=parts, n=_fig3_items(outputs))
