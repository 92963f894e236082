"""Readers of transfer's claims on the existing approaches to rubric evaluation: Figure 4
and Table A.4 (LLM-matching, score correlation, discrimination), Figures A.1 and A.2 (the
matching framings, the response panels) and Table A.5 (the degradations). See
rubriclab.replication.readers_transfer for the conventions.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    Reader,
    reads as _reads,
)
from rubriclab.replication.readers_transfer_common import (
    DEEPSEEK,
    EXPERT,
    OPUS,
    QWEN,
    _csv,
    _defined,
    _difference_part,
    _examples,
    _generators,
    _interval_text,
    _measured,
    _meets,
    _part,
    _stat,
    _try_stat,
)

# Figure 4's four metrics: (metric, panel), the generated rubric's row of each
FIGURE4_METRICS = (("llm_matching_f1", ""), ("panel_spearman", "all"),
                   ("physician_spearman", ""), ("discrimination", ""))


# --------------------------------------------------------------------------- Figure 4, A.1, A.2, A.4

def _figure4_row(stats: pd.DataFrame, metric: str, panel: str, generator: str,
                 config: Mapping) -> tuple[pd.Series | None, str]:
    if metric == "discrimination":  # the generated rubric's, against the degrader's responses
        return _try_stat(stats, metric, generator, response_model=config["transfer"]["degrader"])
    return _try_stat(stats, metric, generator, panel=panel)


@_reads
def existing_mid_range(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure 4: each generator's four metrics "between 0.3 and 0.75": the bootstrap interval
    meets that range."""
    stats = _csv(outputs, "stats")
    parts = []
    for generator in _generators(config):
        for metric, panel in FIGURE4_METRICS:
            row, why = _figure4_row(stats, metric, panel, generator, config)
            parts.append(_part(f"{generator}: {metric} in 0.3-0.75", row,
                               lambda r: _meets(r["low"], r["high"], 0.3, 0.75), why))
    return Evidence(n=_examples(stats), parts=tuple(parts))


# Table A.4's three significant differences: (metric, first place, second place)
TABLE_A4_EXCEPTIONS = {("llm_matching_f1", QWEN, DEEPSEEK), ("llm_matching_f1", QWEN, OPUS),
                       ("discrimination", QWEN, OPUS)}


@_reads
def existing_pairwise(outputs: Outputs, config: Mapping) -> Evidence:
    """Table A.4: every pairwise difference of Figure 4's metrics reaches 0 but three, where
    Qwen's place is below the other."""
    stats = _csv(outputs, "stats")
    parts = []
    for metric, panel in FIGURE4_METRICS:
        for first, second in ((QWEN, DEEPSEEK), (QWEN, OPUS), (DEEPSEEK, OPUS)):
            sign = -1 if (metric, first, second) in TABLE_A4_EXCEPTIONS else 0
            if panel:
                part = _panel_difference_part(stats, config, metric, panel, first, second, sign)
            else:
                model = config["transfer"]["degrader"] if metric == "discrimination" else ""
                part = _difference_part(stats, config, metric, first, second, sign, model)
            parts.append(part)
    return Evidence(n=_examples(stats), parts=tuple(parts))


def _panel_difference_part(stats: pd.DataFrame, config: Mapping, metric: str, panel: str,
                           first: int, second: int, sign: int) -> Part:
    panelled = stats[stats["panel"] == panel].assign(panel="")
    return _difference_part(panelled, config, metric, first, second, sign, None)


def matching_f1_near(framing: str, seed_low: float, seed_high: float) -> Reader:
    """Each generator's LLM-matching F1 (framing "" : Figure 4's; else Figure A.1's framing)
    with its interval meeting the seed's value at its precision."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        stats = _csv(outputs, "stats")
        metric = "framing_f1" if framing else "llm_matching_f1"
        parts = []
        for generator in _generators(config):
            row, why = _try_stat(stats, metric, generator, framing=framing)
            parts.append(_part(f"{generator}: {metric} {framing} in {seed_low}-{seed_high}",
                               row, lambda r: _meets(r["low"], r["high"], seed_low, seed_high),
                               why))
        return Evidence(n=_examples(stats), parts=tuple(parts))
    return read


def _spread_part(name: str, rows: list[pd.Series], what: str) -> Part:
    """Some two rows' intervals apart: the highest estimate's low above the lowest's high."""
    defined = [r for r in rows if _defined(r)]
    if len(defined) < 2:
        return Part(name, None, f"{len(defined)} defined {what}(s); the claim compares two")
    top = max(defined, key=lambda r: r["estimate"])
    bottom = min(defined, key=lambda r: r["estimate"])
    return Part(name, bool(top["low"] > bottom["high"]),
                f"highest {_interval_text(top)}, lowest {_interval_text(bottom)}")


@_reads
def framing_sensitive(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure A.1: per generator, the framings' F1 differ beyond their intervals."""
    stats = _csv(outputs, "stats")
    framed = stats[stats["metric"] == "framing_f1"]
    parts = [_spread_part(f"{generator}: framings' F1 differ",
                          [r for _, r in framed[framed["generator"] == generator].iterrows()],
                          "framing")
             for generator in _generators(config)]
    return Evidence(n=_examples(stats), parts=tuple(parts))


@_reads
def panel_sensitive(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure A.2: per generator the panels' Spearman differ beyond their intervals; the best
    generator is the same on every panel ("the relative ranking ... fairly stable")."""
    stats = _csv(outputs, "stats")
    spearman = stats[(stats["metric"] == "panel_spearman") & (stats["generator_b"] == "")]
    generators = _generators(config)
    parts = [_spread_part(f"{generator}: panels' Spearman differ",
                          [r for _, r in spearman[spearman["generator"] == generator].iterrows()],
                          "panel")
             for generator in generators]
    panels = sorted(set(spearman["panel"]))
    best = {}
    for panel in panels:
        rows = spearman[(spearman["panel"] == panel) & spearman["generator"].isin(generators)]
        rows = rows.dropna(subset=["estimate"])
        if len(rows) >= 2:
            best[panel] = rows.loc[rows["estimate"].idxmax(), "generator"]
    if len(generators) < 2 or len(best) < 2:
        parts.append(Part("the best generator is the same on every panel", None,
                          f"{len(generators)} generator(s), {len(best)} panel(s) ranking two"))
    else:
        parts.append(Part("the best generator is the same on every panel",
                          len(set(best.values())) == 1 and len(best) == len(panels),
                          "; ".join(f"{p}: {g}" for p, g in best.items())))
    return Evidence(n=_examples(stats), parts=tuple(parts))


def _analysable_examples(outputs: Outputs) -> pd.DataFrame:
    examples = _csv(outputs, "transfer_examples")
    left_out = _csv(outputs, "transfer_left_out")
    for table, where in ((examples, "results/transfer/examples.csv"),
                         (left_out, "results/transfer/analysis/left_out.csv")):
        if "example_id" not in table.columns:
            raise MissingEvidence(f"{where} has no column 'example_id'")
    if "has_ideal_completion" not in examples.columns:
        raise MissingEvidence("results/transfer/examples.csv has no column "
                              "'has_ideal_completion'")
    return examples[~examples["example_id"].isin(left_out["example_id"])]


@_reads
def expert_discrimination(outputs: Outputs, config: Mapping) -> Evidence:
    """The expert rubric's discrimination of physician over degraded responses, in percent."""
    stats = _csv(outputs, "stats")
    row = _stat(stats, "discrimination", EXPERT, response_model=config["transfer"]["degrader"])
    return _measured(row, 100)


@_reads
def largest_degradation(outputs: Outputs, config: Mapping) -> Evidence:
    """Table A.5's cap: the largest drop in expert score among the degradation models, with
    that model's bootstrap interval (the maximum is the seed's number, not an average)."""
    stats = _csv(outputs, "stats")
    drops = stats[(stats["metric"] == "degradation_drop")].dropna(subset=["estimate"])
    if drops.empty:
        raise MissingEvidence("stats.csv has no defined degradation_drop")
    row = drops.loc[drops["estimate"].idxmax()]
    others = ", ".join(f"{r.response_model} {100 * r.estimate:.1f}"
                       for r in drops.itertuples(index=False))
    return _measured(row, 100, note=f"largest of: {others}")
