"""The known-truth world (rubriclab.llm.known, known_authors): the scripted judge reads carry's
own prompts, answers the project's ground truth at its set rates, and the scripted authors write
rubrics and revisions that carry parses and that drift as carry Figure 4 describes."""

import json

import pandas as pd
import pytest

from rubriclab.carry.checklists import Check, Checklist, load_generic_checklist
from rubriclab.carry.prompts import paragraph_messages, per_check_messages
from rubriclab.carry.renderings import all_in_one_messages, scale_messages
from rubriclab.carry.revision import (
    Add, Delete, Edit, Keep, Rubric, RubricCheck, apply_revision, revision_from_answer,
    revision_messages,
)
from rubriclab.carry.sources import (
    RECON_TASK_DESCRIPTION, generated_messages, label_taught_messages, task_description,
)
from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm import known
from rubriclab.llm.known import (
    RECON_COVERAGE, RECON_NARROWED, RECON_STANDARD, KnownWorld, OutsideTheWorld, judge_answer,
    read_judge_prompt,
)
from rubriclab.llm.known_authors import reviser_answer, writer_answer
from rubriclab.recon import build_recon

PERFECT = "fake/known-judge?tpr=1&tnr=1"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """data/prepared as the pipeline writes it: Recon from its seed, and a small labelled set."""
    root = tmp_path_factory.mktemp("known")
    build_recon(0).to_files(root / "data" / "prepared" / "recon")
    rows = [dict(item_id=f"summedits:x:{k}", task=f"Document {k // 2}: the sky is blue.",
                 output=f"Summary {k}.", label="correct" if k % 2 else "flawed",
                 split="calibration" if k < 40 else "evaluation") for k in range(80)]
    pd.DataFrame(rows).to_csv(root / "data" / "prepared" / "summedits.csv", index=False)
    return root


@pytest.fixture
def world(prepared, monkeypatch):
    monkeypatch.chdir(prepared)
    return known.current_world()


def reports(prepared, environment="storage"):
    table = pd.read_csv(prepared / "data/prepared/recon/reports_recon108.csv",
                        keep_default_na=False)
    return table[table["environment"] == environment]


def hand_checks(prepared, environment="storage"):
    table = pd.read_csv(prepared / "data/prepared/recon/rubrics_hand.csv", keep_default_na=False)
    rows = table[table["environment"] == environment]
    return [(Check(id=r.check_id, text=r.text, origin="hand"), json.loads(r.targets))
            for r in rows.itertuples(index=False)]


def ask_check(world, model, row, text, sample_index=0):
    messages = per_check_messages(row.task, row.output, Check("c", text, ""),
                                  RECON_TASK_DESCRIPTION)
    return judge_answer(model, sample_index, "yes_no", messages, world)


def test_the_judge_reads_every_carry_judge_prompt(prepared):
    row = reports(prepared).iloc[0]
    checks = [c for c, _ in hand_checks(prepared)]
    checklist = Checklist("x", tuple(checks), RECON_TASK_DESCRIPTION)
    single = read_judge_prompt(per_check_messages(row.task, row.output, checks[0],
                                                  RECON_TASK_DESCRIPTION))
    assert (single.task, single.output, single.kind) == (row.task, row.output, "check")
    assert single.requirements == checks[0].text
    paragraph = read_judge_prompt(paragraph_messages(row.task, row.output, checklist))
    assert paragraph.kind == "paragraph" and paragraph.output == row.output
    for build in (all_in_one_messages, scale_messages):
        listed = read_judge_prompt(build(row.task, row.output, checklist))
        assert (listed.task, listed.output, listed.kind) == (row.task, row.output, "listed")
        assert listed.requirements == tuple(c.text for c in checks)


def test_a_perfect_judge_fails_a_hand_check_exactly_on_the_flaws_it_targets(prepared, world):
    flaws = {"missed_finding", "fabricated_finding", "wrong_resource"}
    for row in reports(prepared).itertuples(index=False):
        for check, targets in hand_checks(prepared):
            findings = set(targets) - flaws - {"format"}
            expected_fail = (row.label == "flawed" and row.flaw_type in targets
                             and (not findings or row.touched_finding_id in findings))
            answer = ask_check(world, PERFECT, row, check.text)
            assert answer == ("No" if expected_fail else "Yes"), (row.variant, check.text)


def test_no_report_meets_a_requirement_the_task_never_stated(prepared, world):
    every = pd.read_csv(prepared / "data/prepared/recon/reports_recon108.csv",
                        keep_default_na=False)
    for text in RECON_STANDARD:
        assert {ask_check(world, PERFECT, row, text) for row in every.itertuples()} == {"No"}


def test_the_open_coverage_check_catches_the_unplanned_miss_and_the_narrowed_one_does_not(
        prepared, world):
    rows = {r.variant: r for r in reports(prepared).itertuples(index=False)}
    omitted = rows["unchecked_omission-1"]
    assert ask_check(world, PERFECT, omitted, RECON_COVERAGE) == "No"
    assert ask_check(world, PERFECT, omitted, RECON_NARROWED) == "Yes"
    assert ask_check(world, PERFECT, rows["missed_finding-1"], RECON_NARROWED) == "No"
    assert ask_check(world, PERFECT, rows["correct-1"], RECON_COVERAGE) == "Yes"


def test_the_judge_errs_at_its_set_rates(prepared, world):
    model = "fake/known-judge?tpr=0.9&tnr=0.8"
    every = pd.read_csv(prepared / "data/prepared/recon/reports_recon108.csv",
                        keep_default_na=False)
    standard = next(iter(RECON_STANDARD))
    met, unmet = [], []
    for row in every.itertuples(index=False):
        for vote in range(5):
            if row.label == "correct":
                met.append(ask_check(world, model, row, RECON_COVERAGE, vote) == "Yes")
            unmet.append(ask_check(world, model, row, standard, vote) == "No")
    assert abs(sum(met) / len(met) - 0.9) < 0.04  # 180 draws
    assert abs(sum(unmet) / len(unmet) - 0.8) < 0.03  # 540 draws
    # the same prompt, the same answer; another sample index, its own draw
    row = every.iloc[0]
    answers = {ask_check(world, model, row, RECON_COVERAGE, 0) for _ in range(3)}
    assert len(answers) == 1


def test_a_paragraph_of_generic_checks_is_read_back_as_its_checks(world):
    for dataset in ("summedits", "ragtruth"):
        checklist = load_generic_checklist(dataset)
        vocabulary = world.vocabulary(dataset)
        for length in range(1, len(checklist.checks) + 1):
            prefix = checklist.prefix(length)
            prompt = read_judge_prompt(paragraph_messages("t", "o", prefix))
            assert known.paragraph_checks(prompt.requirements, vocabulary) == [
                c.text for c in prefix.checks], (dataset, length)


def test_a_labelled_item_fails_the_faithfulness_checks_only_when_flawed(world):
    checklist = load_generic_checklist("summedits")
    faithful = set(known.GENERIC_FAULTS["summedits"])
    for k in (0, 1):  # flawed, correct
        task, output = f"Document {k // 2}: the sky is blue.", f"Summary {k}."
        for check in checklist.checks:
            messages = per_check_messages(task, output, check, checklist.task_description)
            answer = judge_answer(PERFECT, 0, "yes_no", messages, world)
            assert answer == ("No" if k == 0 and check.id in faithful else "Yes"), check.id


def test_what_the_world_does_not_hold_stops_the_call_naming_it(prepared, world):
    row = reports(prepared).iloc[0]
    with pytest.raises(OutsideTheWorld, match="no meaning for the recon requirement"):
        ask_check(world, PERFECT, row, "Is the report written in French?")
    messages = per_check_messages(row.task, "Another report.", Check("c", RECON_COVERAGE, ""),
                                  RECON_TASK_DESCRIPTION)
    with pytest.raises(OutsideTheWorld, match="no item with this input and output"):
        judge_answer(PERFECT, 0, "yes_no", messages, world)
    with pytest.raises(OutsideTheWorld, match="reads carry's judge prompts"):
        judge_answer(PERFECT, 0, "yes_no", [{"role": "user", "content": "Policy: ..."}], world)


def test_judge_strings_need_their_rates():
    from rubriclab.llm.fake import parse_fake_model

    with pytest.raises(ValueError, match="needs tnr"):
        parse_fake_model("fake/known-judge?tpr=0.9")
    with pytest.raises(ValueError, match="unknown option"):
        parse_fake_model("fake/known-writer?tpr=0.9")
    assert parse_fake_model("fake/known-judge?tpr=0.9&tnr=0.8")[0] == "known-judge"


def test_the_judge_answers_through_the_model_layer_and_is_cached(prepared, world, tmp_path):
    row = reports(prepared).iloc[0]
    request = Request.chat(PERFECT, per_check_messages(row.task, row.output,
                                                       Check("c", RECON_COVERAGE, ""),
                                                       RECON_TASK_DESCRIPTION),
                           response_format="yes_no", max_tokens=4)
    config = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(backoff_s=0.0))
    with LLMClient(config) as client:
        first = client.run([request])[0]
    with LLMClient(config) as client:
        second = client.run([request])[0]
    assert first.outcome == "ok" and first.parsed == "yes" and second.cached


# --- the writer -------------------------------------------------------------------------------

def test_the_writer_teaches_the_coverage_check_from_labels_only(prepared):
    items = reports(prepared).assign(label=lambda t: t["label"])
    taught = json.loads(writer_answer("rubric_checks_10", label_taught_messages(
        RECON_TASK_DESCRIPTION, items.head(6), 10)))["checks"]
    drafted = json.loads(writer_answer("rubric_checks_3", generated_messages(
        RECON_TASK_DESCRIPTION, 3)))["checks"]
    assert RECON_COVERAGE in taught and RECON_COVERAGE not in drafted
    assert len(drafted) == 3
    summedits = json.loads(writer_answer("rubric_checks_5", generated_messages(
        task_description("summedits"), 5)))["checks"]
    assert all(text.startswith("The summary") for text in summedits)


# --- the reviser ------------------------------------------------------------------------------

def revise(world, rubric, mode, dataset="recon", salt="opus", seed=1):
    description = task_description(dataset)
    answer = reviser_answer(f"fake/known-reviser?salt={salt}", seed,
                            revision_messages(description, rubric, mode), world)
    revision = revision_from_answer(answer, rubric, mode, 1, "reviser", "")
    assert not hasattr(revision, "reason"), revision
    return revision


def hand_rubric(prepared):
    return Rubric("hand:storage", tuple(RubricCheck(c.id, c.text, "hand")
                                        for c, _ in hand_checks(prepared)))


def test_free_review_of_the_hand_rubric_adds_requirements_correct_reports_fail(prepared, world):
    correct = next(r for r in reports(prepared).itertuples() if r.label == "correct")
    for seed in (1, 2):
        rubric, kinds = hand_rubric(prepared), []
        for round_number in range(1, 5):
            revision = revise(world, rubric, "free", seed=seed)
            changed = [op for op in revision.ops if not isinstance(op, Keep)]
            assert len(changed) == 1
            kinds.append(type(changed[0]))
            assert ask_check(world, PERFECT, correct, changed[0].new_text) == "No"
            rubric = apply_revision(rubric, revision)
        assert kinds == [Edit, Add, Edit, Add]  # carry Table 4: two of each


def test_free_and_fixed_count_review_of_the_label_rubric_narrow_the_coverage_check(world):
    texts = json.loads(writer_answer("rubric_checks_10", label_taught_messages(
        RECON_TASK_DESCRIPTION, pd.DataFrame(
            {"label": ["correct", "flawed"], "task": ["t", "t"], "output": ["a", "b"]}),
        10)))["checks"]
    rubric = Rubric("label", tuple(RubricCheck(f"l{k}", t, "label")
                                   for k, t in enumerate(texts, 1)))
    for mode in ("free", "fixed_count"):
        revision = revise(world, rubric, mode)
        edits = [op for op in revision.ops if isinstance(op, Edit)]
        assert [op.new_text for op in edits] == [RECON_NARROWED]
        assert rubric.check(edits[0].check_id).text == RECON_COVERAGE
    kept = revise(world, rubric, "delete_only")
    deleted = [rubric.check(op.check_id).text for op in kept.ops if isinstance(op, Delete)]
    assert len(deleted) == 1 and deleted != [RECON_COVERAGE]


def test_delete_only_review_deletes_only_checks_whose_catches_others_hold(prepared, world):
    rubric = hand_rubric(prepared)
    targets = {c.id: t for c, t in hand_checks(prepared)}
    for seed in range(1, 6):
        for salt in ("opus", "sonnet", "haiku"):
            revision = revise(world, rubric, "delete_only", salt=salt, seed=seed)
            deleted = [op.check_id for op in revision.ops if isinstance(op, Delete)]
            assert len(deleted) == 1
            # never a check naming a finding: it alone catches that finding's miss
            assert not any(t.startswith("STG-") for t in targets[deleted[0]])


def test_review_of_a_labelled_rubric_adds_a_requirement_some_outputs_fail(world):
    texts = json.loads(writer_answer("rubric_checks_10", label_taught_messages(
        task_description("summedits"), pd.DataFrame(
            {"label": ["correct", "flawed"], "task": ["t", "t"], "output": ["a", "b"]}),
        10)))["checks"]
    rubric = Rubric("label", tuple(RubricCheck(f"l{k}", t, "label")
                                   for k, t in enumerate(texts, 1)))
    revision = revise(world, rubric, "free", dataset="summedits")
    added = [op.new_text for op in revision.ops if isinstance(op, Add)]
    assert len(added) == 1
    meaning = world.meaning(added[0], "summedits")
    assert 0 < meaning.share < 1 and not meaning.flaws


def test_a_paragraph_with_a_requirement_outside_the_world_is_refused(world):
    checklist = load_generic_checklist("summedits").prefix(3)
    extra = Checklist("x", (*checklist.checks, Check("z", "The summary rhymes.", "")),
                      checklist.task_description)
    prompt = read_judge_prompt(paragraph_messages("t", "o", extra))
    with pytest.raises(OutsideTheWorld, match="rhymes"):
        known.paragraph_checks(prompt.requirements, world.vocabulary("summedits"))
