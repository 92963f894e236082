"""Tables 2-5 of the carry work, built from the pipeline's tidy tables.

Each table function returns (markdown, frame): the markdown as the paper lays the table
out, with a caption line, and a wide DataFrame holding the same cells (written as CSV).
Rates are percents, printed to one decimal; a missing or undefined rate prints "n/a".
Bad input raises ValueError naming the missing column or the empty selection.
"""

from __future__ import annotations

import json
import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from rubriclab.labels import DATASET_TITLES, current_labels, with_labels
from rubriclab.plotting import plural
from rubriclab.stats.intervals import RATE_TITLE, rate_flags, rate_footnotes
from rubriclab.tidy import ensure_unique, markdown_table, require_columns, select

from .analysis import gate_evidence_short
from .chains import split_chain
from .figures import (
    CHAIN_KEYS, GATE_TITLES, GATES, MODE_TITLES, SOURCE_TITLES, chains_with_start, item_count,
    judge_label, normalized_rates, sort_chains,
)

FAILING_COLUMNS = ["dataset", "item_id", "item_name", "label", "rubric_version",
                   "failing_positions"]
KIND_WORDS = {"summedits": ("consistent", "inconsistent"),
              "ragtruth": ("faithful", "hallucinated")}
TABLE3_COLUMNS = ["start", *(GATE_TITLES[g] for g in GATES)]


# --------------------------------------------------------------------------- helpers

def rate_text(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{float(value):.1f}"


def rates_cell(rows: pd.DataFrame, metrics: Sequence[str]) -> str:
    """"cp / fc[ / uc]" from one rubric state's rows (one row per metric)."""
    values = rows.set_index("metric")["value"]
    return " / ".join(rate_text(values.get(metric, math.nan)) for metric in metrics)


def interval_cell(rows: pd.DataFrame, metrics: Sequence[str]) -> str:
    """"[low, high] / [low, high][ / ...]": the 95% interval of each rate (rates.csv low /
    high), each marked as rubriclab.stats.intervals.rate_flags says (see rate_footnotes)."""
    bounds = rows.set_index("metric")[["value", "low", "high"]]
    parts = []
    for metric in metrics:
        if metric not in bounds.index:
            parts.append("n/a")
            continue
        value, low, high = bounds.loc[metric, ["value", "low", "high"]]
        parts.append(f"[{rate_text(low)}, {rate_text(high)}]{rate_flags(value, low, high)}")
    return " / ".join(parts)


CI = " 95% CI"


def chain_label(reviser: str, source: str, mode: str, seed: int, with_seed: bool = True) -> str:
    """"Hand-written, free, review by <reviser>, seed 1" (carry Table 2: "H, Opus seed 1")."""
    label = f"{SOURCE_TITLES.get(source, source)}, {MODE_TITLES.get(mode, mode)}"
    if reviser:
        label += f", review by {current_labels()(reviser)}"
    return f"{label}, seed {seed}" if with_seed else label


def origin_title(origin: str) -> str:
    """A check's origin as a table shows it: "review by <reviser's display name> of <start>"."""
    text = str(origin)
    if text.startswith("review by ") and " of " in text:
        reviser, start = text[len("review by "):].rsplit(" of ", 1)
        return f"review by {current_labels()(reviser)} of {start}"
    return text




def _final_rounds(chains: pd.DataFrame) -> pd.Series:
    """Each chain's final round, indexed by (reviser, source, mode, seed) in chain order."""
    order = sort_chains(chains[CHAIN_KEYS].drop_duplicates())
    final = chains.groupby(CHAIN_KEYS)["round"].max()
    return final.reindex(pd.MultiIndex.from_frame(order))


def _chain_rows(frame: pd.DataFrame, reviser: str, source: str, mode: str,
                seed: int) -> pd.DataFrame:
    return frame[(frame["reviser"] == reviser) & (frame["source"] == source)
                 & (frame["mode"] == mode) & (frame["seed"] == seed)]


# --------------------------------------------------------------------------- Table 2

REFUSED = "refused without evidence"


def refusal_text(value: float) -> str:
    """A count of refusals for want of evidence: "3", "2.5" (a mean over replays), "-" (none:
    no gate decides)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def state_refusals(rows: pd.DataFrame, what: str) -> float:
    """n_no_evidence of one rubric state (the same on each of its metric rows)."""
    if rows.empty:
        return math.nan
    values = set(pd.to_numeric(rows["n_no_evidence"], errors="raise").astype(float))
    if len(values) > 1:
        raise ValueError(f"{what}: the rows of one rubric state disagree on n_no_evidence "
                         f"{sorted(values)}")
    return values.pop()


@with_labels
def table2_gate_replay(rates: pd.DataFrame, shown: Sequence[Mapping] | None = None,
                       reviser: str | None = None,
                       paper_chains: Sequence[str] | None = None,
                       gate_evidence: str | None = None) -> tuple[str, pd.DataFrame]:
    """Table 2: per Recon chain the start rubric, the ungated rubric after the chain's final
    round R and the Gate S+P leave-one-out rubric at round R (variant loo; environments
    "all", or "loo" if that is how the pipeline labels the leave-one-out rows), scored on
    Recon-108 under every judge. Cells: correct passed / flawed caught / unplanned caught;
    beside them, per judge, the changes Gate S+P refused for want of evidence (n_no_evidence).

    `shown` ([{"chain": "hand:free", "seed": 1}, ...], carry.recon.table2_chains) with
    `reviser` (the main reviser) picks the paper's rows, in that order; None shows every
    chain (the supplement), marking those of `paper_chains` ("<source>:<mode>") in the
    column paper_chain."""
    frame = normalized_rates(rates)
    base = select(frame, "Table 2", dataset="recon", item_set="recon108")
    standard = select(base, "Table 2 start and ungated rows", environments="all",
                      variant="standard", gate="none")
    loo = select(base, "Table 2 Gate S+P leave-one-out rows", environments=["all", "loo"],
                 variant="loo", gate="S+P")
    chains = chains_with_start(standard, "Table 2")
    keys = ["judge", *CHAIN_KEYS, "round", "metric"]
    ensure_unique(chains, keys, "Table 2")
    ensure_unique(loo, keys, "Table 2 leave-one-out")
    judges = list(dict.fromkeys(base["judge"]))
    finals = _final_rounds(chains)
    if shown is not None:
        if reviser is None:
            raise ValueError("Table 2: the chains to show need their reviser (models.reviser)")
        picked = []
        for entry in shown:
            source, mode = split_chain(entry["chain"])
            key = (reviser, source, mode, int(entry["seed"]))
            if key not in finals.index:
                raise ValueError(f"Table 2: no rows of chain {entry['chain']} seed "
                                 f"{entry['seed']} of reviser {reviser!r} "
                                 f"(carry.recon.table2_chains); the rates hold "
                                 f"{[f'{r} {s}:{m} seed {k}' for r, s, m, k in finals.index]}")
            picked.append(key)
        finals = finals.loc[picked]
    paper = {split_chain(c) for c in paper_chains} if paper_chains is not None else None
    metrics = ["correct_passed", "flawed_caught", "unplanned_caught"]
    records = []
    for (chain_reviser, source, mode, seed), final in finals.items():
        states = [("start", 0, chains), (f"ungated (round {final})", final, chains),
                  ("Gate S+P, leave-one-out", final, loo)]
        for label, round_, pool in states:
            rows = _chain_rows(pool, chain_reviser, source, mode, seed)
            rows = rows[rows["round"] == round_]
            record = {"chain": chain_label(chain_reviser, source, mode, seed),
                      "reviser": chain_reviser, "source": source, "mode": mode, "seed": seed,
                      "rubric_or_gate": label, "round": round_}
            if paper is not None:
                record["paper_chain"] = (source, mode) in paper
            gated = pool is loo
            for judge in judges:
                mine = rows[rows["judge"] == judge]
                record[judge] = rates_cell(mine, metrics)
                record[judge + CI] = interval_cell(mine, metrics)
                record[f"{judge} {REFUSED}"] = (
                    state_refusals(mine, f"Table 2 {record['chain']}, {label}, {judge}")
                    if gated else math.nan)
            records.append(record)
    table = pd.DataFrame(records)
    return _table2_markdown(table, judges, supplement=shown is None,
                            gate_evidence=gate_evidence), table


def _table2_markdown(table: pd.DataFrame, judges: list[str], supplement: bool,
                     gate_evidence: str | None = None) -> str:
    refused = "Refused without evidence" + (" (" + " / ".join(judge_label(j) for j in judges)
                                             + ")" if len(judges) > 1 else "")
    header = ["Chain", "Rubric or gate", *(f"{judge_label(j)} judge" for j in judges)]
    rows, intervals, previous = [], [], None
    for record in table.to_dict("records"):
        chain = record["chain"]
        shown = chain if chain != previous else ""
        counts = [record[f"{j} {REFUSED}"] for j in judges]
        refusals = ("-" if all(pd.isna(c) for c in counts)
                    else " / ".join(refusal_text(c) for c in counts))
        rows.append([shown, record["rubric_or_gate"], *(record[j] for j in judges), refusals])
        intervals.append([shown, record["rubric_or_gate"], *(record[j + CI] for j in judges)])
        previous = chain
    n_chains = table["chain"].nunique()
    what = (f"every chain of the run ({plural(n_chains, 'chain')}; paper_chain in the csv marks "
            f"the paper's)" if supplement else f"{plural(n_chains, 'chain')} of the main reviser")
    caption = (f"Table 2{' (supplement)' if supplement else ''}: Gate replay under "
               f"{len(judges)} judge model{'s' if len(judges) != 1 else ''} on Recon-108 (all "
               f"judged environments), {what}. Each cell: correct passed / flawed caught / "
               f"unplanned caught (%). {refused}: the changes of the chain Gate S+P refused for "
               f"want of evidence (n_no_evidence of the leave-one-out replay), per judge; "
               f"- where no gate decides."
               + ("" if gate_evidence is None else
                  f" Gate evidence: {gate_evidence_short(gate_evidence)}."))
    title = "# carry, Table 2" + (" supplement: gate replay of every chain" if supplement
                                  else ": gate replay")
    return "\n".join([title, "", *markdown_table([*header, refused], rows), "",
                      caption, "", f"95% {RATE_TITLE} intervals over reports, same layout:",
                      "", *markdown_table(header, intervals), "",
                      *rate_footnotes(sum(intervals, []), units="reports")])


# --------------------------------------------------------------------------- Table 3

def _table3_rows(rates: pd.DataFrame, judge_main: str, datasets: Sequence[str]) -> pd.DataFrame:
    frame = normalized_rates(rates)
    rows = select(frame, "Table 3", item_set="evaluation", variant="standard",
                  judge=judge_main, dataset=list(datasets))
    tables = [_table3_dataset(select(rows, f"Table 3 dataset {d!r}", dataset=d), d)
              for d in datasets]
    return pd.concat(tables, ignore_index=True)


@with_labels
def table3_gates_human_labeled(rates: pd.DataFrame, judge_main: str, reviser: str, seed: int,
                               datasets: Sequence[str] = ("summedits", "ragtruth")
                               ) -> tuple[str, pd.DataFrame]:
    """Table 3 as the paper shows it: single chains, those of the main reviser `reviser` at
    `seed` (carry.table3_seed; the first seed), per human-labeled dataset: the start rubric
    and, after the chain's final round, the ungated rubric and Gates R, P, S and S+P
    (item_set evaluation, variant standard, judge_main). Cells: correct passed / flawed
    caught, with their intervals. The heading's item counts are the largest determined +
    undetermined count of each kind."""
    table = _table3_rows(rates, judge_main, datasets)
    seeds = table[table["kind"] == "seed"]
    mine = seeds[(seeds["reviser"] == reviser) & (seeds["seed"] == str(seed))]
    for dataset in datasets:
        if mine[mine["dataset"] == dataset].empty:
            held = sorted(set(zip(seeds["reviser"], seeds["seed"])))
            raise ValueError(f"Table 3 dataset {dataset!r}: no chain of reviser {reviser!r} at "
                             f"seed {seed} (carry.table3_seed); the rates hold (reviser, seed) "
                             f"{held}")
    mine = mine.assign(chain=[chain_label("", s, m, 0, with_seed=False)
                              for s, m in zip(mine["source"], mine["mode"])])
    return _table3_main_markdown(mine, datasets, judge_main, reviser, seed), \
        mine.drop(columns="kind").reset_index(drop=True)


@with_labels
def table3_supplement(rates: pd.DataFrame, judge_main: str,
                      datasets: Sequence[str] = ("summedits", "ragtruth")
                      ) -> tuple[str, pd.DataFrame]:
    """Table 3's supplement: every chain of every reviser, one row per chain (reviser, source,
    mode; kind "chain") holding the mean over its seeds, and in the csv and the interval
    block one row per seed (kind "seed")."""
    table = _table3_rows(rates, judge_main, datasets)
    return _table3_markdown(table, datasets, judge_main), table


def _table3_dataset(rows: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """One row per chain and seed (kind "seed"), then one per chain (reviser, source, mode;
    kind "chain"): the mean over its seeds of each rate, as carry Table 3 shows them."""
    what = f"Table 3 dataset {dataset!r}"
    chains = chains_with_start(rows, what)
    ensure_unique(chains, [*CHAIN_KEYS, "round", "gate", "metric"], what)
    metrics = ["correct_passed", "flawed_caught"]
    counts = {"n_correct": item_count(rows, "correct_passed"),
              "n_flawed": item_count(rows, "flawed_caught")}
    seed_records: list[dict] = []
    states: dict[tuple[str, str, str], dict[str, list]] = {}
    for (reviser, source, mode, seed), final in _final_rounds(chains).items():
        mine = _chain_rows(chains, reviser, source, mode, seed)
        start = mine[(mine["round"] == 0) & (mine["gate"] == "none")]
        record = {"dataset": dataset, "kind": "seed",
                  "chain": chain_label(reviser, source, mode, seed),
                  "reviser": reviser, "source": source, "mode": mode, "seed": str(seed),
                  "final_round": final, **counts,
                  "start": rates_cell(start, metrics), "start" + CI: interval_cell(start, metrics)}
        last = mine[mine["round"] == final] if final > 0 else mine.iloc[0:0]
        arm = states.setdefault((reviser, source, mode), {"start": [], "finals": []})
        arm["start"].append(start)
        arm["finals"].append(last)
        for gate in GATES:
            record[GATE_TITLES[gate]] = rates_cell(last[last["gate"] == gate], metrics)
            record[GATE_TITLES[gate] + CI] = interval_cell(last[last["gate"] == gate], metrics)
        seed_records.append(record)
    chain_records = []
    for (reviser, source, mode), arm in states.items():
        seeds = [r["seed"] for r in seed_records
                 if (r["reviser"], r["source"], r["mode"]) == (reviser, source, mode)]
        label = chain_label(reviser, source, mode, 0, with_seed=False)
        if len(seeds) > 1:
            label += f", mean of {len(seeds)} seeds"
        start = _mean_rates(pd.concat(arm["start"]))
        last = pd.concat(arm["finals"])
        record = {"dataset": dataset, "kind": "chain", "chain": label, "reviser": reviser,
                  "source": source, "mode": mode, "seed": "mean" if len(seeds) > 1 else seeds[0],
                  "final_round": int(last["round"].max()) if not last.empty else 0, **counts,
                  "start": rates_cell(start, metrics), "start" + CI: ""}
        for gate in GATES:
            record[GATE_TITLES[gate]] = rates_cell(_mean_rates(last[last["gate"] == gate]),
                                                   metrics)
            record[GATE_TITLES[gate] + CI] = ""
        chain_records.append(record)
    return pd.DataFrame(seed_records + chain_records)


def _mean_rates(rows: pd.DataFrame) -> pd.DataFrame:
    """metric -> value, the mean over the rows of each metric (NaN where none)."""
    if rows.empty:
        return pd.DataFrame({"metric": [], "value": []})
    return rows.groupby("metric", sort=False)["value"].mean().reset_index()


def _after(table: pd.DataFrame) -> str:
    finals = sorted(set(table["final_round"]))
    return f"after round {finals[0]}" if len(finals) == 1 else "after each chain's final round"


def _table3_dataset_lines(dataset: str, rows: pd.DataFrame, interval_rows: pd.DataFrame,
                          interval_heading: str) -> list[str]:
    """One dataset's part of a Table 3 file: its title, the rates of `rows`, the intervals of
    `interval_rows` and their flags' footnotes."""
    correct, flawed = KIND_WORDS.get(dataset, ("correct", "flawed"))
    lines = [f"{DATASET_TITLES.get(dataset, dataset)} ({rows['n_correct'].iloc[0]} {correct}, "
             f"{rows['n_flawed'].iloc[0]} {flawed} evaluation items)", ""]
    body = [[record["chain"], *(record[c] for c in TABLE3_COLUMNS)]
            for record in rows.to_dict("records")]
    lines += markdown_table(["Chain", *TABLE3_COLUMNS], body) + [""]
    intervals = [[record["chain"], *(record[c + CI] for c in TABLE3_COLUMNS)]
                 for record in interval_rows.to_dict("records")]
    lines += [f"{interval_heading} {RATE_TITLE} intervals over items, same layout:", ""]
    lines += markdown_table(["Chain", *TABLE3_COLUMNS], intervals) + [""]
    return lines + rate_footnotes(sum(intervals, []))


def _table3_main_markdown(table: pd.DataFrame, datasets: Sequence[str], judge_main: str,
                          reviser: str, seed: int) -> str:
    after = _after(table)
    review = f"review by {judge_label(reviser)}, seed {seed}"
    lines = [f"# carry, Table 3: gates on the human-labeled datasets ({after} of {review}, "
             f"{judge_label(judge_main)} judge)", ""]
    for dataset in datasets:
        part = table[table["dataset"] == dataset]
        lines += _table3_dataset_lines(dataset, part, part, "95%")
    lines += [f"Table 3: Gates on the human-labeled datasets {after} of {review}, decided with "
              f"calibration labels and scored on the evaluation split; one chain per row. Each "
              f"cell: correct outputs passed / flawed outputs caught (%). Other seeds, their "
              f"means and the other revisers: table3_supplement.", ""]
    return "\n".join(lines)


def _table3_markdown(table: pd.DataFrame, datasets: Sequence[str], judge_main: str) -> str:
    after = _after(table)
    lines = [f"# carry, Table 3 supplement: gates on the human-labeled datasets, every chain "
             f"({after}, {judge_label(judge_main)} judge)", ""]
    for dataset in datasets:
        part = table[table["dataset"] == dataset]
        lines += _table3_dataset_lines(dataset, part[part["kind"] == "chain"],
                                       part[part["kind"] == "seed"], "Each seed, 95%")
    lines += [f"Table 3 (supplement): Gates on the human-labeled datasets {after}, every "
              f"reviser's chains, decided with calibration labels and scored on the evaluation "
              f"split. Each cell: correct outputs passed / flawed outputs caught (%); a chain of "
              f"several seeds shows their mean.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- Tables 4, 5

def positions_cell(positions, where: str) -> str:
    """"none" or "{1, 2, 4}" from a JSON list (or a list) of 1-based check positions."""
    if isinstance(positions, str):
        try:
            positions = json.loads(positions)
        except json.JSONDecodeError:
            raise ValueError(f"{where}: failing_positions {positions!r} is not a JSON list") \
                from None
    if not isinstance(positions, (list, tuple, np.ndarray)):
        raise ValueError(f"{where}: failing_positions must be a list, got {positions!r}")
    numbers = (int, float, np.integer, np.floating)
    if any(isinstance(p, bool) or not isinstance(p, numbers) or not float(p).is_integer()
           or p < 1 for p in positions):
        raise ValueError(f"{where}: failing_positions must be 1-based integers, got {positions!r}")
    distinct = sorted({int(p) for p in positions})
    return "{" + ", ".join(map(str, distinct)) + "}" if distinct else "none"


AFTER_REVIEW = "After review by "


def version_title(version: str) -> str:
    """A rubric version as a table header: "After review by <model string>" (what
    workflow/scripts/carry_failing_checks.py records) names the reviser by its label."""
    if version.startswith(AFTER_REVIEW):
        return AFTER_REVIEW + current_labels()(version[len(AFTER_REVIEW):])
    return version


def failing_checks_table(failing: pd.DataFrame, dataset: str, number: int, item_header: str,
                         caption: str) -> tuple[str, pd.DataFrame]:
    """Items x rubric versions, each cell the checks answering No ("none" or "{1, 2}").
    Items and versions keep their order of first appearance; a missing cell is "n/a"."""
    require_columns(failing, FAILING_COLUMNS, "failing")
    rows = select(failing, f"Table {number}", dataset=dataset)
    ensure_unique(rows, ["item_id", "rubric_version"], f"Table {number}")
    labels = rows.groupby("item_id", sort=False)["label"].nunique()
    if (labels > 1).any():
        raise ValueError(f"Table {number}: items with several labels {list(labels[labels > 1].index)}")
    versions = list(dict.fromkeys(rows["rubric_version"]))
    items = rows.drop_duplicates("item_id")[["item_id", "item_name", "label"]].reset_index(drop=True)
    cells = {(r.item_id, r.rubric_version):
             positions_cell(r.failing_positions, f"Table {number} item {r.item_id!r}, "
                                                 f"{r.rubric_version!r}")
             for r in rows.itertuples(index=False)}
    for version in versions:
        items[version] = [cells.get((item, version), "n/a") for item in items["item_id"]]
    body = [[r["item_name"], r["label"], *(r[v] for v in versions)]
            for r in items.to_dict("records")]
    markdown = "\n".join([
        f"# carry, Table {number}: checks answering No", "",
        *markdown_table([item_header, "Label", *map(version_title, versions)], body), "",
        f"Table {number}: {caption.format(versions=len(versions))}", ""])
    return markdown, items


@with_labels
def table4_recon_failing_checks(failing: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Table 4: the checks answering No (F_i) per Recon report under each rubric version."""
    recon = failing[failing["dataset"] == "recon"]
    environments = sorted({str(i).split(":")[1] for i in recon["item_id"] if str(i).count(":") >= 2})
    where = (f"the {', '.join(environments)} environment" if environments
             else "the example environment")
    return failing_checks_table(
        failing, "recon", 4, "Report",
        f"Checks answered No (F_i) for the reports of {where} under {{versions}} "
        "rubric versions.")


@with_labels
def table5_ragtruth_failing_checks(failing: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Table 5: the checks answering No per RAGTruth response under each checklist."""
    rows = failing[failing["dataset"] == "ragtruth"].drop_duplicates("item_id")
    counts = rows["label"].value_counts()
    shown = ", ".join(f"{counts[label]} {label}" for label in counts.index)
    return failing_checks_table(
        failing, "ragtruth", 5, "Item",
        f"Checks answered No for the {plural(len(rows), 'response')} of the example "
        f"({shown}; the paper shows four, two of each label) under {{versions}} RAGTruth "
        "checklists.")


# --------------------------------------------------------------------------- supplements

@with_labels
def fig6_supplement(rates: pd.DataFrame, judge_main: str,
                    paper_chains: Sequence[str] | None = None,
                    sources: Sequence[str] = ("hand", "label")) -> tuple[str, pd.DataFrame]:
    """Figure 6's supplement: every Recon chain (every reviser, mode and seed) on its own, at
    its final round on the evaluation environments (judge_main, variant standard): start,
    ungated and each gate as "cp / fc / uc", and the changes each gate refused for want of
    evidence. paper_chain marks the chains Figure 6 averages."""
    frame = normalized_rates(rates)
    rows = select(frame, "Figure 6 supplement", dataset="recon", item_set="recon108",
                  environments="evaluation", variant="standard", judge=judge_main,
                  source=list(sources))
    chains = chains_with_start(rows, "Figure 6 supplement")
    ensure_unique(chains, [*CHAIN_KEYS, "round", "gate", "metric"], "Figure 6 supplement")
    paper = {split_chain(c) for c in paper_chains} if paper_chains is not None else None
    gated = [g for g in GATES if g != "none"]
    records = []
    for (reviser, source, mode, seed), final in _final_rounds(chains).items():
        mine = _chain_rows(chains, reviser, source, mode, seed)
        start = mine[(mine["round"] == 0) & (mine["gate"] == "none")]
        last = mine[mine["round"] == final] if final > 0 else mine.iloc[0:0]
        record = {"chain": chain_label(reviser, source, mode, seed), "reviser": reviser,
                  "source": source, "mode": mode, "seed": seed, "final_round": final,
                  "paper_chain": paper is None or (source, mode) in paper,
                  "start": rates_cell(start, METRICS_RECON)}
        for gate in GATES:
            state = last[last["gate"] == gate]
            record[GATE_TITLES[gate]] = rates_cell(state, METRICS_RECON)
            if gate != "none":
                record[f"{GATE_TITLES[gate]} {REFUSED}"] = state_refusals(
                    state, f"Figure 6 supplement {record['chain']}, {gate}")
        records.append(record)
    table = pd.DataFrame(records)
    header = ["Chain", "Paper's", "start", *(GATE_TITLES[g] for g in GATES),
              "Refused without evidence (" + " / ".join(GATE_TITLES[g] for g in gated) + ")"]
    body = [[r["chain"], "yes" if r["paper_chain"] else "no", r["start"],
             *(r[GATE_TITLES[g]] for g in GATES),
             " / ".join(refusal_text(r[f"{GATE_TITLES[g]} {REFUSED}"]) for g in gated)]
            for r in table.to_dict("records")]
    caption = (f"Figure 6 supplement: every Recon chain at its final round on the evaluation "
               f"environments, {judge_label(judge_main)} judge. Each cell: correct passed / "
               f"flawed caught / unplanned caught (%). Paper's: one of the chains Figure 6 "
               f"averages (carry.chains.recon.chains, every reviser and seed). Refused without "
               f"evidence: the changes each gate refused for want of evidence.")
    markdown = "\n".join(["# carry, Figure 6 supplement: every chain", "",
                          *markdown_table(header, body), "", caption, ""])
    return markdown, table


METRICS_RECON = ["correct_passed", "flawed_caught", "unplanned_caught"]


@with_labels
def fig5b_supplement(deletions: pd.DataFrame, judge_main: str,
                     paper_chains: Sequence[str] | None = None) -> tuple[str, pd.DataFrame]:
    """Figure 5b's supplement: per Recon chain (every reviser, mode and seed) and check origin,
    the checks it deleted under judge_main and how many held a unique catch or carried blame
    (each deleted check state once). paper_chain marks the chains Figure 5b counts."""
    from .figures import DELETIONS_COLUMNS, STATE_KEYS, _as_bool
    require_columns(deletions, DELETIONS_COLUMNS, "deletions")
    frame = deletions.assign(mode=deletions["mode"].fillna("").astype(str),
                             reviser=deletions["reviser"].fillna("").astype(str))
    rows = frame[(frame["dataset"] == "recon") & (frame["judge"] == judge_main)]
    rows = rows.drop_duplicates(STATE_KEYS)
    rows = rows.assign(had_unique_catch=_as_bool(rows["had_unique_catch"], "had_unique_catch"),
                       had_blame=_as_bool(rows["had_blame"], "had_blame"))
    paper = {split_chain(c) for c in paper_chains} if paper_chains is not None else None
    columns = ["chain", "reviser", "source", "mode", "seed", "paper_chain", "origin", "deleted",
               "deleted_with_unique_catch", "deleted_with_blame"]
    if rows.empty:
        table = pd.DataFrame(columns=columns)
    else:
        counts = rows.groupby([*CHAIN_KEYS, "origin"], sort=False).agg(
            deleted=("check_id", "size"), deleted_with_unique_catch=("had_unique_catch", "sum"),
            deleted_with_blame=("had_blame", "sum")).reset_index()
        counts = sort_chains(counts, ["origin"])
        counts["seed"] = counts["seed"].astype(int)
        counts["chain"] = [chain_label(r, s, m, int(k)) for r, s, m, k in
                           zip(counts["reviser"], counts["source"], counts["mode"],
                               counts["seed"])]
        counts["paper_chain"] = [paper is None or (s, m) in paper
                                 for s, m in zip(counts["source"], counts["mode"])]
        table = counts[columns]
    body = [[r["chain"], "yes" if r["paper_chain"] else "no", origin_title(r["origin"]),
             r["deleted"], r["deleted_with_unique_catch"], r["deleted_with_blame"]]
            for r in table.to_dict("records")]
    paper_rows = table[table["paper_chain"].astype(bool)] if not table.empty else table
    totals = (f"The paper's chains deleted {int(paper_rows['deleted'].sum())} checks "
              f"({int(paper_rows['deleted_with_unique_catch'].sum())} with a unique catch, "
              f"{int(paper_rows['deleted_with_blame'].sum())} with blame); every chain "
              f"{int(table['deleted'].sum())} ({int(table['deleted_with_unique_catch'].sum())}, "
              f"{int(table['deleted_with_blame'].sum())}).")
    caption = (f"Figure 5b supplement: the checks each Recon chain deleted, by origin, "
               f"{judge_label(judge_main)} judge; a deleted check held a unique catch / carried "
               f"blame in the state just before the round that deleted it. Paper's: one of the "
               f"chains Figure 5b counts. {totals}")
    header = ["Chain", "Paper's", "Origin", "Deleted", "Held a unique catch", "Carried blame"]
    markdown = "\n".join(["# carry, Figure 5b supplement: deletions of every chain", "",
                          *(markdown_table(header, body) if body else ["(no chain deleted a check)"]),
                          "", caption, ""])
    return markdown, table
