import math

import numpy as np
import pandas as pd
import pytest

from rubriclab.transfer.baselines import (
    cosine_similarity_matrix,
    degradation_drop,
    discrimination_rate,
    embedding_matching_records,
    embedding_matching_scores,
    kendall_tau_b,
    llm_matching_records,
    llm_matching_scores,
    mean_statistic,
    pairwise_accuracy,
    panel_records,
    panel_summary,
    pass_fractions,
    physician_correlation,
    physician_correlation_statistic,
    similarity_matrices,
    spearman_rho,
    top1_consistency,
)


# --- Algorithm 2 --------------------------------------------------------------------------

def test_llm_matching_keeps_each_criterion_best_match_without_threshold():
    similarity = np.array([[9, 0, 3],
                           [0, 0, 0]])  # 2 generated x 3 expert
    scores = llm_matching_scores(similarity, "e1")
    # P = mean(row maxima 9, 0) / 9 = 4.5 / 9 = 1/2
    # R = mean(column maxima 9, 0, 3) / 9 = 4 / 9
    # F1 = 2 (1/2)(4/9) / (1/2 + 4/9) = (4/9) / (17/18) = 8/17
    assert scores.precision == pytest.approx(1 / 2)
    assert scores.recall == pytest.approx(4 / 9)
    assert scores.f1 == pytest.approx(8 / 17)


def test_llm_matching_f1_is_zero_when_nothing_matches():
    scores = llm_matching_scores(np.zeros((2, 2), dtype=int), "e1")
    assert (scores.precision, scores.recall, scores.f1) == (0.0, 0.0, 0.0)


def test_llm_matching_refuses_empty_rubrics_and_bad_scores():
    with pytest.raises(ValueError, match=r"'e7'.*empty generated rubric"):
        llm_matching_scores(np.zeros((0, 3)), "e7")
    with pytest.raises(ValueError, match=r"'e7'.*empty expert rubric"):
        llm_matching_scores(np.zeros((3, 0)), "e7")
    with pytest.raises(ValueError, match=r"integer 0..9.*generated 1, expert 0"):
        llm_matching_scores(np.array([[9, 0], [10, 0]]), "e7")
    with pytest.raises(ValueError, match="integer 0..9"):
        llm_matching_scores(np.array([[4.5]]), "e7")


def test_llm_matching_means_over_examples_from_a_long_table():
    table = pd.DataFrame([
        ("e1", "g1", "x1", 9), ("e1", "g1", "x2", 0), ("e1", "g1", "x3", 3),
        ("e1", "g2", "x1", 0), ("e1", "g2", "x2", 0), ("e1", "g2", "x3", 0),
        ("e2", "g1", "x1", 9),
    ], columns=["example_id", "generated_id", "expert_id", "similarity"])
    records = llm_matching_records(similarity_matrices(table, ["e1", "e2"]))
    # e1 as above (P 1/2, R 4/9, F1 8/17); e2 a perfect match (1, 1, 1)
    assert records.loc["e2"].tolist() == [1.0, 1.0, 1.0]
    # means over examples: P (1/2 + 1)/2 = 3/4, R (4/9 + 1)/2 = 13/18, F1 (8/17 + 1)/2 = 25/34
    assert records.mean().tolist() == pytest.approx([3 / 4, 13 / 18, 25 / 34])
    with pytest.raises(ValueError, match=r"'e3': no similarity rows"):
        similarity_matrices(table, ["e1", "e2", "e3"])
    with pytest.raises(ValueError, match=r"'e1': no score for.*\('g2', 'x3'\)"):
        similarity_matrices(table.drop(index=5), ["e1", "e2"])


# --- embedding matching -------------------------------------------------------------------

GENERATED = np.array([[3.0, 0.0], [0.0, 2.0]])            # unit directions (1,0), (0,1)
EXPERT = np.array([[5.0, 0.0], [0.6, 0.8], [-1.0, 0.0]])  # cos with g1: 1, 0.6, -1; g2: 0, 0.8, 0


def test_cosine_is_computed_from_raw_vectors():
    expected = np.array([[1.0, 0.6, -1.0],
                         [0.0, 0.8, 0.0]])
    assert np.allclose(cosine_similarity_matrix(GENERATED, EXPERT), expected)


def test_embedding_matching_thresholds_cosine_at_tau():
    scores = embedding_matching_scores(GENERATED, EXPERT)
    # tau 0.7: matches g1-x1 (1.0), g2-x2 (0.8). P = 2/2 = 1, R = 2/3, F1 = (4/3)/(5/3) = 0.8
    assert (scores.precision, scores.recall) == pytest.approx((1.0, 2 / 3))
    assert scores.f1 == pytest.approx(0.8)
    strict = embedding_matching_scores(GENERATED, EXPERT, tau=0.9)
    # tau 0.9: only g1-x1. P = 1/2, R = 1/3, F1 = (1/3)/(5/6) = 0.4
    assert (strict.precision, strict.recall, strict.f1) == pytest.approx((0.5, 1 / 3, 0.4))
    records = embedding_matching_records({"e1": (GENERATED, EXPERT)})
    assert records.loc["e1"].tolist() == pytest.approx([1.0, 2 / 3, 0.8])


def test_embedding_matching_refuses_zero_vectors():
    with pytest.raises(ValueError, match=r"'e4'.*expert criterion 1 has a zero embedding"):
        embedding_matching_scores(GENERATED, np.array([[1.0, 0.0], [0.0, 0.0]]), example_id="e4")
    with pytest.raises(ValueError, match="dimension"):
        cosine_similarity_matrix(GENERATED, np.ones((2, 3)), "e4")


# --- rank statistics ----------------------------------------------------------------------

def test_spearman_by_hand():
    # no ties: ranks [1,2,3,4] vs [1,3,2,4], sum d^2 = 2, rho = 1 - 6*2/(4*15) = 0.8
    assert spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    # ties: ranks x [1.5,1.5,3,4], y [1,2.5,2.5,4]; centred dx [-1,-1,.5,1.5], dy [-1.5,0,0,1.5]
    # sum dx dy = 1.5 + 2.25 = 3.75; sum dx^2 = sum dy^2 = 4.5; rho = 3.75/4.5 = 0.8333
    assert spearman_rho([1, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(3.75 / 4.5)
    assert math.isnan(spearman_rho([1, 1, 1], [1, 2, 3]))


def test_kendall_tau_b_by_hand():
    # pairs of [1,2,3,4] vs [1,3,2,4]: 5 concordant, 1 discordant (2nd, 3rd), no ties
    # tau_b = (5 - 1) / sqrt(6 * 6) = 2/3
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)
    # x [1,1,2,3], y [1,2,2,3]: (0,1) tied in x only, (1,2) tied in y only, 4 concordant
    # n_x = pairs not tied in x = 5, n_y = 5: tau_b = 4 / sqrt(5 * 5) = 0.8
    assert kendall_tau_b([1, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(0.8)
    # x [1,1,2], y [5,5,1]: (0,1) tied in both (in neither count), (0,2) and (1,2) discordant
    # tau_b = (0 - 2) / sqrt(2 * 2) = -1
    assert kendall_tau_b([1, 1, 2], [5, 5, 1]) == pytest.approx(-1.0)
    assert math.isnan(kendall_tau_b([1, 2, 3], [4, 4, 4]))


def test_top1_and_pairwise_accuracy_by_hand():
    # unique generated top (k=1) is not among the expert tops {2}: 0
    assert top1_consistency([0.1, 0.9, 0.3], [0.2, 0.8, 0.9]) == 0.0
    assert top1_consistency([0.1, 0.9, 0.3], [0.2, 0.9, 0.9]) == 1.0
    # generated tops {1, 2}, expert tops {1, 3}: one of two generated tops agrees -> 1/2
    assert top1_consistency([0.5, 0.9, 0.9, 0.1], [0.2, 0.8, 0.3, 0.8]) == pytest.approx(0.5)
    # pairs (0,1): -,- agree; (0,2): -,- agree; (1,2): tie vs - disagree -> 2/3
    assert pairwise_accuracy([0.1, 0.5, 0.5], [0.2, 0.4, 0.6]) == pytest.approx(2 / 3)
    # a pair tied under both counts as agreement: (0,1) tie,tie; (0,2) and (1,2) agree -> 1
    assert pairwise_accuracy([0.5, 0.5, 0.9], [0.2, 0.2, 0.4]) == 1.0


# --- Algorithm 3 --------------------------------------------------------------------------

def panel_frame(scores):
    rows = [(example, model, g, s)
            for example, (gen, exp) in scores.items()
            for model, g, s in zip(["m1", "m2", "m3"], gen, exp)]
    columns = ["example_id", "response_model", "generated_frac", "expert_frac"]
    return pd.DataFrame(rows, columns=columns)


PANEL = panel_frame({
    "e1": ([0.2, 0.4, 0.6], [0.1, 0.3, 0.2]),
    "e2": ([0.5, 0.5, 0.5], [0.1, 0.3, 0.2]),   # generated scores constant: left out
    "e3": ([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]),
    "e4": ([0.1, 0.2, 0.3], [0.25, 0.25, 0.25]),  # expert scores constant: left out
})


def test_panel_leaves_constant_score_vectors_out_of_the_mean():
    records = panel_records(PANEL)
    assert records["left_out"].tolist() == [False, True, False, True]
    # e1: ranks g [1,2,3], s* [1,3,2]: rho = 1 - 6*2/(3*8) = 0.5; pairs C, C, D: tau = 1/3;
    #     top g = m3, top s* = m2: top1 = 0; pairwise 2/3.   e3: identical orderings: all 1.
    assert records.loc["e1", ["spearman", "kendall_tau_b", "top1", "pairwise_accuracy"]].tolist() \
        == pytest.approx([0.5, 1 / 3, 0.0, 2 / 3])
    summary = panel_summary(records)
    # means over e1 and e3 only: rho (0.5 + 1)/2, tau (1/3 + 1)/2, top1 (0 + 1)/2,
    # pairwise (2/3 + 1)/2
    assert summary["spearman"] == pytest.approx(0.75)
    assert summary["kendall_tau_b"] == pytest.approx(2 / 3)
    assert summary["top1"] == pytest.approx(0.5)
    assert summary["pairwise_accuracy"] == pytest.approx(5 / 6)
    assert (summary["n_examples"], summary["n_left_out"]) == (4, 2)


def test_panel_requires_one_set_of_response_models():
    broken = PANEL[~((PANEL["example_id"] == "e3") & (PANEL["response_model"] == "m2"))]
    with pytest.raises(ValueError, match=r"example 'e3' has responses from \['m1', 'm3'\]"):
        panel_records(broken)
    with pytest.raises(ValueError, match=r"generated_frac must be a fraction.*'e1'"):
        panel_records(PANEL.assign(generated_frac=PANEL["generated_frac"] * 3))


def test_pass_fractions():
    verdicts = pd.DataFrame({"example_id": ["e1"] * 3 + ["e2"] * 2,
                             "passed": [1, 0, 1, 0, 0]})
    fractions = pass_fractions(verdicts, ["example_id"])
    assert fractions.to_dict() == pytest.approx({"e1": 2 / 3, "e2": 0.0})
    with pytest.raises(ValueError, match="passed must be 0 or 1"):
        pass_fractions(verdicts.assign(passed=[1, 0, 1, 0, 3]), ["example_id"])


# --- physician responses, discrimination, Table A.5 ----------------------------------------

PHYSICIAN = pd.DataFrame({"example_id": ["e1", "e2", "e3", "e4"],
                          "generated_frac": [0.1, 0.5, 0.3, 0.9],
                          "expert_frac": [0.2, 0.4, 0.6, 0.8]})


def test_physician_correlation_across_examples():
    # ranks g [1,3,2,4], s* [1,2,3,4]: sum d^2 = 2, rho = 1 - 12/60 = 0.8
    assert physician_correlation(PHYSICIAN) == pytest.approx(0.8)
    # the bootstrap statistic over all examples, e0 having no physician response
    statistic = physician_correlation_statistic(PHYSICIAN, ["e0", "e1", "e2", "e3", "e4"])
    assert statistic(np.arange(5)) == pytest.approx(0.8)
    assert statistic(np.array([0, 0, 1])) is None  # one physician example drawn: undefined
    with pytest.raises(ValueError, match="listed twice"):
        physician_correlation(pd.concat([PHYSICIAN, PHYSICIAN.head(1)]))


def test_discrimination_counts_strict_preference():
    scores = pd.DataFrame({"example_id": ["e1", "e2", "e3"],
                           "physician_frac": [0.8, 0.5, 0.3], "bad_frac": [0.4, 0.5, 0.6]})
    # e1 0.8 > 0.4 yes; e2 tie no; e3 no -> 1/3
    assert discrimination_rate(scores) == pytest.approx(1 / 3)


def test_degradation_drop_is_the_mean_fall_in_expert_score():
    scores = pd.DataFrame({"example_id": ["e1", "e2"],
                           "original_frac": [0.8, 0.6], "degraded_frac": [0.5, 0.6]})
    # drops 0.3 and 0.0 -> mean 0.15
    assert degradation_drop(scores) == pytest.approx(0.15)


def test_mean_statistic_aligns_and_refuses_missing_examples():
    values = pd.Series([1.0, np.nan, 0.0], index=["e1", "e2", "e3"])
    statistic = mean_statistic(values, ["e3", "e2", "e1"])
    # positions 0, 2, 2 -> e3, e1, e1 -> (0 + 1 + 1)/3; position 1 is e2, undefined
    assert statistic(np.array([0, 2, 2])) == pytest.approx(2 / 3)
    assert statistic(np.array([1, 1])) is None
    with pytest.raises(ValueError, match=r"lack examples \['e4'\]"):
        mean_statistic(values, ["e1", "e2", "e3", "e4"])
    subset = mean_statistic(values, ["e1", "e2", "e3", "e4"], allow_absent=True)
    assert subset(np.array([3, 0])) == pytest.approx(1.0)
