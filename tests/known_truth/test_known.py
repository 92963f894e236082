"""The known-truth world (rubriclab.known_truth: world, judge, authors): the scripted judge reads carry's
own prompts, answers the project's ground truth at its set rates, the scripted writer writes
rubrics that carry parses, and the scripted reviser revises them blind to meanings and labels, one
change a round drawn at set probabilities."""

import json
from collections import Counter

import pandas as pd
import pytest

from rubriclab.carry.checklists import Check, Checklist, load_generic_checklist
from rubriclab.carry.prompts import paragraph_messages, per_check_messages
from rubriclab.carry.renderings import all_in_one_messages, scale_messages
from rubriclab.carry.revision import (
    MODES, Add, Delete, Edit, Keep, Rubric, RubricCheck, action_name, apply_revision,
    revision_from_answer, revision_messages,
)
from rubriclab.carry.sources import (
    RECON_TASK_DESCRIPTION, generated_messages, label_taught_messages, task_description,
)
from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.known_truth import world as known
from rubriclab.known_truth.authors import reviser_answer, reviser_probabilities, writer_answer
from rubriclab.known_truth.judge import judge_answer, paragraph_checks, read_judge_prompt
from rubriclab.known_truth.world import (
    RECON_COVERAGE, RECON_NARROWED, RECON_STANDARD, KnownWorld, Meaning, OutsideTheWorld,
)
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
            assert paragraph_checks(prompt.requirements, vocabulary) == [
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

REVISER = "fake/known-reviser?salt=opus"


def revise(world, rubric, mode, dataset="recon", model=REVISER, seed=1):
    answer = reviser_answer(model, seed, revision_messages(task_description(dataset), rubric, mode),
                            world)
    revision = revision_from_answer(answer, rubric, mode, 1, "reviser", "")
    assert not hasattr(revision, "reason"), revision
    return revision


def changes(revision):
    """The revision's changes by action name: [], ["add"], ["delete"], ["edit"] or, a swap,
    ["add", "delete"]."""
    return sorted(action_name(op) for op in revision.ops if not isinstance(op, Keep))


def hand_rubric(prepared):
    return Rubric("hand:storage", tuple(RubricCheck(c.id, c.text, "hand")
                                        for c, _ in hand_checks(prepared)))


def label_rubric(dataset):
    texts = json.loads(writer_answer("rubric_checks_10", label_taught_messages(
        task_description(dataset), pd.DataFrame(
            {"label": ["correct", "flawed"], "task": ["t", "t"], "output": ["a", "b"]}),
        10)))["checks"]
    return Rubric("label", tuple(RubricCheck(f"l{k}", t, "label")
                                 for k, t in enumerate(texts, 1)))


def every_answer(world, prepared):
    rubrics = {"recon": [hand_rubric(prepared), label_rubric("recon")],
               "summedits": [label_rubric("summedits")]}
    return [reviser_answer(REVISER, seed, revision_messages(task_description(dataset), rubric,
                                                            mode), world)
            for dataset, of_dataset in rubrics.items() for rubric in of_dataset
            for mode in MODES for seed in range(1, 16)]


def test_the_reviser_never_reads_what_a_check_means(prepared, world, monkeypatch):
    answers = every_answer(world, prepared)
    assert len(set(answers)) > len(answers) / 3  # the plans differ between draws

    def refuse(*args):
        raise AssertionError("the reviser read a check's meaning")

    monkeypatch.setattr(KnownWorld, "meaning", refuse)
    assert every_answer(world, prepared) == answers
    # the same texts meaning something else: the same plans
    monkeypatch.undo()
    other = Meaning(flaws=frozenset({"missed_finding"}), share=0.5)
    twisted = KnownWorld(items=world.items, hand={text: other for text in world.hand})
    monkeypatch.setattr(known, "RECON_VOCABULARY", {t: other for t in known.RECON_VOCABULARY})
    monkeypatch.setattr(known, "LABELLED_VOCABULARY", {
        dataset: {group: {t: other for t in texts} for group, texts in groups.items()}
        for dataset, groups in known.LABELLED_VOCABULARY.items()})
    assert every_answer(twisted, prepared) == answers


def frequencies(world, rubric, mode, model, draws=1500):
    counted = Counter()
    for seed in range(draws):
        counted["+".join(changes(revise(world, rubric, mode, model=model, seed=seed)))] += 1
    return {action: n / draws for action, n in counted.items()}


def near(shown, expected, bound=0.05):
    """Shares within bound (about 4 binomial standard deviations at 1,500 draws)."""
    assert set(shown) <= set(expected), shown
    return all(abs(shown.get(action, 0.0) - p) <= bound for action, p in expected.items())


def test_the_reviser_draws_its_actions_at_the_set_probabilities(prepared, world):
    rubric = hand_rubric(prepared)
    third = 1 / 3
    shown = frequencies(world, rubric, "free", REVISER)
    assert near(shown, {"add": third, "delete": third, "edit": third}), shown
    model = f"{REVISER}&add=0.5&delete=0.1&edit=0.2"
    shown = frequencies(world, rubric, "free", model)
    assert near(shown, {"add": 0.5, "delete": 0.1, "edit": 0.2, "": 0.2}), shown
    shown = frequencies(world, rubric, "fixed_count", model)
    assert near(shown, {"add+delete": 0.6, "edit": 0.2, "": 0.2}), shown
    shown = frequencies(world, rubric, "delete_only", model)
    assert near(shown, {"delete": 0.1, "": 0.9}), shown


def test_the_reviser_chooses_checks_and_additions_uniformly(prepared, world):
    rubric = hand_rubric(prepared)
    deleted, added, edited = Counter(), Counter(), Counter()
    for seed in range(1500):
        for op in revise(world, rubric, "free", seed=seed).ops:
            if isinstance(op, Delete):
                deleted[op.check_id] += 1
            elif isinstance(op, Add):
                added[op.new_text] += 1
            elif isinstance(op, Edit):
                edited[op.check_id] += 1
                assert op.new_text.startswith(rubric.check(op.check_id).text + " ")
                world.meaning(op.new_text, "recon")  # the judge can read what it wrote
    # every declared requirement, whatever it means: real checks, ones no report meets, ...
    assert set(added) == set(known.dataset_vocabulary("recon"))
    for counts, choices in ((deleted, len(rubric)), (edited, len(rubric)),
                            (added, len(known.dataset_vocabulary("recon")))):
        expected = sum(counts.values()) / choices
        assert len(counts) == choices and all(0.5 * expected <= n <= 1.5 * expected
                                              for n in counts.values()), counts


def test_an_edit_writes_only_forms_the_world_declares(prepared, world):
    edit_only = f"{REVISER}&add=0&delete=0&edit=1"
    rubric = label_rubric("recon")
    written = Counter()
    for seed in range(400):
        (op,) = [op for op in revise(world, rubric, "free", model=edit_only, seed=seed).ops
                 if isinstance(op, Edit)]
        before = rubric.check(op.check_id).text
        written[op.new_text == RECON_NARROWED] += before == RECON_COVERAGE
        assert op.new_text == RECON_NARROWED and before == RECON_COVERAGE or any(
            op.new_text == f"{before} {clause}" for clause in known.STRICT_CLAUSES)
    # the coverage check has four forms: three clauses and the narrowed check
    assert 0 < written[True] < written[False]
    # a check already edited has no form: the edit passes to the one plain check left
    plain, clause = rubric.checks[0], next(iter(known.STRICT_CLAUSES))
    edited = Rubric("edited", (plain, *(RubricCheck(c.id, f"{c.text} {clause}", "label")
                                        for c in rubric.checks[1:])))
    for seed in range(20):
        assert [op.check_id for op in revise(world, edited, "free", model=edit_only,
                                             seed=seed).ops if isinstance(op, Edit)] == [plain.id]
    # no check with a form (Recon, all edited; SummEdits, none declared): no change
    none_left = Rubric("edited", edited.checks[1:])
    for seed in range(20):
        assert changes(revise(world, none_left, "free", model=edit_only, seed=seed)) == []
        assert changes(revise(world, label_rubric("summedits"), "fixed_count", dataset="summedits",
                              model=edit_only, seed=seed)) == []


def test_the_reviser_keeps_to_the_mode_its_prompt_states(prepared, world):
    for dataset, start in (("recon", hand_rubric(prepared)), ("summedits",
                                                            label_rubric("summedits"))):
        for mode in MODES:
            for seed in range(1, 4):
                rubric = start
                for round_number in range(1, 9):
                    revision = revise(world, rubric, mode, dataset=dataset, seed=seed)
                    made = changes(revision)
                    if mode == "delete_only":
                        assert made in ([], ["delete"]), made
                    revised = apply_revision(rubric, revision)
                    if mode == "fixed_count":
                        assert len(revised) == len(rubric)
                    rubric = revised
    # a delete never leaves the rubric without a check
    one = Rubric("one", (hand_rubric(prepared).checks[0],))
    for mode in ("free", "delete_only"):
        for seed in range(20):
            assert changes(revise(world, one, mode, model=f"{REVISER}&add=0&delete=1&edit=0",
                                  seed=seed)) == []


def test_the_reviser_is_reproducible_and_each_salt_draws_its_own_chain(prepared, world):
    rubric = hand_rubric(prepared)
    plans = {salt: [revise(world, rubric, "free", model=f"fake/known-reviser?salt={salt}",
                           seed=seed).ops for seed in range(1, 21)]
             for salt in ("opus", "sonnet")}
    again = [revise(world, rubric, "free", model="fake/known-reviser?salt=opus", seed=seed).ops
             for seed in range(1, 21)]
    assert plans["opus"] == again and plans["opus"] != plans["sonnet"]


def test_reviser_options_are_checked_naming_the_model():
    from rubriclab.llm.fake import parse_fake_model

    for model, message in (
            (f"{REVISER}&add=1.5", r"add must be in \[0, 1\], got 1.5"),
            (f"{REVISER}&edit=-0.1", r"edit must be in \[0, 1\]"),
            (f"{REVISER}&delete=many", "delete must be a number, got 'many'"),
            (f"{REVISER}&add=0.5&delete=0.5&edit=0.5", "must be at most 1, got 1.5"),
            (f"{REVISER}&add=0.6", r"at most 1, got 1.267 \(delete, edit not given"),
            (f"{REVISER}&tpr=0.9", "unknown option")):
        with pytest.raises(ValueError, match=message) as raised:
            parse_fake_model(model)
        assert repr(model) in str(raised.value)
    assert parse_fake_model(f"{REVISER}&add=0.5&delete=0.5&edit=0")[0] == "known-reviser"
    assert reviser_probabilities(REVISER) == {"add": 1 / 3, "delete": 1 / 3, "edit": 1 / 3}


def test_a_paragraph_with_a_requirement_outside_the_world_is_refused(world):
    checklist = load_generic_checklist("summedits").prefix(3)
    extra = Checklist("x", (*checklist.checks, Check("z", "The summary rhymes.", "")),
                      checklist.task_description)
    prompt = read_judge_prompt(paragraph_messages("t", "o", extra))
    with pytest.raises(OutsideTheWorld, match="rhymes"):
        paragraph_checks(prompt.requirements, world.vocabulary("summedits"))
