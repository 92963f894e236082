"""Readers of carry's claims on gated revision: Figure 6 and its supplement (which gate
holds the start), the judges' agreement on Gate S+P's decisions, and Tables 2 and 3 (the
cells and takeaways). See rubriclab.replication.readers_carry for the conventions.
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
    percent_rate,
    reads as _reads,
)
from rubriclab.replication.readers_carry_common import (
    CI,
    COLLAPSE,
    GATE_COLUMNS,
    METRICS,
    NEAR,
    NEARLY_EVERY,
    _columns,
    _csv,
    _decisions,
    _flag,
    _fmt,
    _gate_parts,
    _judges,
    _named,
    _nan,
    _paper_chains,
    _recon_items,
    _revisers,
    _text,
)


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
