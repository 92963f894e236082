"""rubriclab.methods.correct and `rubriclab correct`: verify's worked example and its designs."""

import pandas as pd
import pytest

from rubriclab.cli import main
from rubriclab.methods import InputError, correct, correct_counts, read_table
from rubriclab.stats import prevalence
from rubriclab.verify.calibration import (
    POST_CONFUSION, POST_JUDGED, Confusion, corrected_pass_rate, ppi_pass_rate,
)

from .conftest import EXAMPLES

WORKED = EXAMPLES / "worked_example"


@pytest.fixture(scope="module")
def worked():
    return correct(read_table(WORKED / "judged.csv"), read_table(WORKED / "labeled.csv"),
                   check_replicates=200)


def test_the_worked_example_is_counted_as_the_post_counts_it(worked):
    assert worked.design == "subset"
    assert (worked.rogan_gladen.k_judged_pass, worked.rogan_gladen.n_judged) == POST_JUDGED
    assert worked.rogan_gladen.confusion == POST_CONFUSION
    assert worked.rogan_gladen.estimate == pytest.approx((0.75 - 1 / 3) / (37 / 38 - 1 / 3))


def test_it_is_verifys_own_estimate_and_interval(worked):
    theirs = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, labelled_in_judged=True,
                                 check_replicates=200, method="exact")
    assert worked.rogan_gladen.interval == theirs.interval
    assert worked.rogan_gladen.method == "exact"  # CORRECT_METHOD, docs/statistics.md
    assert worked.ppi.estimate == ppi_pass_rate(*POST_JUDGED, POST_CONFUSION).estimate
    row = worked.table.set_index("estimate").loc["Rogan-Gladen corrected pass rate"]
    assert row["value"] == pytest.approx(0.6507, abs=1e-4)


def test_the_command_prints_651_percent(tmp_path, capsys):
    out = tmp_path / "corrected.csv"
    code = main(["correct", str(WORKED / "judged.csv"), str(WORKED / "labeled.csv"),
                 "--coverage-check", "200", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    line = next(l for l in printed.splitlines() if l.startswith("| Rogan-Gladen"))
    assert "| 65.1%" in line
    assert "| judge pass rate" in printed and "300 of 400" in printed
    assert "37 of 38" in printed and "8 of 12" in printed
    table = pd.read_csv(out)
    assert table.loc[table["estimate"] == "Rogan-Gladen corrected pass rate",
                     "value"].item() == pytest.approx(0.6507, abs=1e-4)


def test_a_sample_apart_from_the_judged_items_needs_the_judges_verdicts():
    judged = pd.DataFrame({"item_id": [f"j{i}" for i in range(20)],
                           "verdict": ["pass"] * 14 + ["fail"] * 6})
    human = ["pass"] * 7 + ["fail"] * 3
    judge = ["pass"] * 6 + ["fail"] + ["pass"] + ["fail"] * 2
    labeled = pd.DataFrame({"item_id": [f"l{i}" for i in range(10)], "human": human})
    with pytest.raises(InputError) as caught:
        correct(judged, labeled, check_replicates=0)
    assert caught.value.column == "judge"
    result = correct(judged, labeled.assign(judge=judge), check_replicates=0)
    assert result.design == "independent"
    assert result.rogan_gladen.confusion == Confusion(tp=6, fn=1, fp=1, tn=2)
    # PPI: every judged item is unlabelled; the labelled ones add mean(human - judge) = 0
    assert (result.ppi.k_unlabelled, result.ppi.n_unlabelled) == (14, 20)
    assert result.ppi.estimate == pytest.approx(14 / 20)
    assert result.ppi.estimate == pytest.approx(float(
        prevalence.ppi(14, 20, 6, 1, 1, 2).estimate))


def test_a_sample_partly_among_the_judged_items_is_refused():
    judged = pd.DataFrame({"item_id": ["a", "b", "c"], "verdict": ["pass", "fail", "pass"]})
    labeled = pd.DataFrame({"item_id": ["a", "z"], "human": ["pass", "fail"]})
    with pytest.raises(InputError, match="row 2: 1 of the 2 labeled items.*'z' is not judged"):
        correct(judged, labeled, check_replicates=0)


def test_a_judge_column_that_contradicts_the_judged_table_is_refused():
    judged = pd.DataFrame({"item_id": ["a", "b", "c"], "verdict": ["pass", "fail", "pass"]})
    labeled = pd.DataFrame({"item_id": ["a", "b"], "human": ["pass", "fail"],
                            "judge": ["pass", "pass"]})
    with pytest.raises(InputError) as caught:
        correct(judged, labeled, check_replicates=0)
    assert caught.value.column == "judge" and "row 2" in str(caught.value)


def test_both_human_verdicts_are_needed():
    judged = pd.DataFrame({"item_id": ["a", "b", "c"], "verdict": ["pass", "fail", "pass"]})
    labeled = pd.DataFrame({"item_id": ["a", "b"], "human": ["correct", "correct"]})
    with pytest.raises(InputError, match="column 'human': no item has a human fail"):
        correct(judged, labeled, check_replicates=0)


def test_an_uninformative_judge_is_flagged_not_corrected(capsys):
    result = correct_counts(30, 40, Confusion(tp=5, fn=5, fp=5, tn=5), labelled_in_judged=False,
                            check_replicates=0, method="lang_reiczigel")
    assert result.rogan_gladen.status == "uninformative_judge"
    assert any("no interval" in flag for flag in result.flags)
    text = result.markdown()
    line = next(l for l in text.splitlines() if l.startswith("| Rogan-Gladen"))
    assert line.count("n/a") == 2  # neither an estimate nor an interval
    assert "cannot be corrected" in text


def test_malformed_judged_table_exits_2_naming_the_column(tmp_path, capsys):
    judged = tmp_path / "judged.csv"
    judged.write_text("item_id,verdict\na,pass\nb,PASSED\n")
    labeled = tmp_path / "labeled.csv"
    labeled.write_text("item_id,human\na,pass\n")
    assert main(["correct", str(judged), str(labeled)]) == 2
    err = capsys.readouterr().err
    assert "column 'verdict'" in err and "row 2 (line 3) is 'PASSED'" in err


def test_a_level_outside_0_1_exits_2(capsys):
    assert main(["correct", str(WORKED / "judged.csv"), str(WORKED / "labeled.csv"),
                 "--level", "95"]) == 2
    assert "rubriclab correct: --level: must be in (0, 1), got 95.0" in capsys.readouterr().err


def test_a_wide_exact_interval_says_why_and_a_narrow_one_does_not():
    # verify's worked example: 12 human fails leave TNR anywhere in [29.4%, 92.8%] at 98.3%
    wide = correct_counts(300, 400, Confusion(tp=37, fn=1, fp=4, tn=8), labelled_in_judged=True,
                          check_replicates=0).markdown()
    assert ("Why so wide: the guarantee must hold for any TPR in [83.3%, 100.0%] and TNR in "
            "[29.4%, 92.8%] (each at 98.3%), what 38 human passes and 12 human fails leave "
            "possible. More human fails labelled narrow it fastest") in wide
    # passes are the scarce class here: their labels are the ones to add
    scarce_passes = correct_counts(100, 400, Confusion(tp=8, fn=4, fp=1, tn=37),
                                   labelled_in_judged=True, check_replicates=0).markdown()
    assert "More human passes labelled narrow it fastest" in scarce_passes
    # 2,000 labels: the interval is narrow, and no note is added
    narrow = correct_counts(1500, 2000, Confusion(tp=1450, fn=50, fp=60, tn=440),
                            labelled_in_judged=False, check_replicates=0)
    low, high = narrow.rogan_gladen.interval
    assert high - low < 0.5 and "Why so wide" not in narrow.markdown()
    # another method is not the exact interval: no note either
    other = correct_counts(300, 400, Confusion(tp=37, fn=1, fp=4, tn=8), labelled_in_judged=True,
                           check_replicates=0, method="lang_reiczigel")
    assert "Why so wide" not in other.markdown()
