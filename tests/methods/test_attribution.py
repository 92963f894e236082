"""rubriclab.methods.attribute and `rubriclab attribute`: carry Table 1 and malformed input."""

import numpy as np
import pandas as pd
import pytest

from rubriclab.carry.attribution import shapley_brute_force
from rubriclab.cli import main
from rubriclab.methods import InputError, attribute, read_table

from .conftest import EXAMPLES


def table1():
    return (read_table(EXAMPLES / "table1" / "verdicts.csv"),
            read_table(EXAMPLES / "table1" / "labels.csv"))


def test_table1_credit_blame_and_unique_catches():
    result = attribute(*table1())
    checks = result.checks.set_index("check_id")
    assert list(checks.index) == ["A", "B", "C", "D"]
    assert checks["credit"].round(2).tolist() == [1.5, 0.83, 0.33, 0.33]
    assert checks["blame"].round(2).tolist() == [0, 0, 0, 1]
    assert checks["unique_catches"].tolist() == [1, 0, 0, 0]
    assert checks["fail_counts"].tolist() == [2, 2, 1, 2]
    rates = result.rates.set_index("rate")
    assert (rates.at["correct passed", "count"], rates.at["correct passed", "n"]) == (1, 2)
    assert (rates.at["flawed caught", "count"], rates.at["flawed caught", "n"]) == (3, 3)
    assert rates.at["flawed caught", "high"] == 1.0 and 0 < rates.at["flawed caught", "low"] < 1


def test_the_closed_form_agrees_with_enumerating_every_coalition():
    rng = np.random.default_rng(5)
    rows = [(f"i{i}", f"c{j}", "fail" if rng.random() < 0.3 else "pass")
            for i in range(30) for j in range(6)]
    verdicts = pd.DataFrame(rows, columns=["item_id", "check_id", "verdict"])
    flawed = rng.random(30) < 0.5
    labels = pd.DataFrame({"item_id": [f"i{i}" for i in range(30)],
                           "label": np.where(flawed, "flawed", "correct")})
    result = attribute(verdicts, labels)
    fails = (verdicts.pivot(index="item_id", columns="check_id", values="verdict")
             .loc[labels["item_id"], [f"c{j}" for j in range(6)]] == "fail").to_numpy()
    assert result.checks["credit"].to_numpy() == pytest.approx(
        shapley_brute_force(fails, flawed, "catches"))
    assert result.checks["blame"].to_numpy() == pytest.approx(
        shapley_brute_force(fails, flawed, "false_fails"))


def test_the_command_prints_table1_and_writes_csv(tmp_path, capsys):
    out, rates = tmp_path / "checks.csv", tmp_path / "rates.csv"
    code = main(["attribute", str(EXAMPLES / "table1" / "verdicts.csv"),
                 str(EXAMPLES / "table1" / "labels.csv"), "--out", str(out),
                 "--rates-out", str(rates)])
    assert code == 0
    printed = capsys.readouterr().out
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:4]]
             for line in printed.splitlines() if line.startswith("| ") and "|" in line[2:]}
    assert [lines[c] for c in "ABCD"] == [["1.50", "0.00"], ["0.83", "0.00"],
                                          ["0.33", "0.00"], ["0.33", "1.00"]]
    written = pd.read_csv(out)
    assert written["check_id"].tolist() == ["A", "B", "C", "D"]
    assert written["blame"].tolist() == [0, 0, 0, 1]
    assert pd.read_csv(rates)["rate"].tolist() == ["correct passed", "flawed caught"]


def write(path, text):
    path.write_text(text)
    return str(path)


LABELS = "item_id,label\nx,correct\ny,flawed\n"


@pytest.mark.parametrize("verdicts, labels, column, words", [
    ("item_id,check,verdict\nx,A,pass\n", LABELS, "check_id", "missing"),
    ("item_id,check_id,verdict\nx,A,pass\ny,A,maybe\n", LABELS, "verdict",
     "row 2 (line 3) is 'maybe'"),
    ("item_id,check_id,verdict\nx,A,pass\ny,A,\n", LABELS, "verdict", "row 2 (line 3) is empty"),
    ("item_id,check_id,verdict\nx,A,pass\nx,A,fail\ny,A,pass\n", LABELS, "check_id",
     "row 2 (line 3) repeats"),
    ("item_id,check_id,verdict\nx,A,pass\ny,A,pass\nx,B,fail\n", LABELS, "check_id",
     "no verdict of check 'B' on item 'y'"),
    ("item_id,check_id,verdict\nx,A,pass\ny,A,pass\nz,A,pass\n", LABELS, "item_id",
     "item 'z' has no row in"),
    ("item_id,check_id,verdict\nx,A,pass\ny,A,pass\n", "item_id,label\nx,correct\ny,bad\n",
     "label", "row 2 (line 3) is 'bad'; expected correct or flawed"),
    ("item_id,check_id,verdict\nx,A,pass\n", LABELS, "item_id", "item 'y' has no verdicts"),
])
def test_malformed_input_exits_2_naming_the_column(tmp_path, capsys, verdicts, labels, column,
                                                    words):
    code = main(["attribute", write(tmp_path / "v.csv", verdicts),
                 write(tmp_path / "l.csv", labels)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"column '{column}'" in err and words in err
    assert err.startswith("rubriclab attribute: ")


def test_a_missing_file_exits_2(tmp_path, capsys):
    assert main(["attribute", str(tmp_path / "none.csv"), str(tmp_path / "none.csv")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_api_raises_input_error_with_the_column():
    with pytest.raises(InputError) as caught:
        attribute(pd.DataFrame({"item_id": ["x"], "check_id": ["A"], "verdict": ["yes?"]}),
                  pd.DataFrame({"item_id": ["x"], "label": ["correct"]}))
    assert caught.value.column == "verdict" and "row 1" in str(caught.value)


def test_yes_no_and_booleans_read_as_pass_and_fail():
    labels = pd.DataFrame({"item_id": ["x", "y"], "label": ["correct", "flawed"]})
    words = attribute(pd.DataFrame({"item_id": ["x", "y"], "check_id": ["A", "A"],
                                    "verdict": ["Yes", " no "]}), labels)
    booleans = attribute(pd.DataFrame({"item_id": ["x", "y"], "check_id": ["A", "A"],
                                       "verdict": [True, False]}), labels)
    assert words.checks.equals(booleans.checks)
    assert words.checks["credit"].tolist() == [1.0]
