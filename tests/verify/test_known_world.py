"""verify's known-truth world (rubriclab.verify.known_world): the scripted agent passes the
verifier at its set rate, the known judge grades the reply rubric at its set error rates, and the
Rogan-Gladen corrected rate of the judged trials covers the verifier's rate."""

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rubriclab.known_truth import world as known
from rubriclab.llm import LLMClient, LLMConfig
from rubriclab.llm.fake import parse_fake_model
from rubriclab.known_truth.models import known_answer
from rubriclab.known_truth.world import OutsideTheWorld
from rubriclab.verify.known_world import (
    REFUND_TIME, REFUND_USD, REPLY_MEANINGS, WORLD_REPLIES, agent_answer, failing_trajectories,
    reply_truth, trial_trajectory,
)
from rubriclab.verify.calibration import confusion_from_verdicts, corrected_pass_rate
from rubriclab.verify.refund import (
    GOOD_REPLY, POLICY, SCRIPTED_TRAJECTORIES, TICKET, agent_system_prompt, run_agent_trial,
)
from rubriclab.verify.reply_rubric import RUBRIC_CRITERIA, grade_reply, rubric_messages

P = 0.7
AGENT = f"fake/known-agent?pass_rate={P}"
TPR, TNR = 0.9, 0.8
JUDGE = f"fake/known-judge?tpr={TPR}&tnr={TNR}"
TRIALS = 400
LABELLED = 100  # a random slice of the judged trials, as the post's 50 of 400
WRONG_AMOUNT_REPLY = GOOD_REPLY.replace("86.00", "80.00")


def within(successes: int, n: int, rate: float, sds: float = 4.0) -> bool:
    """Whether successes of n lies within sds binomial standard deviations of n * rate."""
    return abs(successes - n * rate) <= sds * (n * rate * (1 - rate)) ** 0.5


@pytest.fixture(scope="module")
def judged_trials(tmp_path_factory):
    """The pipeline's verify stage at test size: the agent's trials, then the reply rubric on
    the verifier passes, each trial's reply judged with the trial as its sample index."""
    cache = Path(tmp_path_factory.mktemp("known_verify"))
    with LLMClient(LLMConfig(cache_dir=cache)) as client:
        trials = [run_agent_trial(client, AGENT, k, temperature=0.7) for k in range(TRIALS)]
        grades = {t.trial_index: grade_reply(client, JUDGE, t.final_reply,
                                             sample_index=t.trial_index)
                  for t in trials if t.verifier.passed}
    return trials, grades


# --- the agent ------------------------------------------------------------------------------

def test_the_verifier_passes_the_agent_at_its_set_rate(judged_trials):
    trials, _ = judged_trials
    assert {t.status for t in trials} == {"finished"}
    passed = sum(t.verifier.passed for t in trials)
    assert within(passed, TRIALS, P), passed
    for trial in trials:
        trajectory = trial_trajectory(AGENT, trial.trial_index)
        assert [c.tool for c in trial.tool_calls] == [a["tool"] for a in trajectory.actions]
        # the verifier, not the agent, decides: a failing run fails the line it breaks
        assert trial.verifier.failed == (() if trajectory.breaks is None
                                         else (trajectory.breaks,))
    failing = Counter(trial_trajectory(AGENT, t.trial_index).name for t in trials
                      if not t.verifier.passed)
    assert set(failing) == {t.name for t in failing_trajectories()}
    n_failing = sum(failing.values())
    assert all(within(count, n_failing, 1 / len(failing)) for count in failing.values()), failing


def test_raising_the_pass_rate_only_turns_failing_trials_correct():
    for trial in range(200):
        low = trial_trajectory("fake/known-agent?pass_rate=0.5", trial)
        high = trial_trajectory("fake/known-agent?pass_rate=0.8", trial)
        assert high == low or (low.breaks is not None and high.name == "correct")
    assert trial_trajectory("fake/known-agent?pass_rate=1", 7).name == "correct"
    assert trial_trajectory("fake/known-agent?pass_rate=0", 7).breaks is not None
    salted = [trial_trajectory("fake/known-agent?pass_rate=0.5&salt=b", k) for k in range(40)]
    assert salted != [trial_trajectory("fake/known-agent?pass_rate=0.5", k) for k in range(40)]


def test_the_agent_needs_a_pass_rate_in_the_unit_interval():
    assert parse_fake_model(AGENT)[0] == known.AGENT
    for model, message in (("fake/known-agent", "needs pass_rate"),
                           ("fake/known-agent?pass_rate=1.5", r"in \[0, 1\]"),
                           ("fake/known-agent?pass_rate=high", "must be a number"),
                           ("fake/known-agent?pass_rate=0.5&tpr=1", "unknown option")):
        with pytest.raises(ValueError, match=message):
            parse_fake_model(model)


def test_the_agent_reads_its_step_off_the_transcript_and_knows_only_its_task():
    opening = [{"role": "system", "content": agent_system_prompt()},
               {"role": "user", "content": TICKET}]
    trajectory = trial_trajectory(AGENT, 0)
    first = agent_answer(AGENT, 0, "agent_action", opening)
    assert json.loads(first) == trajectory.actions[0]
    shown = opening + [{"role": "assistant", "content": first},
                       {"role": "user", "content": "Result of lookup_order: {}"}]
    assert json.loads(agent_answer(AGENT, 0, "agent_action", shown)) == trajectory.actions[1]
    strayed = shown[:2] + [{"role": "assistant", "content": '{"tool": "finish"}'}]
    with pytest.raises(OutsideTheWorld, match="is not the known agent's"):
        agent_answer(AGENT, 0, "agent_action", strayed)
    other_policy = [{"role": "system", "content": agent_system_prompt("Refund everything.")},
                    opening[1]]
    with pytest.raises(OutsideTheWorld, match="refund ticket of order 4411"):
        agent_answer(AGENT, 0, "agent_action", other_policy)
    with pytest.raises(OutsideTheWorld, match="agent_action"):
        agent_answer(AGENT, 0, "yes_no", opening)


# --- the reply judge ------------------------------------------------------------------------

def test_the_world_declares_the_truth_of_its_replies_from_their_text():
    assert REFUND_USD == "86.00" and REFUND_TIME in POLICY
    assert set(REPLY_MEANINGS) == {c.id for c in RUBRIC_CRITERIA}
    sent = {a["args"]["text"] for t in SCRIPTED_TRAJECTORIES.values() for a in t.actions
            if a["tool"] == "reply" and a["args"]["text"]}
    assert set(WORLD_REPLIES) == sent == {GOOD_REPLY, WRONG_AMOUNT_REPLY}
    assert all(reply_truth(GOOD_REPLY, c.id) for c in RUBRIC_CRITERIA)
    assert [c.id for c in RUBRIC_CRITERIA if not reply_truth(WRONG_AMOUNT_REPLY, c.id)] == \
        ["amount_issued"]
    # what each meaning reads in a text
    assert not reply_truth("We will refund 86.00 USD soon.", "amount_issued")
    assert not reply_truth("Refunds take a while.", "when_to_expect")
    assert not reply_truth(GOOD_REPLY + " We added 10.00 USD of store credit.", "within_policy")
    assert not reply_truth("Could you send us photos of the lamp?", "no_redundant_ask")


@pytest.mark.parametrize("reply", [GOOD_REPLY, WRONG_AMOUNT_REPLY])
def test_the_judge_answers_each_criterion_at_its_set_rates(reply):
    samples = 300
    for criterion in RUBRIC_CRITERIA:
        messages = rubric_messages(reply, TICKET, POLICY, criterion)
        truth = reply_truth(reply, criterion.id)
        answers = [known_answer(known.JUDGE, JUDGE, k, "yes_no", messages)
                   for k in range(samples)]
        right = sum(answer == ("Yes" if truth else "No") for answer in answers)
        assert within(right, samples, TPR if truth else TNR), (criterion.id, truth, right)
        assert answers == [known_answer(known.JUDGE, JUDGE, k, "yes_no", messages)
                           for k in range(samples)]  # deterministic


def test_the_judge_grades_only_the_worlds_replies_and_criteria():
    criterion = RUBRIC_CRITERIA[0]
    outside = [
        rubric_messages("Your refund of 86.00 USD has been issued.", TICKET, POLICY, criterion),
        rubric_messages(GOOD_REPLY, TICKET, "Refund everything.", criterion),
        rubric_messages(GOOD_REPLY, TICKET, POLICY, "The reply is polite."),
    ]
    for messages, message in zip(outside, ("replies the world's agent sends",
                                           "refund ticket of order 4411", "four criteria")):
        with pytest.raises(OutsideTheWorld, match=message):
            known_answer(known.JUDGE, JUDGE, 0, "yes_no", messages)
    with pytest.raises(OutsideTheWorld, match="yes_no"):
        known_answer(known.JUDGE, JUDGE, 0, "scale_1_10",
                     rubric_messages(GOOD_REPLY, TICKET, POLICY, criterion))


# --- the correction -------------------------------------------------------------------------

def test_the_corrected_rate_covers_the_verifiers_rate(judged_trials):
    """The workflow's pass (the verifier passes the trial and the rubric its reply; correctness
    is the gate, so the judge sees only verifier passes) as the judge reports it, corrected
    with TPR and TNR from a random labelled slice whose labels are the world's truth."""
    trials, grades = judged_trials
    truth = [t.verifier.passed and all(reply_truth(t.final_reply, c.id)
                                        for c in RUBRIC_CRITERIA) for t in trials]
    judged = [t.verifier.passed and grades[t.trial_index].passed is True for t in trials]
    labelled = np.random.default_rng(0).choice(TRIALS, LABELLED, replace=False)
    confusion = confusion_from_verdicts([truth[k] for k in labelled],
                                        [judged[k] for k in labelled])
    corrected = corrected_pass_rate(sum(judged), TRIALS, confusion, labelled_in_judged=True,
                                    check_replicates=0)
    verifier_rate = sum(t.verifier.passed for t in trials) / TRIALS
    assert truth == [t.verifier.passed for t in trials]  # every correct run replies well
    assert corrected.interval is not None, corrected.rg.message
    low, high = corrected.interval
    assert low <= verifier_rate <= high and low <= P <= high, (corrected.interval, verifier_rate)
    # the judge's false fails (1 - TPR per criterion, four criteria) put its own rate well
    # below the truth, and the correction does the work
    assert corrected.q < low < verifier_rate
