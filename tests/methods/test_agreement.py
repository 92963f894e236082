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

import pandas as pd
import pytest

from rubriclab.cli import main
from rubriclab.methods import InputError, agreement, read_table
from rubriclab.methods.rater_agreement import agreement_counts
from rubriclab.verify.calibration import Confusion

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
