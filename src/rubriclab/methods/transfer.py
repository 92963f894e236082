"""Interventional transfer between a user's rubrics: the four Q metrics of the transfer work.

A thin layer over rubriclab.transfer.metrics (Equation 1, Algorithm 1) and the paired
bootstrap over examples (rubriclab.stats.bootstrap, Algorithm 4): from one long table of
measurement-criterion verdicts before and after each whole-rubric intervention, the Q metric
of every (generator, target rubric, direction), with its interval, and the paired difference
between every two generators.
"""

from __future__ import annotations

import pandas as pd

from rubriclab.methods import tables
from rubriclab.methods.formatting import pipe_table
from rubriclab.stats.bootstrap import Statistic, difference, paired_bootstrap
from rubriclab.transfer.metrics import (
    DIRECTIONS, FIGURE3_TASKS, Q_METRICS, micro_average_statistic, transfer_records,
)

TARGETS = ("generated", "expert")
Q_COLUMNS = ["metric", "task", "generator", "generator_b", "estimate", "low", "high",
             "n_used", "B", "n_examples"]
DEFAULT_GENERATOR = "generated"


def transfer_q(verdicts: pd.DataFrame, *, B: int = 1000, seed: int = 0,
               level: float = 0.95) -> pd.DataFrame:
    """The Q metrics of Equation 1 with Algorithm 4's paired bootstrap intervals.

    verdicts: one row per measured criterion of each intervention: ``example_id``, ``target``
        (the rubric the response was edited to meet or to fail: "generated" or "expert"; the
        other one measures), ``direction`` ("+": edited to pass the target, "-": to fail
        it), ``criterion_id`` (a criterion of the measuring rubric), ``before`` and ``after``
        (its verdict on the original and on the edited response: 1 / 0 or pass / fail) and an
        optional ``generator`` (which generated rubric; default one called "generated").
        The transfer stage of the pipeline computes this table for HealthBench
        (rubriclab.transfer.analysis.rubric_level_verdicts).
    Returns Q_COLUMNS rows: one per generator and metric ("Q+(Cg->C*)" ...; `task` is the
    downstream use Figure 3 names), then, with several generators, the paired difference of
    every two (generator minus generator_b) on the same draws. An example is a bootstrap unit;
    one without a row for a metric counts zero in it.
    """
    source = tables.require_columns(
        verdicts, ["example_id", "target", "direction", "criterion_id", "before", "after"],
        "verdicts")
    frame = pd.DataFrame({
        "example_id": tables.ids(verdicts, "example_id", source),
        "target": tables.one_of(verdicts, "target", source, TARGETS),
        "direction": tables.one_of(verdicts, "direction", source, DIRECTIONS),
        "criterion_id": tables.ids(verdicts, "criterion_id", source),
        "before": tables.binary(verdicts, "before", source),
        "after": tables.binary(verdicts, "after", source),
        "generator": (tables.ids(verdicts, "generator", source) if "generator" in verdicts
                      else DEFAULT_GENERATOR),
    })
    keys = frame[["generator", "target", "direction", "example_id", "criterion_id"]]
    tables.unique_rows(keys, source, "criterion_id", "generator, intervention and criterion")
    examples = list(dict.fromkeys(frame["example_id"]))
    generators = list(dict.fromkeys(frame["generator"]))
    statistics: dict[str, Statistic] = {}
    names: list[tuple[str, str, str]] = []
    for metric, (target, _, direction) in Q_METRICS.items():
        per_generator = {}
        for generator in generators:
            rows = frame[(frame["generator"] == generator) & (frame["target"] == target)
                         & (frame["direction"] == direction)]
            records = (transfer_records(rows, direction).reindex(examples, fill_value=0)
                       if len(rows) else _no_records(examples))
            per_generator[generator] = micro_average_statistic(records, examples)
            names.append((metric, generator, ""))
            statistics[str(len(statistics))] = per_generator[generator]
        for i, a in enumerate(generators):
            for b in generators[i + 1:]:
                names.append((metric, a, b))
                statistics[str(len(statistics))] = difference(per_generator[a], per_generator[b])
    table = paired_bootstrap(len(examples), statistics, B=B, seed=seed, level=level)
    rows = []
    for (metric, generator, generator_b), result in zip(names, table.itertuples(index=False)):
        target, _, direction = Q_METRICS[metric]
        rows.append({"metric": metric, "task": FIGURE3_TASKS[(target, direction)],
                     "generator": generator, "generator_b": generator_b,
                     "estimate": result.estimate, "low": result.low, "high": result.high,
                     "n_used": result.n_used, "B": result.B, "n_examples": len(examples)})
    return pd.DataFrame(rows, columns=Q_COLUMNS)


def transfer_markdown(table: pd.DataFrame) -> str:
    rows = [[r.metric, r.task, r.generator if not r.generator_b
             else f"{r.generator} - {r.generator_b}", _number(r.estimate),
             f"[{_number(r.low)}, {_number(r.high)}]"] for r in table.itertuples(index=False)]
    return "\n".join(pipe_table(["metric", "measures", "generator", "Q", "interval"], rows))


def _no_records(examples: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"numerator": 0, "denominator": 0}, index=pd.Index(examples))


def _number(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:.3f}"
