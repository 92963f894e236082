"""rubriclab.methods.agreement (methods/rater_agreement.py) and `rubriclab agreement`.

The peers' numbers below were produced in a throw-away venv, never installed here:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install truescore==0.7.4 \
        statsmodels==0.15.0 irrCAC==0.4.4
    /tmp/peers/bin/python - <<'EOF'
    import numpy as np, pandas as pd
    from statsmodels.stats.inter_rater import cohens_kappa
    from irrCAC.table import CAC
    import truescore.agreement as ta
    for tp, fn, fp, tn in [(37, 1, 4, 8), (27, 1, 3, 9), (40, 5, 10, 2)]:
        t = np.array([[tp, fn], [fp, tn]])       # rows human pass/fail, columns judge
        k = cohens_kappa(t)
        ac1 = CAC(pd.DataFrame(t), digits=10).gwet()["est"]
        human = np.array([1] * (tp + fn) + [0] * (fp + tn))
        judge = np.array([1] * tp + [0] * fn + [1] * fp + [0] * tn)
        print(k.kappa, k.var_kappa, ac1["coefficient_value"], ac1["se"],
              ta.cohen_kappa(human, judge), ta.gwet_ac1(human, judge))
    EOF
"""

import math

import numpy as np
import pandas as pd
import pytest

from rubriclab.cli import main
from rubriclab.methods import InputError, agreement, read_table
from rubriclab.methods.rater_agreement import agreement_counts, clustered_counts
from rubriclab.verify.calibration import Confusion, wilson_interval

from .conftest import EXAMPLES

TUTORIAL = EXAMPLES / "tutorial"

# (tp, fn, fp, tn): statsmodels kappa and var_kappa (Fleiss, Cohen and Everitt 1969), irrCAC
# AC1 and its standard error (Gwet 2008), truescore's kappa and AC1 (point estimates only;
# truescore's intervals are a bootstrap)
PEERS = {
    (37, 1, 4, 8): (0.7002398081534773, 0.015306962238746067, 0.8503442083, 0.06835689,
                    0.7002398081534773, 0.8503442083208621),
    (27, 1, 3, 9): (0.7500000000000001, 0.013696289062499981, 0.8336798337, 0.08342706,
                    0.7500000000000001, 0.8336798336798336),
    (40, 5, 10, 2): (0.06557377049180342, 0.018998571484390138, 0.6356275304, 0.09984483,
                     0.06557377049180342, 0.6356275303643725),
}


def test_kappa_by_hand_on_a_two_by_two_table():
    # 37 both pass, 1 human pass judge fail, 4 human fail judge pass, 8 both fail (verify's post)
    p_o = (37 + 8) / 50
    p_e = (38 / 50) * (41 / 50) + (12 / 50) * (9 / 50)
    kappa, _ = agreement_counts(Confusion(37, 1, 4, 8))
    assert kappa.estimate == pytest.approx((p_o - p_e) / (1 - p_e), rel=1e-12)
    pi = (38 / 50 + 41 / 50) / 2
    _, ac1 = agreement_counts(Confusion(37, 1, 4, 8))
    p_e1 = 2 * pi * (1 - pi)
    assert ac1.estimate == pytest.approx((p_o - p_e1) / (1 - p_e1), rel=1e-12)


@pytest.mark.parametrize("cells", list(PEERS))
def test_estimates_and_standard_errors_match_the_peers(cells):
    kappa_sm, var_sm, ac1_irr, se_irr, kappa_ts, ac1_ts = PEERS[cells]
    kappa, ac1 = agreement_counts(Confusion(*cells))
    assert kappa.estimate == pytest.approx(kappa_sm, rel=1e-12)
    assert kappa.estimate == pytest.approx(kappa_ts, rel=1e-12)
    assert kappa.se == pytest.approx(math.sqrt(var_sm), rel=1e-12)
    assert ac1.estimate == pytest.approx(ac1_ts, rel=1e-12)
    assert ac1.estimate == pytest.approx(ac1_irr, abs=1e-9)
    assert ac1.se == pytest.approx(se_irr, abs=1e-7)
    z = 1.959963984540054
    assert (kappa.low, kappa.high) == pytest.approx(
        (kappa.estimate - z * kappa.se, min(1.0, kappa.estimate + z * kappa.se)))


def test_one_class_only_leaves_kappa_undefined_with_a_reason_and_ac1_defined():
    kappa, ac1 = agreement_counts(Confusion(20, 0, 0, 0))
    assert math.isnan(kappa.estimate) and math.isnan(kappa.low)
    assert "chance agreement is 1" in kappa.reason and "every item a pass" in kappa.reason
    assert ac1.estimate == 1.0 and ac1.reason == ""
    # a judge that disagrees on a few items of a one-class sample: kappa 0, AC1 still high
    kappa, ac1 = agreement_counts(Confusion(18, 2, 0, 0))
    assert kappa.estimate == pytest.approx(0.0, abs=1e-12) and 0.8 < ac1.estimate < 0.95


def test_per_check_rows_and_the_pooled_one():
    rows = [(f"i{i}", check, human, judge)
            for i in range(10)
            for check, human, judge in (("a", "pass" if i < 6 else "fail",
                                         "pass" if i < 7 else "fail"),
                                        ("b", "pass", "pass"))]
    labeled = pd.DataFrame(rows, columns=["item_id", "check_id", "human", "judge"])
    table = agreement(labeled).table.set_index("check_id")
    assert list(table.index) == ["a", "b", "all checks"]
    assert table.loc["a", ["tp", "fn", "fp", "tn"]].tolist() == [6, 0, 1, 3]
    assert table.loc["all checks", "n"] == 20 and table.loc["all checks", "tp"] == 16
    assert math.isnan(table.loc["b", "kappa"]) and table.loc["b", "ac1"] == 1.0
    assert "kappa undefined" in table.loc["b", "note"] and "no TNR" in table.loc["b", "note"]
    kappa, _ = agreement_counts(Confusion(6, 0, 1, 3))
    assert table.loc["a", "kappa"] == pytest.approx(kappa.estimate)


def test_the_judges_verdicts_from_a_second_table_and_its_gaps():
    labeled, judged = read_table(TUTORIAL / "labeled.csv"), read_table(TUTORIAL / "judged.csv")
    row = agreement(labeled, judged).table.iloc[0]
    assert row["check_id"] == "all items"
    assert (row["tp"], row["fn"], row["fp"], row["tn"]) == (27, 1, 3, 9)
    assert row["agreement"] == pytest.approx(0.9)
    with pytest.raises(InputError, match="column 'verdict': no verdict for item_id="):
        agreement(labeled, judged.iloc[:-100])
    with pytest.raises(InputError, match="column 'judge': missing"):
        agreement(labeled)


def test_the_command(tmp_path, capsys):
    out = tmp_path / "agreement.csv"
    code = main(["agreement", str(TUTORIAL / "labeled.csv"), str(TUTORIAL / "judged.csv"),
                 "--out", str(out)])
    shown = capsys.readouterr().out
    assert code == 0 and "| all items | 40 " in shown and "0.75 [0.52, 0.98]" in shown
    assert pd.read_csv(out)["kappa"].item() == pytest.approx(0.75)
    code = main(["agreement", str(TUTORIAL / "labeled.csv")])
    assert code == 2 and "column 'judge'" in capsys.readouterr().err


def test_a_per_check_pooled_interval_takes_the_item_as_the_unit():
    """Each item's checks are copies of one verdict (human and judge): the pooled row holds no
    more information than one check, so its interval is as wide as one check's. Counting the
    5 x 60 pairs as independent would make it sqrt(5) narrower."""
    rng = np.random.default_rng(7)
    human = rng.random(60) < 0.6
    judge = np.where(rng.random(60) < 0.85, human, ~human)
    rows = [(f"i{i}", f"c{c}", "pass" if human[i] else "fail", "pass" if judge[i] else "fail")
            for i in range(60) for c in range(5)]
    labeled = pd.DataFrame(rows, columns=["item_id", "check_id", "human", "judge"])
    table = agreement(labeled).table.set_index("check_id")
    one, pooled = table.loc["c0"], table.loc["all checks"]
    for name in ("kappa", "ac1"):
        assert pooled[name] == pytest.approx(one[name], rel=1e-12)
        width = pooled[f"{name}_high"] - pooled[f"{name}_low"]
        one_width = one[f"{name}_high"] - one[f"{name}_low"]
        assert one[f"{name}_high"] < 1  # unclipped, so that the widths compare
        assert width == pytest.approx(one_width, rel=0.02), name
    for rate in ("tpr", "tnr"):  # Wilson at the effective size: one check's 60 items
        assert 0 < one[f"{rate}_low"] and one[f"{rate}_high"] < 1
        assert (pooled[f"{rate}_low"], pooled[f"{rate}_high"]) == pytest.approx(
            (one[f"{rate}_low"], one[f"{rate}_high"]), rel=1e-9), rate


def test_the_pooled_interval_is_the_usual_one_where_no_item_has_two_checks():
    """Checks on disjoint items: the cluster-robust variance reduces to Fleiss-Cohen-Everitt's
    and Gwet's over the pooled cross-table (the same formulas the peers confirm above)."""
    cells = {"a": (37, 1, 4, 8), "b": (27, 1, 3, 9)}
    rows = []
    for check, (tp, fn, fp, tn) in cells.items():
        pairs = [("pass", "pass")] * tp + [("pass", "fail")] * fn + [("fail", "pass")] * fp \
            + [("fail", "fail")] * tn
        rows += [(f"{check}{i}", check, h, j) for i, (h, j) in enumerate(pairs)]
    table = agreement(pd.DataFrame(rows, columns=["item_id", "check_id", "human", "judge"]))
    pooled = table.table.set_index("check_id").loc["all checks"]
    kappa, ac1 = agreement_counts(Confusion(64, 2, 7, 17))
    assert (pooled["kappa_low"], pooled["kappa_high"]) == pytest.approx((kappa.low, kappa.high))
    assert (pooled["ac1_low"], pooled["ac1_high"]) == pytest.approx((ac1.low, ac1.high))
    assert (pooled["tpr_low"], pooled["tpr_high"]) == pytest.approx(wilson_interval(64, 66))
    assert (pooled["tnr_low"], pooled["tnr_high"]) == pytest.approx(wilson_interval(17, 24))
    assert "take the item as the unit" in table.markdown()


def long_file(tmp_path, column="human"):
    """A long-format judge log with a partly filled label column, and the same as two tables."""
    rows, labels = [], []
    for i in range(30):
        for check in ("tone", "facts"):
            verdict = "pass" if (i * 7 + len(check)) % 5 else "fail"
            human = verdict if i % 4 else ("fail" if verdict == "pass" else "pass")
            labelled = i % 3 != 0
            rows.append((f"r{i}", check, verdict, human if labelled else ""))
            if labelled:
                labels.append((f"r{i}", check, human))
    path = tmp_path / "log.csv"
    pd.DataFrame(rows, columns=["item_id", "check_id", "verdict", column]).to_csv(path,
                                                                                 index=False)
    judged = pd.DataFrame([r[:3] for r in rows], columns=["item_id", "check_id", "verdict"])
    labeled = pd.DataFrame(labels, columns=["item_id", "check_id", "human"])
    return path, judged, labeled


def test_one_long_file_with_a_partly_filled_label_column_equals_two(tmp_path):
    path, judged, labeled = long_file(tmp_path)
    one = agreement(read_table(path))
    pd.testing.assert_frame_equal(one.table, agreement(labeled, judged).table)
    assert list(one.table["check_id"]) == ["tone", "facts", "all checks"]
    assert one.table["n"].tolist() == [20, 20, 40]
    # the tutorial's one file (no check_id) gives the two files' row
    two = agreement(read_table(TUTORIAL / "labeled.csv"), read_table(TUTORIAL / "judged.csv"))
    pd.testing.assert_frame_equal(agreement(read_table(TUTORIAL / "one_file.csv")).table,
                                  two.table)


def test_the_one_file_command_its_label_column_and_its_errors(tmp_path, capsys):
    path, _, _ = long_file(tmp_path, column="expert")
    assert main(["agreement", str(path), "--label-column", "expert"]) == 0
    assert "| all checks | 40 " in capsys.readouterr().out
    assert main(["agreement", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"rubriclab agreement: {path}: column 'human': missing: one file holds the people's "
        "verdicts in it (name another with --label-column), or give the labels as a second "
        "file\n")
    judged = str(TUTORIAL / "judged.csv")
    assert main(["agreement", str(path), judged, "--label-column", "expert"]) == 2
    assert capsys.readouterr().err == ("rubriclab agreement: --label-column: names the label "
                                       "column of the one-file form: omit JUDGED\n")
    with pytest.raises(InputError, match="'expert' names the label column of the one-file"):
        agreement(read_table(TUTORIAL / "labeled.csv"), read_table(judged),
                  label_column="expert")
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,check_id,verdict,human\na,tone,pass,pass\na,tone,fail,\n")
    with pytest.raises(InputError, match=r"row 2 \(line 3\) repeats item_id='a', "
                                         "check_id='tone': one row per item and check"):
        agreement(read_table(bad))


@pytest.mark.parametrize("cells", list(PEERS))
def test_the_cluster_robust_variance_with_one_unit_per_item_is_the_peers(cells):
    tp, fn, fp, tn = cells
    human = np.array([True] * (tp + fn) + [False] * (fp + tn))
    judge = np.array([True] * tp + [False] * fn + [True] * fp + [False] * tn)
    kappa, ac1 = clustered_counts(human, judge, np.arange(len(human)))
    assert kappa.se == pytest.approx(math.sqrt(PEERS[cells][1]), rel=1e-9)
    assert ac1.se == pytest.approx(PEERS[cells][3], abs=1e-7)
