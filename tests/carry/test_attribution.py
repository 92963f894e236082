import numpy as np
import pandas as pd
import pytest

from rubriclab.carry.attribution import (
    ATTRIBUTION_COLUMNS,
    MAX_BRUTE_FORCE_CHECKS,
    shapley_attribution,
    shapley_brute_force,
)

CHECKS = ["A", "B", "C", "D"]


def table1():
    """Carry's Table 1: four checks, five outputs (R1-R3 flawed, R4-R5 correct)."""
    failing_sets = [{"A"}, {"A", "B"}, {"B", "C", "D"}, {"D"}, set()]
    fails = np.array([[check in failing for check in CHECKS] for failing in failing_sets])
    flawed = np.array([True, True, True, False, False])
    return fails, flawed


def random_verdicts(rng, n_outputs, n_checks):
    """Random verdicts with per-check fail rates, some all-pass rows and mixed labels."""
    fail_rates = rng.uniform(0.0, 0.6, size=n_checks)
    fails = rng.random((n_outputs, n_checks)) < fail_rates
    all_pass = rng.random(n_outputs) < 0.25
    fails[all_pass] = False
    flawed = rng.random(n_outputs) < rng.uniform(0.2, 0.8)
    return fails, flawed


def test_table1_credit_blame_and_unique_catches_exactly():
    result = shapley_attribution(*table1())
    np.testing.assert_allclose(result.credit, [1.5, 5 / 6, 1 / 3, 1 / 3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.blame, [0, 0, 0, 1], rtol=0, atol=1e-12)
    assert result.unique_catches.tolist() == [1, 0, 0, 0]
    assert result.fail_counts.tolist() == [2, 2, 1, 2]
    assert result.credit.sum() == pytest.approx(3) and result.flawed_caught == 3
    assert result.blame.sum() == pytest.approx(1) and result.correct_failed == 1


def test_table1_matches_the_paper_rounded_to_two_decimals():
    credit = shapley_attribution(*table1()).credit
    assert [round(x, 2) for x in credit] == [1.5, 0.83, 0.33, 0.33]


def test_table1_closed_form_equals_brute_force():
    fails, flawed = table1()
    result = shapley_attribution(fails, flawed)
    np.testing.assert_allclose(shapley_brute_force(fails, flawed, "catches"), result.credit,
                               atol=1e-12)
    np.testing.assert_allclose(shapley_brute_force(fails, flawed, "false_fails"), result.blame,
                               atol=1e-12)


def test_to_frame_is_a_tidy_table():
    frame = shapley_attribution(*table1()).to_frame(CHECKS)
    assert list(frame.columns) == ATTRIBUTION_COLUMNS
    assert frame["check_id"].tolist() == CHECKS
    row_a = frame.set_index("check_id").loc["A"]
    assert row_a["credit"] == pytest.approx(1.5) and row_a["unique_catches"] == 1
    assert pd.api.types.is_integer_dtype(frame["unique_catches"])
    assert pd.api.types.is_integer_dtype(frame["fail_counts"])


@pytest.mark.parametrize("seed", range(8))
def test_closed_form_equals_brute_force_on_random_verdicts(seed):
    rng = np.random.default_rng(seed)
    for _ in range(4):
        n_checks = int(rng.integers(1, 13))
        n_outputs = int(rng.integers(1, 80))
        fails, flawed = random_verdicts(rng, n_outputs, n_checks)
        result = shapley_attribution(fails, flawed)
        np.testing.assert_allclose(shapley_brute_force(fails, flawed, "catches"),
                                   result.credit, atol=1e-9)
        np.testing.assert_allclose(shapley_brute_force(fails, flawed, "false_fails"),
                                   result.blame, atol=1e-9)


def test_closed_form_equals_brute_force_with_twelve_checks():
    rng = np.random.default_rng(12)
    fails, flawed = random_verdicts(rng, 60, 12)
    result = shapley_attribution(fails, flawed)
    np.testing.assert_allclose(shapley_brute_force(fails, flawed), result.credit, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_efficiency_and_unique_catches_on_random_verdicts(seed):
    rng = np.random.default_rng(100 + seed)
    fails, flawed = random_verdicts(rng, 500, 20)
    result = shapley_attribution(fails, flawed)
    caught = fails.any(axis=1)
    assert result.flawed_caught == np.count_nonzero(caught & flawed)
    assert result.correct_failed == np.count_nonzero(caught & ~flawed)
    assert result.credit.sum() == pytest.approx(result.flawed_caught)
    assert result.blame.sum() == pytest.approx(result.correct_failed)
    alone = flawed & (fails.sum(axis=1) == 1)
    assert result.unique_catches.tolist() == fails[alone].sum(axis=0).tolist()
    assert result.fail_counts.tolist() == fails.sum(axis=0).tolist()


def test_all_pass_rows_and_empty_inputs_contribute_nothing():
    fails = np.zeros((3, 2), dtype=bool)
    result = shapley_attribution(fails, np.array([True, False, True]))
    assert result.credit.tolist() == [0, 0] and result.blame.tolist() == [0, 0]
    assert result.unique_catches.tolist() == [0, 0] and result.flawed_caught == 0
    empty = shapley_attribution(np.zeros((0, 3), dtype=bool), np.zeros(0, dtype=bool))
    assert empty.credit.tolist() == [0, 0, 0] and empty.fail_counts.tolist() == [0, 0, 0]


def test_a_check_that_never_fails_is_a_null_player():
    fails, flawed = table1()
    fails = np.hstack([fails, np.zeros((5, 1), dtype=bool)])
    result = shapley_attribution(fails, flawed)
    assert result.credit[-1] == 0 and result.blame[-1] == 0
    np.testing.assert_allclose(result.credit[:4], [1.5, 5 / 6, 1 / 3, 1 / 3])


def test_shape_mismatch_is_rejected():
    fails, flawed = table1()
    with pytest.raises(ValueError, match="shape mismatch"):
        shapley_attribution(fails, flawed[:4])
    with pytest.raises(ValueError, match="2-D"):
        shapley_attribution(fails[0], flawed)
    with pytest.raises(ValueError, match="1-D"):
        shapley_attribution(fails, flawed[:, None])


def test_non_boolean_inputs_are_rejected():
    fails, flawed = table1()
    with pytest.raises(TypeError, match="fails must be a boolean"):
        shapley_attribution(fails.astype(int), flawed)
    with pytest.raises(TypeError, match="flawed must be a boolean"):
        shapley_attribution(fails, np.array(["flawed"] * 3 + ["correct"] * 2))


def test_to_frame_rejects_wrong_or_duplicate_ids():
    result = shapley_attribution(*table1())
    with pytest.raises(ValueError, match="3 check ids for 4 checks"):
        result.to_frame(["A", "B", "C"])
    with pytest.raises(ValueError, match="unique"):
        result.to_frame(["A", "A", "C", "D"])


def test_brute_force_rejects_unknown_game_and_too_many_checks():
    fails, flawed = table1()
    with pytest.raises(ValueError, match="catches"):
        shapley_brute_force(fails, flawed, "accuracy")
    too_many = np.zeros((2, MAX_BRUTE_FORCE_CHECKS + 1), dtype=bool)
    with pytest.raises(ValueError, match="coalitions"):
        shapley_brute_force(too_many, np.array([True, False]))
