"""Readers of carry's claims (seed 000, resources/replication/claims_carry.yaml).

Each reader takes the outputs of rule `replication` by name and the run's config and returns
the run's `Evidence`: a value with the pipeline's own interval (the Clopper-Pearson `low` /
`high` the carry tables and figures write, or an exact interval over the items a rate is over)
or, for a qualitative claim, one `Part` per part of its sentence plus parts that check the
claim could be tested at all (a gate that accepted some change, a chain that drifted, no NaN).

Numeric readings of the seed's words, each the seed's own number:
- NEAR = 6 points: "near the starting level", "flat", "a few points", "agree within a few
  points" all read as Table 2's "within 6 points of that judge's own starting value".
- COLLAPSE = 75 points: Table 2's ungated rubric "collapses": in every chain and judge of the
  seed's Table 2 some metric moves at least 75 points from its start (the smallest such move:
  L, Haiku judge, unplanned caught 91.7 -> 16.7).
- NEARLY_EVERY = 5/6: "holds nearly every drifting revision chain": Figure 6 names one
  exception among its 6 reviser x start arms (Sonnet's label-taught chain).

Outputs read: table1, fig1, fig2, fig3, fig4, fig5, fig6, fig6_supplement, table2, table3,
gate_agreement, carry_rates, carry_attribution, carry_deletions and
carry_decisions_<recon|summedits|ragtruth> (the main judge's gate decisions).
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    Reader,
    cannot,
    output_path,
    percent_rate,
    reads as _reads,
)

NEAR = 6.0
COLLAPSE = 75.0
NEARLY_EVERY = 5 / 6
METRICS = ["correct_passed", "flawed_caught", "unplanned_caught"]
GATE_COLUMNS = {"none": "ungated", "R": "Gate R", "P": "Gate P", "S": "Gate S",
                "S+P": "Gate S+P"}
CI = " 95% CI"


def _csv(outputs: Outputs, name: str) -> pd.DataFrame:
    path = output_path(outputs, name)
    return pd.read_csv(path, keep_default_na=False, na_values=["", "NaN", "nan"])


def _columns(table: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    absent = [c for c in columns if c not in table.columns]
    if absent:
        raise MissingEvidence(f"{where} has no column(s) {absent}")


def _text(series: pd.Series) -> pd.Series:
    return series.fillna("").astype(str)


def _flag(series: pd.Series, where: str) -> pd.Series:
    words = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False}
    mapped = series.map(lambda v: words.get(str(v).strip().lower()))
    if mapped.isna().any():
        bad = sorted(set(series[mapped.isna()].astype(str)))
        raise ValueError(f"{where}: non-boolean values {bad}")
    return mapped.astype(bool)


def _fmt(value: float) -> str:
    return "NaN" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{float(value):.1f}"


def _nan(*values: float) -> bool:
    return any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values)


def _main_judge(config: Mapping) -> str:
    return str(config["models"]["judge"])


def _main_reviser(config: Mapping) -> str:
    return str(config["models"]["reviser"])


def _revisers(config: Mapping) -> list[str]:
    return list(config["models"].get("revisers") or [config["models"]["reviser"]])


def _judges(config: Mapping) -> list[str]:
    return list((config.get("carry") or {}).get("judges") or [config["models"]["judge"]])


def _named(models: Iterable[str], family: str, config: Mapping) -> list[str]:
    """The models whose model string or label names `family` ("sonnet", "opus", "haiku")."""
    labels = config.get("labels") or {}
    return [m for m in models
            if family in str(m).lower() or family in str(labels.get(m, "")).lower()]


def _paper_chains(config: Mapping, dataset: str) -> set[tuple[str, str]]:
    """(source, mode) of the paper's chains of a dataset (carry.chains.<dataset>.chains)."""
    chains = config["carry"]["chains"][dataset]["chains"]
    return {tuple(str(c).split(":", 1)) for c in chains}  # type: ignore[misc]


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


# --------------------------------------------------------------------------- decisions

def _decisions(outputs: Outputs, dataset: str) -> pd.DataFrame:
    table = _csv(outputs, f"carry_decisions_{dataset}")
    _columns(table, ["reviser", "source", "mode", "seed", "gate", "round", "action",
                     "check_id", "accepted", "evidence"], f"the {dataset} gate decisions")
    table = table.assign(mode=_text(table["mode"]), reviser=_text(table["reviser"]))
    table["accepted"] = _flag(table["accepted"], f"{dataset} decisions, accepted")
    table["evidence"] = _flag(table["evidence"], f"{dataset} decisions, evidence")
    return table


def _gate_parts(decisions: pd.DataFrame, gate: str, chains: Iterable[tuple],
                what: str) -> list[Part]:
    """Testability: the gate accepted some change of these chains and decided some change
    with evidence (a gate that refused everything stays at the start by construction). Every
    replay of the gate counts: on Recon its leave-one-report-out replays are both Figure 6's
    and Table 2's (docs/replication.md, "Gate evidence and scoring sets")."""
    keys = set(chains)
    mine = decisions[(decisions["gate"] == gate) & (decisions["action"] != "keep")]
    of_chains = pd.Series([(r, s, m, int(k)) in keys for r, s, m, k in
                           zip(mine["reviser"], mine["source"], mine["mode"], mine["seed"])],
                          index=mine.index, dtype=bool)
    mine = mine[of_chains]
    accepted, with_evidence = int(mine["accepted"].sum()), int(mine["evidence"].sum())
    return [
        Part(f"Gate {gate} accepted at least one change ({what})",
             True if accepted else None,
             f"{accepted} of {len(mine)} changes accepted"
             + ("" if accepted else ": it refused every change, so its rubric is the start")),
        Part(f"Gate {gate} decided with evidence ({what})",
             True if with_evidence else None,
             f"{with_evidence} of {len(mine)} changes decided with evidence"),
    ]


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


# --------------------------------------------------------------------------- Figure 6

def _fig6(outputs: Outputs) -> pd.DataFrame:
    table = _csv(outputs, "fig6")
    _columns(table, ["reviser", "source", "gate", "metric", "value", "chains", "start"],
             "Figure 6")
    return table.assign(reviser=_text(table["reviser"]), gate=_text(table["gate"]))


def _distance(rows: pd.DataFrame, metrics: Iterable[str] | None = None) -> float:
    """The largest |value - start| of a gate's bars (over `metrics`); NaN if any is NaN."""
    if metrics is not None:
        rows = rows[rows["metric"].isin(list(metrics))]
    if rows.empty or rows[["value", "start"]].isna().any().any():
        return math.nan
    return float((rows["value"] - rows["start"]).abs().max())


def _near_part(name: str, rows: pd.DataFrame, metrics: Iterable[str] | None = None) -> Part:
    if rows.empty:
        return Part(name, None, "no bar in Figure 6")
    distance = _distance(rows, metrics)
    return Part(name, None if _nan(distance) else bool(distance <= NEAR),
                "NaN value or start" if _nan(distance) else f"largest move {_fmt(distance)}")


def _sonnet(config: Mapping, fig6: pd.DataFrame) -> str | None:
    named = _named(dict.fromkeys(fig6["reviser"]), "sonnet", config)
    return named[0] if named else None


def _fig6_chains(config: Mapping) -> list[tuple]:
    """(reviser, source, mode, seed) of the paper's Recon chains Figure 6 averages."""
    return [(r, s, m, int(k)) for r in _revisers(config)
            for s, m in _paper_chains(config, "recon")
            for k in config["carry"]["chains"]["seeds"]]


def _fig6_n(fig6: pd.DataFrame) -> int:
    """The chains behind the smaller panel (each reviser's count of chains, summed)."""
    per = fig6.drop_duplicates(["reviser", "source"]).groupby("source")["chains"].sum()
    return int(per.min()) if len(per) else 0


@_reads
def fig6_only_sp(outputs: Outputs, config: Mapping) -> Evidence:
    """Only Gate S+P stays near the start (within 6 points on every metric) in both panels,
    for every reviser but Sonnet's label-taught chain (the seed's exception); every other
    gate (and the ungated rubric) leaves the start somewhere."""
    fig6 = _fig6(outputs)
    sonnet = _sonnet(config, fig6)
    parts = []
    for source, panel in (("hand", "a"), ("label", "b")):
        for reviser in dict.fromkeys(fig6["reviser"]):
            rows = fig6[(fig6["source"] == source) & (fig6["reviser"] == reviser)
                        & (fig6["gate"] == "S+P")]
            if source == "label" and reviser == sonnet:
                continue  # the seed's exception: carry.fig6.sonnet_exception
            parts.append(_near_part(f"({panel}) Gate S+P near the start, {reviser}", rows))
    for gate in ("none", "R", "P", "S"):
        moves = {(r, s): _distance(rows) for (r, s), rows in
                 fig6[fig6["gate"] == gate].groupby(["reviser", "source"])}
        defined = [v for v in moves.values() if not _nan(v)]
        parts.append(Part(f"{GATE_COLUMNS[gate]} leaves the start in some panel",
                          None if not defined else bool(max(defined) > NEAR),
                          ", ".join(f"{r} {s} {_fmt(v)}" for (r, s), v in moves.items())
                          or "no bars"))
    parts += _gate_parts(_decisions(outputs, "recon"), "S+P",
                         _fig6_chains(config), "Figure 6's chains")
    return Evidence(parts=tuple(parts), n=_fig6_n(fig6))


@_reads
def fig6_single_signals(outputs: Outputs, config: Mapping) -> Evidence:
    """Each single signal protects one direction: Gate S strictness (panel a, correct
    passed), Gate P coverage (panel b, unplanned caught), neither the other."""
    fig6 = _fig6(outputs)
    parts = []
    for gate, protects, source, metric, misses, other_source, other_metric in (
            ("S", "strictness", "hand", "correct_passed", "coverage", "label",
             "unplanned_caught"),
            ("P", "coverage", "label", "unplanned_caught", "strictness", "hand",
             "correct_passed")):
        rows = fig6[(fig6["gate"] == gate) & (fig6["source"] == source)]
        parts.append(_near_part(f"Gate {gate} protects {protects} ({metric} near the start "
                                f"from {source}, every reviser)", rows, [metric]))
        other = fig6[(fig6["gate"] == gate) & (fig6["source"] == other_source)]
        moves = [_distance(r, [other_metric]) for _, r in other.groupby("reviser")]
        defined = [m for m in moves if not _nan(m)]
        parts.append(Part(f"Gate {gate} does not protect {misses} ({other_metric} leaves the "
                          f"start from {other_source} for some reviser)",
                          None if not defined else bool(max(defined) > NEAR),
                          ", ".join(_fmt(m) for m in moves) or "no bars"))
    parts += _gate_parts(_decisions(outputs, "recon"), "S", _fig6_chains(config),
                         "Figure 6's chains")
    parts += _gate_parts(_decisions(outputs, "recon"), "P", _fig6_chains(config),
                         "Figure 6's chains")
    return Evidence(parts=tuple(parts), n=_fig6_n(fig6))


@_reads
def fig6_sonnet_exception(outputs: Outputs, config: Mapping) -> Evidence:
    """Sonnet's label-taught chain is the exception: there Gate S+P leaves the start."""
    fig6 = _fig6(outputs)
    sonnet = _sonnet(config, fig6)
    if sonnet is None:
        return Evidence(parts=(Part("a Sonnet reviser in this run", None,
                                    "no reviser of models.revisers is a Sonnet model"),),
                        n=_fig6_n(fig6))
    rows = fig6[(fig6["reviser"] == sonnet) & (fig6["source"] == "label")
                & (fig6["gate"] == "S+P")]
    distance = _distance(rows)
    return Evidence(parts=(Part(f"Gate S+P leaves the start on {sonnet}'s label-taught chain",
                                None if _nan(distance) else bool(distance > NEAR),
                                f"largest move {_fmt(distance)}"),),
                    n=_fig6_n(fig6))


# --------------------------------------------------------------------------- fig6 supplement

def split_cell(cell: Any, where: str) -> list[float]:
    """"97.2 / 83.3 / 0.0" -> [97.2, 83.3, 0.0]; "n/a" is NaN."""
    parts = str(cell).split(" / ")
    try:
        return [math.nan if p.strip() in ("n/a", "nan", "") else float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{where}: cell {cell!r} is not 'a / b[ / c]' of numbers") from None


_BOUNDS = re.compile(r"\[\s*([^,\]]+)\s*,\s*([^\]]+)\s*\]")


def split_interval_cell(cell: Any, where: str) -> list[tuple[float, float]]:
    """"[0.0, 45.9]† / [61.5, 99.8]" -> [(0.0, 45.9), (61.5, 99.8)]."""
    found = []
    for part in str(cell).split(" / "):
        match = _BOUNDS.search(part)
        if match is None:
            found.append((math.nan, math.nan))
            continue
        low, high = (math.nan if v.strip() == "n/a" else float(v) for v in match.groups())
        found.append((low, high))
    if not found:
        raise ValueError(f"{where}: interval cell {cell!r} holds no [low, high]")
    return found


@_reads
def gate_holds_drifting_chains(outputs: Outputs, config: Mapping) -> Evidence:
    """The abstract: Gate S+P holds nearly every drifting chain at its starting quality
    (every metric within 6 points of its start at the final round; at least 5/6 of the
    paper's Recon chains whose ungated rubric moved more than 6 points)."""
    table = _csv(outputs, "fig6_supplement")
    _columns(table, ["reviser", "source", "mode", "seed", "paper_chain", "start", "ungated",
                     "Gate S+P"], "the Figure 6 supplement")
    table = table[_flag(table["paper_chain"], "Figure 6 supplement, paper_chain")]
    drifting, held, undefined = [], [], []
    for r in table.to_dict("records"):
        name = f"{r['reviser']} {r['source']} {r['mode']} seed {r['seed']}"
        start = split_cell(r["start"], name)
        ungated, gated = split_cell(r["ungated"], name), split_cell(r["Gate S+P"], name)
        if _nan(*start, *ungated, *gated):
            undefined.append(name)
            continue
        if max(abs(a - b) for a, b in zip(start, ungated)) > NEAR:
            drifting.append(name)
            if max(abs(a - b) for a, b in zip(start, gated)) <= NEAR:
                held.append(name)
    chains = [(str(r["reviser"]), str(r["source"]), str(r["mode"]), int(r["seed"]))
              for r in table.to_dict("records")]
    parts = [Part("no NaN rate in the paper's chains", None if undefined else True,
                  f"NaN in {', '.join(undefined)}" if undefined else ""),
             Part("some chain drifts (ungated moves more than 6 points)",
                  True if drifting else None, f"{len(drifting)} of {len(table)} chains drift")]
    parts += _gate_parts(_decisions(outputs, "recon"), "S+P", chains,
                         "the paper's Recon chains")
    share = len(held) / len(drifting) if drifting else math.nan
    parts.append(Part("Gate S+P holds at least 5 of 6 drifting chains within 6 points",
                      None if _nan(share) else bool(share >= NEARLY_EVERY - 1e-9),
                      f"{len(held)} of {len(drifting)} held"))
    return Evidence(parts=tuple(parts), n=len(table))


# --------------------------------------------------------------------------- agreement

@_reads
def identical_decisions(outputs: Outputs, config: Mapping) -> Evidence:
    """The share of Gate S+P's verdict-reading decisions on Recon that every judge made the
    same way, with its exact interval over those decisions."""
    judges = _judges(config)
    if len(judges) < 2:
        return cannot(f"{len(judges)} judge (carry.judges): no second judge to agree with")
    table = _csv(outputs, "gate_agreement")
    _columns(table, ["dataset", "gate", "changes", "agreed"], "the gate agreement table")
    rows = table[table["gate"] == "S+P"]
    if rows.empty:
        raise MissingEvidence("the gate agreement table has no Gate S+P rows")
    datasets = ", ".join(dict.fromkeys(rows["dataset"].astype(str)))
    return percent_rate(int(rows["agreed"].sum()), int(rows["changes"].sum()),
                        note=f"{len(judges)} judges, Gate S+P decisions that read verdicts, "
                             f"on {datasets}")


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


# --------------------------------------------------------------------------- Table 2

SEED_JUDGES = ("haiku", "sonnet", "opus")  # the seed's columns, in order
TABLE2_ROWS = {"start": "start", "ungated": "ungated", "sp": "Gate S+P, leave-one-out"}


def _table2(outputs: Outputs) -> tuple[pd.DataFrame, list[str]]:
    table = _csv(outputs, "table2")
    _columns(table, ["chain", "reviser", "source", "mode", "seed", "rubric_or_gate"],
             "Table 2")
    judges = [c for c in table.columns if f"{c}{CI}" in table.columns]
    if not judges:
        raise MissingEvidence("Table 2 has no judge column")
    return table, judges


def table2_judge(family: str, judges: list[str], config: Mapping) -> tuple[str, str]:
    """The run's judge standing for the seed's `family` column: one whose name says it; else,
    when the run has as many judges as the seed's columns, the one in the same place."""
    named = _named(judges, family, config)
    if named:
        return named[0], ""
    if len(judges) == len(SEED_JUDGES):
        return judges[SEED_JUDGES.index(family)], f"in the place of the {family.title()} judge"
    raise MissingEvidence(f"no {family.title()} judge among Table 2's judges {judges}")


def _recon_items(outputs: Outputs, judge: str, metric: str) -> int:
    rates = _csv(outputs, "carry_rates")
    _columns(rates, ["dataset", "judge", "item_set", "environments", "metric", "n",
                     "n_undetermined"], "results/carry/rates.csv")
    rows = rates[(rates["dataset"] == "recon") & (rates["judge"] == judge)
                 & (rates["item_set"] == "recon108") & (rates["environments"] == "all")
                 & (rates["metric"] == metric)]
    if rows.empty:
        raise MissingEvidence(f"no Recon-108 {metric} rates of {judge}")
    return int((rows["n"] + rows["n_undetermined"]).max())


def table2_cell(source: str, row: str, family: str, metric: str) -> Reader:
    """One cell of Table 2: chain from `source` (the seed's H = hand, L = label), row kind,
    the judge standing for the seed's column, one metric; the table's 95% interval; n: the
    Recon-108 reports of the metric's kind that judge graded."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        table, judges = _table2(outputs)
        judge, how = table2_judge(family, judges, config)
        rows = table[(table["source"] == source)
                     & _text(table["rubric_or_gate"]).str.startswith(TABLE2_ROWS[row])]
        if rows.empty:
            raise MissingEvidence(f"Table 2 has no {source} chain row {TABLE2_ROWS[row]!r}")
        record = rows.iloc[0]
        where = f"Table 2 {record['chain']}, {record['rubric_or_gate']}"
        index = METRICS.index(metric)
        value = split_cell(record[judge], where)[index]
        low, high = split_interval_cell(record[f"{judge}{CI}"], where)[index]
        note = "; ".join(x for x in (f"{judge} judge {how}".strip(), str(record["chain"])) if x)
        return Evidence(value, low, high, _recon_items(outputs, judge, metric), note=note)
    return read


@_reads
def table2_within_6_and_collapse(outputs: Outputs, config: Mapping) -> Evidence:
    """Both halves of Table 2's takeaway, per judge and chain: the ungated rubric collapses
    (some metric moves at least 75 points) in the same way under every judge, and Gate S+P
    keeps each metric within 6 points of that judge's start; plus testability parts."""
    table, judges = _table2(outputs)
    parts: list[Part] = []
    chains = []
    for chain, rows in table.groupby("chain", sort=False):
        kinds = {kind: rows[_text(rows["rubric_or_gate"]).str.startswith(label)]
                 for kind, label in TABLE2_ROWS.items()}
        if any(k.empty for k in kinds.values()):
            raise MissingEvidence(f"Table 2 chain {chain!r} lacks a start, ungated or Gate S+P row")
        first = kinds["start"].iloc[0]
        chains.append((str(first["reviser"]), str(first["source"]), str(first["mode"]),
                       int(first["seed"])))
        ways = {}
        for judge in judges:
            where = f"Table 2 {chain}, {judge}"
            start = split_cell(kinds["start"].iloc[0][judge], where)
            ungated = split_cell(kinds["ungated"].iloc[0][judge], where)
            gated = split_cell(kinds["sp"].iloc[0][judge], where)
            if _nan(*start, *ungated):
                parts.append(Part(f"ungated collapses, {judge}, {chain}", None, "NaN cell"))
            else:
                moves = [u - s for s, u in zip(start, ungated)]
                largest = max(range(len(moves)), key=lambda i: abs(moves[i]))
                # the way it collapses: each metric up, down or within NEAR of its start
                ways[judge] = tuple(0 if abs(m) <= NEAR else (1 if m > 0 else -1)
                                    for m in moves)
                parts.append(Part(f"ungated collapses (a metric moves at least 75 points), "
                                  f"{judge}, {chain}",
                                  bool(abs(moves[largest]) >= COLLAPSE - 1e-9),
                                  f"{METRICS[largest]} {_fmt(start[largest])} -> "
                                  f"{_fmt(ungated[largest])}"))
            if _nan(*start, *gated):
                parts.append(Part(f"Gate S+P within 6 points, {judge}, {chain}", None,
                                  "NaN cell"))
            else:
                distance = max(abs(g - s) for s, g in zip(start, gated))
                parts.append(Part(f"Gate S+P within 6 points of the start, {judge}, {chain}",
                                  bool(distance <= NEAR), f"largest move {_fmt(distance)}"))
        if len(judges) < 2:
            parts.append(Part(f"the same collapse under every judge, {chain}", None,
                              "one judge: nothing to compare"))
        else:
            parts.append(Part(f"the same collapse under every judge, {chain}",
                              None if len(ways) < len(judges) else len(set(ways.values())) == 1,
                              "; ".join(f"{j}: " + ", ".join(
                                  f"{m} {({1: 'up', -1: 'down', 0: 'kept'})[w]}"
                                  for m, w in zip(METRICS, way)) for j, way in ways.items())))
    parts += _gate_parts(_decisions(outputs, "recon"), "S+P", chains,
                         "Table 2's chains, main judge")
    n = min(_recon_items(outputs, judge, "correct_passed") for judge in judges)
    return Evidence(parts=tuple(parts), n=n)


# --------------------------------------------------------------------------- Table 3

TABLE3_CHAINS = {"generated_free": ("generated", "free"), "label_free": ("label", "free"),
                 "label_fixed_count": ("label", "fixed_count"),
                 "label_delete_only": ("label", "delete_only")}


def _table3(outputs: Outputs) -> pd.DataFrame:
    table = _csv(outputs, "table3")
    _columns(table, ["dataset", "source", "mode", "n_correct", "n_flawed", "start",
                     *GATE_COLUMNS.values()], "Table 3")
    return table.assign(mode=_text(table["mode"]))


def table3_cell(dataset: str, chain: str, column: str, metric: str) -> Reader:
    """One cell of Table 3 (`column`: start, ungated, Gate R, P, S, S+P), with the table's
    95% interval and the evaluation items of the metric's kind."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        table = _table3(outputs)
        source, mode = TABLE3_CHAINS[chain]
        rows = table[(table["dataset"] == dataset) & (table["source"] == source)
                     & (table["mode"] == mode)]
        if rows.empty:
            raise MissingEvidence(f"Table 3 has no {dataset} {source}, {mode} chain")
        record = rows.iloc[0]
        where = f"Table 3 {dataset} {source}, {mode}, {column}"
        index = 0 if metric == "correct_passed" else 1
        value = split_cell(record[column], where)[index]
        low, high = (split_interval_cell(record[f"{column}{CI}"], where)[index]
                     if f"{column}{CI}" in record.index else (None, None))
        n = int(record["n_correct" if index == 0 else "n_flawed"])
        return Evidence(value, low, high, n)
    return read


@_reads
def table3_sp_vs_ungated(outputs: Outputs, config: Mapping) -> Evidence:
    """Table 3's takeaway, on every label-taught chain of each dataset."""
    table = _table3(outputs)
    parts: list[Part] = []
    for dataset in ("summedits", "ragtruth"):
        rows = table[(table["dataset"] == dataset) & (table["source"] == "label")]
        if rows.empty:
            parts.append(Part(f"{dataset}: a label-taught chain", None,
                              f"no label-taught {dataset} chain in Table 3"))
            continue
        decisions = _decisions(outputs, dataset)
        for r in rows.to_dict("records"):
            name = f"{dataset} {r['mode']}"
            start = split_cell(r["start"], name)
            ungated = split_cell(r["ungated"], name)
            gated = split_cell(r["Gate S+P"], name)
            chain = [(str(r["reviser"]), "label", str(r["mode"]), int(r["seed"]))]
            if _nan(*start, *ungated, *gated):
                parts.append(Part(f"{name}: cells defined", None, "NaN cell"))
                continue
            parts.append(Part(f"{name}: the ungated rubric lost correct outputs",
                              True if ungated[0] < start[0] else None,
                              f"{_fmt(start[0])} -> {_fmt(ungated[0])}"
                              + ("" if ungated[0] < start[0] else ": nothing to recover")))
            parts += _gate_parts(decisions, "S+P", chain, name)
            parts.append(Part(f"{name}: Gate S+P passes more correct outputs than ungated",
                              bool(gated[0] > ungated[0]),
                              f"{_fmt(gated[0])} vs {_fmt(ungated[0])}"))
            cost = ungated[1] - gated[1]
            parts.append(Part(f"{name}: at a cost of at most 4.1 points of catches",
                              bool(cost <= 4.1 + 0.05), f"cost {_fmt(cost)}"))
            if dataset == "ragtruth":
                parts.append(Part(f"{name}: Gate S+P returns to the starting value",
                                  bool(all(abs(g - s) < 0.05 for g, s in zip(gated, start))),
                                  f"{r['Gate S+P']} vs start {r['start']}"))
            else:
                parts.append(Part(f"{name}: Gate S+P recovers part of the loss",
                                  bool(ungated[0] < gated[0] <= start[0]),
                                  f"start {_fmt(start[0])}, ungated {_fmt(ungated[0])}, "
                                  f"Gate S+P {_fmt(gated[0])}"))
    n = int(table["n_correct"].min()) if len(table) else None
    return Evidence(parts=tuple(parts), n=n)


# --------------------------------------------------------------------------- READERS

def _table2_readers() -> dict[str, Reader]:
    readers = {}
    for source, chain in (("hand", "h"), ("label", "l")):
        for row in TABLE2_ROWS:
            for family in SEED_JUDGES:
                for metric in METRICS:
                    readers[f"carry.table2.{row}.{chain}.{family}.{metric}"] = \
                        table2_cell(source, row, family, metric)
    return readers


TABLE3_COLUMN_IDS = {"start": "start", "ungated": "ungated", "gate_r": "Gate R",
                     "gate_p": "Gate P", "gate_s": "Gate S", "gate_sp": "Gate S+P"}


def _table3_readers() -> dict[str, Reader]:
    readers = {}
    for column_id, column in TABLE3_COLUMN_IDS.items():
        for chain in TABLE3_CHAINS:
            for metric in ("correct_passed", "flawed_caught"):
                readers[f"carry.table3.{column_id}.summedits.{chain}.{metric}"] = \
                    table3_cell("summedits", chain, column, metric)
    return readers


READERS: dict[str, Reader] = {
    "carry.abstract.content_low": content_extreme(lowest=True),
    "carry.abstract.content_high": content_extreme(lowest=False),
    "carry.abstract.few_points": few_points,
    "carry.abstract.drift_every_reviser": drift_every_reviser,
    "carry.abstract.gate_holds": gate_holds_drifting_chains,
    "carry.abstract.identical_decisions": identical_decisions,
    "carry.table1.credit_A": table1_value("A", "credit"),
    "carry.table1.credit_B": table1_value("B", "credit"),
    "carry.table1.credit_C": table1_value("C", "credit"),
    "carry.table1.credit_D": table1_value("D", "credit"),
    "carry.table1.blame_D": table1_value("D", "blame"),
    "carry.table1.unique_A": table1_value("A", "unique_catches"),
    "carry.table1.unique_B": table1_value("B", "unique_catches"),
    "carry.table1.unique_C": table1_value("C", "unique_catches"),
    "carry.table1.credit_sum": table1_sum("credit"),
    "carry.table1.blame_sum": table1_sum("blame"),
    "carry.table1.checks_with_unique_catch": table1_count("unique_catches"),
    "carry.table1.checks_with_blame": table1_count("blame"),
    "carry.fig1.hand_correct_passed": fig1_correct_passed("hand"),
    "carry.fig1.generated_correct_passed": fig1_correct_passed("generated"),
    "carry.fig1.clusters": fig1_clusters,
    "carry.fig1.judges_agree": fig1_judges_agree,
    "carry.fig2.summedits_trade": fig2_summedits_trade,
    "carry.fig2.ragtruth_cost_3_to_10": fig2_nested_change("ragtruth", "correct_passed"),
    "carry.fig2.ragtruth_catches_3_to_10": fig2_nested_change("ragtruth", "flawed_caught"),
    "carry.fig2.ragtruth_paragraph_10": fig2_rate("ragtruth", "paragraph", 10,
                                                  "correct_passed"),
    "carry.fig2.content_effect": fig2_content_effect,
    "carry.fig2.rendering_only_ragtruth": fig2_rendering_only_ragtruth,
    "carry.fig3.generated_balanced_accuracy": fig3_balanced_accuracy,
    "carry.fig3.crossover": fig3_crossover,
    "carry.fig3.ranking": fig3_ranking,
    "carry.fig4.hand_strict": fig4_hand_strict,
    "carry.fig4.label_coverage": fig4_label_coverage,
    "carry.fig4.delete_only_flat": fig4_delete_only_flat,
    "carry.fig4.opposite_directions": fig4_opposite_directions,
    "carry.fig5a.by_origin": fig5a_by_origin,
    "carry.fig5b.deleted": fig5b_count("deleted"),
    "carry.fig5b.deleted_with_unique_catch": fig5b_count("deleted_with_unique_catch"),
    "carry.fig5b.deleted_with_blame": fig5b_count("deleted_with_blame"),
    "carry.fig5b.share_with_unique_catch": fig5b_share("deleted_with_unique_catch"),
    "carry.fig5b.share_with_blame": fig5b_share("deleted_with_blame"),
    "carry.fig5b.opposite": fig5b_opposite,
    "carry.fig6.only_sp": fig6_only_sp,
    "carry.fig6.single_signals": fig6_single_signals,
    "carry.fig6.sonnet_exception": fig6_sonnet_exception,
    "carry.table2.within_6_and_collapse": table2_within_6_and_collapse,
    **_table2_readers(),
    **_table3_readers(),
    "carry.table3.sp_vs_ungated": table3_sp_vs_ungated,
}
