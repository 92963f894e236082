"""Every statistic of the transfer work from the pipeline's tables, with Algorithm 4 intervals.

One paired bootstrap (rubriclab.stats.bootstrap.paired_bootstrap) over the analysable
examples computes every statistic and every paired difference between generators from the
same draws. Outputs (tidy; see rubriclab.transfer.figures / tables for their use):

    stats        family, metric, generator, generator_b, response_model, panel, framing,
                 estimate, low, high, n_used, B, n_examples
    categories   Figure 6: generator, response_model, row_kind, target_rubric, direction,
                 category, share, n_criteria
    cutoffs      Table A.7: generator, passed, cutoff, share, n_criteria
    edit_sizes   Table A.9: level, target, direction, measured, and the edit-size columns

Verdicts of -1 (no majority among the judge's votes) are left out of whatever they would
enter, and counted in `undetermined` (a table of how many criteria each use left out). A verdict
that was never judged is an error, never a gap: rubriclab.transfer.reads names the rubrics each
response is judged on, exactly those this module looks up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rubriclab.stats.bootstrap import Statistic, difference, paired_bootstrap
from rubriclab.transfer import baselines, edits, metrics
from rubriclab.transfer.metrics import Q_METRICS
from rubriclab.transfer.pipeline import (
    EXPERT, UNDETERMINED, degraded_id, intervention_id, original_id, physician_id,
    verdict_vectors,
)

STATS_COLUMNS = ["family", "metric", "generator", "generator_b", "response_model", "panel",
                 "framing", "estimate", "low", "high", "n_used", "B", "n_examples"]


@dataclass
class Inputs:
    examples: list[str]                       # analysable example ids, the bootstrap's units
    rubrics: Mapping[str, Mapping[str, list]]  # rubric name -> example -> criterion texts
    generators: list[str]
    responses: pd.DataFrame                   # every responses table, concatenated
    verdicts: pd.DataFrame                    # every verdicts table, concatenated
    matching: pd.DataFrame                    # similarity and framing rows of every generator
    cosine: pd.DataFrame                      # example_id, generator, generated_index, expert_index, cosine
    main_response_model: str
    it_response_models: list[str]
    panels: Mapping[str, list[str]]           # panel name -> responder ids ("model|sample")
    degrader: str
    degradation_models: list[str]
    framings: list[str]
    tau: float
    B: int
    seed: int
    undetermined: list = field(default_factory=list)


# --- lookups --------------------------------------------------------------------------------

class Lookup:
    def __init__(self, inputs: Inputs):
        self.inputs = inputs
        self.vectors = verdict_vectors(inputs.verdicts)
        self.responses = inputs.responses.set_index("response_id", drop=False)

    def vector(self, response_id: str, rubric: str) -> np.ndarray:
        """The response's verdicts on every criterion of the rubric; an error when any is
        missing (the judge reads what to judge from transfer.reads: a gap means the two
        disagree, and is never left out silently)."""
        try:
            vector = self.vectors[(response_id, rubric)]
        except KeyError:
            raise ValueError(f"no verdicts of response {response_id!r} on rubric {rubric!r}: "
                             "was it judged? (transfer.reads says which rubrics each response "
                             "is judged on)") from None
        if response_id in self.responses.index:
            example = self.responses.at[response_id, "example_id"]
            criteria = self.inputs.rubrics.get(rubric, {}).get(example)
            if criteria is not None and len(vector) != len(criteria):
                raise ValueError(f"response {response_id!r} on rubric {rubric!r}: verdicts of "
                                 f"{len(vector)} criteria, the rubric has {len(criteria)}")
        return vector

    def frac(self, response_id: str, rubric: str, use: str) -> float:
        """The share of determined criteria the response passes; NaN when none is determined
        (the caller leaves the response out of `use`, and the table of undetermined verdicts
        says so)."""
        vector = self.vector(response_id, rubric)
        determined = vector != UNDETERMINED
        if not determined.all():
            self.inputs.undetermined.append(dict(use=use, response_id=response_id, rubric=rubric,
                                                 n=int((~determined).sum())))
        if not determined.any():
            self.inputs.undetermined.append(dict(use=f"{use}: response left out",
                                                 response_id=response_id, rubric=rubric, n=0))
            return np.nan
        return float(vector[determined].mean())


# --- interventional transfer ----------------------------------------------------------------

def rubric_level_verdicts(look: Lookup, generator: str, response_model: str,
                          metric: str) -> pd.DataFrame:
    """Measurement criteria before and after the whole-rubric intervention of `metric`."""
    target_kind, measured_kind, direction = Q_METRICS[metric]
    target = generator if target_kind == "generated" else EXPERT
    measured = generator if measured_kind == "generated" else EXPERT
    rows = []
    for example in look.inputs.examples:
        before = look.vector(original_id(example, response_model), measured)
        edit = intervention_id(example, "rubric_edit", response_model, target, -1, direction)
        if edit not in look.responses.index:
            # No edit: a criterion of the target rubric was undetermined on R (pipeline.intervene);
            # every measured criterion of the example is left out. Any other gap is an error.
            original = original_id(example, response_model)
            if not (look.vector(original, target) == UNDETERMINED).any():
                raise ValueError(f"no whole-rubric edit {edit!r}, though every criterion of "
                                 f"rubric {target!r} is determined on {original!r}")
            look.inputs.undetermined.append(dict(use=f"{metric} {generator}: no edit",
                                                 response_id=edit, rubric=measured,
                                                 n=len(before)))
            continue
        after = look.vector(edit, measured)
        for index, (b, a) in enumerate(zip(before, after, strict=True)):
            if b == UNDETERMINED or a == UNDETERMINED:
                look.inputs.undetermined.append(dict(use=f"{metric} {generator}",
                                                     response_id=edit, rubric=measured, n=1))
                continue
            rows.append(dict(example_id=example, criterion_id=index, before=b, after=a))
    frame = pd.DataFrame(rows, columns=["example_id", "criterion_id", "before", "after"])
    return frame


def it_records(look: Lookup, generator: str, response_model: str, metric: str) -> pd.DataFrame:
    direction = Q_METRICS[metric][2]
    frame = rubric_level_verdicts(look, generator, response_model, metric)
    records = metrics.transfer_records(frame, direction) if len(frame) else \
        pd.DataFrame(columns=metrics.RECORD_COLUMNS)
    return records.reindex(look.inputs.examples, fill_value=0)


def criterion_level(look: Lookup, response_model: str) -> pd.DataFrame:
    """Figure 6's categories, pooled over criteria (see metrics.transfer_categories)."""
    inputs = look.inputs
    edited = inputs.responses[(inputs.responses["kind"] == "criterion_edit")
                              & (inputs.responses["model"] == response_model)
                              & inputs.responses["example_id"].isin(inputs.examples)]
    frames = []
    for generator in inputs.generators:
        pairs = [("gen->expert", generator, EXPERT), ("expert->gen", EXPERT, generator),
                 ("within", generator, generator)]
        for row_kind, target, measured in pairs:
            frames += _categories(look, edited, row_kind, target, measured, generator,
                                  response_model)
    frames += _categories(look, edited, "within", EXPERT, EXPERT, EXPERT, response_model)
    if not frames:
        return pd.DataFrame(columns=["generator", "response_model", "row_kind", "target_rubric",
                                     "direction", "category", "share", "n_criteria"])
    return pd.concat(frames, ignore_index=True)


def _categories(look: Lookup, edited: pd.DataFrame, row_kind: str, target: str, measured: str,
                generator: str, response_model: str) -> list[pd.DataFrame]:
    out = []
    for direction in ("+", "-"):
        rows = []
        of_target = edited[(edited["target_rubric"] == target) & (edited["direction"] == direction)]
        for edit in of_target.itertuples(index=False):
            before = look.vector(original_id(edit.example_id, response_model), measured)
            after = look.vector(edit.response_id, measured)
            target_index = int(edit.target_index)
            use = f"Figure 6 {row_kind} {target} -> {measured}"
            if row_kind == "within" and UNDETERMINED in (before[target_index],
                                                         after[target_index]):
                # Whether the target itself moved is unknown: the edit is left out whole.
                look.inputs.undetermined.append(dict(use=use, response_id=edit.response_id,
                                                     rubric=measured, n=len(before)))
                continue
            undetermined = 0
            for index, (b, a) in enumerate(zip(before, after, strict=True)):
                if b == UNDETERMINED or a == UNDETERMINED:
                    undetermined += 1
                    continue
                rows.append(dict(example_id=edit.example_id, target_id=target_index,
                                 criterion_id=index, before=int(b), after=int(a)))
            if undetermined:
                look.inputs.undetermined.append(dict(use=use, response_id=edit.response_id,
                                                     rubric=measured, n=undetermined))
        if not rows:
            continue
        frame = pd.DataFrame(rows)
        categories = (metrics.redundancy_categories(frame, direction) if row_kind == "within"
                      else metrics.transfer_categories(frame, direction))
        shares = metrics.category_shares(categories)
        labels = [c for c in shares.columns if c != "n_criteria"]
        long = shares.melt(id_vars=["n_criteria"], value_vars=labels, var_name="category",
                           value_name="share")
        out.append(long.assign(generator=generator, response_model=response_model,
                               row_kind=row_kind, target_rubric=target, direction=direction))
    return out


# --- existing approaches --------------------------------------------------------------------

def similarity_matrices(matching: pd.DataFrame, generator: str, measure: str,
                        examples: Sequence[str], value: str = "value") -> dict:
    """example -> (generated x expert) matrix of one generator's `measure` rows, by
    baselines.similarity_matrices; None for an example with an unparseable answer (NaN),
    never zeros."""
    rows = matching[(matching["generator"] == generator) & (matching["measure"] == measure)]
    rows = rows.rename(columns={"generated_index": "generated_id", "expert_index": "expert_id"})
    unparsed = set(rows.loc[rows[value].isna(), "example_id"])
    parsed = [e for e in examples if e not in unparsed]
    matrices = baselines.similarity_matrices(rows[rows["example_id"].isin(parsed)], parsed,
                                             value=value)
    return {e: matrices.get(e) for e in examples}


def _match_statistics(stats: dict, scores: Mapping[str, object], family: str, prefix: str,
                      generator: str, extra: str, examples: Sequence[str]) -> None:
    """P, R and F1 statistics (mean over the examples that have scores) of MatchScores."""
    for part in ("precision", "recall", "f1"):
        values = _series({e: getattr(s, part) for e, s in scores.items()})
        stats[(family, f"{prefix}_{part}", generator, "", "", extra)] = \
            baselines.mean_statistic(values, examples, allow_absent=True)


def _series(values: Mapping[str, float]) -> pd.Series:
    return pd.Series(values, dtype=np.float64)


def existing_statistics(look: Lookup) -> dict[tuple, Statistic]:
    inputs = look.inputs
    stats: dict[tuple, Statistic] = {}
    examples = inputs.examples
    for generator in inputs.generators:
        sims = similarity_matrices(inputs.matching, generator, "similarity", examples)
        _match_statistics(stats, {e: baselines.llm_matching_scores(m, e)
                                  for e, m in sims.items() if m is not None},
                          "existing", "llm_matching", generator, "", examples)
        cosine = inputs.cosine.assign(measure="cosine")
        cosines = similarity_matrices(cosine, generator, "cosine", examples, value="cosine")
        _match_statistics(stats, {e: baselines.match_set_scores(m > inputs.tau)
                                  for e, m in cosines.items() if m is not None},
                          "existing", "embedding", generator, "", examples)
        for framing in inputs.framings:
            matrices = similarity_matrices(inputs.matching, generator, framing, examples)
            _match_statistics(stats, {e: baselines.match_set_scores(m > 0)
                                      for e, m in matrices.items() if m is not None},
                              "framing", "framing", generator, framing, examples)
        for panel, responders in inputs.panels.items():
            rows = pd.DataFrame([
                dict(example_id=e, response_model=r,
                     generated_frac=look.frac(_responder_id(e, r), generator, "panel"),
                     expert_frac=look.frac(_responder_id(e, r), EXPERT, "panel"))
                for e in examples for r in responders])
            # Algorithm 3 ranks all K responses of an example: an example with a response
            # whose criteria are all undetermined has no full ranking and is left out.
            unranked = rows.loc[rows[["generated_frac", "expert_frac"]].isna().any(axis=1),
                                "example_id"].unique()
            for example in unranked:
                inputs.undetermined.append(dict(use=f"panel {panel}: example left out",
                                                response_id=example, rubric=generator, n=0))
            ranked = rows[~rows["example_id"].isin(unranked)]
            records = (baselines.panel_records(ranked) if len(ranked)
                       else pd.DataFrame(columns=baselines.PANEL_COLUMNS))
            records = records.reindex(examples)
            for column, metric in (("spearman", "spearman"), ("kendall_tau_b", "kendall_tau_b"),
                                   ("top1", "top1"), ("pairwise_accuracy", "pairwise")):
                stats[("existing", f"panel_{metric}", generator, "", "", panel)] = \
                    baselines.mean_statistic(records[column], examples)
        physician = _determined(_physician_scores(look, generator))
        stats[("existing", "physician_spearman", generator, "", "", "")] = (
            baselines.physician_correlation_statistic(physician, examples) if len(physician)
            else _undefined)
    for rubric in [*inputs.generators, EXPERT]:
        scores = _determined(_discrimination_scores(look, rubric))
        records = baselines.discrimination_records(scores) if len(scores) else pd.Series(dtype=float)
        stats[("existing", "discrimination", rubric, "", inputs.degrader, "")] = \
            baselines.mean_statistic(records, examples, allow_absent=True)
    for model in inputs.degradation_models:
        rows = _determined(pd.DataFrame(
            [dict(example_id=e,
                  original_frac=look.frac(original_id(e, model), EXPERT, "degradation"),
                  degraded_frac=look.frac(degraded_id(e, model), EXPERT, "degradation"))
             for e in examples], columns=["example_id", "original_frac", "degraded_frac"]))
        records = (baselines.degradation_records(rows) if len(rows)
                   else pd.Series(dtype=float))
        stats[("degradation", "degradation_drop", EXPERT, "", model, "")] = \
            baselines.mean_statistic(records, examples, allow_absent=True)
    return stats


def _undefined(indices: np.ndarray) -> None:
    """A statistic with no example to rest on: undefined on every draw."""
    return None


def _determined(scores: pd.DataFrame) -> pd.DataFrame:
    """Rows whose every fraction is defined (Lookup.frac has counted the others)."""
    fractions = [c for c in scores.columns if c.endswith("_frac")]
    return scores.dropna(subset=fractions).reset_index(drop=True)


def _responder_id(example_id: str, responder: str) -> str:
    """The original response of a panel responder "model|sample"."""
    model, sample = responder.rsplit("|", 1)
    return original_id(example_id, model, int(sample))


def _physician_scores(look: Lookup, generator: str) -> pd.DataFrame:
    rows = []
    for example in look.inputs.examples:
        response_id = physician_id(example)
        if response_id in look.responses.index:
            rows.append(dict(example_id=example,
                             generated_frac=look.frac(response_id, generator, "physician"),
                             expert_frac=look.frac(response_id, EXPERT, "physician")))
    return pd.DataFrame(rows, columns=["example_id", "generated_frac", "expert_frac"])


def _discrimination_scores(look: Lookup, rubric: str) -> pd.DataFrame:
    rows = []
    for example in look.inputs.examples:
        physician = physician_id(example)
        if physician in look.responses.index:
            rows.append(dict(example_id=example,
                             physician_frac=look.frac(physician, rubric, "discrimination"),
                             bad_frac=look.frac(degraded_id(example, look.inputs.degrader),
                                                rubric, "discrimination")))
    return pd.DataFrame(rows, columns=["example_id", "physician_frac", "bad_frac"])


# --- Tables A.6, A.7, A.9 ---------------------------------------------------------------------

def similarity_by_criterion(look: Lookup, generator: str) -> pd.DataFrame:
    inputs = look.inputs
    rows = inputs.matching[(inputs.matching["generator"] == generator)
                           & (inputs.matching["measure"] == "similarity")
                           & inputs.matching["example_id"].isin(inputs.examples)]
    similarities = rows.rename(columns={"generated_index": "generated_id",
                                        "expert_index": "expert_id", "value": "similarity"})
    if similarities["similarity"].isna().any():
        missing = similarities[similarities["similarity"].isna()]
        similarities = similarities[~similarities["example_id"].isin(missing["example_id"])]
    initial = []
    for example in similarities["example_id"].unique():
        vector = look.vector(original_id(example, inputs.main_response_model), generator)
        initial += [dict(example_id=example, generated_id=i, passed=int(v))
                    for i, v in enumerate(vector) if v != UNDETERMINED]
    initial = pd.DataFrame(initial, columns=["example_id", "generated_id", "passed"])
    keep = similarities.merge(initial[["example_id", "generated_id"]],
                              on=["example_id", "generated_id"])
    return edits.max_similarity_by_criterion(keep, initial)


def edit_size_table(look: Lookup) -> pd.DataFrame:
    inputs = look.inputs
    responses = inputs.responses
    edited = responses[(responses["model"] == inputs.main_response_model)
                       & responses["kind"].isin(["rubric_edit", "criterion_edit"])
                       & responses["example_id"].isin(inputs.examples)]
    rows = []
    for kind, level in (("rubric_edit", "rubric"), ("criterion_edit", "criterion")):
        for target in ("generated", "expert"):
            for direction in ("+", "-"):
                chosen = edited[(edited["kind"] == kind) & (edited["direction"] == direction)
                                & ((edited["target_rubric"] == EXPERT) == (target == "expert"))]
                if chosen.empty:
                    continue
                table = pd.DataFrame({
                    "original": [look.responses.loc[original_id(e, inputs.main_response_model),
                                                    "text"] for e in chosen["example_id"]],
                    "perturbed": chosen["text"].to_list(),
                    "targeted_criteria": [
                        _targeted(inputs.rubrics[t][e], int(i))
                        for e, t, i in zip(chosen["example_id"], chosen["target_rubric"],
                                           chosen["target_index"])],
                })
                rows.append(dict(level=level, target=target, direction=direction,
                                 measured="generated" if target == "expert" else "expert",
                                 **edits.edit_size_row(table)))
    return pd.DataFrame(rows)


def _targeted(criteria: list[str], index: int) -> list[str]:
    return list(criteria) if index < 0 else [criteria[index]]


# --- everything -----------------------------------------------------------------------------

def analyse(inputs: Inputs) -> dict[str, pd.DataFrame]:
    look = Lookup(inputs)
    examples = inputs.examples
    statistics: dict[tuple, Statistic] = {}
    for model in inputs.it_response_models:
        for metric in Q_METRICS:
            per_generator = {}
            for generator in inputs.generators:
                records = it_records(look, generator, model, metric)
                per_generator[generator] = metrics.micro_average_statistic(records, examples)
                statistics[("it", metric, generator, "", model, "")] = per_generator[generator]
            _add_differences(statistics, per_generator, ("it", metric), model, "")
    existing = existing_statistics(look)
    statistics.update(existing)
    for family, metric, model, extra in sorted({(k[0], k[1], k[4], k[5]) for k in existing
                                                if k[0] == "existing"}):
        per_generator = {g: existing[(family, metric, g, "", model, extra)]
                         for g in inputs.generators if (family, metric, g, "", model, extra)
                         in existing}
        _add_differences(statistics, per_generator, (family, metric), model, extra)
    cutoff_frames = []
    for generator in inputs.generators:
        by_criterion = similarity_by_criterion(look, generator)
        passing = metrics.micro_average_statistic(
            edits.similarity_records(by_criterion, 1).reindex(examples, fill_value=0), examples)
        failing = metrics.micro_average_statistic(
            edits.similarity_records(by_criterion, 0).reindex(examples, fill_value=0), examples)
        statistics[("similarity", "max_similarity_pass", generator, "", "", "")] = passing
        statistics[("similarity", "max_similarity_fail", generator, "", "", "")] = failing
        statistics[("similarity", "max_similarity_diff", generator, "", "", "")] = \
            difference(passing, failing)
        shares = edits.share_at_or_above(by_criterion, range(10))
        for passed, column in ((True, "passing_pct"), (False, "failing_pct")):
            n = int((by_criterion["passed"] == int(passed)).sum())
            cutoff_frames.append(pd.DataFrame({
                "generator": generator, "passed": passed, "cutoff": shares["cutoff"],
                "share": shares[column], "n_criteria": n}))
    names = list(statistics)
    table = paired_bootstrap(len(examples), {str(i): statistics[k] for i, k in enumerate(names)},
                             B=inputs.B, seed=inputs.seed)
    rows = []
    for key, result in zip(names, table.itertuples(index=False), strict=True):
        family, metric, generator, generator_b, model, extra = key
        rows.append(dict(family=family, metric=metric, generator=generator,
                         generator_b=generator_b, response_model=model,
                         panel=extra if metric.startswith("panel_") else "",
                         framing=extra if family == "framing" else "",
                         estimate=result.estimate, low=result.low, high=result.high,
                         n_used=result.n_used, B=result.B, n_examples=len(examples)))
    return {
        "stats": pd.DataFrame(rows, columns=STATS_COLUMNS),
        "categories": criterion_level(look, inputs.main_response_model),
        "cutoffs": pd.concat(cutoff_frames, ignore_index=True) if cutoff_frames else pd.DataFrame(),
        "edit_sizes": edit_size_table(look),
        "undetermined": pd.DataFrame(inputs.undetermined,
                                     columns=["use", "response_id", "rubric", "n"]),
    }


def _add_differences(statistics: dict, per_generator: Mapping[str, Statistic],
                     family_metric: tuple, model: str, extra: str) -> None:
    names = list(per_generator)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            statistics[(*family_metric, a, b, model, extra)] = difference(per_generator[a],
                                                                          per_generator[b])
