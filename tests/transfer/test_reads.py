"""rubriclab.transfer.reads: judging only what the analysis reads changes no number it reports.

The equivalence test runs the stages of rubriclab.transfer.pipeline with deterministic fake
answers (fake/hash, as the client would parse them; a share of the judge's votes unparseable,
so undetermined verdicts and missing whole-rubric edits occur) twice: judging every response on
every rubric with single-criterion edits for every IT model, as before, and judging only what
transfer.reads names with single-criterion edits for the main response model only. Every table
the figures and tables are drawn from (transfer_analyse's outputs) must be identical, and every
request of the reduced run must be one of the full run's (the same cache keys).
"""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rubriclab.transfer import analysis as A
from rubriclab.transfer import pipeline as P
from rubriclab.transfer.reads import AnalysisReads, criterion_edit_models
from tests.transfer.test_pipeline import (
    ScriptedAsk, example_row, examples_frame, realistic, unparseable,
)

G, H = "gen/g", "gen/h"
M, N = "fake/hash?salt=m", "fake/hash?salt=n"       # main response model; a second IT model
PM, Q = "fake/hash?salt=p", "fake/hash?salt=q"      # degrader (and panel); degradation only
JUDGE = "fake/hash?salt=judge"
PANELS = {"all": [f"{M}|0", f"{PM}|0", f"{N}|0", f"{PM}|1"], "two": [f"{M}|0", f"{PM}|0"]}
DEGRADATION_MODELS = [PM, Q]
EXAMPLES = ["e1", "e2", "e3", "e4", "e5", "e6"]
RUBRICS = {
    P.EXPERT: {e: [f"Expert {e} criterion {k}." for k in range(3 + i % 2)]
               for i, e in enumerate(EXAMPLES)},
    G: {e: [f"Gen g {e} criterion {k}." for k in range(2 + i % 2)] for i, e in enumerate(EXAMPLES)},
    H: {e: [f"Gen h {e} criterion {k}." for k in range(3)] for e in EXAMPLES},
}

READS = AnalysisReads.from_config(generators=[G, H], main_response_model=M,
                                  it_response_models=[M, N], panels=PANELS, degrader=PM,
                                  degradation_models=DEGRADATION_MODELS)


def answer(request):
    """fake/hash's answer; about one judge vote in 13 unparseable, by a hash of the request."""
    if request.model == JUDGE:
        digest = hashlib.sha256(json.dumps([request.message_dicts(),
                                            request.sample_index]).encode()).digest()
        if digest[0] < 20:
            return unparseable()
    return realistic(request)


class HashEmbedder:
    def embed(self, texts):
        return np.array([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8)
                         .astype(float) for t in texts])


def examples():
    return examples_frame(*[example_row(e, ideal=f"Physician answer {e}." if e != "e4" else "")
                            for e in EXAMPLES])


def run(reduced: bool):
    """Responses, verdicts and requests of one run: reduced, or judging everything as before."""
    table = examples()
    # every criterion positive: expert.json with nothing to restate (no request)
    expert = P.restate_expert_rubrics(table.assign(rubric_json=[
        json.dumps([{"criterion": c, "points": 1} for c in RUBRICS[P.EXPERT][e]])
        for e in EXAMPLES]), JUDGE, 0.0, ScriptedAsk(answer))
    respond_ask, judge_ask, edit_ask = (ScriptedAsk(answer) for _ in range(3))
    reads = READS if reduced else None

    def judge(responses):
        return P.judge_responses(responses, table, RUBRICS, JUDGE, 3, 1.0, judge_ask, reads=reads)

    responses = [P.physician_responses(table)]
    for responder in dict.fromkeys([*PANELS["all"], f"{M}|0", f"{Q}|0"]):
        model, sample = responder.rsplit("|", 1)
        responses.append(P.respond(table, model, int(sample), 1.0, 200, respond_ask))
    for model in DEGRADATION_MODELS:
        responses.append(P.degrade(table, expert, model, 1.0, 200, 0, respond_ask))
    verdicts = [judge(r) for r in responses]
    originals = pd.concat(responses, ignore_index=True)
    for model in (M, N):
        own = originals[originals["response_id"].str.contains(f"|original|{model}|0", regex=False)]
        edits = P.intervene(own, table, pd.concat(verdicts), RUBRICS, model, 1.0, 200, None,
                            edit_ask, criterion_edits=(model == M) or not reduced)
        responses.append(edits)
        verdicts.append(judge(edits))
    return (pd.concat(responses, ignore_index=True), pd.concat(verdicts, ignore_index=True),
            SimpleNamespace(judge=judge_ask.requests, edit=edit_ask.requests,
                            respond=respond_ask.requests))


def matching_and_cosine():
    table = examples()
    matching = pd.concat([
        P.match_rubrics(table, RUBRICS[P.EXPERT], RUBRICS[g], g, "fake/hash?salt=matcher", 1.0,
                        ["match_rubric"], ScriptedAsk(realistic))
        for g in (G, H)], ignore_index=True)
    return matching, P.embedding_cosines(HashEmbedder(), RUBRICS, EXAMPLES)


def inputs(responses, verdicts, matching, cosine):
    return A.Inputs(examples=EXAMPLES, rubrics=RUBRICS, generators=[G, H], responses=responses,
                    verdicts=verdicts, matching=matching, cosine=cosine, main_response_model=M,
                    it_response_models=[M, N], panels=PANELS, degrader=PM,
                    degradation_models=DEGRADATION_MODELS, framings=["match_rubric"], tau=0.5,
                    B=100, seed=0)


@pytest.fixture(scope="module")
def both():
    full, reduced = run(reduced=False), run(reduced=True)
    return full, reduced, matching_and_cosine()


def test_the_analysis_is_identical_when_only_read_verdicts_are_judged(both):
    (full_responses, full_verdicts, _), (responses, verdicts, _), (matching, cosine) = both
    before = A.analyse(inputs(full_responses, full_verdicts, matching, cosine))
    after = A.analyse(inputs(responses, verdicts, matching, cosine))
    assert set(before) == set(after) == {"stats", "categories", "cutoffs", "edit_sizes",
                                         "undetermined"}
    for name in before:
        pd.testing.assert_frame_equal(before[name], after[name], obj=name)
    # The comparison has something to compare: every family of statistics, Figure 6 rows from
    # every pair, Table A.9's four interventions at both levels, and undetermined verdicts.
    stats = before["stats"]
    assert {"it", "existing", "framing", "degradation", "similarity"} <= set(stats["family"])
    assert set(stats.loc[stats["family"] == "it", "response_model"]) == {M, N}
    assert stats["estimate"].notna().sum() > 0.8 * len(stats)
    pairs = set(zip(before["categories"]["row_kind"], before["categories"]["target_rubric"]))
    assert pairs == {("gen->expert", G), ("gen->expert", H), ("expert->gen", P.EXPERT),
                     ("within", G), ("within", H), ("within", P.EXPERT)}
    assert len(before["edit_sizes"]) == 8
    uses = set(before["undetermined"]["use"].str.split(" ").str[0])
    assert {"Q+(Cg->C*)", "Figure", "panel"} <= uses


def test_the_reduced_run_asks_a_subset_of_the_same_requests(both):
    (full_responses, full_verdicts, full), (responses, verdicts, reduced), _ = both
    # The same requests, so a run that paid for them reads them from the cache.
    assert set(reduced.judge) < set(full.judge)
    assert set(reduced.edit) < set(full.edit)
    assert reduced.respond == full.respond
    # Only the main response model's single-criterion edits are made.
    assert set(full_responses.loc[full_responses["kind"] == "criterion_edit", "model"]) == {M, N}
    assert set(responses.loc[responses["kind"] == "criterion_edit", "model"]) == {M}
    # Every verdict kept is the verdict judging everything gave.
    keys = ["response_id", "rubric", "criterion_index"]
    merged = verdicts.merge(full_verdicts, on=keys, suffixes=("", "_full"), validate="1:1")
    assert len(merged) == len(verdicts) < len(full_verdicts)
    assert (merged["verdict"] == merged["verdict_full"]).all()
    # Judging everything asks 3 rubrics x 3 votes per response; the reduced run 3 votes on each
    # rubric AnalysisReads names.
    assert len(full.judge) == 3 * 3 * len(full_responses)
    assert len(reduced.judge) == 3 * sum(len(READS.rubrics(r))
                                         for r in responses.itertuples(index=False))


def test_the_analysis_names_a_verdict_it_reads_and_was_not_judged(both):
    _, (responses, verdicts, _), (matching, cosine) = both
    physician_h = (verdicts["response_id"] == "e1|physician") & (verdicts["rubric"] == H)
    with pytest.raises(ValueError, match=r"no verdicts of response 'e1\|physician' on rubric "
                                         r"'gen/h': was it judged\?"):
        A.analyse(inputs(responses, verdicts[~physician_h], matching, cosine))
    one_criterion = physician_h & (verdicts["criterion_index"] == 1)
    with pytest.raises(ValueError, match="verdicts of 2 criteria, the rubric has 3"):
        A.analyse(inputs(responses, verdicts[~one_criterion], matching, cosine))


# --- which rubrics, by kind --------------------------------------------------------------------

def row(response_id, kind, model, target="", index=-1, direction=""):
    return SimpleNamespace(example_id=response_id.split("|")[0], response_id=response_id,
                           kind=kind, model=model, target_rubric=target, target_index=index,
                           direction=direction)


EVERY = (P.EXPERT, G, H)


def test_rubrics_by_kind():
    reads = READS
    assert reads.rubrics(row("e1|physician", "physician", "physician")) == EVERY
    # originals: a panel responder or an IT model, every rubric; a degradation model only, expert
    assert reads.rubrics(row(P.original_id("e1", PM, 1), "original", PM)) == EVERY
    assert reads.rubrics(row(P.original_id("e1", N, 0), "original", N)) == EVERY
    assert reads.rubrics(row(P.original_id("e1", Q, 0), "original", Q)) == (P.EXPERT,)
    # degraded: the degrader's for discrimination on every rubric; the others, Table A.5
    assert reads.rubrics(row(P.degraded_id("e1", PM), "degraded", PM)) == EVERY
    assert reads.rubrics(row(P.degraded_id("e1", Q), "degraded", Q)) == (P.EXPERT,)
    # whole-rubric edits: measured on the other rubric(s) only
    edit = P.intervention_id("e1", "rubric_edit", N, P.EXPERT, -1, "+")
    assert reads.rubrics(row(edit, "rubric_edit", N, P.EXPERT)) == (G, H)
    edit = P.intervention_id("e1", "rubric_edit", N, G, -1, "-")
    assert reads.rubrics(row(edit, "rubric_edit", N, G)) == (P.EXPERT,)
    # single-criterion edits: the other rubric(s) and, for within-rubric redundancy, their own
    edit = P.intervention_id("e1", "criterion_edit", M, P.EXPERT, 0, "+")
    assert reads.rubrics(row(edit, "criterion_edit", M, P.EXPERT, 0)) == EVERY
    edit = P.intervention_id("e1", "criterion_edit", M, H, 2, "-")
    assert reads.rubrics(row(edit, "criterion_edit", M, H, 2)) == (P.EXPERT, H)


def test_a_response_no_analysis_reads_is_an_error():
    with pytest.raises(ValueError, match="is in no panel, IT model or degradation model"):
        READS.rubrics(row(P.original_id("e1", Q, 1), "original", Q))
    with pytest.raises(ValueError, match="neither the degrader nor a degradation model"):
        READS.rubrics(row(P.degraded_id("e1", N), "degraded", N))
    with pytest.raises(ValueError, match="not an IT response model"):
        READS.rubrics(row(P.intervention_id("e1", "rubric_edit", PM, G, -1, "+"),
                          "rubric_edit", PM, G))
    with pytest.raises(ValueError, match="target rubric 'gen/x' is neither"):
        READS.rubrics(row(P.intervention_id("e1", "rubric_edit", M, "gen/x", -1, "+"),
                          "rubric_edit", M, "gen/x"))
    with pytest.raises(ValueError, match="unknown kind"):
        READS.rubrics(row("e1|other", "other", M))


def test_the_judge_refuses_a_read_rubric_it_does_not_have():
    table = examples_frame(example_row("e1"))
    responses = pd.DataFrame([dict(example_id="e1", response_id="e1|physician",
                                   model="physician", kind="physician", target_rubric="",
                                   target_index=-1, direction="", text="Rest.")])
    with pytest.raises(ValueError, match=r"read on \['gen/h'\], which are not among"):
        P.judge_responses(responses, table, {P.EXPERT: RUBRICS[P.EXPERT], G: RUBRICS[G]},
                          JUDGE, 3, 1.0, ScriptedAsk(answer), reads=READS)


def test_criterion_edit_models_default_to_the_response_model_and_must_hold_it():
    assert criterion_edit_models(None, M, [M, N]) == [M]
    assert criterion_edit_models([N, M], M, [M, N]) == [N, M]
    with pytest.raises(ValueError, match=r"must include transfer.response_model "
                                         r"\('fake/hash\?salt=m'\)"):
        criterion_edit_models([N], M, [M, N])
    with pytest.raises(ValueError, match=r"\['fake/hash\?salt=q'\] are not in "
                                         r"transfer.it_response_models"):
        criterion_edit_models([M, Q], M, [M, N])
