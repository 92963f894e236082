import math

import numpy as np
import pandas as pd
import pytest

from rubriclab.stats.bootstrap import difference, paired_bootstrap, replicate_values
from rubriclab.transfer.metrics import (
    MOVEMENT_CATEGORIES,
    REDUNDANCY_CATEGORIES,
    align_records,
    category_records,
    category_shares,
    end_states,
    micro_average,
    micro_average_statistic,
    moved_counts,
    redundancy_categories,
    transfer_categories,
    transfer_q,
    transfer_records,
)


def verdict_table(rows):
    return pd.DataFrame(rows, columns=["example_id", "criterion_id", "before", "after"])


def single_table(rows):
    columns = ["example_id", "target_id", "criterion_id", "before", "after"]
    return pd.DataFrame(rows, columns=columns)


# --- Equation 1 / Algorithm 1 ------------------------------------------------------------

PASS_VERDICTS = verdict_table([
    ("e1", "m1", 0, 1),  # moved 0 -> 1
    ("e1", "m2", 0, 0),  # could move, did not
    ("e1", "m3", 1, 0),  # moved the WRONG way: nets out m1
    ("e1", "m4", 1, 1),  # already at b, stays
    ("e2", "m1", 0, 1),
    ("e2", "m2", 0, 1),
    ("e2", "m3", 0, 0),
])


def test_end_states_follow_equation_1():
    assert end_states("+") == (0, 1)
    assert end_states("-") == (1, 0)
    with pytest.raises(ValueError, match="direction"):
        end_states("up")


def test_pass_records_net_out_a_criterion_moving_the_wrong_way():
    records = transfer_records(PASS_VERDICTS, "+")
    # e1: g = #after==1 (m1, m4) - #before==1 (m3, m4) = 2 - 2 = 0; h = #before==0 (m1, m2) = 2
    # e2: g = 2 - 0 = 2;                                          h = 3
    assert records.loc["e1"].tolist() == [0, 2]
    assert records.loc["e2"].tolist() == [2, 3]
    assert list(records.index) == ["e1", "e2"]


def test_pass_q_is_a_micro_average_over_examples():
    # Q+ = (0 + 2) / (2 + 3) = 0.4; without netting m3 it would be (1 + 2) / 5 = 0.6,
    # and a macro-average would be (0/2 + 2/3) / 2 = 0.333...
    assert transfer_q(PASS_VERDICTS, "+") == pytest.approx(0.4)


def test_fail_q_nets_out_a_criterion_moving_the_wrong_way():
    verdicts = verdict_table([
        ("e1", "m1", 1, 0),  # moved 1 -> 0
        ("e1", "m2", 1, 1),  # could move, did not
        ("e1", "m3", 0, 1),  # wrong way: nets out m1
        ("e1", "m4", 0, 0),
        ("e2", "m1", 1, 0),
        ("e2", "m2", 1, 0),
        ("e2", "m3", 1, 1),
    ])
    records = transfer_records(verdicts, "-")
    # e1: g = #after==0 (m1, m4) - #before==0 (m3, m4) = 0; h = #before==1 (m1, m2) = 2
    # e2: g = 2 - 0 = 2; h = 3.  Q- = 2 / 5 = 0.4
    assert records.loc["e1"].tolist() == [0, 2]
    assert records.loc["e2"].tolist() == [2, 3]
    assert transfer_q(verdicts, "-") == pytest.approx(0.4)


def test_q_can_be_negative_and_is_undefined_without_any_criterion_at_a():
    only_losses = verdict_table([("e1", "m1", 0, 0), ("e1", "m2", 1, 0)])
    # g = #after==1 (0) - #before==1 (1) = -1; h = 1  ->  Q+ = -1
    assert transfer_q(only_losses, "+") == pytest.approx(-1.0)
    all_at_b = verdict_table([("e1", "m1", 1, 1), ("e1", "m2", 1, 0)])
    assert math.isnan(transfer_q(all_at_b, "+"))  # h = 0: nothing could move


def test_bad_verdicts_raise_naming_the_criterion():
    with pytest.raises(ValueError, match=r"before must be 0 or 1.*'m2'"):
        transfer_records(verdict_table([("e1", "m1", 0, 1), ("e1", "m2", 2, 1)]), "+")
    with pytest.raises(ValueError, match=r"more than one verdict.*'m1'"):
        transfer_records(verdict_table([("e1", "m1", 0, 1), ("e1", "m1", 0, 0)]), "+")
    with pytest.raises(ValueError, match="lack column"):
        transfer_records(PASS_VERDICTS.drop(columns="after"), "+")
    with pytest.raises(ValueError, match="after must be 0 or 1"):
        transfer_records(verdict_table([("e1", "m1", 0, None)]), "+")


def test_align_records_refuses_mismatched_examples():
    records = transfer_records(PASS_VERDICTS, "+")
    assert list(align_records(records, ["e2", "e1"]).index) == ["e2", "e1"]
    with pytest.raises(ValueError, match="lack examples.*'e3'"):
        align_records(records, ["e1", "e2", "e3"])
    with pytest.raises(ValueError, match="not in the order.*'e2'"):
        align_records(records, ["e1"])


# --- Algorithm 4 with the per-example records ---------------------------------------------

def random_verdicts(seed, n_examples=12):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_examples):
        before = rng.integers(0, 2, size=rng.integers(3, 9))
        before[0] = 0  # every example has a criterion that could move: h_i > 0
        after = np.where(rng.random(before.size) < 0.4, 1 - before, before)
        rows += [(f"e{i}", f"m{j}", int(b), int(a)) for j, (b, a) in enumerate(zip(before, after))]
    return verdict_table(rows)


def test_paired_difference_uses_the_same_resamples_and_matches_a_plain_loop():
    records_a = transfer_records(random_verdicts(1), "+")
    records_b = transfer_records(random_verdicts(2), "+")
    examples = list(records_a.index)
    q_a = micro_average_statistic(records_a, examples)
    q_b = micro_average_statistic(records_b, examples)
    statistics = {"A": q_a, "B": q_b, "A-B": difference(q_a, q_b)}
    B, seed = 200, 0

    replicates = replicate_values(len(examples), statistics, B=B, seed=seed)
    assert np.array_equal(replicates["A-B"].to_numpy(),
                          replicates["A"].to_numpy() - replicates["B"].to_numpy())

    # Reference: Algorithm 4 written out with the generator documented in bootstrap.py.
    num_a, den_a = records_a["numerator"].to_numpy(), records_a["denominator"].to_numpy()
    num_b, den_b = records_b["numerator"].to_numpy(), records_b["denominator"].to_numpy()
    rng = np.random.default_rng(seed)
    ref = {"A": [], "B": [], "A-B": []}
    for _ in range(B):
        draw = rng.integers(0, len(examples), size=len(examples))
        a = num_a[draw].sum() / den_a[draw].sum()
        b = num_b[draw].sum() / den_b[draw].sum()
        ref["A"].append(a), ref["B"].append(b), ref["A-B"].append(a - b)
    assert np.allclose(replicates["A"].to_numpy(), ref["A"])

    table = paired_bootstrap(len(examples), statistics, B=B, seed=seed).set_index("statistic")
    assert table.loc["A", "estimate"] == pytest.approx(micro_average(records_a))
    assert table.loc["A-B", "estimate"] == pytest.approx(
        micro_average(records_a) - micro_average(records_b))
    for name in statistics:
        low, high = np.percentile(ref[name], [2.5, 97.5])
        assert table.loc[name, "low"] == pytest.approx(low)
        assert table.loc[name, "high"] == pytest.approx(high)
        assert table.loc[name, "n_used"] == B
    # The paired interval is not the difference of the two marginal intervals.
    assert table.loc["A-B", "low"] != pytest.approx(table.loc["A", "low"] - table.loc["B", "low"])


def test_micro_average_statistic_is_undefined_on_a_draw_without_denominator():
    records = pd.DataFrame({"numerator": [1, -1], "denominator": [2, 0]}, index=["e1", "e2"])
    statistic = micro_average_statistic(records, ["e1", "e2"])
    assert statistic(np.array([1, 1])) is None
    # draw e1, e2, e1: (1 - 1 + 1) / (2 + 0 + 2) = 0.25
    assert statistic(np.array([0, 1, 0])) == pytest.approx(0.25)


# --- Figure 6 -----------------------------------------------------------------------------

BETWEEN = single_table([
    # t1: nothing moves -> irrelevant
    ("e1", "t1", "m1", 0, 0), ("e1", "t1", "m2", 0, 0), ("e1", "t1", "m3", 1, 1),
    # t2: m1 moves 0 -> 1 -> matched
    ("e1", "t2", "m1", 0, 1), ("e1", "t2", "m2", 0, 0), ("e1", "t2", "m3", 1, 1),
    # t3: m1 and m2 move 0 -> 1 (m3's 1 -> 0 is against the direction) -> general
    ("e1", "t3", "m1", 0, 1), ("e1", "t3", "m2", 0, 1), ("e1", "t3", "m3", 1, 0),
    # t4: only a move against the direction -> irrelevant
    ("e1", "t4", "m1", 0, 0), ("e1", "t4", "m2", 0, 0), ("e1", "t4", "m3", 1, 0),
])


def test_between_rubric_categories_count_moves_in_the_intervention_direction():
    categories = transfer_categories(BETWEEN, "+")
    assert categories["n_moved"].tolist() == [0, 1, 2, 0]
    assert categories["category"].tolist() == ["irrelevant", "matched", "general", "irrelevant"]
    shares = category_shares(categories)
    # 2 of 4 irrelevant = 50%, 1 of 4 matched = 25%, 1 of 4 general = 25%
    assert shares[list(MOVEMENT_CATEGORIES)].iloc[0].tolist() == pytest.approx([50, 25, 25])
    assert shares["n_criteria"].tolist() == [4]


def test_fail_direction_counts_moves_from_one_to_zero():
    flipped = BETWEEN.assign(before=1 - BETWEEN["before"], after=1 - BETWEEN["after"])
    # the same moves mirrored: t1 0, t2 1, t3 2, t4 0 criteria go 1 -> 0
    assert moved_counts(flipped, "-")["n_moved"].tolist() == [0, 1, 2, 0]
    # ... and in the '+' direction the mirrored table moves t3's m3 and t4's m3 only
    assert moved_counts(flipped, "+")["n_moved"].tolist() == [0, 0, 1, 1]


WITHIN = single_table([
    # rubric r1..r5 on R: r1-r4 fail (0), r5 passes (1); each row block is one R_{+c}
    ("e1", "r1", "r1", 0, 1), ("e1", "r1", "r2", 0, 0), ("e1", "r1", "r3", 0, 0),
    ("e1", "r1", "r4", 0, 0), ("e1", "r1", "r5", 1, 1),
    ("e1", "r2", "r1", 0, 1), ("e1", "r2", "r2", 0, 1), ("e1", "r2", "r3", 0, 0),
    ("e1", "r2", "r4", 0, 0), ("e1", "r2", "r5", 1, 1),
    ("e1", "r3", "r1", 0, 1), ("e1", "r3", "r2", 0, 1), ("e1", "r3", "r3", 0, 1),
    ("e1", "r3", "r4", 0, 0), ("e1", "r3", "r5", 1, 0),
    ("e1", "r4", "r1", 0, 0), ("e1", "r4", "r2", 0, 0), ("e1", "r4", "r3", 0, 0),
    ("e1", "r4", "r4", 0, 0), ("e1", "r4", "r5", 1, 1),
])


def test_redundancy_leaves_the_target_itself_out():
    categories = redundancy_categories(WITHIN, "+")
    # r1: only itself moves -> 0 others -> none (counting itself would say "one")
    # r2: r1 moves besides itself -> one;  r3: r1 and r2 move -> several (r5 went 1 -> 0)
    # r4: nothing moves, not even itself -> none
    assert categories["n_moved"].tolist() == [0, 1, 2, 0]
    assert categories["category"].tolist() == ["none", "one", "several", "none"]
    assert categories["target_moved"].tolist() == [True, True, True, False]
    shares = category_shares(categories)
    # none 2/4 = 50%, one 1/4 = 25%, several 1/4 = 25%
    assert shares[list(REDUNDANCY_CATEGORIES)].iloc[0].tolist() == pytest.approx([50, 25, 25])


def test_redundancy_checks_the_target_row_and_its_start():
    with pytest.raises(ValueError, match="own row"):
        redundancy_categories(WITHIN[WITHIN["criterion_id"] != WITHIN["target_id"]], "+")
    targeting_r5 = single_table([("e1", "r5", "r5", 1, 0), ("e1", "r5", "r1", 0, 0)])
    with pytest.raises(ValueError, match=r"start at 1"):
        redundancy_categories(targeting_r5, "+")


def test_original_verdicts_must_agree_across_targets():
    inconsistent = BETWEEN.copy()
    inconsistent.loc[0, "before"] = 1  # t1's m1 before differs from t2's m1 before
    with pytest.raises(ValueError, match=r"differs across targets.*'m1'"):
        transfer_categories(inconsistent, "+")


def test_shares_per_row_and_pooled_records():
    first = transfer_categories(BETWEEN, "+").assign(generator="A")
    second = transfer_categories(BETWEEN[BETWEEN["target_id"] == "t2"], "+").assign(generator="B")
    shares = category_shares(pd.concat([first, second], ignore_index=True), by=["generator"])
    assert shares["generator"].tolist() == ["A", "B"]
    # B has one criterion, matched: 0 / 100 / 0
    assert shares.loc[1, list(MOVEMENT_CATEGORIES)].tolist() == pytest.approx([0, 100, 0])
    assert shares["n_criteria"].tolist() == [4, 1]
    records = category_records(first, "irrelevant")
    # e1: 2 irrelevant of 4 criteria -> pooled share 0.5
    assert records.loc["e1"].tolist() == [2, 4]
    assert micro_average(records) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="unknown category"):
        category_records(first, "redundant")
