"""Judge calibration and the Rogan-Gladen correction, on the verify post's worked example."""

import math

import pytest

from rubriclab.verify.calibration import (
    DEFAULT_METHOD,
    INTERVAL_METHODS,
    POST_CONFUSION,
    POST_JUDGED,
    Confusion,
    confusion_from_verdicts,
    corrected_pass_rate,
    ppi_pass_rate,
    rogan_gladen,
    wilson_interval,
)

JEFFREYS = "jeffreys_bootstrap"

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


def _wilson_by_formula(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("k, n", [(1, 3), (8, 12), (37, 38), (300, 400), (5, 1000)])
def test_wilson_interval_is_the_score_interval(k, n):
    assert wilson_interval(k, n) == pytest.approx(_wilson_by_formula(k, n), abs=1e-12)


def test_the_default_interval_is_lang_reiczigel_as_the_study_chose():
    assert DEFAULT_METHOD == "lang_reiczigel" and DEFAULT_METHOD in INTERVAL_METHODS


# the exact interval pays for its guarantee at 12 fails: [0.0, 0.957] (tests/stats/test_exact_prevalence.py)
@pytest.mark.parametrize("method", [m for m in INTERVAL_METHODS if m != "exact"])
def test_every_method_brackets_the_post_estimate(method):
    result = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, method=method,
                                 labelled_in_judged=True, check_replicates=500)
    assert result.estimate == pytest.approx(EXACT_POST_ESTIMATE)
    low, high = result.interval
    assert 0.3 < low < result.estimate < high < 0.85
    assert result.method == method and result.design == "subset"
    # 50 labels, 12 of them fails, judge informative: every method keeps its promise here
    assert result.check_coverage > 0.93 and result.stable and result.flags == ()


def test_the_post_interval_under_the_default_method():
    result = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION)
    # Lang-Reiczigel on 300/400, TPR 37/38, TNR 8/12 (docs/replication.md)
    assert result.interval == pytest.approx((0.4438, 0.7995), abs=1e-4)
    assert result.n_boot == 0 and result.n_undefined == 0


def test_the_jeffreys_interval_of_the_post_is_unchanged():
    result = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, method=JEFFREYS)
    assert result.interval == pytest.approx((0.3688, 0.7906), abs=1e-4)


def test_corrected_rate_of_the_post_has_a_wide_interval_around_the_estimate():
    result = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, method=JEFFREYS)
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


@pytest.mark.parametrize("method", list(INTERVAL_METHODS))
def test_the_interval_narrows_with_ten_times_the_labels(method):
    base = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, method=method, check_replicates=0)
    more = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION.scaled(10), method=method,
                               check_replicates=0)
    assert more.estimate == pytest.approx(base.estimate)
    assert more.interval[0] < more.estimate < more.interval[1]
    width = lambda r: r.interval[1] - r.interval[0]  # noqa: E731
    assert width(more) < 0.6 * width(base)
    assert more.n_undefined == 0


def test_the_bootstrap_is_reproducible_with_a_seed():
    first, again, other = (corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, n_boot=2000,
                                               seed=seed, method=JEFFREYS) for seed in (7, 7, 8))
    assert first.interval == again.interval and first.n_undefined == again.n_undefined
    assert first.interval != other.interval


def test_corrected_rate_of_an_uninformative_judge_has_no_interval():
    # TPR 3/6 and TNR 3/6: no information; draws are defined about half the time
    result = corrected_pass_rate(50, 100, Confusion(tp=3, fn=3, fp=3, tn=3), n_boot=2000,
                                 method=JEFFREYS)
    assert result.status == "uninformative_judge"
    assert result.estimate is None and result.interval is None
    assert result.interval_clipped is None
    assert 500 < result.n_undefined < 1500
    assert "no interval (TPR + TNR <= 1)" in result.flags
    assert "% of draws undefined" in result.to_dict()["interval_flags"]
    default = corrected_pass_rate(50, 100, Confusion(tp=3, fn=3, fp=3, tn=3))
    assert default.interval is None and default.check_coverage is None and not default.stable


def test_corrected_rate_outside_the_unit_interval_reports_both_intervals():
    result = corrected_pass_rate(10, 100, Confusion(tp=45, fn=5, fp=15, tn=35), n_boot=2000,
                                 method=JEFFREYS)
    assert result.status == "outside_unit_interval"
    assert result.estimate < 0 and result.rg.clipped == 0.0
    assert result.interval[0] < 0 and result.interval_clipped[0] == 0.0
    assert result.n_outside > 0
    assert "estimate outside [0, 1], shown clipped" in result.flags


def test_an_interval_from_four_and_four_labels_is_flagged_with_its_reasons():
    # the case: TPR 3/4, TNR 3/4 on 4 + 4 labels gives a raw interval far beyond [0, 1]
    result = corrected_pass_rate(6, 10, Confusion(tp=3, fn=1, fp=1, tn=3))
    low, high = result.interval
    assert high - low > 1 and not result.stable
    assert any(flag.startswith("raw interval [") and flag.endswith("wider than [0, 1]")
               for flag in result.flags)
    # the check at these sizes: the method covers far fewer than 93% of simulated studies
    assert result.check_coverage < 0.93 and result.check_replicates == 2000
    assert any("of simulated studies" in flag and "below 93%" in flag for flag in result.flags)
    row = result.to_dict()
    assert row["stable"] is False and "wider than [0, 1]" in row["interval_flags"]
    assert row["corrected_low_clipped"] == max(0.0, low)


def test_the_coverage_check_is_seeded():
    first = corrected_pass_rate(6, 10, Confusion(tp=3, fn=1, fp=1, tn=3), seed=3)
    again = corrected_pass_rate(6, 10, Confusion(tp=3, fn=1, fp=1, tn=3), seed=3)
    assert first.check_coverage == again.check_coverage


def test_ppi_of_the_post():
    result = ppi_pass_rate(*POST_JUDGED, POST_CONFUSION)
    # the judge passes 259 of the 350 unlabelled replies; (human - judge) on the 50 labelled
    # averages (1 - 4) / 50
    assert (result.k_unlabelled, result.n_unlabelled) == (259, 350)
    assert result.estimate == pytest.approx(259 / 350 - 3 / 50)
    low, high = result.interval
    f_u, rect = 259 / 350, -3 / 50
    var_rect = 5 / 50 - rect ** 2  # y - f is +1 once, -1 four times, 0 otherwise
    half = 1.959963984540054 * math.sqrt(f_u * (1 - f_u) / 350 + var_rect / 50)
    assert (low, high) == pytest.approx((result.estimate - half, result.estimate + half))
    row = result.to_dict()
    assert row["ppi_method"] == "ppi" and row["ppi_low_clipped"] == low


def test_ppi_needs_the_labelled_slice_inside_the_judged_set():
    with pytest.raises(ValueError, match="subset of the 40 judged"):
        ppi_pass_rate(30, 40, POST_CONFUSION)  # 50 labelled items cannot be among 40
    with pytest.raises(ValueError, match="leaving -11 of 350 unlabelled"):
        ppi_pass_rate(30, 400, POST_CONFUSION)  # 41 judge passes among the labelled alone


def test_corrected_rate_needs_both_label_classes_and_a_known_method():
    with pytest.raises(ValueError, match="at least one human pass and one human fail"):
        corrected_pass_rate(30, 40, Confusion(tp=5, fn=1, fp=0, tn=0))
    with pytest.raises(ValueError, match="unknown method"):
        corrected_pass_rate(30, 40, POST_CONFUSION, method="delta")
    with pytest.raises(ValueError, match="k_judged_pass"):
        corrected_pass_rate(41, 40, POST_CONFUSION)


def test_ppi_of_a_labelled_sample_apart_from_the_judged_set():
    # every judged item is unlabelled: the judge's 300 of 400 plus mean(human - judge) on the
    # 50 labelled, (1 - 4) / 50
    result = ppi_pass_rate(*POST_JUDGED, POST_CONFUSION, labelled_in_judged=False)
    assert (result.k_unlabelled, result.n_unlabelled) == (300, 400)
    assert result.estimate == pytest.approx(300 / 400 - 3 / 50)
    f_u, rect = 300 / 400, -3 / 50
    half = 1.959963984540054 * math.sqrt(f_u * (1 - f_u) / 400 + (5 / 50 - rect ** 2) / 50)
    assert result.interval == pytest.approx((result.estimate - half, result.estimate + half))
    with pytest.raises(ValueError, match="at least one labelled item"):
        ppi_pass_rate(30, 40, Confusion(0, 0, 0, 0), labelled_in_judged=False)
