"""rubriclab.methods.labels_needed (methods/label_plan.py) and `rubriclab labels-needed`: the plan, checked from outside."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from rubriclab.cli import main
from rubriclab.methods import correct_counts, labels_needed, labels_needed_counts, read_table
from rubriclab.verify.calibration import POST_CONFUSION, POST_JUDGED, Confusion

from .conftest import EXAMPLES

TUTORIAL = EXAMPLES / "tutorial"
LR = "lang_reiczigel"


def lr_width(k, n, tp, n_pos, tn, n_neg, level=0.95):
    """Lang and Reiczigel (2014)'s interval width, written out here from the paper: add z^2/2
    to the judged passes and fails and 1 to each cell; the shift moves both ends alike."""
    z = norm.ppf(0.5 + level / 2)
    q = (k + z * z / 2) / (n + z * z)
    tpr, tnr = (tp + 1) / (n_pos + 2), (tn + 1) / (n_neg + 2)
    p = (q + tnr - 1) / (tpr + tnr - 1)
    se = np.sqrt(q * (1 - q) / (n + z * z) + tpr * (1 - tpr) / (n_pos + 2) * p ** 2
                 + tnr * (1 - tnr) / (n_neg + 2) * (1 - p) ** 2) / (tpr + tnr - 1)
    return 2 * z * se


def planned_width(k, n, c, a, b):
    """The width at the pilot's rates with a more passes and b more fails, interpolated
    between whole counts of true positives and true negatives (arrays a and b allowed)."""
    tp, tn = c.tp + a * c.tp / c.n_pos, c.tn + b * c.tn / c.n_neg
    tp0, tn0 = np.floor(tp + 1e-9), np.floor(tn + 1e-9)
    ftp, ftn = tp - tp0, tn - tn0
    n_pos, n_neg = c.n_pos + a, c.n_neg + b
    return sum(wp * wn * lr_width(k, n, tp0 + dp, n_pos, tn0 + dn, n_neg)
               for dp, wp in ((0, 1 - ftp), (1, ftp)) for dn, wn in ((0, 1 - ftn), (1, ftn)))


@pytest.fixture(scope="module")
def post_plan():
    # verify's worked example, its labels apart from 4,000 judged items at the post's rate
    return labels_needed_counts(3000, 4000, POST_CONFUSION, labelled_in_judged=False,
                                target_width=0.15, method=LR)


def test_the_pilot_width_is_corrects_own_interval_under_its_default():
    plan = labels_needed_counts(*POST_JUDGED, POST_CONFUSION, labelled_in_judged=True,
                                target_width=0.2)
    low, high = correct_counts(*POST_JUDGED, POST_CONFUSION, labelled_in_judged=True,
                               check_replicates=0).rogan_gladen.interval
    assert plan.pilot_width == pytest.approx(high - low, rel=1e-12)


def test_one_plan_by_hand_and_more_labels_narrow_the_interval(post_plan):
    plan = post_plan
    assert plan.reachable and plan.planned_width <= 0.15 < plan.pilot_width
    assert plan.planned_width == pytest.approx(
        planned_width(3000, 4000, POST_CONFUSION, plan.more_pass, plan.more_fail), rel=1e-9)
    widths = planned_width(3000, 4000, POST_CONFUSION, np.arange(0, 200, 5),
                           np.arange(0, 300, 7.5).round())
    assert (np.diff(widths) < 0).all()  # monotone: more labels, narrower


def test_a_tighter_target_never_needs_fewer_labels():
    totals = [labels_needed_counts(3000, 4000, POST_CONFUSION, labelled_in_judged=False,
                                   target_width=w, method=LR).table.loc[0, "more_total"]
              for w in (0.30, 0.2)]
    assert totals == sorted(totals) and totals[0] < totals[-1], totals


def test_the_failing_class_gets_more_and_the_split_is_the_fewest_by_brute_force(post_plan):
    plan = post_plan
    total = plan.more_pass + plan.more_fail
    # the TNR rests on 12 labels, the TPR on 38: the failing class limits the width (the seed)
    assert plan.more_fail > plan.more_pass
    a, b = np.meshgrid(np.arange(400), np.arange(400), indexing="ij")
    fits = planned_width(3000, 4000, POST_CONFUSION, a, b) <= 0.15
    assert (a + b)[fits].min() == total
    # no plan in one class alone, or at random, does better
    rows = plan.table.set_index("plan")
    for other in ("passing class only", "failing class only", "at random (pilot's proportion)"):
        value = rows.loc[other, "more_total"]
        assert pd.isna(value) or value >= total, other
    assert not fits[0].any() and not fits[:, 0].any()  # here neither class alone gets there
    random = rows.loc["at random (pilot's proportion)"]
    assert random["more_total"] > total


def test_a_target_under_the_floor_is_unreachable_and_says_so():
    plan = labels_needed_counts(*POST_JUDGED, POST_CONFUSION, labelled_in_judged=True,
                                target_width=0.05)
    assert not plan.reachable and plan.more_pass is None and plan.planned_width is None
    assert plan.floor_width > 0.05
    assert "unreachable" in plan.message and "400 judged items" in plan.message
    assert plan.table["expected_width"].isna().all()
    # in the subset design the plan stays within the judged items the estimate expects
    assert plan.max_pass + plan.max_fail <= 400 - 50 - 1
    # apart from the judged set, labels without end leave the q term: 4000 judged at 75%
    apart = labels_needed_counts(3000, 4000, POST_CONFUSION, labelled_in_judged=False,
                                 target_width=0.02, method=LR)
    floor = 2 * norm.ppf(0.975) * math.sqrt(0.75 * 0.25 / 4000) / (37 / 38 + 8 / 12 - 1)
    assert not apart.reachable and apart.floor_width == pytest.approx(floor, rel=0.02)


def test_a_pilot_already_narrow_enough_needs_nothing():
    plan = labels_needed_counts(*POST_JUDGED, POST_CONFUSION, labelled_in_judged=True,
                                target_width=0.5, method=LR)
    assert (plan.more_pass, plan.more_fail) == (0, 0) and "no more labels" in plan.message


def test_bad_targets_and_an_uninformative_pilot_are_refused():
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="target width"):
            labels_needed_counts(*POST_JUDGED, POST_CONFUSION, labelled_in_judged=True,
                                 target_width=bad)
    with pytest.raises(ValueError, match="TPR \\+ TNR"):
        labels_needed_counts(*POST_JUDGED, Confusion(5, 5, 5, 5), labelled_in_judged=True,
                             target_width=0.2)


def test_the_tables_and_the_command(tmp_path, capsys):
    judged, labeled = read_table(TUTORIAL / "judged.csv"), read_table(TUTORIAL / "labeled.csv")
    plan = labels_needed(judged, labeled, 0.25)
    assert plan.design == "subset" and plan.pilot == Confusion(27, 1, 3, 9)
    out = tmp_path / "plan.csv"
    code = main(["labels-needed", str(TUTORIAL / "judged.csv"), str(TUTORIAL / "labeled.csv"),
                 "--width", "25", "--out", str(out)])
    shown = capsys.readouterr().out
    assert code == 0 and plan.message in shown and "expected 95% width" in shown
    assert out.read_text().startswith("plan,more_pass,more_fail,more_total,expected_width")
    code = main(["labels-needed", str(TUTORIAL / "judged.csv"), str(TUTORIAL / "labeled.csv"),
                 "--width", "150"])
    assert code == 2 and "target width" in capsys.readouterr().err


def test_one_file_with_a_partly_filled_label_column_plans_as_two(tmp_path, capsys):
    judged, labeled = read_table(TUTORIAL / "judged.csv"), read_table(TUTORIAL / "labeled.csv")
    two = labels_needed(judged, labeled, 0.25, method=LR)
    one = labels_needed(read_table(TUTORIAL / "one_file.csv"), target_width=0.25, method=LR)
    pd.testing.assert_frame_equal(one.table, two.table)
    assert (one.pilot, one.design, one.n_judged) == (two.pilot, "subset", 160)
    renamed = tmp_path / "one.csv"
    pd.read_csv(TUTORIAL / "one_file.csv", dtype=str, keep_default_na=False).rename(
        columns={"human": "expert"}).to_csv(renamed, index=False)
    assert main(["labels-needed", str(renamed), "--label-column", "expert", "--width", "25",
                 "--method", LR]) == 0
    assert two.message in capsys.readouterr().out
    assert main(["labels-needed", str(renamed), "--width", "25"]) == 2
    assert capsys.readouterr().err == (
        f"rubriclab labels-needed: {renamed}: column 'human': missing: one file holds the "
        "people's verdicts in it (name another with --label-column), or give the labels as a "
        "second file\n")
    assert main(["labels-needed", str(renamed), str(TUTORIAL / "labeled.csv"),
                 "--label-column", "expert", "--width", "25"]) == 2
    assert capsys.readouterr().err == ("rubriclab labels-needed: --label-column: names the "
                                       "label column of the one-file form: omit LABELED\n")
    with pytest.raises(ValueError, match="needs a target_width"):
        labels_needed(read_table(TUTORIAL / "one_file.csv"))
