import math

import numpy as np
import pandas as pd
import pytest

from rubriclab.stats.bootstrap import (
    paired_bootstrap, percentile_interval, ratio_bootstrap, resample_indices,
)

# Eight units (items), three ratio statistics over them, as the carry rates use:
#   s0: passed / correct   (numerator counts, denominator 0/1 membership)
#   s1: caught / flawed
#   s2: a rare group (only unit 7 is a member): undefined on draws without unit 7
NUMERATORS = np.array([
    [1, 0, 0],
    [0, 0, 0],
    [1, 0, 0],
    [0, 1, 0],
    [0, 1, 0],
    [0, 0, 0],
    [0, 1, 0],
    [0, 1, 1],
])
DENOMINATORS = np.array([
    [1, 0, 0],
    [1, 0, 0],
    [1, 0, 0],
    [0, 1, 0],
    [0, 1, 0],
    [0, 1, 0],
    [0, 1, 0],
    [0, 1, 1],
])


def ratio_statistic(column: int):
    def statistic(indices):
        denominator = DENOMINATORS[indices, column].sum()
        if denominator == 0:
            return None
        return NUMERATORS[indices, column].sum() / denominator
    return statistic


@pytest.mark.parametrize("B, seed", [(200, 0), (57, 11), (1, 3)])
def test_ratio_bootstrap_equals_paired_bootstrap_with_ratio_functions(B, seed):
    ratios = ratio_bootstrap(NUMERATORS, DENOMINATORS, B=B, seed=seed)
    paired = paired_bootstrap(8, {f"s{k}": ratio_statistic(k) for k in range(3)}, B=B, seed=seed)
    assert list(ratios.columns) == ["estimate", "low", "high", "n_used", "B"]
    assert len(ratios) == 3
    for column in ("estimate", "low", "high", "n_used", "B"):
        np.testing.assert_allclose(ratios[column].to_numpy(dtype=float),
                                   paired[column].to_numpy(dtype=float),
                                   rtol=0, atol=1e-12, equal_nan=True, err_msg=column)


def test_point_estimates_are_the_full_sample_ratios():
    ratios = ratio_bootstrap(NUMERATORS, DENOMINATORS, B=50, seed=0)
    # s0: units 0, 2 pass of correct units 0, 1, 2 -> 2/3
    # s1: units 3, 4, 6, 7 caught of flawed units 3..7 -> 4/5
    # s2: unit 7 of unit 7 -> 1
    assert ratios["estimate"].tolist() == pytest.approx([2 / 3, 4 / 5, 1.0])
    assert (ratios["B"] == 50).all()


def test_zero_denominator_draws_are_left_out_of_that_statistic_only():
    B, seed = 300, 5
    ratios = ratio_bootstrap(NUMERATORS, DENOMINATORS, B=B, seed=seed)
    draws = list(resample_indices(8, B, seed))
    with_unit_7 = sum(7 in draw for draw in draws)
    with_a_correct_unit = sum(bool(set(draw) & {0, 1, 2}) for draw in draws)
    # P(no unit 7 in 8 draws) = (7/8)^8 ~ 0.34, so about 100 of 300 draws miss it.
    assert 0 < with_unit_7 < B
    assert ratios.loc[2, "n_used"] == with_unit_7
    assert ratios.loc[0, "n_used"] == with_a_correct_unit
    # s2 is 1 wherever it is defined
    assert ratios.loc[2, ["low", "high"]].tolist() == [1.0, 1.0]


def test_statistic_undefined_on_every_draw_and_on_the_full_sample():
    numerators = np.zeros((4, 2))
    denominators = np.column_stack([np.ones(4), np.zeros(4)])
    ratios = ratio_bootstrap(numerators, denominators, B=20, seed=0)
    assert ratios.loc[0].tolist()[:4] == [0.0, 0.0, 0.0, 20]
    assert math.isnan(ratios.loc[1, "estimate"])
    assert math.isnan(ratios.loc[1, "low"]) and math.isnan(ratios.loc[1, "high"])
    assert ratios.loc[1, "n_used"] == 0


def test_intervals_are_percentiles_of_the_replicate_ratios():
    B, seed = 100, 2
    replicates = []
    for draw in resample_indices(8, B, seed):
        replicates.append(NUMERATORS[draw, 1].sum() / DENOMINATORS[draw, 1].sum()
                          if DENOMINATORS[draw, 1].sum() else math.nan)
    low, high, n_used = percentile_interval(np.array(replicates), 0.9)
    ratios = ratio_bootstrap(NUMERATORS, DENOMINATORS, B=B, seed=seed, level=0.9)
    assert ratios.loc[1, ["low", "high", "n_used"]].tolist() == [low, high, n_used]


@pytest.mark.parametrize("numerators, denominators", [
    (np.zeros((4, 2)), np.zeros((4, 3))),    # different number of statistics
    (np.zeros((4, 2)), np.zeros((5, 2))),    # different number of units
    (np.zeros(4), np.zeros(4)),              # 1-D
    (np.zeros((2, 2, 2)), np.zeros((2, 2, 2))),
])
def test_shape_mismatch_raises(numerators, denominators):
    with pytest.raises(ValueError, match="same shape"):
        ratio_bootstrap(numerators, denominators, B=10, seed=0)


def test_bad_level_raises():
    with pytest.raises(ValueError, match="level"):
        ratio_bootstrap(NUMERATORS, DENOMINATORS, B=10, seed=0, level=1.0)


def test_accepts_boolean_arrays_as_the_carry_rates_pass_them():
    ratios_bool = ratio_bootstrap(NUMERATORS.astype(bool), DENOMINATORS.astype(bool),
                                  B=40, seed=9)
    ratios_int = ratio_bootstrap(NUMERATORS, DENOMINATORS, B=40, seed=9)
    pd.testing.assert_frame_equal(ratios_bool, ratios_int)
