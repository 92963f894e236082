"""Inputs as researchers have them: 1/0, true/false, yes/no and pass/fail verdicts, categorical
and boolean parquet columns, and the one-file form of `correct` (labels in a column)."""

import pandas as pd
import pytest

from rubriclab.cli import main
from rubriclab.methods import InputError, attribute, correct, read_table
from rubriclab.methods import tables

from .conftest import EXAMPLES

WORDS = ["pass", "fail", "pass", "pass", "fail", "pass", "fail", "pass", "pass", "fail"]
SPELLINGS = {
    "ints": ([1, 0], None), "floats": ([1.0, 0.0], None), "bools": ([True, False], None),
    "int text": (["1", "0"], None), "float text": (["1.0", "0.0"], None),
    "true/false": (["TRUE", "false"], None), "yes/no": ([" Yes", "NO "], None),
    "pass/fail": (["Pass", "FAIL"], None), "categorical": (["pass", "fail"], "category"),
    "categorical ints": ([1, 0], "category"), "nullable boolean": ([True, False], "boolean"),
}


def spelled(words, spelling):
    (yes, no), dtype = SPELLINGS[spelling]
    column = pd.Series([yes if w == "pass" else no for w in words])
    return column.astype(dtype) if dtype else column


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
def test_every_spelling_reads_as_pass_and_fail(spelling, suffix, tmp_path):
    frame = pd.DataFrame({"item_id": [f"i{n}" for n in range(len(WORDS))],
                          "verdict": spelled(WORDS, spelling)})
    path = tmp_path / f"v{suffix}"
    {".parquet": lambda: frame.to_parquet(path),
     ".jsonl": lambda: frame.to_json(path, orient="records", lines=True),
     ".csv": lambda: frame.to_csv(path, index=False)}[suffix]()
    table = read_table(path)
    passed = tables.verdicts(table, "verdict", tables.source_of(table, "v"))
    assert passed.tolist() == [w == "pass" for w in WORDS]
    assert passed.dtype == bool


def test_a_categorical_parquet_verdict_column_is_corrected_like_text(tmp_path):
    """Before: TypeError 'Categorical with dtype category does not support operation sum'."""
    judged = read_table(EXAMPLES / "tutorial" / "judged.csv")
    labeled = read_table(EXAMPLES / "tutorial" / "labeled.csv")
    as_category = judged.assign(verdict=judged["verdict"].astype("category"))
    as_category.to_parquet(tmp_path / "judged.parquet")
    as_bool = judged.assign(verdict=judged["verdict"] == "pass")
    as_bool.to_parquet(tmp_path / "judged_bool.parquet")
    expected = correct(judged, labeled, check_replicates=0).table
    for name in ("judged.parquet", "judged_bool.parquet"):
        got = correct(read_table(tmp_path / name), labeled, check_replicates=0).table
        pd.testing.assert_frame_equal(got, expected)


def test_labels_as_1_and_0_mean_correct_and_flawed(tmp_path):
    verdicts = read_table(EXAMPLES / "table1" / "verdicts.csv")
    labels = read_table(EXAMPLES / "table1" / "labels.csv")
    as_ints = labels.assign(label=(labels["label"] == "correct").astype(int))
    as_ints.to_parquet(tmp_path / "labels.parquet")
    assert attribute(verdicts, read_table(tmp_path / "labels.parquet")).checks.equals(
        attribute(verdicts, labels).checks)


@pytest.mark.parametrize("value, shown", [
    ("maybe", "'maybe'"), ("2", "'2'"), ("", "empty"), ("0.5", "'0.5'"), ("C", "'C'")])
def test_a_bad_csv_value_is_named_as_written(value, shown, tmp_path):
    path = tmp_path / "judged.csv"
    path.write_text(f"item_id,verdict\na,pass\nb,fail\nc,{value}\n")
    with pytest.raises(InputError) as caught:
        correct(read_table(path), read_table(EXAMPLES / "tutorial" / "labeled.csv"))
    assert str(caught.value) == (f"{path}: column 'verdict': row 3 (line 4) is {shown}; "
                                 "expected pass or fail, 1 or 0, true or false, yes or no")


@pytest.mark.parametrize("values, shown", [([1, 0, 2], "2"), ([1.0, 0.5, 0.0], "0.5")])
def test_a_bad_parquet_number_is_shown_bare(values, shown, tmp_path):
    path = tmp_path / "v.parquet"
    pd.DataFrame({"item_id": ["a", "b", "c"], "verdict": values}).to_parquet(path)
    with pytest.raises(InputError) as caught:
        correct(read_table(path), read_table(EXAMPLES / "tutorial" / "labeled.csv"))
    row = values.index(float(shown)) + 1
    assert str(caught.value).startswith(f"{path}: column 'verdict': row {row} is {shown}; ")
    assert "np." not in str(caught.value)


def one_file(tmp_path, name="one.csv", column="human"):
    """The tutorial's two files as one: every item's verdict, the labels where they exist."""
    judged = pd.read_csv(EXAMPLES / "tutorial" / "judged.csv", dtype=str)
    labeled = pd.read_csv(EXAMPLES / "tutorial" / "labeled.csv", dtype=str)
    merged = judged.merge(labeled, on="item_id", how="left").rename(columns={"human": column})
    merged[column] = merged[column].map({"pass": 1, "fail": 0})  # and 1/0 while at it
    merged["verdict"] = merged["verdict"].map({"pass": "true", "fail": "false"})
    path = tmp_path / name
    if name.endswith(".csv"):
        merged.to_csv(path, index=False)
    else:
        merged.to_parquet(path)
    return path, merged


@pytest.mark.parametrize("name", ["one.csv", "one.parquet"])
def test_one_file_with_a_partly_filled_label_column_equals_two(name, tmp_path):
    path, merged = one_file(tmp_path, name)
    assert merged["human"].notna().sum() == 40 and len(merged) == 160
    two = correct(read_table(EXAMPLES / "tutorial" / "judged.csv"),
                  read_table(EXAMPLES / "tutorial" / "labeled.csv"), check_replicates=0)
    one = correct(read_table(path), check_replicates=0)
    pd.testing.assert_frame_equal(one.table, two.table)
    assert one.design == "subset"
    with pytest.raises(InputError, match="'expert' names the label column of the one-file form"):
        correct(read_table(EXAMPLES / "tutorial" / "judged.csv"),
                read_table(EXAMPLES / "tutorial" / "labeled.csv"), label_column="expert")


def test_the_command_takes_one_file_and_a_named_label_column(tmp_path, capsys):
    path, _ = one_file(tmp_path, column="expert")
    assert main(["correct", str(path), "--label-column", "expert",
                 "--coverage-check", "0"]) == 0
    printed = capsys.readouterr().out
    assert "116 of 160" in printed and "27 of 28" in printed and "9 of 12" in printed
    assert main(["correct", str(path), "--coverage-check", "0"]) == 2
    assert capsys.readouterr().err == (
        f"rubriclab correct: {path}: column 'human': missing: one file holds the people's "
        "verdicts in it (name another with --label-column), or give the labels as a second "
        "file\n")
    assert main(["correct", str(path), str(path), "--label-column", "expert"]) == 2
    assert "omit LABELED" in capsys.readouterr().err


@pytest.mark.parametrize("rows, message", [
    ("a,pass,\nb,,pass\n", "column 'verdict': row 2 (line 3): item 'b' has a human label but "
                           "no verdict: every item needs the judge's verdict"),
    ("a,pass,pass\na,fail,\n", "column 'item_id': row 2 (line 3) repeats item_id='a': one row "
                               "per item"),
    ("a,pass,\nb,fail,\n", "column 'human': no row has a label: fill it for the labelled items "
                           "(empty elsewhere)"),
    ("a,pass,pass\nb,fail,\nc,pass,perhaps\n", "column 'human': row 3 (line 4) is 'perhaps'; "
                                               "expected pass or fail, 1 or 0, true or false, "
                                               "yes or no (or correct / flawed)"),
    ("a,pass,pass\nb,fail,\nc,pass,pass\n", "column 'human': no item has a human fail: the "
                                            "judge's TPR and TNR need both"),
])
def test_one_file_errors_name_the_files_own_row(rows, message, tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("item_id,verdict,human\n" + rows)
    with pytest.raises(InputError) as caught:
        correct(read_table(path), check_replicates=0)
    assert message in str(caught.value)
    assert str(caught.value).startswith(str(path))
