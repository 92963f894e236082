import difflib

import numpy as np
import pandas as pd
import pytest

from rubriclab.stats.bootstrap import difference
from rubriclab.transfer.edits import (
    edit_size_row,
    length_ratio,
    max_similarity_by_criterion,
    mean_max_similarity,
    share_at_or_above,
    similarity_records,
    word_edit_size,
    words,
)
from rubriclab.transfer.metrics import micro_average, micro_average_statistic


# --- Table A.9 ----------------------------------------------------------------------------

@pytest.mark.parametrize("original, perturbed, expected", [
    ("the cat sat", "the dog sat", 2),                            # one word replaced: 1 + 1
    ("take one pill", "take one pill daily with food", 3),       # 3 inserted
    ("do not stop the medicine", "stop the medicine", 2),        # 2 deleted
    ("a b c d", "a x c d e", 3),                                  # b -> x (2) + e inserted (1)
    ("a  b\nc", "a b c", 0),                                      # only whitespace differs
    ("see a doctor", "see a doctor", 0),
    ("rest and fluids", "", 3),                                   # everything deleted
])
def test_word_edit_size(original, perturbed, expected):
    assert word_edit_size(original, perturbed) == expected


def test_word_edit_size_does_not_junk_frequent_words_in_long_responses():
    original = " ".join(["Drink water daily ."] * 60)  # 240 words, each word 25% of them
    perturbed = "Please " + original
    # one word inserted: 1. difflib's default autojunk (over 200 words, every word here in
    # more than 1% of them) leaves nothing to match and reports all 240 + 241 words.
    assert word_edit_size(original, perturbed) == 1
    junked = difflib.SequenceMatcher(None, words(original), words(perturbed))
    assert sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in junked.get_opcodes()
               if tag != "equal") == 481


def test_length_ratio():
    assert length_ratio("a b c d", "a b") == pytest.approx(0.5)      # 2 / 4
    assert length_ratio("a b", "a b c") == pytest.approx(1.5)        # 3 / 2
    with pytest.raises(ValueError, match="no words"):
        length_ratio("   ", "a")


def test_edit_size_row_sums_over_the_row_for_the_normalisation():
    interventions = pd.DataFrame({
        "original": ["the cat sat", "a b c d"],
        "perturbed": ["the dog sat", "a b"],
        "targeted_criteria": [["mentions the dog"], ["one two", "three four five six"]],
    })
    row = edit_size_row(interventions)
    # edit words 2 and 2; criterion words 3, 2, 4; length ratios 1 and 0.5
    assert row["n_interventions"] == 2
    assert row["mean_criterion_words"] == pytest.approx(3.0)            # (3 + 2 + 4) / 3
    assert row["mean_edit_words"] == pytest.approx(2.0)                 # (2 + 2) / 2
    assert row["edit_words_per_criterion_word"] == pytest.approx(4 / 9)  # (2 + 2) / (3 + 2 + 4)
    assert row["mean_length_ratio"] == pytest.approx(0.75)              # (1 + 0.5) / 2
    with pytest.raises(ValueError, match="non-empty list"):
        edit_size_row(interventions.assign(targeted_criteria=["a criterion", ["x"]]))


# --- Tables A.6 and A.7 -------------------------------------------------------------------

SIMILARITIES = pd.DataFrame([
    ("e1", "g1", "x1", 7), ("e1", "g1", "x2", 3),
    ("e1", "g2", "x1", 2), ("e1", "g2", "x2", 5),
    ("e2", "g1", "x1", 9),
    ("e2", "g2", "x1", 1),
], columns=["example_id", "generated_id", "expert_id", "similarity"])
VERDICTS = pd.DataFrame([("e1", "g1", 1), ("e1", "g2", 0), ("e2", "g1", 1), ("e2", "g2", 0)],
                        columns=["example_id", "generated_id", "passed"])


def test_max_similarity_split_by_initial_status():
    by_criterion = max_similarity_by_criterion(SIMILARITIES, VERDICTS)
    # best matches: e1 g1 7, e1 g2 5, e2 g1 9, e2 g2 1
    assert by_criterion["max_similarity"].tolist() == [7, 5, 9, 1]
    table = mean_max_similarity(by_criterion)
    # passing (7 + 9)/2 = 8, failing (5 + 1)/2 = 3, difference 5
    assert (table["passing"], table["failing"], table["difference"]) == pytest.approx((8, 3, 5))
    shares = share_at_or_above(by_criterion, [5, 8])
    # passing {7, 9}: >= 5 both (100%), >= 8 one (50%); failing {5, 1}: >= 5 one (50%), >= 8 none
    assert shares["passing_pct"].tolist() == pytest.approx([100, 50])
    assert shares["failing_pct"].tolist() == pytest.approx([50, 0])


def test_similarity_records_give_the_pooled_means_and_their_paired_difference():
    by_criterion = max_similarity_by_criterion(SIMILARITIES, VERDICTS)
    passing, failing = similarity_records(by_criterion, 1), similarity_records(by_criterion, 0)
    assert micro_average(passing) == pytest.approx(8.0)   # (7 + 9) / 2
    assert micro_average(failing) == pytest.approx(3.0)   # (5 + 1) / 2
    gap = difference(micro_average_statistic(passing, ["e1", "e2"]),
                     micro_average_statistic(failing, ["e1", "e2"]))
    # draw e2 twice: passing 9, failing 1 -> 8
    assert gap(np.array([1, 1])) == pytest.approx(8.0)


def test_max_similarity_refuses_unmatched_criteria():
    with pytest.raises(ValueError, match=r"without an initial verdict.*'g2'"):
        max_similarity_by_criterion(SIMILARITIES, VERDICTS.iloc[:3])
    extra = pd.concat([VERDICTS, pd.DataFrame([("e2", "g3", 1)], columns=VERDICTS.columns)])
    with pytest.raises(ValueError, match=r"without similarity scores.*'g3'"):
        max_similarity_by_criterion(SIMILARITIES, extra)
    with pytest.raises(ValueError, match="integer 0..9"):
        max_similarity_by_criterion(SIMILARITIES.assign(similarity=11), VERDICTS)
