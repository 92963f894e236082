import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mstats

from rubriclab.stats import (
    BOOTSTRAP_COLUMNS,
    difference,
    paired_bootstrap,
    percentile_interval,
    replicate_values,
    resample_indices,
)

N = 30
RNG = np.random.default_rng(7)
SCORES_A = RNG.normal(0.6, 0.2, N)
SCORES_B = SCORES_A - 0.05 + RNG.normal(0, 0.05, N)  # paired with A: same examples


def mean_of(scores):
    return lambda indices: float(np.mean(scores[indices]))


def hand_rolled_draws(n_units, B, seed):
    """Algorithm 4's draws, written out independently of the module."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n_units, size=n_units) for _ in range(B)]


def linear_percentile(values, q):
    """Percentile by linear interpolation between order statistics (numpy's default, Hyndman
    and Fan's type 7), from scipy's own quantile code rather than numpy's."""
    return float(mstats.mquantiles(values, [q], alphap=1, betap=1)[0])


def test_every_statistic_sees_the_same_draw_in_each_replicate():
    seen = {"first": [], "second": [], "third": []}

    def recorder(name):
        def statistic(indices):
            seen[name].append(indices.copy())
            return float(len(indices))
        return statistic

    replicate_values(N, {name: recorder(name) for name in seen}, B=50, seed=3)
    assert all(len(draws) == 50 for draws in seen.values())
    for first, second, third in zip(seen["first"], seen["second"], seen["third"]):
        assert np.array_equal(first, second) and np.array_equal(first, third)
    reference = hand_rolled_draws(N, 50, 3)
    assert all(np.array_equal(drawn, ref) for drawn, ref in zip(seen["first"], reference))
    assert not all(np.array_equal(seen["first"][0], draw) for draw in seen["first"][1:])


def test_a_statistic_cannot_alter_the_shared_draw():
    def vandal(indices):
        indices[0] = 0
        return 0.0

    with pytest.raises(ValueError, match="read-only"):
        replicate_values(N, {"vandal": vandal}, B=2)


def test_paired_difference_per_replicate_equals_difference_of_statistics():
    stats = {"a": mean_of(SCORES_A), "b": mean_of(SCORES_B),
             "a - b": difference(mean_of(SCORES_A), mean_of(SCORES_B))}
    replicates = replicate_values(N, stats, B=200, seed=0)
    np.testing.assert_allclose(replicates["a - b"], replicates["a"] - replicates["b"],
                               rtol=0, atol=1e-15)
    summary = paired_bootstrap(N, stats, B=200, seed=0).set_index("statistic")
    # Pairing removes the shared example-to-example variation: the difference's interval is
    # much narrower than either statistic's.
    width = summary["high"] - summary["low"]
    assert width["a - b"] < 0.5 * min(width["a"], width["b"])


def test_intervals_equal_a_hand_rolled_reference():
    B, seed, level = 300, 11, 0.95
    summary = paired_bootstrap(N, {"a": mean_of(SCORES_A), "b": mean_of(SCORES_B)},
                               B=B, seed=seed, level=level).set_index("statistic")
    for name, scores in (("a", SCORES_A), ("b", SCORES_B)):
        values = [float(np.mean(scores[draw])) for draw in hand_rolled_draws(N, B, seed)]
        assert summary.loc[name, "estimate"] == pytest.approx(np.mean(scores), abs=1e-15)
        assert summary.loc[name, "low"] == pytest.approx(linear_percentile(values, 0.025),
                                                         abs=1e-12)
        assert summary.loc[name, "high"] == pytest.approx(linear_percentile(values, 0.975),
                                                          abs=1e-12)
        low, high = np.quantile(values, [0.025, 0.975])
        assert summary.loc[name, "low"] == pytest.approx(low, abs=1e-12)
        assert summary.loc[name, "high"] == pytest.approx(high, abs=1e-12)


def test_result_columns_order_and_counts():
    stats = {"b": mean_of(SCORES_B), "a": mean_of(SCORES_A)}
    summary = paired_bootstrap(N, stats, B=40, seed=0)
    assert list(summary.columns) == BOOTSTRAP_COLUMNS
    assert summary["statistic"].tolist() == ["b", "a"]
    assert summary["B"].tolist() == [40, 40] and summary["n_used"].tolist() == [40, 40]
    assert (summary["low"] <= summary["estimate"]).all()
    assert (summary["estimate"] <= summary["high"]).all()


def test_undefined_statistic_is_left_out_of_its_own_percentiles_only():
    rare = np.zeros(20, dtype=bool)
    rare[4] = True                          # one unit: absent from ~36% of the draws
    values = np.arange(20, dtype=float)

    def mean_over_rare(indices):
        chosen = indices[rare[indices]]
        return None if chosen.size == 0 else float(np.mean(values[chosen]))

    def nan_when_unit_zero_is_missing(indices):
        return float(np.mean(values[indices])) if 0 in indices else math.nan

    stats = {"rare": mean_over_rare, "whole": mean_of(values),
             "nan": nan_when_unit_zero_is_missing,
             "whole - rare": difference(mean_of(values), mean_over_rare)}
    B, seed = 500, 5
    summary = paired_bootstrap(20, stats, B=B, seed=seed).set_index("statistic")
    draws = hand_rolled_draws(20, B, seed)
    with_rare = [draw for draw in draws if 4 in draw]
    with_zero = [draw for draw in draws if 0 in draw]
    assert 0 < len(with_rare) < B and 0 < len(with_zero) < B
    assert summary.loc["rare", "n_used"] == len(with_rare)
    assert summary.loc["whole - rare", "n_used"] == len(with_rare)
    assert summary.loc["nan", "n_used"] == len(with_zero)
    assert summary.loc["whole", "n_used"] == B
    whole = [float(np.mean(values[draw])) for draw in draws]
    assert summary.loc["whole", "low"] == pytest.approx(np.quantile(whole, 0.025), abs=1e-12)
    nan_values = [float(np.mean(values[draw])) for draw in with_zero]
    assert summary.loc["nan", "high"] == pytest.approx(np.quantile(nan_values, 0.975),
                                                      abs=1e-12)
    assert summary.loc["rare", "low"] == summary.loc["rare", "high"] == 4.0


def test_statistic_undefined_everywhere_gets_nan_bounds_and_estimate():
    summary = paired_bootstrap(5, {"never": lambda indices: None}, B=10)
    row = summary.iloc[0]
    assert math.isnan(row["estimate"]) and math.isnan(row["low"]) and math.isnan(row["high"])
    assert row["n_used"] == 0


def test_seeded_reproducibility():
    stats = {"a": mean_of(SCORES_A), "d": difference(mean_of(SCORES_A), mean_of(SCORES_B))}
    first = paired_bootstrap(N, stats, B=100, seed=42)
    pd.testing.assert_frame_equal(first, paired_bootstrap(N, stats, B=100, seed=42))
    other = paired_bootstrap(N, stats, B=100, seed=43)
    assert not np.array_equal(first["low"], other["low"])
    assert first["estimate"].tolist() == other["estimate"].tolist()


def test_defaults_are_algorithm_4s():
    summary = paired_bootstrap(N, {"a": mean_of(SCORES_A)})
    assert summary.loc[0, "B"] == 1000
    values = [float(np.mean(SCORES_A[draw])) for draw in hand_rolled_draws(N, 1000, 0)]
    assert summary.loc[0, "low"] == pytest.approx(np.quantile(values, 0.025), abs=1e-12)
    assert summary.loc[0, "high"] == pytest.approx(np.quantile(values, 0.975), abs=1e-12)


def test_level_and_B_are_respected():
    stats = {"a": mean_of(SCORES_A)}
    replicates = replicate_values(N, stats, B=250, seed=1)
    assert replicates.shape == (250, 1)
    for level in (0.5, 0.8, 0.99):
        row = paired_bootstrap(N, stats, B=250, seed=1, level=level).iloc[0]
        tail = (1 - level) / 2
        assert row["low"] == pytest.approx(np.quantile(replicates["a"], tail), abs=1e-12)
        assert row["high"] == pytest.approx(np.quantile(replicates["a"], 1 - tail), abs=1e-12)
    widths = [paired_bootstrap(N, stats, B=250, seed=1, level=level).eval("high - low")[0]
              for level in (0.5, 0.8, 0.99)]
    assert widths == sorted(widths)


def test_interval_of_a_mean_is_close_to_the_normal_approximation():
    values = np.random.default_rng(3).normal(10.0, 2.0, 400)
    row = paired_bootstrap(400, {"mean": mean_of(values)}, B=2000, seed=0).iloc[0]
    half_width = 1.96 * values.std(ddof=1) / math.sqrt(400)
    assert (row["high"] - row["low"]) / 2 == pytest.approx(half_width, rel=0.1)
    assert (row["high"] + row["low"]) / 2 == pytest.approx(values.mean(), abs=0.05)


def test_resample_indices_are_read_only_draws_in_range():
    draws = list(resample_indices(7, 20, 0))
    assert len(draws) == 20
    assert all(d.shape == (7,) and d.min() >= 0 and d.max() < 7 for d in draws)
    assert all(not d.flags.writeable for d in draws)


def test_percentile_interval_skips_nan():
    low, high, used = percentile_interval(np.array([np.nan, 1.0, 2.0, 3.0, np.nan]), 0.5)
    assert (low, high, used) == (1.5, 2.5, 3)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_units": 0}, ValueError, "n_units"),
    ({"B": 0}, ValueError, "B must"),
    ({"B": 2.5}, ValueError, "B must"),
    ({"level": 1.0}, ValueError, "level"),
    ({"level": 0}, ValueError, "level"),
    ({"statistics": {}}, ValueError, "at least one"),
    ({"statistics": {"x": 3}}, TypeError, "not callable"),
    ({"statistics": {"x": lambda i: "high"}}, TypeError, "number or None"),
    ({"statistics": {"x": lambda i: [1, 2]}}, TypeError, "number or None"),
])
def test_invalid_arguments_are_rejected(kwargs, error, match):
    arguments = {"n_units": 5, "statistics": {"a": lambda i: float(i.sum())}, "B": 10}
    arguments.update(kwargs)
    n_units, statistics = arguments.pop("n_units"), arguments.pop("statistics")
    with pytest.raises(error, match=match):
        paired_bootstrap(n_units, statistics, **arguments)
