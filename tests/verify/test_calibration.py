"""Judge calibration and the Rogan-Gladen correction, on the verify post's worked example."""

import math

import pytest

from rubriclab.verify.calibration import (
    POST_CONFUSION,
    POST_JUDGED,
    Confusion,
    confusion_from_verdicts,
    corrected_pass_rate,
    rogan_gladen,
    wilson_interval,
)

EXACT_POST_ESTIMATE = (0.75 - 1 / 3) / (37 / 38 - 1 / 3)


def post_verdicts():
    """The post's 50 labeled replies: 37 pass/pass, 1 pass/fail, 4 fail/pass, 8 fail/fail."""
    human = [True] * 38 + [False] * 12
    judge = [True] * 37 + [False] + [True] * 4 + [False] * 8
    return human, judge


def test_confusion_of_the_post():
    confusion = confusion_from_verdicts(*post_verdicts())
    assert confusion == Confusion(tp=37, fn=1, fp=4, tn=8) == POST_CONFUSION
    assert (confusion.n_pos, confusion.n_neg, confusion.n) == (38, 12, 50)
    assert confusion.tpr == 37 / 38
    assert confusion.tnr == 8 / 12
    assert confusion.agreement == 45 / 50
    assert round(confusion.tpr, 2) == 0.97 and round(confusion.tnr, 2) == 0.67


def test_confusion_rejects_mismatched_or_non_boolean_verdicts():
    with pytest.raises(ValueError, match="3 human labels but 2 judge verdicts"):
        confusion_from_verdicts([True, False, True], [True, False])
    with pytest.raises(ValueError, match=r"judge\[1\]"):
        confusion_from_verdicts([True, False], [True, None])
    with pytest.raises(ValueError, match="non-negative integer"):
        Confusion(tp=-1, fn=0, fp=0, tn=0)


def test_rates_with_an_empty_class_are_nan():
    confusion = Confusion(tp=3, fn=1, fp=0, tn=0)
    assert math.isnan(confusion.tnr) and confusion.tpr == 0.75


def test_rogan_gladen_gives_the_post_corrected_rate():
    result = rogan_gladen(300 / 400, 37 / 38, 8 / 12)
    assert result.status == "ok" and result.message == ""
    assert result.estimate == pytest.approx(EXACT_POST_ESTIMATE, abs=1e-12)
    assert round(result.estimate, 2) == 0.65
    assert result.clipped == result.estimate


@pytest.mark.parametrize("q", [0.0, 0.3, 0.75, 1.0])
def test_a_perfect_judge_returns_q_unchanged(q):
    result = rogan_gladen(q, 1.0, 1.0)
    assert result.status == "ok" and result.estimate == q


@pytest.mark.parametrize("tpr,tnr", [(0.5, 0.5), (0.8, 0.2), (37 / 38, 1 / 38), (0.3, 0.5),
                                     (0.0, 0.0)])
def test_an_uninformative_or_inverting_judge_gives_no_estimate_and_no_exception(tpr, tnr):
    result = rogan_gladen(0.6, tpr, tnr)
    assert result.status == "uninformative_judge"
    assert result.estimate is None and result.clipped is None and not result.defined
    assert "TPR + TNR" in result.message


def test_an_inverting_judge_is_named_as_such():
    assert "inverts" in rogan_gladen(0.6, 0.3, 0.5).message
    assert "no information" in rogan_gladen(0.6, 0.5, 0.5).message


def test_q_below_the_false_pass_rate_reports_raw_and_clipped_values():
    result = rogan_gladen(0.2, 0.9, 0.7)  # 1 - TNR = 0.3 > q
    assert result.status == "outside_unit_interval"
    assert result.estimate == pytest.approx((0.2 - 0.3) / (0.9 - 0.3))
    assert result.estimate < 0 and result.clipped == 0.0
    assert "-0.1667" in result.message


def test_q_above_the_tpr_clips_to_one():
    result = rogan_gladen(0.95, 0.9, 0.7)
    assert result.status == "outside_unit_interval"
    assert result.estimate > 1 and result.clipped == 1.0


def test_rates_outside_the_unit_interval_are_input_errors():
    with pytest.raises(ValueError, match="tpr"):
        rogan_gladen(0.5, 1.2, 0.8)
    with pytest.raises(ValueError, match="q"):
        rogan_gladen(float("nan"), 0.9, 0.8)


def test_wilson_interval_matches_a_known_value():
    low, high = wilson_interval(8, 12)
    assert low == pytest.approx(0.3906, abs=1e-4) and high == pytest.approx(0.8619, abs=1e-4)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0


def test_corrected_rate_of_the_post_has_a_wide_interval_around_the_estimate():
    result = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION)
    assert round(result.estimate, 2) == 0.65
    assert result.estimate == pytest.approx(EXACT_POST_ESTIMATE)
    assert (result.q, result.tpr, result.tnr) == (0.75, 37 / 38, 8 / 12)
    low, high = result.interval
    assert low < result.estimate < high
    assert high - low > 0.2  # the TNR rests on twelve labels
    assert result.n_boot == 10_000 and 0 <= result.n_undefined < 100
    for (lo, hi), rate in [(result.q_interval, result.q), (result.tpr_interval, result.tpr),
                           (result.tnr_interval, result.tnr)]:
        assert lo < rate < hi
    # the TNR's own interval is the widest of the three
    assert result.tnr_interval[1] - result.tnr_interval[0] > 0.4
    row = result.to_dict()
    assert row["corrected"] == result.estimate and row["status"] == "ok"
    assert row["corrected_low"] == low and row["n_undefined"] == result.n_undefined


def test_the_interval_narrows_with_ten_times_the_labels():
    base = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION)
    more = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION.scaled(10))
    assert more.estimate == pytest.approx(base.estimate)
    assert more.interval[0] < more.estimate < more.interval[1]
    width = lambda r: r.interval[1] - r.interval[0]  # noqa: E731
    assert width(more) < 0.6 * width(base)
    assert more.n_undefined == 0


def test_the_bootstrap_is_reproducible_with_a_seed():
    first = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, n_boot=2000, seed=7)
    again = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, n_boot=2000, seed=7)
    other = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, n_boot=2000, seed=8)
    assert first.interval == again.interval and first.n_undefined == again.n_undefined
    assert first.interval != other.interval


def test_corrected_rate_of_an_uninformative_judge_has_no_interval():
    # TPR 3/6 and TNR 3/6: no information; draws are defined about half the time
    result = corrected_pass_rate(50, 100, Confusion(tp=3, fn=3, fp=3, tn=3), n_boot=2000)
    assert result.status == "uninformative_judge"
    assert result.estimate is None and result.interval is None
    assert result.interval_clipped is None
    assert 500 < result.n_undefined < 1500


def test_corrected_rate_outside_the_unit_interval_reports_both_intervals():
    result = corrected_pass_rate(10, 100, Confusion(tp=45, fn=5, fp=15, tn=35), n_boot=2000)
    assert result.status == "outside_unit_interval"
    assert result.estimate < 0 and result.rg.clipped == 0.0
    assert result.interval[0] < 0 and result.interval_clipped[0] == 0.0
    assert result.n_outside > 0


def test_corrected_rate_needs_both_label_classes_and_a_known_method():
    with pytest.raises(ValueError, match="at least one human pass and one human fail"):
        corrected_pass_rate(30, 40, Confusion(tp=5, fn=1, fp=0, tn=0))
    with pytest.raises(ValueError, match="unknown method"):
        corrected_pass_rate(30, 40, POST_CONFUSION, method="delta")
    with pytest.raises(ValueError, match="k_judged_pass"):
        corrected_pass_rate(41, 40, POST_CONFUSION)
