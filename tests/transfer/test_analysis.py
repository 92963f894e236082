"""rubriclab.transfer.analysis on a tiny Inputs written out by hand.

Two examples (e1, e2), generator "g" (and a copy "h" for paired differences), an expert rubric
of 3 criteria and a generated rubric of 2 per example, main response model "m". Every verdict
vector is written below; every expected number is worked out in the comments.
"""

from __future__ import annotations

import math
from dataclasses import astuple

import numpy as np
import pandas as pd
import pytest

from rubriclab.transfer import analysis as A
from rubriclab.transfer.baselines import match_set_scores
from rubriclab.transfer.pipeline import RESPONSE_COLUMNS, VERDICT_COLUMNS

M = "m"
RUBRICS = {
    "expert": {"e1": ["Recommends rest at home.", "Advises fluids.", "Suggests seeing a doctor."],
               "e2": ["States the maximum dose.", "Mentions liver risk.", "Asks about age."]},
    #            words: e1 g: 2, 3; e2 g: 2, 4
    "g": {"e1": ["Mentions rest.", "Advises fluids daily."],
          "e2": ["Gives dose.", "Warns about alcohol use."]},
}


def orig(e, model=M):
    return f"{e}|original|{model}|0"


def redit(e, target, direction):
    return f"{e}|rubric_edit|{M}|{target}|-1|{direction}"


def cedit(e, target, index, direction):
    return f"{e}|criterion_edit|{M}|{target}|{index}|{direction}"


# (response id, rubric) -> verdicts in criterion order.
BASE_VERDICTS = {
    # originals: the panel is m|0, p|0, q|0
    (orig("e1"), "g"): [0, 1], (orig("e1"), "expert"): [0, 0, 1],
    (orig("e2"), "g"): [0, 0], (orig("e2"), "expert"): [0, 1, 0],
    (orig("e1", "p"), "g"): [1, 1], (orig("e1", "p"), "expert"): [1, 1, 1],
    (orig("e1", "q"), "g"): [0, 0], (orig("e1", "q"), "expert"): [0, 0, 0],
    (orig("e2", "p"), "g"): [1, 0], (orig("e2", "p"), "expert"): [0, 0, 0],
    (orig("e2", "q"), "g"): [1, 1], (orig("e2", "q"), "expert"): [1, 1, 0],
    # whole-rubric edits, measured on the other rubric
    (redit("e1", "g", "+"), "expert"): [1, 0, 0],      # criterion 2 moves the wrong way
    (redit("e2", "g", "+"), "expert"): [1, 1, 1],
    (redit("e1", "g", "-"), "expert"): [0, -1, 0],     # criterion 1 undetermined
    (redit("e2", "g", "-"), "expert"): [0, 1, 0],
    (redit("e1", "expert", "+"), "g"): [1, 1],
    (redit("e2", "expert", "+"), "g"): [1, 0],
    (redit("e1", "expert", "-"), "g"): [0, 0],
    (redit("e2", "expert", "-"), "g"): [0, 0],
    # single-criterion edits of g's criteria, measured on expert and on g
    (cedit("e1", "g", 0, "+"), "expert"): [1, 1, 1], (cedit("e1", "g", 0, "+"), "g"): [1, 1],
    (cedit("e1", "g", 1, "-"), "expert"): [0, 0, 0], (cedit("e1", "g", 1, "-"), "g"): [0, 0],
    (cedit("e2", "g", 0, "+"), "expert"): [1, 1, 1], (cedit("e2", "g", 0, "+"), "g"): [1, 0],
    (cedit("e2", "g", 1, "+"), "expert"): [1, 1, 0], (cedit("e2", "g", 1, "+"), "g"): [1, 1],
    # physician response for e1 only; degraded responses (degrader m)
    ("e1|physician", "g"): [1, 1], ("e1|physician", "expert"): [1, 1, 0],
    ("e1|degraded|m", "g"): [0, 1], ("e1|degraded|m", "expert"): [0, 0, 0],
    ("e2|degraded|m", "g"): [0, 0], ("e2|degraded|m", "expert"): [0, 0, 1],
}

TEXTS = {
    orig("e1"): "a b c d",
    orig("e2"): "one two three four five six",
    redit("e1", "g", "+"): "a b x d e",          # c->x replaced (2) + e inserted (1) = 3 words
    redit("e2", "g", "+"): "one two three",      # three words deleted = 3 words
}

SIMILARITY = {  # example -> generated x expert, 0-9
    "e1": [[9, 3, 0], [2, 6, 4]],
    "e2": [[0, 0, 0], [0, 9, 0]],
}
MATCH = {  # the match_rubric framing's 0/1 matrices
    "e1": [[1, 0, 0], [0, 0, 0]],
    "e2": [[0, 1, 0], [0, 1, 0]],
}
COSINE = {
    "e1": [[0.9, 0.1, 0.2], [0.7, 0.3, 0.8]],    # > 0.7: (0,0), (1,2); 0.7 itself is not
    "e2": [[0.1, 0.1, 0.1], [0.1, 0.1, 0.1]],
}


def response_row(rid: str) -> dict:
    parts = rid.split("|")
    example = parts[0]
    text = TEXTS.get(rid, f"Some response text for {rid}.")
    if parts[1] == "original":
        return dict(example_id=example, response_id=rid, model=parts[2], kind="original",
                    target_rubric="", target_index=-1, direction="", text=text)
    if parts[1] == "physician":
        return dict(example_id=example, response_id=rid, model="physician", kind="physician",
                    target_rubric="", target_index=-1, direction="", text=text)
    if parts[1] == "degraded":
        return dict(example_id=example, response_id=rid, model=parts[2], kind="degraded",
                    target_rubric="", target_index=-1, direction="", text=text)
    return dict(example_id=example, response_id=rid, model=parts[2], kind=parts[1],
                target_rubric=parts[3], target_index=int(parts[4]), direction=parts[5], text=text)


def with_generator_copy(verdicts: dict, name: str) -> dict:
    """Copy every verdict of g to generator `name`: on its rubric and for edits targeting it."""
    out = dict(verdicts)
    for (rid, rubric), vector in verdicts.items():
        parts = rid.split("|")
        new_rid = rid
        if parts[1] in ("rubric_edit", "criterion_edit") and parts[3] == "g":
            new_rid = "|".join(parts[:3] + [name] + parts[4:])
        new_rubric = name if rubric == "g" else rubric
        if (new_rid, new_rubric) != (rid, rubric):
            out.setdefault((new_rid, new_rubric), list(vector))
    return out


def build_inputs(verdicts=None, generators=("g",), B=40, overrides=None,
                 similarity=None) -> A.Inputs:
    verdicts = dict(BASE_VERDICTS if verdicts is None else verdicts)
    rubrics = {k: dict(v) for k, v in RUBRICS.items()}
    for name in generators:
        if name != "g":
            verdicts = with_generator_copy(verdicts, name)
            rubrics[name] = dict(RUBRICS["g"])
    verdicts.update(overrides or {})
    verdict_rows = [dict(example_id=rid.split("|")[0], response_id=rid, rubric=rubric,
                         criterion_index=i, verdict=v, votes_yes=0, votes=3)
                    for (rid, rubric), vector in verdicts.items() for i, v in enumerate(vector)]
    response_ids = list(dict.fromkeys(rid for rid, _ in verdicts))
    responses = pd.DataFrame([response_row(r) for r in response_ids], columns=RESPONSE_COLUMNS)
    similarity = SIMILARITY if similarity is None else similarity
    matching, cosine = [], []
    for name in generators:
        for example in ("e1", "e2"):
            for measure, table in (("similarity", similarity), ("match_rubric", MATCH)):
                matching += [dict(example_id=example, generator=name, measure=measure,
                                  generated_index=g, expert_index=e, value=value)
                             for g, row in enumerate(table[example]) for e, value in enumerate(row)]
            cosine += [dict(example_id=example, generator=name, generated_index=g, expert_index=e,
                            cosine=value)
                       for g, row in enumerate(COSINE[example]) for e, value in enumerate(row)]
    return A.Inputs(
        examples=["e1", "e2"], rubrics=rubrics, generators=list(generators),
        responses=responses, verdicts=pd.DataFrame(verdict_rows, columns=VERDICT_COLUMNS),
        matching=pd.DataFrame(matching), cosine=pd.DataFrame(cosine),
        main_response_model=M, it_response_models=[M],
        panels={"panel3": ["m|0", "p|0", "q|0"]}, degrader=M, degradation_models=[M],
        framings=["match_rubric"], tau=0.7, B=B, seed=0)


def stats_row(stats: pd.DataFrame, metric: str, generator: str, generator_b: str = "",
              **extra) -> pd.Series:
    chosen = stats[(stats["metric"] == metric) & (stats["generator"] == generator)
                   & (stats["generator_b"] == generator_b)]
    for column, value in extra.items():
        chosen = chosen[chosen[column] == value]
    assert len(chosen) == 1, chosen
    return chosen.iloc[0]


@pytest.fixture(scope="module")
def analysed():
    inputs = build_inputs()
    return inputs, A.analyse(inputs)


# --- ids -------------------------------------------------------------------------------------

def test_ids_follow_the_pipeline_conventions():
    assert A.original_id("e1", "m") == "e1|original|m|0"
    assert A.original_id("e1", "m", 2) == "e1|original|m|2"
    assert A.intervention_id("e1", "rubric_edit", "m", "g", -1, "+") == "e1|rubric_edit|m|g|-1|+"


# --- interventional transfer -----------------------------------------------------------------

def test_it_records_q_plus_generated_to_expert():
    look = A.Lookup(build_inputs())
    records = A.it_records(look, "g", M, "Q+(Cg->C*)")
    # e1: before (expert on R) [0,0,1], after (R_{+Cg}) [1,0,0], b = 1
    #     h = #(before != 1) = 2; g = #(after = 1) - #(before = 1) = 1 - 1 = 0
    #     (c0 gains one, c2 moves the wrong way and takes it back)
    # e2: before [0,1,0], after [1,1,1]: h = 2; g = 3 - 1 = 2
    assert records.loc["e1"].tolist() == [0, 2]
    assert records.loc["e2"].tolist() == [2, 2]
    assert list(records.index) == ["e1", "e2"]


def test_it_records_the_other_three_metrics():
    look = A.Lookup(build_inputs())
    # Q+(C*->Cg): measured g. e1 [0,1] -> [1,1]: h 1, g 2-1 = 1; e2 [0,0] -> [1,0]: h 2, g 1
    assert A.it_records(look, "g", M, "Q+(C*->Cg)").values.tolist() == [[1, 1], [1, 2]]
    # Q-(C*->Cg): b = 0. e1 [0,1] -> [0,0]: h 1, g 2-1 = 1; e2 [0,0] -> [0,0]: h 0, g 0
    assert A.it_records(look, "g", M, "Q-(C*->Cg)").values.tolist() == [[1, 1], [0, 0]]
    # Q-(Cg->C*): b = 0. e1 [0,0,1] -> [0,-1,0]: criterion 1 left out; c0 0->0, c2 1->0:
    #     h = #(before != 0) over c0, c2 = 1; g = #(after = 0) 2 - #(before = 0) 1 = 1
    # e2 [0,1,0] -> [0,1,0]: h 1, g 0
    assert A.it_records(look, "g", M, "Q-(Cg->C*)").values.tolist() == [[1, 1], [0, 1]]


def test_undetermined_verdict_is_left_out_and_listed():
    inputs = build_inputs()
    look = A.Lookup(inputs)
    A.rubric_level_verdicts(look, "g", M, "Q-(Cg->C*)")
    assert len(inputs.undetermined) == 1
    entry = inputs.undetermined[0]
    assert entry["use"] == "Q-(Cg->C*) g" and entry["rubric"] == "expert" and entry["n"] == 1


def test_missing_whole_rubric_edit_is_left_out_and_listed():
    # pipeline.intervene makes no whole-rubric edit for a rubric with an undetermined criterion:
    # e2's g criterion 1 undetermined on R, and no R_{+Cg}. Q+(Cg->C*) then has e1 only: g 0,
    # h 2; e2 records 0 / 0
    verdicts = {k: v for k, v in BASE_VERDICTS.items() if k[0] != redit("e2", "g", "+")}
    inputs = build_inputs(verdicts=verdicts, overrides={(orig("e2"), "g"): [0, -1]})
    records = A.it_records(A.Lookup(inputs), "g", M, "Q+(Cg->C*)")
    assert records.values.tolist() == [[0, 2], [0, 0]]
    assert len(inputs.undetermined) == 1
    entry = inputs.undetermined[0]
    assert entry["use"] == "Q+(Cg->C*) g: no edit" and entry["rubric"] == "expert"  # the measured rubric
    assert entry["n"] == 3                          # e2's three expert criteria left out


def test_a_missing_whole_rubric_edit_with_a_determined_target_is_an_error():
    # every g criterion is determined on e2's R, so pipeline.intervene made R_{+Cg}: its absence
    # is a gap in the inputs, never left out silently
    verdicts = {k: v for k, v in BASE_VERDICTS.items() if k[0] != redit("e2", "g", "+")}
    missing = r"no whole-rubric edit 'e2\|rubric_edit\|m\|g\|-1\|\+'"
    with pytest.raises(ValueError, match=missing):
        A.it_records(A.Lookup(build_inputs(verdicts=verdicts)), "g", M, "Q+(Cg->C*)")


def test_a_vector_short_of_its_rubric_is_an_error():
    inputs = build_inputs(overrides={("e1|physician", "expert"): [1, 1]})
    with pytest.raises(ValueError, match="verdicts of 2 criteria, the rubric has 3"):
        A.Lookup(inputs).vector("e1|physician", "expert")


def test_frac_leaves_undetermined_out_and_lists_it():
    inputs = build_inputs(overrides={("e1|degraded|m", "expert"): [1, -1, 0]})
    look = A.Lookup(inputs)
    # [1, -1, 0]: the determined two are 1 and 0 -> 1/2
    assert look.frac("e1|degraded|m", "expert", "test") == 0.5
    assert inputs.undetermined == [dict(use="test", response_id="e1|degraded|m",
                                        rubric="expert", n=1)]
    assert look.frac("e1|physician", "expert", "test") == pytest.approx(2 / 3)
    assert len(inputs.undetermined) == 1          # nothing left out there
    with pytest.raises(ValueError, match="was it judged"):
        look.vector("e9|physician", "expert")


def test_analyse_q_plus_is_sum_g_over_sum_h(analysed):
    _, out = analysed
    stats = out["stats"]
    row = stats_row(stats, "Q+(Cg->C*)", "g", family="it", response_model=M)
    # (0 + 2) / (2 + 2) = 0.5
    assert row["estimate"] == pytest.approx(0.5)
    assert row["n_examples"] == 2 and row["B"] == 40
    assert 0 < row["n_used"] <= 40
    # the other three: Q-(Cg->C*) (1 + 0)/(1 + 1); Q+(C*->Cg) (1 + 1)/(1 + 2); Q-(C*->Cg) 1/1
    assert stats_row(stats, "Q-(Cg->C*)", "g")["estimate"] == pytest.approx(0.5)
    assert stats_row(stats, "Q+(C*->Cg)", "g")["estimate"] == pytest.approx(2 / 3)
    assert stats_row(stats, "Q-(C*->Cg)", "g")["estimate"] == pytest.approx(1.0)
    assert list(stats.columns) == A.STATS_COLUMNS


def test_analyse_lists_the_undetermined(analysed):
    _, out = analysed
    undetermined = out["undetermined"]
    assert list(undetermined.columns) == ["use", "response_id", "rubric", "n"]
    # the only -1 anything reads is criterion 1 of expert on e1's R_{-Cg}
    assert len(undetermined) == 1
    assert undetermined.iloc[0]["use"] == "Q-(Cg->C*) g"
    assert undetermined.iloc[0]["rubric"] == "expert"
    assert undetermined["n"].sum() == 1


# --- existing approaches ---------------------------------------------------------------------

def test_llm_matching_is_algorithm_2(analysed):
    _, out = analysed
    stats = out["stats"]
    # e1 [[9,3,0],[2,6,4]]: P = (9 + 6)/2/9 = 5/6; R = (9 + 6 + 4)/3/9 = 19/27
    #     F1 = 2 (5/6)(19/27) / (5/6 + 19/27) = (95/81) / (83/54) = 190/249
    # e2 [[0,0,0],[0,9,0]]: P = (0 + 9)/2/9 = 1/2; R = (0 + 9 + 0)/3/9 = 1/3
    #     F1 = 2 (1/2)(1/3) / (5/6) = 2/5
    assert stats_row(stats, "llm_matching_precision", "g")["estimate"] == \
        pytest.approx((5 / 6 + 1 / 2) / 2)
    assert stats_row(stats, "llm_matching_recall", "g")["estimate"] == \
        pytest.approx((19 / 27 + 1 / 3) / 2)
    assert stats_row(stats, "llm_matching_f1", "g")["estimate"] == \
        pytest.approx((190 / 249 + 2 / 5) / 2)


def test_llm_matching_leaves_out_an_example_with_a_missing_similarity():
    similarity = {"e1": SIMILARITY["e1"], "e2": [[0, 0, np.nan], [0, 9, 0]]}
    look = A.Lookup(build_inputs(similarity=similarity))
    stats = A.existing_statistics(look)
    everything = np.arange(2)
    # e2's matrix is undefined, so the mean is e1's alone (never a 0 in its place)
    assert stats[("existing", "llm_matching_f1", "g", "", "", "")](everything) == \
        pytest.approx(190 / 249)
    # and Table A.6's criteria leave e2 out: only e1's G0 (failing, best 9), G1 (passing, 6)
    by_criterion = A.similarity_by_criterion(look, "g")
    assert set(by_criterion["example_id"]) == {"e1"}


def test_embedding_and_framing_scores(analysed):
    _, out = analysed
    stats = out["stats"]
    # cosine > 0.7: e1 [[T,F,F],[F,F,T]] -> P 1, R 2/3, F1 2(2/3)/(5/3) = 0.8; e2 none -> 0, 0, 0
    assert stats_row(stats, "embedding_precision", "g")["estimate"] == pytest.approx(0.5)
    assert stats_row(stats, "embedding_recall", "g")["estimate"] == pytest.approx(1 / 3)
    assert stats_row(stats, "embedding_f1", "g")["estimate"] == pytest.approx(0.4)
    # match_rubric: e1 P 1/2 R 1/3 F1 0.4; e2 P 1 R 1/3 F1 2(1/3)/(4/3) = 0.5
    row = stats_row(stats, "framing_f1", "g", framing="match_rubric")
    assert row["estimate"] == pytest.approx(0.45)
    assert stats_row(stats, "framing_precision", "g")["estimate"] == pytest.approx(0.75)


def test_match_set_scores_by_hand():
    matrix = np.array([[1, 0, 0], [0, 0, 0], [0, 1, 1]], dtype=bool)
    # rows with a match: 2 of 3 -> P 2/3; columns with a match: 3 of 3 -> R 1
    # F1 = 2 (2/3)(1) / (5/3) = 0.8
    p, r, f1 = astuple(match_set_scores(matrix))
    assert (p, r) == (pytest.approx(2 / 3), 1.0)
    assert f1 == pytest.approx(0.8)
    assert astuple(match_set_scores(np.zeros((2, 3), dtype=bool))) == (0.0, 0.0, 0.0)
    p, r, f1 = astuple(match_set_scores(np.array([[0, 1]], dtype=bool)))
    assert (p, r, f1) == (1.0, 0.5, pytest.approx(2 / 3))


def test_panel_physician_discrimination_degradation(analysed):
    _, out = analysed
    stats = out["stats"]
    # panel (sorted m|0, p|0, q|0): e1 s^g (.5, 1, 0), s* (1/3, 1, 0) -> rho 1
    #   e2 s^g (0, .5, 1), s* (1/3, 0, 2/3): ranks (1,2,3) vs (2,1,3) -> 1 - 6*2/(3*8) = 1/2
    assert stats_row(stats, "panel_spearman", "g", panel="panel3")["estimate"] == \
        pytest.approx(0.75)
    # Kendall tau-b: e1 1; e2 (2 concordant - 1 discordant)/3 = 1/3 -> mean 2/3
    assert stats_row(stats, "panel_kendall_tau_b", "g", panel="panel3")["estimate"] == \
        pytest.approx(2 / 3)
    # one physician response: a correlation across examples is undefined
    assert math.isnan(stats_row(stats, "physician_spearman", "g")["estimate"])
    # discrimination (e1 only): g 1 > 0.5 -> 1; expert 2/3 > 0 -> 1
    assert stats_row(stats, "discrimination", "g", response_model=M)["estimate"] == 1.0
    assert stats_row(stats, "discrimination", "expert", response_model=M)["estimate"] == 1.0
    # degradation drop on expert: e1 1/3 - 0 = 1/3; e2 1/3 - 1/3 = 0 -> 1/6
    row = stats_row(stats, "degradation_drop", "expert", response_model=M)
    assert row["estimate"] == pytest.approx(1 / 6)


def test_a_response_with_every_criterion_undetermined_is_counted_and_left_out():
    """The judge's votes split on every criterion of one panel response, of e2's degraded
    response and of the physician response: no crash, each left out of what it would inform."""
    overrides = {(orig("e2", "q"), "expert"): [-1, -1, -1],
                 ("e2|degraded|m", "expert"): [-1, -1, -1],
                 ("e1|physician", "g"): [-1, -1]}
    inputs = build_inputs(overrides=overrides)
    stats = A.analyse(inputs)["stats"]
    # panel: e2 has no full ranking and is left out: the mean is e1's rho, 1
    assert stats_row(stats, "panel_spearman", "g", panel="panel3")["estimate"] == \
        pytest.approx(1.0)
    # degradation: e2 left out, e1's drop 1/3 remains
    assert stats_row(stats, "degradation_drop", "expert", response_model=M)["estimate"] == \
        pytest.approx(1 / 3)
    # discrimination of g: e1's physician response is left out, so no example is left
    assert math.isnan(stats_row(stats, "discrimination", "g", response_model=M)["estimate"])
    # discrimination of expert still rests on e1 (its physician verdicts are determined)
    assert stats_row(stats, "discrimination", "expert", response_model=M)["estimate"] == 1.0
    uses = {entry["use"] for entry in inputs.undetermined}
    assert {"panel: response left out", "panel panel3: example left out",
            "degradation: response left out", "physician: response left out",
            "discrimination: response left out"} <= uses


def test_similarity_by_criterion_and_tables_a6_a7(analysed):
    inputs, out = analysed
    by = A.similarity_by_criterion(A.Lookup(build_inputs()), "g")
    table = {(r.example_id, r.generated_id): (r.passed, r.max_similarity)
             for r in by.itertuples(index=False)}
    # m's original on g: e1 [0,1], e2 [0,0]; row maxima e1 (9, 6), e2 (0, 9)
    assert table == {("e1", 0): (0, 9), ("e1", 1): (1, 6), ("e2", 0): (0, 0), ("e2", 1): (0, 9)}
    stats = out["stats"]
    assert stats_row(stats, "max_similarity_pass", "g")["estimate"] == pytest.approx(6.0)
    assert stats_row(stats, "max_similarity_fail", "g")["estimate"] == pytest.approx(18 / 3)
    cut = out["cutoffs"]
    at7 = cut[(cut["generator"] == "g") & (cut["cutoff"] == 7)]
    # passing: (6) -> 0% at >= 7; failing: (9, 0, 9) -> 2/3
    assert at7[at7["passed"]]["share"].item() == pytest.approx(0.0)
    assert at7[~at7["passed"]]["share"].item() == pytest.approx(200 / 3)
    assert at7[~at7["passed"]]["n_criteria"].item() == 3


# --- criteria level --------------------------------------------------------------------------

def test_criterion_level_shares(analysed):
    _, out = analysed
    cats = out["categories"]

    def shares(row_kind, direction, target="g"):
        chosen = cats[(cats["row_kind"] == row_kind) & (cats["direction"] == direction)
                      & (cats["target_rubric"] == target) & (cats["generator"] == "g")]
        return {r.category: (r.share, r.n_criteria) for r in chosen.itertuples(index=False)}

    # gen->expert "+": e1 G0 expert [0,0,1] -> [1,1,1]: 2 moved 0->1 -> general
    #                  e2 G0 [0,1,0] -> [1,1,1]: 2 -> general; e2 G1 [0,1,0] -> [1,1,0]: 1 -> matched
    plus = shares("gen->expert", "+")
    assert plus["irrelevant"] == (pytest.approx(0.0), 3)
    assert plus["matched"] == (pytest.approx(100 / 3), 3)
    assert plus["general"] == (pytest.approx(200 / 3), 3)
    # gen->expert "-": e1 G1 [0,0,1] -> [0,0,0]: c2 1->0 -> matched
    assert shares("gen->expert", "-")["matched"] == (pytest.approx(100.0), 1)
    # within g "+", leaving the target out: e1 G0 other c1 starts at 1 -> none;
    #   e2 G0 other c1 0->0 -> none; e2 G1 other c0 0->1 -> one
    within = shares("within", "+")
    assert within["none"] == (pytest.approx(200 / 3), 3)
    assert within["one"] == (pytest.approx(100 / 3), 3)
    assert within["several"] == (pytest.approx(0.0), 3)
    # no criterion edit targets the expert rubric here
    assert cats[cats["target_rubric"] == "expert"].empty


def test_criterion_level_survives_an_undetermined_target_on_its_own_edit():
    inputs = build_inputs(overrides={(cedit("e2", "g", 1, "+"), "g"): [1, -1]})
    cats = A.criterion_level(A.Lookup(inputs), M)
    assert not cats.empty
    # the edit whose target is undetermined on its own edit is left out of "within", and listed
    assert [e["use"] for e in inputs.undetermined] == ["Figure 6 within g -> g"]


def test_criterion_level_lists_undetermined_measured_criteria():
    inputs = build_inputs(overrides={(cedit("e2", "g", 1, "+"), "expert"): [1, -1, 0]})
    look = A.Lookup(inputs)
    cats = A.criterion_level(look, M)
    # the left-out criterion was at 1 already, so the category is unchanged (matched) ...
    plus = cats[(cats["row_kind"] == "gen->expert") & (cats["direction"] == "+")]
    assert plus.set_index("category")["share"]["matched"] == pytest.approx(100 / 3)
    # ... and it is listed
    assert len(inputs.undetermined) == 1


# --- Table A.9 -------------------------------------------------------------------------------

def test_edit_size_row_for_generated_pass_rubric_edits(analysed):
    _, out = analysed
    sizes = out["edit_sizes"]
    row = sizes[(sizes["level"] == "rubric") & (sizes["target"] == "generated")
                & (sizes["direction"] == "+")]
    assert len(row) == 1
    row = row.iloc[0]
    assert row["measured"] == "expert"
    assert row["n_interventions"] == 2
    # e1 "a b c d" -> "a b x d e": c->x (1 + 1) + insert e (1) = 3; |R'|/|R| = 5/4
    # e2 six words -> first three: 3 deleted = 3; |R'|/|R| = 3/6
    # targeted: all of g's criteria: e1 2 + 3 words, e2 2 + 4 words = 11 words over 4 criteria
    assert row["mean_edit_words"] == pytest.approx(3.0)
    assert row["mean_length_ratio"] == pytest.approx((1.25 + 0.5) / 2)
    assert row["mean_criterion_words"] == pytest.approx(11 / 4)
    assert row["edit_words_per_criterion_word"] == pytest.approx(6 / 11)
    # one row per (level, target, direction) present: rubric x 2 targets x 2 directions,
    # criterion edits only target g (+ and -)
    assert len(sizes) == 6


# --- paired differences ----------------------------------------------------------------------

def test_two_generators_get_a_paired_difference_row():
    overrides = {
        # h's R_{+Ch}, measured on expert: e1 [0,0,1] -> [1,1,1]: g 3-1 = 2, h 2
        #                                  e2 [0,1,0] -> [1,1,0]: g 2-1 = 1, h 2
        (redit("e1", "h", "+"), "expert"): [1, 1, 1],
        (redit("e2", "h", "+"), "expert"): [1, 1, 0],
    }
    out = A.analyse(build_inputs(generators=("g", "h"), overrides=overrides, B=30))
    stats = out["stats"]
    g = stats_row(stats, "Q+(Cg->C*)", "g", family="it")["estimate"]
    h = stats_row(stats, "Q+(Cg->C*)", "h", family="it")["estimate"]
    assert g == pytest.approx(0.5)                  # (0 + 2)/(2 + 2)
    assert h == pytest.approx(0.75)                 # (2 + 1)/(2 + 2)
    diff = stats_row(stats, "Q+(Cg->C*)", "g", generator_b="h", family="it")
    assert diff["estimate"] == pytest.approx(g - h) == pytest.approx(-0.25)
    # no reverse row, and a difference row for an existing approach too (identical inputs -> 0)
    assert stats[(stats["generator"] == "h") & (stats["generator_b"] == "g")].empty
    assert stats_row(stats, "llm_matching_f1", "g", generator_b="h")["estimate"] == \
        pytest.approx(0.0)
