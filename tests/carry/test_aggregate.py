import math

import pandas as pd
import pytest

from rubriclab.carry.aggregate import (
    item_outcomes,
    length_rates,
    mean_over_runs,
    validate_verdicts,
)


def per_check_rows(item_id, label, run, verdicts):
    return [
        {"item_id": item_id, "label": label, "run": run, "rendering": "per_check",
         "length": position, "check_id": f"g{position:02d}", "verdict": verdict}
        for position, verdict in enumerate(verdicts, start=1)
    ]


def paragraph_rows(item_id, label, run, verdict_by_length):
    return [
        {"item_id": item_id, "label": label, "run": run, "rendering": "paragraph",
         "length": length, "check_id": "", "verdict": verdict}
        for length, verdict in verdict_by_length.items()
    ]


def table(*row_lists):
    return pd.DataFrame([row for rows in row_lists for row in rows])


def outcome_by_length(outcomes, item_id, run=0, rendering="per_check"):
    rows = outcomes[(outcomes["item_id"] == item_id) & (outcomes["run"] == run)
                    & (outcomes["rendering"] == rendering)]
    return dict(zip(rows["length"], rows["outcome"]))


Y, N, U = "yes", "no", "unparseable"


# ---------- item_outcomes ----------

def test_no_at_position_five_passes_before_and_fails_from_five():
    df = table(per_check_rows("a", "flawed", 0, [Y, Y, Y, Y, N, Y, Y, Y, Y, Y]))
    outcomes = item_outcomes(df, list(range(3, 11)))
    assert outcome_by_length(outcomes, "a") == {
        3: "pass", 4: "pass", 5: "fail", 6: "fail", 7: "fail", 8: "fail", 9: "fail",
        10: "fail"}


def test_unparseable_is_undetermined_until_a_later_no():
    df = table(per_check_rows("a", "correct", 0, [Y, U, Y, Y, Y, N, Y]))
    outcomes = item_outcomes(df, [1, 2, 3, 5, 6, 7])
    assert outcome_by_length(outcomes, "a") == {
        1: "pass", 2: "undetermined", 3: "undetermined", 5: "undetermined", 6: "fail",
        7: "fail"}


def test_no_before_unparseable_is_fail():
    df = table(per_check_rows("a", "correct", 0, [N, U, Y]))
    assert outcome_by_length(item_outcomes(df, [1, 2, 3]), "a") == {
        1: "fail", 2: "fail", 3: "fail"}


def test_outcome_columns_and_labels():
    df = table(per_check_rows("a", "correct", 0, [Y, Y, Y]),
               per_check_rows("b", "flawed", 0, [Y, Y, N]))
    outcomes = item_outcomes(df, [3])
    assert list(outcomes.columns) == ["item_id", "label", "run", "rendering", "length",
                                      "outcome"]
    assert dict(zip(outcomes["item_id"], outcomes["label"])) == {"a": "correct", "b": "flawed"}
    assert len(outcomes) == 2


def test_positions_beyond_requested_lengths_are_ignored():
    df = table(per_check_rows("a", "correct", 0, [Y, Y, Y, N]))
    assert outcome_by_length(item_outcomes(df, [3]), "a") == {3: "pass"}


def test_paragraph_uses_its_own_verdict_per_length():
    df = table(
        per_check_rows("a", "correct", 0, [N, Y, Y, Y]),
        paragraph_rows("a", "correct", 0, {3: Y, 4: U}),
        paragraph_rows("b", "flawed", 0, {3: N, 4: Y}),
    )
    outcomes = item_outcomes(df, [3, 4])
    assert outcome_by_length(outcomes, "a", rendering="paragraph") == {
        3: "pass", 4: "undetermined"}
    assert outcome_by_length(outcomes, "b", rendering="paragraph") == {3: "fail", 4: "pass"}
    assert outcome_by_length(outcomes, "a", rendering="per_check") == {3: "fail", 4: "fail"}


def test_missing_per_check_position_raises_naming_item_run_position():
    rows = per_check_rows("item-7", "correct", 1, [Y, Y, Y, Y])
    del rows[2]  # position 3
    df = table(per_check_rows("item-7", "correct", 0, [Y, Y, Y, Y]), rows)
    with pytest.raises(ValueError) as error:
        item_outcomes(df, [3, 4])
    message = str(error.value)
    assert "item-7" in message and "run 1" in message and "position 3" in message


def test_too_few_checks_for_requested_length_raises():
    df = table(per_check_rows("a", "correct", 0, [Y, Y, Y]))
    with pytest.raises(ValueError, match="position 4"):
        item_outcomes(df, [3, 4])


def test_item_missing_from_one_run_raises():
    df = table(per_check_rows("a", "correct", 0, [Y, Y, Y]),
               per_check_rows("b", "flawed", 0, [Y, Y, Y]),
               per_check_rows("a", "correct", 1, [Y, Y, Y]))
    with pytest.raises(ValueError) as error:
        item_outcomes(df, [3])
    assert "'b'" in str(error.value) and "run 1" in str(error.value)


def test_missing_paragraph_length_raises():
    df = table(paragraph_rows("a", "correct", 0, {3: Y, 4: Y}),
               paragraph_rows("b", "flawed", 0, {3: Y}))
    with pytest.raises(ValueError) as error:
        item_outcomes(df, [3, 4])
    assert "'b'" in str(error.value) and "run 0" in str(error.value) and "4" in str(error.value)


@pytest.mark.parametrize("lengths", [[], [0, 3], [2.5], [True]])
def test_bad_lengths_rejected(lengths):
    df = table(per_check_rows("a", "correct", 0, [Y, Y, Y]))
    with pytest.raises(ValueError, match="lengths"):
        item_outcomes(df, lengths)


# ---------- validate_verdicts ----------

def good_table():
    return table(per_check_rows("a", "correct", 0, [Y, N, Y]),
                 paragraph_rows("a", "correct", 0, {3: Y}))


def test_good_table_validates():
    validate_verdicts(good_table())


@pytest.mark.parametrize("column, value", [
    ("label", "consistent"),
    ("rendering", "all_in_one"),
    ("verdict", "Yes"),
    ("run", -1),
    ("length", 0),
])
def test_unknown_values_name_column_and_row(column, value):
    df = good_table()
    df.loc[1, column] = value
    with pytest.raises(ValueError) as error:
        validate_verdicts(df)
    message = str(error.value)
    assert repr(column) in message and "row 1" in message


def test_missing_column_is_named():
    with pytest.raises(ValueError, match="'check_id'"):
        validate_verdicts(good_table().drop(columns=["check_id"]))


def test_duplicate_key_rejected():
    df = good_table()
    df = pd.concat([df, df.iloc[[0]].assign(verdict="no")], ignore_index=True)
    with pytest.raises(ValueError, match="duplicate"):
        validate_verdicts(df)


def test_per_check_rows_need_check_id():
    df = good_table()
    df.loc[0, "check_id"] = ""
    with pytest.raises(ValueError, match="check_id"):
        validate_verdicts(df)


def test_item_with_two_labels_rejected():
    df = good_table()
    df.loc[2, "label"] = "flawed"
    with pytest.raises(ValueError, match="label"):
        validate_verdicts(df)


def test_item_outcomes_validates_first():
    df = good_table()
    df.loc[0, "verdict"] = "maybe"
    with pytest.raises(ValueError, match="verdict"):
        item_outcomes(df, [3])


# ---------- length_rates and mean_over_runs ----------

def two_run_table():
    return table(
        # run 0
        per_check_rows("c1", "correct", 0, [Y, Y, Y, Y, Y]),
        per_check_rows("c2", "correct", 0, [Y, Y, Y, N, Y]),
        per_check_rows("f1", "flawed", 0, [N, Y, Y, Y, Y]),
        per_check_rows("f2", "flawed", 0, [Y, Y, Y, Y, Y]),
        # run 1
        per_check_rows("c1", "correct", 1, [Y, Y, Y, Y, U]),
        per_check_rows("c2", "correct", 1, [Y, Y, Y, Y, Y]),
        per_check_rows("f1", "flawed", 1, [N, Y, Y, Y, Y]),
        per_check_rows("f2", "flawed", 1, [Y, Y, N, Y, Y]),
        # paragraph, run 0 only
        paragraph_rows("c1", "correct", 0, {3: Y, 4: Y, 5: Y}),
        paragraph_rows("c2", "correct", 0, {3: Y, 4: Y, 5: N}),
        paragraph_rows("f1", "flawed", 0, {3: N, 4: N, 5: N}),
        paragraph_rows("f2", "flawed", 0, {3: U, 4: Y, 5: Y}),
    )


def rate_row(rates, rendering, length, run=None):
    selected = rates[(rates["rendering"] == rendering) & (rates["length"] == length)]
    if run is not None:
        selected = selected[selected["run"] == run]
    assert len(selected) == 1
    return selected.iloc[0]


def test_length_rates_known_values():
    rates = length_rates(item_outcomes(two_run_table(), [3, 4, 5]))
    assert list(rates.columns) == ["rendering", "length", "run", "n_correct", "n_flawed",
                                   "n_undetermined", "correct_passed", "flawed_caught"]
    assert len(rates) == 3 * 2 + 3  # per_check: 3 lengths x 2 runs; paragraph: 3 x 1
    expected = {  # (length, run): (n_correct, n_flawed, n_undet, correct_passed, flawed_caught)
        (3, 0): (2, 2, 0, 100.0, 50.0),
        (4, 0): (2, 2, 0, 50.0, 50.0),
        (5, 0): (2, 2, 0, 50.0, 50.0),
        (3, 1): (2, 2, 0, 100.0, 100.0),
        (4, 1): (2, 2, 0, 100.0, 100.0),
        (5, 1): (1, 2, 1, 100.0, 100.0),
    }
    for (length, run), values in expected.items():
        row = rate_row(rates, "per_check", length, run)
        assert (row["n_correct"], row["n_flawed"], row["n_undetermined"],
                row["correct_passed"], row["flawed_caught"]) == values, (length, run)
    paragraph3 = rate_row(rates, "paragraph", 3, 0)
    assert (paragraph3["n_flawed"], paragraph3["n_undetermined"]) == (1, 1)
    assert paragraph3["flawed_caught"] == 100.0
    paragraph5 = rate_row(rates, "paragraph", 5, 0)
    assert (paragraph5["correct_passed"], paragraph5["flawed_caught"]) == (50.0, 50.0)


def test_mean_over_runs_known_values():
    means = mean_over_runs(length_rates(item_outcomes(two_run_table(), [3, 4, 5])))
    assert list(means.columns) == [
        "rendering", "length", "runs", "n_correct", "n_flawed", "n_undetermined",
        "correct_passed", "flawed_caught", "correct_passed_min", "correct_passed_max",
        "flawed_caught_min", "flawed_caught_max"]
    assert len(means) == 6
    row4 = rate_row(means, "per_check", 4)
    assert row4["runs"] == 2
    assert row4["correct_passed"] == pytest.approx(75.0)
    assert (row4["correct_passed_min"], row4["correct_passed_max"]) == (50.0, 100.0)
    assert row4["flawed_caught"] == pytest.approx(75.0)
    row5 = rate_row(means, "per_check", 5)
    assert row5["n_undetermined"] == 1
    assert (row5["n_correct"], row5["n_flawed"]) == (3, 4)
    assert row5["correct_passed"] == pytest.approx(75.0)
    row3 = rate_row(means, "per_check", 3)
    assert row3["correct_passed"] == pytest.approx(100.0)
    assert (row3["flawed_caught_min"], row3["flawed_caught_max"]) == (50.0, 100.0)
    paragraph = rate_row(means, "paragraph", 5)
    assert paragraph["runs"] == 1
    assert paragraph["correct_passed"] == paragraph["correct_passed_min"] == 50.0


def test_empty_denominators_give_nan_not_zero():
    df = table(per_check_rows("c1", "correct", 0, [Y, U, Y]),
               per_check_rows("c2", "correct", 0, [Y, Y, U]))
    rates = length_rates(item_outcomes(df, [1, 3]))
    length1 = rate_row(rates, "per_check", 1, 0)
    assert length1["correct_passed"] == 100.0
    assert length1["n_flawed"] == 0 and math.isnan(length1["flawed_caught"])
    length3 = rate_row(rates, "per_check", 3, 0)
    assert length3["n_correct"] == 0 and length3["n_undetermined"] == 2
    assert math.isnan(length3["correct_passed"])
    means = mean_over_runs(rates)
    assert math.isnan(rate_row(means, "per_check", 3)["correct_passed"])


def test_mean_skips_a_run_whose_rate_is_undefined():
    rates = pd.DataFrame([
        {"rendering": "per_check", "length": 3, "run": 0, "n_correct": 0, "n_flawed": 2,
         "n_undetermined": 1, "correct_passed": float("nan"), "flawed_caught": 50.0},
        {"rendering": "per_check", "length": 3, "run": 1, "n_correct": 1, "n_flawed": 2,
         "n_undetermined": 0, "correct_passed": 100.0, "flawed_caught": 100.0},
    ])
    row = mean_over_runs(rates).iloc[0]
    assert row["correct_passed"] == 100.0 and row["runs"] == 2
    assert row["flawed_caught"] == 75.0 and row["n_undetermined"] == 1


# --- one all-must-pass, one balanced accuracy, one name each ------------------------------------

def test_one_all_must_pass_for_fig2_judged_verdicts_and_gates():
    import numpy as np
    import pandas as pd

    from rubriclab.carry import aggregate, experiment, fig3, gates, judge_fig2
    from rubriclab.carry.revision import Rubric, RubricCheck
    assert (experiment.PASS, experiment.UNDETERMINED, experiment.FAIL) == (0, 1, 2)
    assert experiment.all_must_pass is aggregate.all_must_pass
    codes = np.array([[0, 0, 0], [0, 1, 0], [1, 2, 0], [2, 2, 2]])
    assert aggregate.all_must_pass(codes, axis=1).tolist() == [0, 1, 2, 2]
    assert aggregate.fails_any(codes == 2).tolist() == [False, False, True, True]
    with pytest.raises(ValueError, match="at least one check"):
        aggregate.all_must_pass(np.zeros((2, 0)), axis=1)
    # the judged-verdict lookup gives the same outcome as the fig2 aggregation
    texts = ["A.", "B.", "C."]
    answers = {"yes": 0, "unparseable": 1, "no": 2}
    rows = [dict(item_id=f"i{k}", kind="check", scope="", source="", rendering="per_check",
                 check_text=t, vote=0, answer=a)
            for k, row in enumerate(codes) for t, code in zip(texts, row)
            for a in [next(w for w, c in answers.items() if c == code)]]
    verdicts = experiment.Verdicts(pd.DataFrame(rows, columns=experiment.JUDGED_VERDICT_COLUMNS))
    rubric = Rubric("r", tuple(RubricCheck(t, t, "hand") for t in texts))
    fig2 = pd.DataFrame([dict(item_id=r["item_id"], label="correct", run=0, rendering="per_check",
                              length=texts.index(r["check_text"]) + 1,
                              check_id=r["check_text"], verdict=r["answer"]) for r in rows])
    outcomes = aggregate.item_outcomes(fig2, [3]).set_index("item_id")["outcome"]
    words = {0: "pass", 1: "undetermined", 2: "fail"}
    for k in range(len(codes)):
        assert words[verdicts.rubric_code(f"i{k}", rubric)] == outcomes[f"i{k}"]
    # one balanced accuracy; one fig2 verdict table; the judged table has its own name
    assert fig3.balanced_accuracy is aggregate.balanced_accuracy
    assert not hasattr(gates, "balanced_accuracy") or gates.balanced_accuracy is \
        aggregate.balanced_accuracy
    assert tuple(judge_fig2.VERDICT_COLUMNS) == (*aggregate.VERDICT_COLUMNS, "cache_key")
    assert not hasattr(experiment, "VERDICT_COLUMNS")


def test_revision_does_not_import_gates():
    """gates imports revision; revision names gates nowhere, not even for type checking."""
    import ast
    import subprocess
    import sys
    from importlib.util import find_spec

    source = open(find_spec("rubriclab.carry.revision").origin, encoding="utf-8").read()
    imported = {node.module for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.Import) for alias in node.names}
    assert not {m for m in imported if m and m.endswith("gates")}
    code = ("import sys, rubriclab.carry.revision; "
            "print('rubriclab.carry.gates' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
