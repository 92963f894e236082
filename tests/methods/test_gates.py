"""rubriclab.methods.gate and `rubriclab gate` on the tutorial's revision."""

import pandas as pd
import pytest

from rubriclab.carry.gates import GateEvidence, get_gate
from rubriclab.carry.revision import Add, Delete, Edit, Keep, Revision, Rubric, RubricCheck
from rubriclab.cli import main
from rubriclab.methods import InputError, gate, read_table

from .conftest import EXAMPLES

TUTORIAL = EXAMPLES / "tutorial"


def tutorial_tables():
    return {name: read_table(TUTORIAL / f"{name}.csv")
            for name in ("revision", "verdicts", "labels", "proposed")}


def decided(result):
    table = result.decisions
    return {g: table.loc[table["gate"] == g, "accepted"].tolist() for g in table["gate"].unique()}


def test_each_gate_decides_the_tutorial_revision_as_its_rule_says():
    t = tutorial_tables()
    result = gate(t["revision"], t["verdicts"], t["labels"], proposed=t["proposed"],
                  gates=["none", "R", "P", "S", "S+P"])
    # steps: keep, edit of a hand check (its new text fails no correct reply), delete of a
    # label-derived check holding a unique catch, delete of a hand check without one, add of a
    # check that fails two correct replies
    assert decided(result) == {
        "none": [True] * 5,
        "R": [True, True, False, True, False],
        "P": [True, True, False, True, True],
        "S": [True, True, False, True, False],
        "S+P": [True, True, False, True, False],
    }
    after = result.rubrics.set_index("gate")["checks"]
    assert after["P"] == "confirms_new_date, states_fee*, no_invented_policy, apologises"
    assert after["S+P"] == "confirms_new_date, states_fee*, no_invented_policy"
    assert after["none"] == "confirms_new_date, states_fee*, apologises"
    reasons = result.decisions.set_index(["gate", "step"])["reason"]
    assert "unique catch" in reasons[("S", 3)] and "frozen" in reasons[("P", 3)]
    assert reasons[("S", 5)] == "add: false-fail blame 2.000"
    assert result.decisions.loc[result.decisions["step"] == 5, "check_id"].eq("apologises").all()


def test_the_decisions_are_carrys_own_on_the_same_evidence():
    t = tutorial_tables()
    labels = t["labels"].set_index("item_id")["label"]
    fails = t["verdicts"].assign(fail=t["verdicts"]["verdict"] == "fail").pivot(
        index="item_id", columns="check_id", values="fail").loc[labels.index]
    proposed = t["proposed"].assign(fail=t["proposed"]["verdict"] == "fail").pivot(
        index="item_id", columns="check_id", values="fail").loc[labels.index]
    rubric = Rubric("r", (RubricCheck("confirms_new_date", "", "label"),
                          RubricCheck("states_fee", "", "hand"),
                          RubricCheck("no_invented_policy", "", "label"),
                          RubricCheck("answers_question", "", "hand")))
    ops = (Keep("confirms_new_date"), Edit("states_fee", "new"), Delete("no_invented_policy"),
           Delete("answers_question"), Add("apology"))
    evidence = GateEvidence(
        flawed=(labels == "flawed").to_numpy(),
        current_fails={c: fails[c].to_numpy(dtype=bool) for c in fails.columns},
        proposed_fails={1: proposed["states_fee"].to_numpy(dtype=bool),
                        4: proposed["apologises"].to_numpy(dtype=bool)})
    ours = gate(t["revision"], t["verdicts"], t["labels"], proposed=t["proposed"])
    for name in ("R", "P", "S", "S+P"):
        theirs = get_gate(name).decide(rubric, Revision(ops, 1, "x", "free"), evidence)
        rows = ours.decisions[ours.decisions["gate"] == name]
        assert rows["accepted"].tolist() == [d.accepted for d in theirs]


def test_a_version_column_does_what_a_separate_proposed_table_does():
    t = tutorial_tables()
    both = pd.concat([t["verdicts"].assign(version="current"),
                      t["proposed"].assign(version="proposed")], ignore_index=True)
    one = gate(t["revision"], both, t["labels"])
    two = gate(t["revision"], t["verdicts"], t["labels"], proposed=t["proposed"])
    assert one.decisions.equals(two.decisions) and one.rubrics.equals(two.rubrics)


def test_the_command_prints_decisions_and_writes_them(tmp_path, capsys):
    out, rubrics = tmp_path / "d.csv", tmp_path / "r.csv"
    code = main(["gate", *(str(TUTORIAL / f"{n}.csv") for n in ("revision", "verdicts",
                                                                 "labels")),
                 "--proposed", str(TUTORIAL / "proposed.csv"), "--gate", "S+P",
                 "--out", str(out), "--rubrics-out", str(rubrics)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "| S+P    | 3      | delete   | no_invented_policy | refuse" in printed
    written = pd.read_csv(out)
    assert written["gate"].unique().tolist() == ["S+P"] and len(written) == 5
    assert pd.read_csv(rubrics)["checks"].tolist() == [
        "confirms_new_date, states_fee*, no_invented_policy"]


def test_an_edit_without_verdicts_of_its_new_text_names_the_table(tmp_path, capsys):
    code = main(["gate", *(str(TUTORIAL / f"{n}.csv") for n in ("revision", "verdicts",
                                                                 "labels"))])
    assert code == 2
    err = capsys.readouterr().err
    assert "column 'version'" in err and "proposed text of check 'states_fee'" in err


@pytest.mark.parametrize("revision, column, words", [
    ("check_id,origin,action,new_text\nA,hand,rewrite,x\n", "action",
     "'rewrite'; expected keep or edit or delete or add"),
    ("check_id,origin,action,new_text\nA,hand,edit,\n", "new_text", "an edit needs the text"),
    ("check_id,origin,action,new_text\nA,hand,keep,\nA,hand,delete,\n", "check_id", "repeats"),
    ("check_id,origin,action\nA,hand,keep\n", "new_text", "missing"),
    ("check_id,origin,action,new_text\nZ,,add,new\n", "action", "every row is an add"),
])
def test_a_malformed_revision_names_its_column(revision, column, words):
    frame = pd.DataFrame([line.split(",") for line in revision.splitlines()[1:]],
                         columns=revision.splitlines()[0].split(","))
    verdicts = pd.DataFrame({"item_id": ["x"], "check_id": ["A"], "verdict": ["pass"]})
    labels = pd.DataFrame({"item_id": ["x"], "label": ["correct"]})
    with pytest.raises(InputError) as caught:
        gate(frame, verdicts, labels)
    assert caught.value.column == column and words in str(caught.value)


def test_verdicts_of_a_check_the_revision_lacks_are_refused():
    revision = pd.DataFrame({"check_id": ["A"], "origin": ["hand"], "action": ["keep"],
                             "new_text": [""]})
    verdicts = pd.DataFrame({"item_id": ["x", "x"], "check_id": ["A", "B"],
                             "verdict": ["pass", "fail"]})
    labels = pd.DataFrame({"item_id": ["x"], "label": ["correct"]})
    with pytest.raises(InputError, match="row 2: check 'B' is not in the revision"):
        gate(revision, verdicts, labels)


def test_unknown_gate_is_refused():
    t = tutorial_tables()
    with pytest.raises(ValueError, match="unknown gate"):
        gate(t["revision"], t["verdicts"], t["labels"], proposed=t["proposed"], gates=["Q"])


def test_tolerance_zero_is_todays_gate_exactly():
    t = tutorial_tables()
    args = (t["revision"], t["verdicts"], t["labels"])
    today = gate(*args, proposed=t["proposed"], gates=["none", "R", "P", "S", "S+P"])
    zero = gate(*args, proposed=t["proposed"], gates=["none", "R", "P", "S", "S+P"],
                tolerance=0)
    pd.testing.assert_frame_equal(today.decisions, zero.decisions)
    pd.testing.assert_frame_equal(today.rubrics, zero.rubrics)


def test_a_tolerance_accepts_a_small_loss_and_still_refuses_a_larger_one():
    t = tutorial_tables()
    tolerant = gate(t["revision"], t["verdicts"], t["labels"], proposed=t["proposed"],
                    gates=["S", "S+P"], tolerance=0.1)
    # step 3 deletes a check holding 1 unique catch of 10 flawed replies (10%): refused at 0,
    # accepted at a tolerance of 10%; step 5 adds a check with blame 2 of 10 correct replies
    # (20%): still refused
    assert decided(tolerant)["S"] == [True, True, True, True, False]
    reasons = tolerant.decisions.set_index(["gate", "step"])["reason"]
    assert reasons[("S", 3)] == ("delete of no_invented_policy: 1 unique catch(es), 10% of 10 "
                                 "flawed items, tolerance 10%")
    assert reasons[("S", 5)].startswith("add: false-fail blame 2.000, 20% of 10 correct")
    # S+P: P still freezes the label-derived check whatever the tolerance
    assert decided(tolerant)["S+P"] == [True, True, False, True, False]
    assert tolerant.rubrics.set_index("gate")["checks"]["S"] == "confirms_new_date, states_fee*"
    wider = gate(t["revision"], t["verdicts"], t["labels"], proposed=t["proposed"],
                 gates=["S"], tolerance=0.2)
    assert decided(wider)["S"] == [True] * 5


def test_a_tolerance_outside_zero_to_one_is_refused_and_the_command_takes_it(tmp_path, capsys):
    t = tutorial_tables()
    for bad in (-0.1, 1, 2):
        with pytest.raises(ValueError, match="tolerance must be a share"):
            gate(t["revision"], t["verdicts"], t["labels"], proposed=t["proposed"],
                 tolerance=bad)
    files = [str(TUTORIAL / f"{n}.csv") for n in ("revision", "verdicts", "labels")]
    code = main(["gate", *files, "--proposed", str(TUTORIAL / "proposed.csv"), "--gate", "S",
                 "--tolerance", "0.1"])
    assert code == 0 and "10% of 10 flawed items, tolerance 10%" in capsys.readouterr().out
    code = main(["gate", *files, "--proposed", str(TUTORIAL / "proposed.csv"),
                 "--tolerance", "1.5"])
    assert code == 2 and "tolerance must be a share" in capsys.readouterr().err
