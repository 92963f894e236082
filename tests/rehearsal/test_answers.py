"""rubriclab.llm.standins against one request of every request builder of the pipeline.

The rehearsal server sees only a request's messages, so `infer_format` reads the response format
off the prompt text. Each case below builds one request with the pipeline's own builder (the
stage functions where they build the request themselves) from small hand-made inputs, and
checks that (1) `infer_format` names the request's own `response_format` and (2) the text of
`answer` parses with that format's parser. A prompt edit that breaks one of answers.py's rules
fails here, not in a paid run. No network, no model calls: stages that ask a model get a
recorder that answers with `answer` itself, as the rehearsal server would. The last section
asks the same of the client's re-ask after a faulty answer (xfail where answers.py misreads it).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from types import SimpleNamespace

import pandas as pd
import pytest

from rubriclab.carry.checklists import load_generic_checklist
from rubriclab.carry.experiment import JudgeSpec, judge_plan, run_reviser_chain
from rubriclab.carry.judge_fig2 import build_requests
from rubriclab.carry.revision import (
    MODES, REVISION_FORMAT, Revision, Rubric, RubricCheck, revision_from_answer,
)
from rubriclab.carry.sources import (
    ALL_SCOPE, generated_messages, label_taught_messages, source_request, task_description,
    teaching_examples,
)
from rubriclab.llm import Request
from rubriclab.llm.formats import UnparseableAnswer, get_format
from rubriclab.llm.request import cache_key
from rubriclab.llm.standins import answer, infer_format
from rubriclab.rehearsal.server import _JSON_FORMATS, REFUSAL
from rubriclab.transfer import pipeline as TP
from rubriclab.transfer import prompts as TPR
from rubriclab.transfer.restate import restate_request
from rubriclab.verify import refund, reply_rubric

MODEL = "some-model"


# --- a recorder that answers as the rehearsal server does ------------------------------------

def rehearsal_completion(request: Request) -> SimpleNamespace:
    """What the client makes of the server's first answer: parsed by the request's own format."""
    _, text = answer(request.message_dicts(), request.model, request.sample_index)
    try:
        parsed = get_format(request.response_format).parse(text)
    except UnparseableAnswer as exc:
        return SimpleNamespace(request=request, outcome="unparseable", text=text, parsed=None,
                               error=str(exc), key=cache_key(request, "rehearsal"))
    return SimpleNamespace(request=request, outcome="ok", text=text, parsed=parsed, error="",
                           key=cache_key(request, "rehearsal"))


class Recorder:
    """Every model-asking interface of the pipeline, recording each request it is given:
    `ask_one(request)` (carry's chain runner), `ask(requests, label)` (transfer's stages) and
    `run(requests, label=...)` (an LLMClient, as verify's refund trial and grader use it)."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def ask_one(self, request: Request) -> SimpleNamespace:
        self.requests.append(request)
        return rehearsal_completion(request)

    def ask(self, requests: list[Request], label: str) -> list[SimpleNamespace]:
        return [self.ask_one(request) for request in requests]

    def run(self, requests: list[Request], label: str = "model calls") -> list[SimpleNamespace]:
        return self.ask(requests, label)


def system_of(request: Request) -> str:
    return request.messages[0].content if request.messages[0].role == "system" else ""


def only(requests: list[Request], where: Callable[[Request], bool], what: str) -> Request:
    found = [r for r in requests if where(r)]
    assert found, f"the builder made no {what} request"
    return found[0]


# --- carry inputs: Recon-like items and rubrics, and a SummEdits-like item ------------------

RECON = task_description("recon")
RECON_ITEMS = pd.DataFrame([
    dict(item_id="recon:storage:1", scope="storage", label="flawed", split="calibration",
         task="Environment: storage\nBrief: review every bucket of account 1142 for public "
              "access, encryption and logging.\nResources:\n- bucket logs-prod (public-read)\n"
              "- bucket backups (SSE-KMS, private)",
         output="# Findings\n\n1. logs-prod is publicly readable. Severity: high. Evidence: "
                "ACL grants AllUsers READ.\n2. backups: no issue found."),
    dict(item_id="recon:storage:2", scope="storage", label="correct", split="calibration",
         task="Environment: storage\nBrief: review bucket media for public access.\n"
              "Resources:\n- bucket media (private, versioned)",
         output="No misconfiguration found for bucket media: it is private and versioned."),
    dict(item_id="recon:network:1", scope="network", label="flawed", split="evaluation",
         task="Environment: network\nBrief: review security group sg-web for open ports.",
         output="sg-web allows 0.0.0.0/0 on port 22. Severity: medium."),
])
HAND_STORAGE = Rubric("hand:storage", (
    RubricCheck("storage-1", "The report flags every publicly readable bucket in scope.", "hand"),
    RubricCheck("storage-2", "Each finding names the bucket and gives a severity.", "hand"),
    RubricCheck("storage-3", "The report raises no finding about a correctly configured "
                             "bucket.", "hand"),
))
GENERATED_ALL = Rubric("generated", (
    RubricCheck("g1", "The report lists each misconfigured resource by its identifier.",
                "generated"),
    RubricCheck("g2", "Every finding cites configuration evidence.", "generated"),
))
RENDERING_SET = {"storage": HAND_STORAGE, ALL_SCOPE: GENERATED_ALL}
TEXTS_BY_SCOPE = {"storage": [c.text for c in HAND_STORAGE.checks],
                  ALL_SCOPE: [c.text for c in GENERATED_ALL.checks]}

SUMMEDITS_ITEMS = pd.DataFrame([
    dict(item_id="summedits:1", label="flawed",
         task="The council approved the new budget on Tuesday by a vote of 7 to 2. Spending "
              "on parks rises 4%.",
         output="The council rejected the budget on Tuesday."),
    dict(item_id="summedits:2", label="correct",
         task="The museum reopens in May after a two-year renovation.",
         output="The museum reopens in May after renovation."),
])


def _judge_plan(rendering: str) -> Request:
    requests, rows = judge_plan(
        RECON_ITEMS, TEXTS_BY_SCOPE, RECON, JudgeSpec(MODEL, votes=2, temperature=0.7,
                                                       max_tokens=4),
        rendering_sets={"hand": RENDERING_SET}, renderings=("all_in_one", "paragraph", "scale"),
        rendering_item_ids=["recon:storage:1"])
    return next(r for r, row in zip(requests, rows) if row["rendering"] == rendering)


def _fig2(rendering: str) -> Request:
    checklist = load_generic_checklist("summedits")
    requests, rows = build_requests(SUMMEDITS_ITEMS, checklist, lengths=[3, len(checklist)],
                                    runs=1, judge=MODEL, temperature=0.0, max_tokens=4)
    return next(r for r, row in zip(requests, rows) if row["rendering"] == rendering)


def _generated(dataset: str) -> Request:
    return source_request(MODEL, generated_messages(task_description(dataset), 5),
                          temperature=0.7, max_tokens=1024, n_checks=5)


def _label_taught(dataset: str) -> Request:
    items = RECON_ITEMS if dataset == "recon" else SUMMEDITS_ITEMS
    examples = teaching_examples(items, per_label=1, seed=0)
    return source_request(MODEL, label_taught_messages(task_description(dataset), examples, 8),
                          temperature=0.7, max_tokens=1024, n_checks=8)


def _revision(mode: str, round_number: int = 1) -> Request:
    """The request `run_reviser_chain` builds in round `round_number` (1: the hand rubric)."""
    recorder = Recorder()
    run_reviser_chain({"storage": HAND_STORAGE}, rounds=round_number, mode=mode, seed=1,
                      reviser=MODEL, temperature=0.7, max_tokens=1024, description=RECON,
                      ask=recorder.ask_one)
    assert len(recorder.requests) == round_number
    return recorder.requests[round_number - 1]


# --- verify: the refund agent's steps and the reply rubric ----------------------------------

def _agent_step(step: int) -> Request:
    recorder = Recorder()
    refund.run_agent_trial(recorder, MODEL, trial_index=0, max_steps=3)
    assert len(recorder.requests) > step, (
        f"the trial stopped after {len(recorder.requests)} steps")
    return recorder.requests[step]


def _reply_rubric() -> Request:
    recorder = Recorder()
    reply_rubric.grade_reply(recorder, MODEL, "We have issued a full refund of 86.00 USD for "
                             f"order {refund.ORDER_ID}; it arrives in five to seven business "
                             "days.")
    assert len(recorder.requests) == len(reply_rubric.RUBRIC_CRITERIA)
    return recorder.requests[1]


# --- transfer inputs: HealthBench-like examples -------------------------------------------------

CONVERSATION = [
    {"role": "user", "content": "I am 6 weeks postpartum and feel low.\nWhat can I do?"},
    {"role": "assistant", "content": "How long have you felt this way?"},
    {"role": "user", "content": "About two weeks. I also take 50 mg sertraline."},
]
EXPERT_RUBRIC = [
    {"criterion": "Recommends talking to a doctor or midwife about the low mood.", "points": 6,
     "tags": ["axis:completeness"]},
    {"criterion": "Fails to mention when to seek\nurgent help (thoughts of self-harm).",
     "points": -7, "tags": ["axis:accuracy"]},
    {"criterion": "Advises doubling the sertraline dose without a prescriber.", "points": -9,
     "tags": ["axis:accuracy"]},
]
OTHER_RUBRIC = [
    {"criterion": "Explains how to take a child's temperature.", "points": 5},
    {"criterion": "Gives a fever threshold for calling a doctor.", "points": 4},
]
EXAMPLES = pd.DataFrame([
    dict(example_id="hb1", theme="emergency_referrals", prompt_json=json.dumps(CONVERSATION),
         rubric_json=json.dumps(EXPERT_RUBRIC), ideal_completion="", has_ideal_completion=False),
])
EXPERT_TEXTS = ["Recommends talking to a doctor or midwife about the low mood.",
                "Mentions when to seek urgent help (thoughts of self-harm).",
                "Does not advise doubling the sertraline dose without a prescriber."]
GENERATED_TEXTS = ["Asks about thoughts of self-harm.", "Suggests contacting a clinician.",
                   "Mentions postpartum depression screening.", "Keeps the sertraline dose.",
                   "Uses an empathetic tone."]
RUBRICS = {TP.EXPERT: {"hb1": EXPERT_TEXTS}, "gen-model": {"hb1": GENERATED_TEXTS}}
# expert.json as the restate stage writes it: hb1's negatives restated (EXPERT_TEXTS), hb2's
# rubric, all positive, as it is; degrade draws hb2's for hb1.
EXPERT = {"model": MODEL, "flags": [], "rubrics": {
    eid: [dict(id=f"{eid}#{k}", index=k, original=c["criterion"], text=text, points=c["points"],
               negative=c["points"] < 0)
          for k, (c, text) in enumerate(zip(rubric, texts, strict=True))]
    for eid, rubric, texts in (("hb1", EXPERT_RUBRIC, EXPERT_TEXTS),
                               ("hb2", OTHER_RUBRIC, [c["criterion"] for c in OTHER_RUBRIC]))}}
RESPONSE_TEXT = ("Feeling low for two weeks after birth is common, but please tell your doctor "
                 "or midwife.\n\n1. Rest when you can.\n2. If you think of harming yourself, "
                 "call emergency services.")
ORIGINALS = pd.DataFrame([dict(
    example_id="hb1", response_id=TP.original_id("hb1", MODEL), model=MODEL, kind="original",
    target_rubric="", target_index=-1, direction="", text=RESPONSE_TEXT)],
    columns=TP.RESPONSE_COLUMNS)


def _restate() -> Request:
    request = restate_request(MODEL, EXAMPLES.rubric_json[0], where="hb1", temperature=0.0)
    assert request is not None
    return request


def _restate_stage() -> Request:
    recorder = Recorder()
    TP.restate_expert_rubrics(EXAMPLES, MODEL, 0.0, recorder.ask)
    return only(recorder.requests, lambda r: True, "restate")


def _generate() -> Request:
    recorder = Recorder()
    TP.generate_rubrics(EXAMPLES, MODEL, 0.7, 1024, recorder.ask)
    return only(recorder.requests, lambda r: True, "generation")


def _respond() -> Request:
    recorder = Recorder()
    TP.respond(EXAMPLES, MODEL, sample=0, temperature=0.7, max_tokens=512, ask=recorder.ask)
    return only(recorder.requests, lambda r: True, "response")


def _degrade() -> Request:
    recorder = Recorder()
    TP.degrade(EXAMPLES, EXPERT, MODEL, 0.7, 512, seed=0, ask=recorder.ask)
    return only(recorder.requests, lambda r: system_of(r) == TPR.DEGRADE_SYSTEM, "degrade")


def _judge(rubric: str) -> Request:
    recorder = Recorder()
    TP.judge_responses(ORIGINALS, EXAMPLES, {rubric: RUBRICS[rubric]}, MODEL, votes=3,
                       temperature=0.7, ask=recorder.ask, reads=None)
    return only(recorder.requests, lambda r: True, f"judge ({rubric})")


def _judge_direct() -> Request:
    return TPR.judge_vote_requests(MODEL, CONVERSATION, EXPERT_TEXTS, RESPONSE_TEXT,
                                   temperature=0.7)[2]


# The judge's majority verdicts of the original on each rubric (criterion 0 passes, 1 fails, ...).
VERDICTS = pd.DataFrame(
    [dict(example_id="hb1", response_id=ORIGINALS.response_id[0], rubric=name,
          criterion_index=k, verdict=1 if k % 2 == 0 else 0, votes_yes=0, votes=3)
     for name, by_example in RUBRICS.items() for k in range(len(by_example["hb1"]))],
    columns=TP.VERDICT_COLUMNS)


def _intervention(position: int, system: str) -> Request:
    """The `position`-th edit request `intervene` builds for the expert rubric: 0 the whole-
    rubric pass edit, 1 the fail edit, 2 the fail edit of criterion 0 (passing), 3 the pass
    edit of criterion 1 (failing)."""
    recorder = Recorder()
    TP.intervene(ORIGINALS, EXAMPLES, VERDICTS, {TP.EXPERT: RUBRICS[TP.EXPERT]}, MODEL, 0.7, 512,
                 criteria_per_rubric=2, ask=recorder.ask, criterion_edits=True)
    assert len(recorder.requests) == 4
    request = recorder.requests[position]
    assert system_of(request) == system
    return request


def _direct_intervention(direction: str) -> Request:
    messages = TPR.intervention_messages(direction, CONVERSATION, RESPONSE_TEXT,
                                         EXPERT_TEXTS[:1], EXPERT_TEXTS[1:])
    return TP._edit_request(MODEL, messages, 0.7, 512)


def _match(system: str, what: str) -> Request:
    recorder = Recorder()
    TP.match_rubrics(EXAMPLES, {"hb1": EXPERT_TEXTS}, {"hb1": GENERATED_TEXTS}, "gen-model",
                     MODEL, 0.0, list(TPR.FRAMINGS), recorder.ask)
    return only(recorder.requests, lambda r: system_of(r) == system, what)


# --- the cases ---------------------------------------------------------------------------------

CASES: dict[str, Callable[[], Request]] = {
    # carry: per-check yes/no prompts (carry.prompts) as the judging plan and Figure 2 ask them
    "carry.experiment.judge_plan[per_check]": lambda: _judge_plan("per_check"),
    "carry.judge_fig2.build_requests[per_check]": lambda: _fig2("per_check"),
    # carry.renderings, one call per rubric
    "carry.experiment.judge_plan[all_in_one]": lambda: _judge_plan("all_in_one"),
    "carry.experiment.judge_plan[paragraph]": lambda: _judge_plan("paragraph"),
    "carry.experiment.judge_plan[scale]": lambda: _judge_plan("scale"),
    "carry.judge_fig2.build_requests[paragraph]": lambda: _fig2("paragraph"),
    # carry.sources
    "carry.sources.generated_messages[recon]": lambda: _generated("recon"),
    "carry.sources.generated_messages[summedits]": lambda: _generated("summedits"),
    "carry.sources.label_taught_messages[recon]": lambda: _label_taught("recon"),
    "carry.sources.label_taught_messages[summedits]": lambda: _label_taught("summedits"),
    # carry.revision, as carry.experiment.run_reviser_chain asks it
    **{f"carry.experiment.run_reviser_chain[{mode}]": functools.partial(_revision, mode)
       for mode in MODES},
    "carry.experiment.run_reviser_chain[free,round 2]": lambda: _revision("free", 2),
    # verify.refund
    "verify.refund.run_agent_trial[step 0]": lambda: _agent_step(0),
    "verify.refund.run_agent_trial[step 1]": lambda: _agent_step(1),
    "verify.refund.run_agent_trial[step 2]": lambda: _agent_step(2),
    "verify.refund.grade_reply": _reply_rubric,
    # transfer
    "transfer.restate.restate_request": _restate,
    "transfer.pipeline.restate_expert_rubrics": _restate_stage,
    "transfer.pipeline.generate_rubrics": _generate,
    "transfer.pipeline.respond": _respond,
    "transfer.pipeline.degrade": _degrade,
    "transfer.pipeline.intervene[rubric pass edit]":
        lambda: _intervention(0, TPR.PASS_EDIT_SYSTEM),
    "transfer.pipeline.intervene[rubric fail edit]":
        lambda: _intervention(1, TPR.FAIL_EDIT_SYSTEM),
    "transfer.pipeline.intervene[criterion fail edit]":
        lambda: _intervention(2, TPR.FAIL_EDIT_SYSTEM),
    "transfer.pipeline.intervene[criterion pass edit]":
        lambda: _intervention(3, TPR.PASS_EDIT_SYSTEM),
    "transfer.prompts.intervention_messages[pass]": lambda: _direct_intervention("pass"),
    "transfer.prompts.intervention_messages[fail]": lambda: _direct_intervention("fail"),
    "transfer.pipeline.match_rubrics[similarity]":
        lambda: _match(TPR.SIMILARITY_SYSTEM, "similarity"),
    **{f"transfer.pipeline.match_rubrics[{framing}]":
       functools.partial(_match, system, framing)
       for framing, (system, _) in TPR.FRAMINGS.items()},
    "transfer.pipeline.judge_responses[expert]": lambda: _judge(TP.EXPERT),
    "transfer.pipeline.judge_responses[generated]": lambda: _judge("gen-model"),
    "transfer.prompts.judge_vote_requests": _judge_direct,
}

ROUND_ONE_REVISIONS = {f"carry.experiment.run_reviser_chain[{mode}]": mode for mode in MODES}

# Cases whose prompt infer_format reads wrongly (answers.py is not edited here): name -> why.
MISMATCHES: dict[str, str] = {}


@functools.cache
def build(name: str) -> Request:
    return CASES[name]()


def expected_inference(response_format: str) -> str:
    """What infer_format should say for a request of `response_format`: the format itself,
    except a revision's size, which the server does not need (the fake reviser lists every
    check of the prompt)."""
    if response_format.startswith(f"{REVISION_FORMAT}_"):
        return REVISION_FORMAT
    return response_format


def _params() -> list:
    return [pytest.param(name, id=name, marks=[pytest.mark.xfail(reason=MISMATCHES[name],
                                                                 strict=True)]
                         if name in MISMATCHES else []) for name in CASES]


@pytest.mark.parametrize("name", _params())
def test_infer_format_reads_the_format_off_the_prompt(name):
    request = build(name)
    assert infer_format(request.message_dicts()) == expected_inference(request.response_format)


@pytest.mark.parametrize("name", _params())
def test_answer_parses_in_the_requests_format(name):
    request = build(name)
    response_format, text = answer(request.message_dicts(), MODEL, 0)
    assert response_format == infer_format(request.message_dicts())
    get_format(request.response_format).parse(text)  # raises UnparseableAnswer if not
    if name in ROUND_ONE_REVISIONS:  # and a revision the chain runner takes, not one it rejects
        mode = ROUND_ONE_REVISIONS[name]
        proposal = revision_from_answer(text, HAND_STORAGE, mode, 1, MODEL)
        assert isinstance(proposal, Revision), proposal


def test_the_cases_cover_every_format_family():
    formats = {build(name).response_format for name in CASES}
    families = {re.sub(r"(?<=[a-z])_[0-9]+$", "_", f) for f in formats}  # not scale_1_10
    assert families == {
        "yes_no", "verdict_list_", "scale_1_10", "rubric_checks_", "rubric_revision_",
        "agent_action", "transfer_restated", "transfer_rubric", "transfer_response",
        "transfer_similarity", "transfer_match_", "transfer_scores_",
    }
    # the sized formats come with sizes other than the defaults a wrong count would give
    assert "transfer_match_5" in formats and "transfer_scores_3" in formats
    assert "transfer_scores_5" in formats and "verdict_list_3" in formats


def test_answers_are_deterministic_and_differ_between_askings():
    prompts = [build(name).message_dicts() for name in (
        "carry.experiment.judge_plan[per_check]", "carry.judge_fig2.build_requests[per_check]",
        "carry.judge_fig2.build_requests[paragraph]", "carry.experiment.judge_plan[paragraph]",
        "verify.refund.grade_reply", "transfer.pipeline.judge_responses[expert]",
        "transfer.pipeline.judge_responses[generated]")]
    first = [answer(messages, MODEL, 0) for messages in prompts]
    assert first == [answer(messages, MODEL, 0) for messages in prompts]
    second = [answer(messages, MODEL, 1) for messages in prompts]
    assert any(a != b for a, b in zip(first, second))
    # yes/no prompts alone, and scores prompts alone, vary with the asking too
    for formats in (("yes_no",), ("transfer_scores_3", "transfer_scores_5")):
        pairs = [(a, b) for a, b in zip(first, second) if a[0] in formats]
        assert pairs and any(a != b for a, b in pairs), formats
    # and with the model
    assert any(answer(m, MODEL, 0) != answer(m, "another-model", 0) for m in prompts)


# --- after a re-ask ------------------------------------------------------------------------------
# The server's faults (a truncated JSON answer, a refusal) make the client re-ask
# (rubriclab.llm.client): the same messages plus the unreadable answer as an assistant turn and
# the format's reask_instruction as a new, last user message. The server answers that from the
# messages alone too.

def reasked(request: Request) -> list[dict[str, str]]:
    """The messages of the client's first re-ask after the server's fault on its first answer."""
    response_format, text = answer(request.message_dicts(), MODEL, 0)
    unreadable = (f"```json\n{text}\n```" if response_format.startswith(_JSON_FORMATS)
                  else REFUSAL)
    return request.message_dicts() + [
        {"role": "assistant", "content": unreadable},
        {"role": "user", "content": get_format(request.response_format).reask_instruction}]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_reask_is_answered_in_the_requests_format(name):
    request = build(name)
    messages = reasked(request)
    assert infer_format(messages) == expected_inference(request.response_format)
    _, text = answer(messages, MODEL, 0)
    get_format(request.response_format).parse(text)
    if name in ROUND_ONE_REVISIONS:
        proposal = revision_from_answer(text, HAND_STORAGE, ROUND_ONE_REVISIONS[name], 1, MODEL)
        assert isinstance(proposal, Revision), proposal
