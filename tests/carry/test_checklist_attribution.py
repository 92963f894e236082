"""carry.checklist_attribution: a checklist's attribution table from Figure 2's verdicts, and
carry.checklists.load_checklist_file."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rubriclab.carry.attribution import shapley_attribution
from rubriclab.carry.checklist_attribution import attribution_markdown, checklist_attribution
from rubriclab.carry.checklists import load_checklist_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CHECKLIST = load_checklist_file(EXAMPLES / "own_data" / "checklist.yaml")


def fig2_verdicts(seed: int, runs: int = 1, n: int = 10, unparseable: tuple = ()) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(runs):
        for i in range(n):
            label = "flawed" if i % 2 else "correct"
            for position, check in enumerate(CHECKLIST.checks, start=1):
                verdict = "no" if rng.random() < 0.35 else "yes"
                if (run, i, position) in unparseable:
                    verdict = "unparseable"
                rows.append(dict(item_id=f"i{i}", label=label, run=run, rendering="per_check",
                                 length=position, check_id=check.id, verdict=verdict))
            rows.append(dict(item_id=f"i{i}", label=label, run=run, rendering="paragraph",
                             length=4, check_id="", verdict="yes"))
    return pd.DataFrame(rows)


def test_the_checklist_file_keeps_its_names_and_order():
    assert CHECKLIST.name == "Travel desk reply checklist"
    assert [c.id for c in CHECKLIST.checks] == ["confirms_new_date", "states_fee",
                                                "no_invented_policy", "answers_question"]
    assert {c.origin for c in CHECKLIST.checks} == {"own"}


def test_a_malformed_checklist_file_is_named(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("task_description: grade it\nchecks:\n  - {id: a}\n")
    with pytest.raises(ValueError, match=f"checklist file {path}, check index 0: 'text'"):
        load_checklist_file(path)
    path.write_text("- just a list\n")
    with pytest.raises(ValueError, match="expected a mapping"):
        load_checklist_file(path)


def test_each_run_is_the_closed_form_on_its_per_check_verdicts():
    verdicts = fig2_verdicts(3, runs=2)
    table = checklist_attribution(verdicts, CHECKLIST)
    assert table["check_id"].tolist() == [c.id for c in CHECKLIST.checks] * 2
    run1 = verdicts[(verdicts.run == 1) & (verdicts.rendering == "per_check")]
    wide = run1.pivot(index="item_id", columns="length", values="verdict")
    flawed = (run1.drop_duplicates("item_id").set_index("item_id").loc[wide.index, "label"]
              == "flawed").to_numpy()
    expected = shapley_attribution((wide == "no").to_numpy(), flawed)
    rows = table[table.run == 1]
    assert rows["credit"].to_numpy() == pytest.approx(expected.credit)
    assert rows["blame"].to_numpy() == pytest.approx(expected.blame)
    assert rows["unique_catches"].tolist() == expected.unique_catches.tolist()


def test_an_item_with_an_unparseable_verdict_is_left_out_and_counted():
    verdicts = fig2_verdicts(4, unparseable=((0, 3, 2),))
    table = checklist_attribution(verdicts, CHECKLIST)
    assert (table["n_left_out"] == 1).all()
    assert (table["n_correct"] + table["n_flawed"] == 9).all()
    text = attribution_markdown(table, CHECKLIST.name, "Travel desk replies", "my judge",
                                {"correct": "good", "flawed": "bad", "items": "replies"})
    assert text.startswith('# Attribution of the checklist "Travel desk reply checklist" on '
                           "Travel desk replies")
    assert "Left out: 1 of the replies" in text and "Good replies passed:" in text
    for check in CHECKLIST.checks:
        assert f"| {check.id} " in text


def test_the_markdown_shows_the_mean_over_runs():
    table = checklist_attribution(fig2_verdicts(5, runs=3), CHECKLIST)
    text = attribution_markdown(table, "c", "t", "j")
    mean = table.groupby("check_id", sort=False)["credit"].mean()
    assert "mean of 3 runs" in text
    assert f"| {mean.index[0]} " in text and f"{mean.iloc[0]:.2f}" in text


def test_verdicts_of_another_checklist_are_refused():
    verdicts = fig2_verdicts(6)
    verdicts.loc[verdicts.length == 2, "check_id"] = "something_else"
    with pytest.raises(ValueError, match="position 2 holds verdicts of check 'something_else'"):
        checklist_attribution(verdicts, CHECKLIST)
