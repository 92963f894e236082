import json
from types import SimpleNamespace

import pandas as pd
import pytest

from rubriclab.carry.revision import Rubric, RubricCheck
from rubriclab.carry.experiment import teaching_pool
from rubriclab.carry.sources import (
    ALL_SCOPE, RECON_TASK_DESCRIPTION, build_model_rubric, generated_messages, hand_rubrics,
    label_taught_messages, read_rubric_set, rubric_from_texts, task_description,
    teaching_examples, write_rubric_set,
)

# --- items ----------------------------------------------------------------------------------


def labelled(n_correct: int, n_flawed: int) -> pd.DataFrame:
    """Items c1..cN (correct) and f1..fM (flawed), listed out of id order."""
    rows = [dict(item_id=f"f{n}", task=f"Task of f{n}.", output=f"Output of f{n}.",
                 label="flawed") for n in range(n_flawed, 0, -1)]
    rows += [dict(item_id=f"c{n}", task=f"Task of c{n}.", output=f"Output of c{n}.",
                  label="correct") for n in range(n_correct, 0, -1)]
    return pd.DataFrame(rows)


def recon_items() -> pd.DataFrame:
    """Six reports: calibration and Recon-72 membership vary independently."""
    rows = [
        # item_id,     label,     split,         in_recon72
        ("r:cal:ok72", "correct", "calibration", True),
        ("r:cal:bad72", "flawed", "calibration", True),
        ("r:cal:ok108", "correct", "calibration", False),
        ("r:cal:bad108", "flawed", "calibration", False),
        ("r:eval:ok72", "correct", "evaluation", True),
        ("r:eval:bad72", "flawed", "evaluation", True),
    ]
    return pd.DataFrame([dict(item_id=i, task=f"Brief {i}", output=f"Report {i}", label=label,
                              split=split, in_recon72=in72, scope="storage")
                         for i, label, split, in72 in rows])


# --- teaching examples ----------------------------------------------------------------------

def test_teaching_examples_are_balanced_and_seeded():
    items = labelled(5, 7)
    first = teaching_examples(items, 3, seed=1)
    assert len(first) == 6
    assert (first["label"] == "correct").sum() == 3 and (first["label"] == "flawed").sum() == 3
    again = teaching_examples(items, 3, seed=1)
    pd.testing.assert_frame_equal(first, again)
    # the input order of the table does not matter (items are sorted by id first)
    shuffled = items.sample(frac=1.0, random_state=99)
    pd.testing.assert_frame_equal(first, teaching_examples(shuffled, 3, seed=1))


def test_teaching_examples_with_all_items_differ_only_in_order_between_seeds():
    items = labelled(4, 4)
    a = teaching_examples(items, None, seed=0)
    b = teaching_examples(items, None, seed=1)
    assert sorted(a["item_id"]) == sorted(b["item_id"]) == sorted(items["item_id"])
    assert list(a["item_id"]) != list(b["item_id"])
    assert list(a.index) == list(range(8))  # index reset


def test_teaching_examples_different_seed_changes_the_choice_or_order():
    items = labelled(6, 6)
    orders = {tuple(teaching_examples(items, 2, seed=s)["item_id"]) for s in range(5)}
    assert len(orders) > 1


@pytest.mark.parametrize("n_correct, n_flawed, per_label, match", [
    (0, 3, None, "no correct calibration item"),
    (3, 0, 2, "no flawed calibration item"),
    (2, 5, 3, "3 correct examples asked for, only 2"),
    (5, 1, 2, "2 flawed examples asked for, only 1"),
])
def test_teaching_examples_errors(n_correct, n_flawed, per_label, match):
    with pytest.raises(ValueError, match=match):
        teaching_examples(labelled(n_correct, n_flawed), per_label, seed=0)


# --- prompts --------------------------------------------------------------------------------

def test_label_taught_messages_show_every_example_with_its_label_and_nothing_else():
    items = labelled(3, 3)
    examples = items[items["item_id"].isin(["c1", "c3", "f2"])]
    messages = label_taught_messages("a summary", examples, n_checks=7)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    for number, row in enumerate(examples.itertuples(index=False), start=1):
        verdict = "CORRECT" if row.label == "correct" else "FLAWED"
        header = f"### Example {number} (human label: {verdict})"
        assert f"{header}\nInput:\n{row.task}\n\nOutput:\n{row.output}" in user
    assert user.count("### Example") == 3
    for other in ("c2", "f1", "f3"):
        assert f"of {other}." not in user
    assert "Write a checklist of 7 checks" in user
    assert "Each output is a summary." in user
    assert '{"checks": [' in user


@pytest.mark.parametrize("examples, match", [
    (labelled(0, 0), "no calibration examples"),
    (labelled(2, 0), "both labels"),
    (labelled(0, 2), "both labels"),
])
def test_label_taught_messages_need_both_labels(examples, match):
    if examples.empty:
        examples = pd.DataFrame(columns=["item_id", "task", "output", "label"])
    with pytest.raises(ValueError, match=match):
        label_taught_messages("a summary", examples, 5)


def test_generated_messages_show_only_the_task():
    messages = generated_messages(RECON_TASK_DESCRIPTION, 10)
    user = messages[1]["content"]
    assert f"Each output is {RECON_TASK_DESCRIPTION}." in user
    assert "Write a checklist of 10 checks" in user
    assert "Example" not in user and "label" not in user.lower()


# --- hand rubrics ---------------------------------------------------------------------------

HAND_TABLE = pd.DataFrame([
    # environment, position, check_id, text, origin
    ("storage", 2, "s-b", "The report names bucket-2.", "hand"),
    ("network", 1, "n-a", "The report names sg-1.", "hand"),
    ("storage", 3, "s-c", "The report cites the policy.", "label"),
    ("storage", 1, "s-a", "The report names bucket-1.", "hand"),
], columns=["environment", "position", "check_id", "text", "origin"])


def test_hand_rubrics_order_by_position_and_keep_origin():
    rubrics = hand_rubrics(HAND_TABLE, ["storage", "network"])
    assert list(rubrics) == ["storage", "network"]
    storage = rubrics["storage"]
    assert storage.name == "hand:storage"
    assert storage.ids == ["s-a", "s-b", "s-c"]
    assert [c.origin for c in storage.checks] == ["hand", "hand", "label"]
    assert storage.check("s-b").text == "The report names bucket-2."
    assert rubrics["network"].ids == ["n-a"]
    assert all(c.lineage == () for c in storage.checks)


def test_hand_rubrics_only_of_the_asked_environments():
    assert list(hand_rubrics(HAND_TABLE, ["network"])) == ["network"]


def test_hand_rubrics_unknown_environment_raises():
    with pytest.raises(ValueError, match=r"\['compute'\]"):
        hand_rubrics(HAND_TABLE, ["storage", "compute"])


# --- rubric set files -----------------------------------------------------------------------

def test_rubric_set_round_trip_keeps_lineage(tmp_path):
    rubrics = {
        "storage": Rubric("hand:storage", (
            RubricCheck("s-a", "The report names bucket-1.", "hand"),
            RubricCheck("r1-add1", "The report uses héadings.", "review by fake/x",
                        ("r1: add by fake/x", "r2: edit by fake/x")),
        )),
        ALL_SCOPE: rubric_from_texts("label:recon", ["A.", "B."], "label", "l"),
    }
    path = tmp_path / "set.json"
    write_rubric_set(path, "recon", "hand", rubrics, meta={"model": "fake/hash"})
    header, back = read_rubric_set(path)
    assert back == rubrics
    assert back["storage"].check("r1-add1").lineage == ("r1: add by fake/x", "r2: edit by fake/x")
    assert header == {"dataset": "recon", "source": "hand",
                      "task_description": RECON_TASK_DESCRIPTION,
                      "meta": {"model": "fake/hash"}}
    assert "héadings" in path.read_text(encoding="utf-8")  # not escaped


def test_read_rubric_set_rejects_other_files(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"dataset": "recon", "rubrics": {"all": {"name": "x"}}}))
    with pytest.raises(ValueError, match="not a rubric set file"):
        read_rubric_set(path)


def test_rubric_from_texts_numbers_ids_from_one():
    rubric = rubric_from_texts("generated:x", ["A.", "B.", "C."], "generated", "g")
    assert rubric.ids == ["g1", "g2", "g3"]
    assert {c.origin for c in rubric.checks} == {"generated"}


# --- building rubrics with a model ----------------------------------------------------------

class FakeClient:
    """A stand-in for LLMClient.run: records requests, answers with a fixed completion."""

    def __init__(self, outcome="ok", parsed=("The output is correct.", "The output is cited."),
                 error=""):
        self.completion = SimpleNamespace(outcome=outcome, parsed=list(parsed), error=error)
        self.calls = []

    def run(self, requests, label="model calls"):
        self.calls.append((list(requests), label))
        return [self.completion for _ in requests]


def build(client, dataset, source, items, per_label=None, seed=0):
    return build_model_rubric(client, dataset, source, items, model="fake/teacher", n_checks=4,
                              temperature=0.3, max_tokens=500, examples_per_label=per_label,
                              seed=seed)


def test_generated_rubric_is_one_call_without_items():
    client = FakeClient(parsed=["A.", "B.", "C."])
    items = recon_items()
    rubrics, meta = build(client, "recon", "generated", items)
    assert list(rubrics) == [ALL_SCOPE]
    rubric = rubrics[ALL_SCOPE]
    assert rubric.name == "generated:recon"
    assert rubric.ids == ["g1", "g2", "g3"]
    assert [c.text for c in rubric.checks] == ["A.", "B.", "C."]
    assert {c.origin for c in rubric.checks} == {"generated"}
    assert meta == {"model": "fake/teacher", "repeated_checks_dropped": 0}
    [(requests, label)] = client.calls
    [request] = requests
    assert label == "carry generated rubric recon"
    assert request.response_format == "rubric_checks_4"  # at most n_checks checks
    assert (request.model, request.temperature, request.max_tokens) == ("fake/teacher", 0.3, 500)
    prompt = "\n".join(m.content for m in request.messages)
    for row in items.itertuples(index=False):
        assert row.task not in prompt and row.output not in prompt
    assert "Write a checklist of 4 checks" in prompt


def test_repeated_checks_are_kept_once_and_counted():
    client = FakeClient(parsed=["A.", "B.", "A.", "C.", "B."])
    rubrics, meta = build(client, "recon", "generated", recon_items())
    # 5 texts, 2 repeats: A., B., C. in first-seen order, numbered g1..g3
    assert [c.text for c in rubrics[ALL_SCOPE].checks] == ["A.", "B.", "C."]
    assert rubrics[ALL_SCOPE].ids == ["g1", "g2", "g3"]
    assert meta["repeated_checks_dropped"] == 2


def test_label_teacher_sees_only_recon72_calibration_reports():
    client = FakeClient()
    rubrics, meta = build(client, "recon", "label", teaching_pool(recon_items(), "recon"))
    rubric = rubrics[ALL_SCOPE]
    assert rubric.ids == ["l1", "l2"] and {c.origin for c in rubric.checks} == {"label"}
    assert rubric.name == "label:recon"
    assert sorted(meta["examples"]) == ["r:cal:bad72", "r:cal:ok72"]
    prompt = client.calls[0][0][0].messages[-1].content
    assert "Report r:cal:ok72" in prompt and "Report r:cal:bad72" in prompt
    for unseen in ("r:cal:ok108", "r:cal:bad108", "r:eval:ok72", "r:eval:bad72"):
        assert f"Report {unseen}" not in prompt
    assert client.calls[0][1] == "carry label rubric recon"


def test_label_teacher_of_a_labelled_dataset_sees_the_calibration_split():
    items = recon_items().assign(in_recon72=False)
    client = FakeClient()
    _, meta = build(client, "summedits", "label", teaching_pool(items, "summedits"))
    # every calibration item, Recon-72 or not; no evaluation item
    assert sorted(meta["examples"]) == ["r:cal:bad108", "r:cal:bad72", "r:cal:ok108",
                                        "r:cal:ok72"]
    prompt = client.calls[0][0][0].messages[-1].content
    assert "r:eval" not in prompt
    assert f"Each output is {task_description('summedits')}." in prompt


def test_label_teacher_examples_per_label_and_seed():
    items = teaching_pool(recon_items().assign(in_recon72=False), "summedits")
    _, meta = build(FakeClient(), "summedits", "label", items, per_label=1, seed=4)
    labels = dict(zip(items["item_id"], items["label"]))
    assert sorted(labels[i] for i in meta["examples"]) == ["correct", "flawed"]
    _, again = build(FakeClient(), "summedits", "label", items, per_label=1, seed=4)
    assert again["examples"] == meta["examples"]


def test_label_teacher_without_a_recon72_label_raises():
    items = recon_items()
    items.loc[items["item_id"] == "r:cal:bad72", "in_recon72"] = False
    with pytest.raises(ValueError, match="no flawed calibration item"):
        build(FakeClient(), "recon", "label", teaching_pool(items, "recon"))


def test_label_teacher_refuses_a_pool_with_evaluation_items():
    with pytest.raises(ValueError, match="non-calibration items"):
        build(FakeClient(), "recon", "label", recon_items())


@pytest.mark.parametrize("source", ["generated", "label"])
def test_unparseable_answer_raises_naming_dataset_and_source(source):
    client = FakeClient(outcome="unparseable", parsed=(), error="expected exactly one JSON")
    with pytest.raises(ValueError, match=f"recon {source} rubric") as raised:
        build(client, "recon", source, teaching_pool(recon_items(), "recon"))
    assert "expected exactly one JSON" in str(raised.value)


def test_hand_is_not_a_model_source():
    with pytest.raises(ValueError, match="not written by a model"):
        build(FakeClient(), "recon", "hand", recon_items())
