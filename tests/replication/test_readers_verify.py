"""rubriclab.replication.readers_verify on small hand-made outputs."""

import pandas as pd
import pytest

from rubriclab.replication.readers_verify import READERS
from rubriclab.verify.calibration import Confusion, corrected_pass_rate


def post_row() -> dict:
    """The calibration table's worked-example row, from the pipeline's own code."""
    corrected = corrected_pass_rate(300, 400, Confusion(tp=37, fn=1, fp=4, tn=8),
                                    labelled_in_judged=True, check_replicates=0)
    return {"source": "worked example (the post's numbers)", "dataset": "refund replies",
            "rendering": "four-criterion rubric", "human_pass_rate": None,
            **corrected.to_dict()}


def judge_row(dataset: str, human: float, low: float | None, high: float | None,
              stable: bool = True, flags: str = "") -> dict:
    return {"source": "carry Figure 2 judge, 10 checks, run 0", "dataset": dataset,
            "rendering": "paragraph", "human_pass_rate": human, "corrected_low": low,
            "corrected_high": high, "stable": stable, "interval_flags": flags,
            "tp": 10, "fn": 2, "fp": 3, "tn": 9}


def outputs(tmp_path, table=None, trials=None, grades=None) -> dict:
    paths = {}
    for name, rows in (("verify", table), ("verify_trials", trials), ("verify_grades", grades)):
        if rows is not None:
            paths[name] = tmp_path / f"{name}.csv"
            pd.DataFrame(rows).to_csv(paths[name], index=False)
    return paths


def read(claim, paths):
    return READERS[claim](paths, {})


def test_the_posts_numbers_through_the_pipelines_code(tmp_path):
    paths = outputs(tmp_path, table=[post_row()])
    assert read("verify.worked_example.judge_pass_rate", paths).value == pytest.approx(75)
    assert read("verify.calibration.agreement", paths).value == pytest.approx(90)
    tpr = read("verify.calibration.tpr", paths)
    assert (tpr.value, tpr.n) == (pytest.approx(37 / 38), 38)
    tnr = read("verify.calibration.tnr", paths)
    assert (tnr.value, tnr.n) == (pytest.approx(8 / 12), 12)
    # (0.75 - 1/3) / (37/38 - 1/3)
    assert read("verify.correction.formula", paths).value == pytest.approx(0.6507, abs=1e-4)
    assert read("verify.correction.about_65", paths).value == pytest.approx(65.07, abs=1e-2)


def test_no_worked_example_row_cannot_tell(tmp_path):
    paths = outputs(tmp_path, table=[judge_row("summedits", 0.5, 0.4, 0.6)])
    evidence = read("verify.calibration.agreement", paths)
    assert evidence.value is None and "no row of the worked example" in evidence.cannot


def test_an_output_the_run_lacks_cannot_tell(tmp_path):
    evidence = read("verify.worked_example.verifier_pass_rate", {})
    assert "verify_trials" in evidence.cannot


def test_verifier_pass_rate_is_an_exact_rate_over_the_agents_trials(tmp_path):
    trials = [{"status": "finished", "verifier_passed": True}] * 3 + \
        [{"status": "max_steps", "verifier_passed": False}] + \
        [{"status": "failed", "verifier_passed": False}]
    evidence = read("verify.worked_example.verifier_pass_rate", outputs(tmp_path, trials=trials))
    # 3 of 4: the trial without a model answer is left out, and said so
    assert evidence.value == pytest.approx(75)
    assert evidence.n == 4
    # Clopper-Pearson 95% for 3 of 4: [0.1941, 0.9937]
    assert evidence.low == pytest.approx(19.41, abs=0.01)
    assert evidence.high == pytest.approx(99.37, abs=0.01)
    assert "1 trial(s)" in evidence.note


def test_reply_judge_pass_rate_leaves_undetermined_replies_out(tmp_path):
    grades = [{"trial_index": i, "passed": p} for i, p in
              enumerate([True, True, False, None, False])]
    evidence = read("verify.worked_example.judge_pass_rate_run", outputs(tmp_path, grades=grades))
    assert evidence.value == pytest.approx(50) and evidence.n == 4
    assert "1 undetermined" in evidence.note


def test_intervals_wide_all_parts_hold_on_the_posts_counts(tmp_path):
    evidence = read("verify.correction.intervals_wide", outputs(tmp_path, table=[post_row()]))
    assert [p.holds for p in evidence.parts] == [True, True]
    assert evidence.n == 50


def test_intervals_wide_fails_and_cannot_tell(tmp_path):
    row = post_row()
    narrow = {**row, "corrected_low": row["q_low"], "corrected_high": row["q_low"] + 0.01}
    evidence = read("verify.correction.intervals_wide", outputs(tmp_path, table=[narrow]))
    assert [p.holds for p in evidence.parts] == [True, False]
    missing = {**row, "corrected_low": None, "corrected_high": None}
    evidence = read("verify.correction.intervals_wide", outputs(tmp_path, table=[missing]))
    assert [p.holds for p in evidence.parts] == [True, None]


def test_recovers_human_rate_all_parts_hold(tmp_path):
    table = [post_row(), judge_row("summedits", 0.5, 0.4, 0.62),
             judge_row("ragtruth", 0.7, 0.55, 0.9)]
    evidence = read("verify.correction.recovers_human_rate", outputs(tmp_path, table=table))
    assert [p.holds for p in evidence.parts] == [True, True]
    assert evidence.n == 24


def test_recovers_human_rate_fails_outside_the_interval(tmp_path):
    table = [judge_row("summedits", 0.5, 0.4, 0.62), judge_row("ragtruth", 0.3, 0.55, 0.9)]
    evidence = read("verify.correction.recovers_human_rate", outputs(tmp_path, table=table))
    assert [p.holds for p in evidence.parts] == [True, False]


def test_recovers_human_rate_cannot_tell_on_unstable_or_missing_intervals(tmp_path):
    table = [judge_row("summedits", 0.5, None, None, stable=False,
                       flags="no interval (TPR + TNR <= 1)"),
             judge_row("ragtruth", 0.5, -0.6, 1.6, stable=False, flags="wider than [0, 1]")]
    evidence = read("verify.correction.recovers_human_rate", outputs(tmp_path, table=table))
    assert [p.holds for p in evidence.parts] == [None, None]
    assert "TPR + TNR" in evidence.parts[0].detail
    only_post = read("verify.correction.recovers_human_rate",
                     outputs(tmp_path, table=[post_row()]))
    assert [p.holds for p in only_post.parts] == [None]
