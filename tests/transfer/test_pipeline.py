"""The transfer stages of rubriclab.transfer.pipeline, with a scripted `ask` (no model calls).

Every expectation is worked out by hand in the comments; the fake `ask` records the requests
it saw so that the number, order and content of the model calls are checked too.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rubriclab.llm.fake import fake_answer
from rubriclab.llm.formats import get_format
from rubriclab.llm.request import cache_key
from rubriclab.transfer.formats import (
    RESPONSE_FORMAT, RUBRIC_FORMAT, SIMILARITY_FORMAT, match_format_name, scores_format_name,
)
from rubriclab.transfer import pipeline as P
from rubriclab.transfer.prompts import (
    FAIL_EDIT_SYSTEM, PASS_EDIT_SYSTEM, RESTATE_SYSTEM, SIMILARITY_SYSTEM,
)


# --- a scripted ask --------------------------------------------------------------------------

def ok(parsed, text=None):
    return SimpleNamespace(outcome="ok", parsed=parsed,
                           text=text if text is not None else str(parsed), error="")


def unparseable(text="Maybe, it depends."):
    return SimpleNamespace(outcome="unparseable", parsed=None, text=text,
                           error="no answer in the requested format")


class ScriptedAsk:
    """ask(requests, label): answer(request) for each request; records every call."""

    def __init__(self, answer):
        self.answer = answer
        self.calls: list[tuple[list, str]] = []

    def __call__(self, requests, label):
        self.calls.append((list(requests), label))
        # each answer a copy with its request's key (a scripted answer may serve several)
        return [SimpleNamespace(**{**vars(self.answer(request)),
                                   "key": cache_key(request, "fake-fingerprint")})
                for request in requests]

    @property
    def requests(self):
        return [request for batch, _ in self.calls for request in batch]


def realistic(request):
    """What the client would return for fake/hash: the fake answer, parsed by its format."""
    text = fake_answer(request, request.message_dicts())
    return ok(get_format(request.response_format).parse(text), text)


def user_text(request) -> str:
    return request.messages[-1].content


def system_text(request) -> str:
    return request.messages[0].content


# --- fixtures --------------------------------------------------------------------------------

def conversation(eid: str) -> str:
    return json.dumps([{"role": "user", "content": f"Question about {eid}?"}])


def positive_rubric(eid: str, n: int = 3) -> list[dict]:
    return [{"criterion": f"Expert {eid} c{k}.", "points": 3} for k in range(n)]


def example_row(eid: str, theme: str = "T", rubric=None, ideal: str = "", has=None) -> dict:
    return dict(example_id=eid, theme=theme, prompt_json=conversation(eid),
                rubric_json=json.dumps(rubric if rubric is not None else positive_rubric(eid)),
                ideal_completion=ideal,
                has_ideal_completion=bool(ideal) if has is None else has)


def examples_frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def sample_row(item_id: str, theme: str, n_criteria: int = 3, task_chars: int = 20) -> dict:
    return dict(item_id=item_id, theme=theme, n_criteria=n_criteria, task="x" * task_chars,
                prompt_json=conversation(item_id),
                rubric_json=json.dumps(positive_rubric(item_id, n_criteria)),
                ideal_completion="", has_ideal_completion=False)


# --- choose_examples -------------------------------------------------------------------------

# Sample order and what each row is; filters max_criteria=5, max_conversation_chars=100.
#   a1 A  ok
#   a2 A  10 criteria                       -> "more than 5 expert criteria"
#   b1 B  500 characters                    -> "conversation longer than 100 characters"
#   a3 A  ok
#   c1 C  ok
#   c2 C  10 criteria AND 500 characters    -> the criteria reason (the first filter) only
#   b2 B  ok
# Eligible: a1, a3 (A); b2 (B); c1 (C). Turns by theme: turn 0 = a1, b2, c1; turn 1 = a3.
SAMPLE = pd.DataFrame([
    sample_row("a1", "A"),
    sample_row("a2", "A", n_criteria=10),
    sample_row("b1", "B", task_chars=500),
    sample_row("a3", "A"),
    sample_row("c1", "C"),
    sample_row("c2", "C", n_criteria=10, task_chars=500),
    sample_row("b2", "B"),
], index=[70, 11, 52, 3, 44, 25, 96])  # an index that is not 0..n-1 must not matter


def test_choose_examples_filters_first_then_takes_themes_in_turn():
    examples, left_out = P.choose_examples(SAMPLE, n=3, max_criteria=5,
                                           max_conversation_chars=100)
    # n=3 from the eligible four: turn 0 of every theme (a1, b2, c1), not a3 (turn 1 of A).
    # Had n been applied before the filters, a2 or b1 would have taken a place.
    assert set(examples["example_id"]) == {"a1", "b2", "c1"}
    assert list(examples.columns) == ["example_id", "theme", "prompt_json", "rubric_json",
                                      "ideal_completion", "has_ideal_completion"]
    reasons = dict(zip(left_out["item_id"], left_out["reason"]))
    assert reasons == {
        "a2": "more than 5 expert criteria",
        "b1": "conversation longer than 100 characters",
        "a3": "beyond the first 3 examples taken by theme in turn",
        "c2": "more than 5 expert criteria",
    }
    assert dict(zip(left_out["item_id"], left_out["theme"])) == {
        "a2": "A", "b1": "B", "a3": "A", "c2": "C"}
    # every sample row is either chosen or listed, never both
    assert len(examples) + len(left_out) == len(SAMPLE)


def test_choose_examples_round_robin_second_turn():
    # n=4 without filters. Themes A: a1 a2 a3, B: b1 b2, C: c1 c2.
    # turn 0: a1 b1 c1; turn 1: a2 b2 c2 -> the fourth is turn 1 of the first theme, a2.
    examples, left_out = P.choose_examples(SAMPLE, n=4, max_criteria=None,
                                           max_conversation_chars=None)
    assert set(examples["example_id"]) == {"a1", "b1", "c1", "a2"}
    assert set(left_out["item_id"]) == {"a3", "b2", "c2"}
    assert set(left_out["reason"]) == {"beyond the first 4 examples taken by theme in turn"}


def test_choose_examples_without_n_keeps_every_eligible_example():
    examples, left_out = P.choose_examples(SAMPLE, n=None, max_criteria=5,
                                           max_conversation_chars=100)
    assert set(examples["example_id"]) == {"a1", "a3", "c1", "b2"}
    assert set(left_out["item_id"]) == {"a2", "b1", "c2"}


def test_choose_examples_raises_when_nothing_is_left():
    with pytest.raises(ValueError, match="no HealthBench example passes"):
        P.choose_examples(SAMPLE, n=3, max_criteria=2, max_conversation_chars=None)
    with pytest.raises(ValueError, match="no HealthBench example passes"):
        P.choose_examples(SAMPLE, n=None, max_criteria=None, max_conversation_chars=10)


# --- physician responses ---------------------------------------------------------------------

def test_physician_responses_only_for_examples_with_an_ideal_completion():
    examples = examples_frame(
        example_row("e1", ideal="Rest and drink fluids."),
        example_row("e2", ideal=""),
        example_row("e3", ideal="See a doctor today."),
    )
    table = P.physician_responses(examples)
    assert list(table.columns) == P.RESPONSE_COLUMNS
    assert table["response_id"].tolist() == ["e1|physician", "e3|physician"]
    assert table["text"].tolist() == ["Rest and drink fluids.", "See a doctor today."]
    assert set(table["kind"]) == {"physician"} and set(table["model"]) == {"physician"}
    assert table["target_index"].tolist() == [-1, -1]


def test_physician_responses_reads_the_flag_as_written_to_csv():
    # examples.csv round trip: the flag comes back as the strings "True" / "False"
    examples = examples_frame(example_row("e1", ideal="Rest.", has="True"),
                              example_row("e2", ideal="", has="False"))
    assert P.physician_responses(examples)["example_id"].tolist() == ["e1"]


# --- restating expert rubrics ----------------------------------------------------------------

R_X1 = [{"criterion": "Recommends rest for x1.", "points": 5},
        {"criterion": "Fails to mention the recommended dose range for x1.", "points": -6},
        {"criterion": "Recommends doubling the dose to 800 mg for x1.", "points": -8}]
R_X2 = [{"criterion": "Recommends fluids for x2.", "points": 4}]           # no negatives
R_X3 = [{"criterion": "Fails to warn about alcohol for x3.", "points": -5},
        {"criterion": "Advises sleep for x3.", "points": 2},
        {"criterion": "Suggests stopping insulin for x3.", "points": -9}]
R_X4 = [{"criterion": "Fails to ask about allergies for x4.", "points": -4},
        {"criterion": "Mentions hydration for x4.", "points": 3}]

RESTATE_ANSWERS = {
    "x1": ok({"1": "Mentions the recommended dose range for x1.",
              "2": "Does not recommend doubling the dose to 800 mg for x1."}),
    "x3": ok({"0": "Warns about alcohol for x3."}),        # misses number 2
    "x4": unparseable(),
}


def restate_answer(request):
    for eid, completion in RESTATE_ANSWERS.items():
        if f"for {eid}." in user_text(request):
            return completion
    raise AssertionError(f"unexpected restate request: {user_text(request)[:200]}")


def restate_examples():
    return examples_frame(example_row("x1", rubric=R_X1), example_row("x2", rubric=R_X2),
                          example_row("x3", rubric=R_X3), example_row("x4", rubric=R_X4))


def test_restate_one_request_per_rubric_with_negatives_showing_only_negatives():
    ask = ScriptedAsk(restate_answer)
    P.restate_expert_rubrics(restate_examples(), "fake/hash", 0.0, ask)
    assert len(ask.calls) == 1 and ask.calls[0][1] == "transfer restate"
    requests = ask.requests
    # x1, x3, x4 have negative criteria; x2 has none and gets no request
    assert len(requests) == 3
    assert all(system_text(r) == RESTATE_SYSTEM for r in requests)
    x1 = user_text(requests[0])
    assert "1. Fails to mention the recommended dose range for x1." in x1
    assert "2. Recommends doubling the dose to 800 mg for x1." in x1
    assert "Recommends rest for x1." not in x1          # positive criterion not shown
    x3 = user_text(requests[1])
    assert "0. Fails to warn about alcohol for x3." in x3 and "2. Suggests stopping insulin" in x3
    assert "Advises sleep" not in x3
    assert "for x2." not in "".join(user_text(r) for r in requests)


def test_restate_flags_a_missed_negative_and_usable_rubrics_drop_it():
    expert = P.restate_expert_rubrics(restate_examples(), "fake/hash", 0.0,
                                      ScriptedAsk(restate_answer))
    assert expert["model"] == "fake/hash"
    flags = {(f["example_id"], f["criterion_id"]): f["reason"] for f in expert["flags"]}
    # x1: both negatives restated cleanly, no flag; x2: nothing to restate
    assert not any(e in ("x1", "x2") for e, _ in flags)
    # x3: number 2 missing from the answer
    assert "missing from the answer" in flags[("x3", "x3#2")]
    assert ("x3", "x3#0") not in flags
    # x4: unparseable answer -> its one negative criterion flagged
    assert "no parseable answer" in flags[("x4", "x4#0")]
    x3 = expert["rubrics"]["x3"]
    assert [c["text"] for c in x3] == ["Warns about alcohol for x3.", "Advises sleep for x3.", None]
    assert [c["negative"] for c in x3] == [True, False, True]
    assert x3[2]["original"] == "Suggests stopping insulin for x3."
    usable = P.usable_expert_rubrics(expert)
    assert set(usable) == {"x1", "x2"}
    assert usable["x1"] == ["Recommends rest for x1.",
                            "Mentions the recommended dose range for x1.",
                            "Does not recommend doubling the dose to 800 mg for x1."]
    assert usable["x2"] == ["Recommends fluids for x2."]


def test_restate_with_realistic_fake_answers_is_usable():
    expert = P.restate_expert_rubrics(restate_examples(), "fake/hash", 0.0, ScriptedAsk(realistic))
    # the fake restater answers every shown number: nothing is left unrestated
    assert set(P.usable_expert_rubrics(expert)) == {"x1", "x2", "x3", "x4"}
    assert expert["rubrics"]["x3"][2]["text"] == "The response avoids fake problem 2."


# --- generated rubrics -----------------------------------------------------------------------

def test_generate_rubrics_records_unparseable_generators_per_example():
    examples = examples_frame(example_row("e1"), example_row("e2"), example_row("e3"))

    def answer(request):
        if "Question about e2?" in user_text(request):
            return unparseable("not json")
        return ok(["Criterion A.", "Criterion B."])

    ask = ScriptedAsk(answer)
    generated = P.generate_rubrics(examples, "gen/model", 0.5, 300, ask)
    assert ask.calls[0][1] == "transfer generate gen/model"
    assert len(ask.requests) == 3
    assert all(r.response_format == RUBRIC_FORMAT and r.max_tokens == 300
               and r.temperature == 0.5 and r.model == "gen/model" for r in ask.requests)
    assert generated["model"] == "gen/model"
    rubrics = generated["rubrics"]
    assert rubrics["e1"] == {"status": "ok", "criteria": ["Criterion A.", "Criterion B."]}
    assert rubrics["e2"]["status"] == "unparseable"
    assert rubrics["e2"]["criteria"] == []
    assert rubrics["e2"]["error"] == "no answer in the requested format"
    assert rubrics["e3"]["status"] == "ok"


def test_generate_rubrics_with_realistic_fake_answers():
    examples = examples_frame(example_row("e1"), example_row("e2"))
    generated = P.generate_rubrics(examples, "fake/hash", 0.0, 100, ScriptedAsk(realistic))
    for eid in ("e1", "e2"):
        criteria = generated["rubrics"][eid]["criteria"]
        assert 3 <= len(criteria) <= 5 and all(c.startswith("The response meets") for c in criteria)


# --- analysable examples ---------------------------------------------------------------------

def expert_payload(texts_by_example):
    return {"model": "r", "flags": [], "rubrics": {
        eid: [dict(id=f"{eid}#{k}", index=k, original=t or "orig", text=t, points=1,
                   negative=False) for k, t in enumerate(texts)]
        for eid, texts in texts_by_example.items()}}


def generated_payload(model, rubrics):
    return {"model": model, "rubrics": {
        eid: ({"status": "ok", "criteria": c} if c is not None else
              {"status": "unparseable", "error": "bad", "criteria": []})
        for eid, c in rubrics.items()}}


EXPERT = expert_payload({"e1": ["X1a.", "X1b."], "e2": ["X2a."], "e3": ["X3a.", None]})
GENERATED = {
    "g1": generated_payload("g1", {"e1": ["G1 e1."], "e2": None, "e3": ["G1 e3."]}),
    "g2": generated_payload("g2", {"e1": ["G2 e1."], "e2": ["G2 e2."]}),   # no entry for e3
}


def test_analysable_examples_keeps_only_examples_every_rubric_exists_for():
    examples = examples_frame(example_row("e1"), example_row("e2"), example_row("e3"))
    keep, left_out = P.analysable_examples(examples, EXPERT, GENERATED)
    assert keep == ["e1"]
    reasons = dict(zip(left_out["example_id"], left_out["reason"]))
    assert reasons == {
        "e2": "g1: no parseable generated rubric",
        "e3": "expert rubric: a negative criterion was not restated; "
              "g2: no parseable generated rubric",
    }
    texts = P.rubric_texts(EXPERT, GENERATED, keep)
    assert texts == {"expert": {"e1": ["X1a.", "X1b."]}, "g1": {"e1": ["G1 e1."]},
                     "g2": {"e1": ["G2 e1."]}}


def test_analysable_examples_raises_when_none_is_left():
    examples = examples_frame(example_row("e2"), example_row("e3"))
    with pytest.raises(ValueError, match="no example has an expert rubric"):
        P.analysable_examples(examples, EXPERT, GENERATED)


def test_load_rubrics_reads_the_files(tmp_path):
    examples = examples_frame(example_row("e1"), example_row("e2"), example_row("e3"))
    P.write_json(tmp_path / "expert.json", EXPERT)
    paths = []
    for name, payload in GENERATED.items():
        P.write_json(tmp_path / f"{name}.json", payload)
        paths.append(tmp_path / f"{name}.json")
    ids, texts, left_out = P.load_rubrics(examples, tmp_path / "expert.json", paths)
    assert ids == ["e1"]
    assert set(texts) == {"expert", "g1", "g2"}
    assert texts["g2"] == {"e1": ["G2 e1."]}
    assert set(left_out["example_id"]) == {"e2", "e3"}


# --- responses -------------------------------------------------------------------------------

def test_respond_ids_and_sample_index():
    examples = examples_frame(example_row("e1"), example_row("e2"))
    ask = ScriptedAsk(lambda r: ok(f"Answer to {r.messages[-1].content}"))
    table = P.respond(examples, "resp/m", 2, 0.7, 200, ask)
    assert table["response_id"].tolist() == ["e1|original|resp/m|2", "e2|original|resp/m|2"]
    assert table["text"].tolist() == ["Answer to Question about e1?", "Answer to Question about e2?"]
    assert all(r.sample_index == 2 and r.response_format == RESPONSE_FORMAT for r in ask.requests)
    with pytest.raises(ValueError, match="no usable response"):
        P.respond(examples, "resp/m", 0, 0.7, 200, ScriptedAsk(lambda r: unparseable()))


# --- degraded responses ----------------------------------------------------------------------

def expert_payload(*eids: str) -> dict:
    """expert.json for examples with positive rubrics only: nothing to restate, no request."""
    ask = ScriptedAsk(lambda r: pytest.fail("a positive rubric needs no restatement"))
    return P.restate_expert_rubrics(examples_frame(*(example_row(e) for e in eids)),
                                    "fake/hash", 0.0, ask)


EXPERT_POOL = expert_payload("e1", "e2", "e3", "e4")


def degrade_run(seed, expert=EXPERT_POOL):
    examples = examples_frame(example_row("e1"), example_row("e2"), example_row("e3"))
    ask = ScriptedAsk(lambda r: ok("A degraded answer."))
    table = P.degrade(examples, expert, "deg/m", 0.0, 100, seed, ask)
    return table, ask.requests


def rubric_shown(request) -> str:
    """Which pool example's rubric a degrade prompt shows."""
    content = user_text(request)
    shown = [e for e in ("e1", "e2", "e3", "e4") if f"- Expert {e} c0." in content]
    assert len(shown) == 1, content
    # all three criteria of that rubric are shown
    assert all(f"- Expert {shown[0]} c{k}." in content for k in range(3))
    return shown[0]


def test_degrade_never_shows_an_example_its_own_rubric():
    for seed in range(25):
        table, requests = degrade_run(seed)
        for eid, request in zip(("e1", "e2", "e3"), requests, strict=True):
            assert f"Question about {eid}?" in user_text(request)
            assert rubric_shown(request) != eid
        assert table["response_id"].tolist() == ["e1|degraded|deg/m", "e2|degraded|deg/m",
                                                 "e3|degraded|deg/m"]
        assert set(table["kind"]) == {"degraded"}


def test_degrade_is_seeded():
    choices = {}
    for seed in range(25):
        first = [rubric_shown(r) for r in degrade_run(seed)[1]]
        again = [rubric_shown(r) for r in degrade_run(seed)[1]]
        assert first == again                      # same seed, same choice
        choices[seed] = tuple(first)
    # 3 examples x 3 options each: 25 seeds cannot all draw the same choice by accident
    assert len(set(choices.values())) > 1


def test_degrade_shows_restated_criteria_never_a_flaw():
    """x1's negatives restated, x2 has none, x3 and x4 left unrestated (see RESTATE_ANSWERS):
    the degrader is shown x1's or x2's rubric with x1's restated texts, never an original
    negative criterion, and never x3's or x4's rubric."""
    expert = P.restate_expert_rubrics(restate_examples(), "fake/hash", 0.0,
                                      ScriptedAsk(restate_answer))
    originals = [c["criterion"] for rubric in (R_X1, R_X3, R_X4) for c in rubric
                 if c["points"] < 0]
    drawn = set()
    for seed in range(25):
        ask = ScriptedAsk(lambda r: ok("A degraded answer."))
        P.degrade(restate_examples(), expert, "deg/m", 0.0, 100, seed, ask)
        assert len(ask.requests) == 4                # one per example, usable rubric or not
        for eid, request in zip(("x1", "x2", "x3", "x4"), ask.requests, strict=True):
            rubric = user_text(request).split("# Conversation")[0]
            assert not any(text in rubric for text in originals), rubric
            assert "for x3." not in rubric and "for x4." not in rubric
            if "for x1." in rubric:
                assert eid != "x1"
                assert rubric.count("\n- ") + rubric.startswith("- ") == 3
                assert "- Mentions the recommended dose range for x1." in rubric
                assert "- Does not recommend doubling the dose to 800 mg for x1." in rubric
                drawn.add("x1")
            else:
                assert eid != "x2" and "- Recommends fluids for x2." in rubric
                drawn.add("x2")
    assert drawn == {"x1", "x2"}


def test_degrade_raises_without_another_restated_rubric():
    examples = examples_frame(example_row("e1"))
    with pytest.raises(ValueError, match="no other example with a restated expert rubric"):
        P.degrade(examples, expert_payload("e1"), "deg/m", 0.0, 100, 0,
                  ScriptedAsk(lambda r: ok("x")))


# --- judging ---------------------------------------------------------------------------------

JUDGE_RUBRICS = {
    "expert": {"e1": ["Expert e1 c0.", "Expert e1 c1.", "Expert e1 c2."],
               "e2": ["Expert e2 c0.", "Expert e2 c1."]},
    "g": {"e1": ["Gen e1 c0.", "Gen e1 c1."]},               # no generated rubric for e2
}
JUDGE_RESPONSES = pd.DataFrame([
    dict(example_id="e1", response_id="e1|original|m|0", model="m", kind="original",
         target_rubric="", target_index=-1, direction="", text="Response one."),
    dict(example_id="e2", response_id="e2|original|m|0", model="m", kind="original",
         target_rubric="", target_index=-1, direction="", text="Response two."),
])
# (response text, rubric marker) -> the three votes, None for an unparseable answer
VOTES = {
    ("Response one.", "Expert e1"): [[1, 1, 0], [1, 0, 1], None],
    ("Response one.", "Gen e1"): [[1, 0], [1, 1], [0, 0]],
    ("Response two.", "Expert e2"): [[0, 1], [0, 1], [1, 1]],
}


def judge_answer(request):
    content = user_text(request)
    for (response, marker), votes in VOTES.items():
        if response in content and f"0. {marker} c0." in content:
            vote = votes[request.sample_index]
            return unparseable() if vote is None else ok(vote)
    raise AssertionError(content)


def test_judge_asks_votes_requests_per_response_and_rubric():
    examples = examples_frame(example_row("e1"), example_row("e2"))
    ask = ScriptedAsk(judge_answer)
    P.judge_responses(JUDGE_RESPONSES, examples, JUDGE_RUBRICS, "judge/j", 3, 0.8, ask,
                      reads=None)
    # e1: expert + g = 2 rubrics x 3 votes; e2: expert only x 3 votes -> 9 requests
    assert len(ask.requests) == 9
    assert ask.calls[0][1] == "transfer judge judge/j"
    batches = {}
    for request in ask.requests:
        content = user_text(request)
        key = next(k for k in VOTES if k[0] in content and f"0. {k[1]} c0." in content)
        batches.setdefault(key, []).append(request)
        assert request.temperature == 0.8 and request.model == "judge/j"
    assert sorted(r.sample_index for r in batches[("Response one.", "Expert e1")]) == [0, 1, 2]
    assert sorted(r.sample_index for r in batches[("Response one.", "Gen e1")]) == [0, 1, 2]
    assert sorted(r.sample_index for r in batches[("Response two.", "Expert e2")]) == [0, 1, 2]
    assert batches[("Response one.", "Expert e1")][0].response_format == scores_format_name(3)
    assert batches[("Response one.", "Gen e1")][0].response_format == scores_format_name(2)


def test_judge_takes_the_majority_per_criterion():
    examples = examples_frame(example_row("e1"), example_row("e2"))
    verdicts = P.judge_responses(JUDGE_RESPONSES, examples, JUDGE_RUBRICS, "judge/j", 3, 0.8,
                                 ScriptedAsk(judge_answer), reads=None)
    assert list(verdicts.columns) == P.VERDICT_COLUMNS
    table = {(r.response_id, r.rubric, r.criterion_index): (r.verdict, r.votes_yes, r.votes)
             for r in verdicts.itertuples(index=False)}
    assert len(table) == 3 + 2 + 2
    one, two = "e1|original|m|0", "e2|original|m|0"
    # Response one on expert: votes [1,1,0], [1,0,1], unparseable
    #   c0: yes 2 of 3 -> 1; c1: 1 yes 1 no 1 unparseable -> -1; c2: the same -> -1
    assert table[(one, "expert", 0)] == (1, 2, 3)
    assert table[(one, "expert", 1)] == (-1, 1, 3)
    assert table[(one, "expert", 2)] == (-1, 1, 3)
    # Response one on g: [1,0], [1,1], [0,0] -> c0 2 yes -> 1; c1 1 yes 2 no -> 0
    assert table[(one, "g", 0)] == (1, 2, 3)
    assert table[(one, "g", 1)] == (0, 1, 3)
    # Response two on expert: [0,1], [0,1], [1,1] -> c0 2 no -> 0; c1 3 yes -> 1
    assert table[(two, "expert", 0)] == (0, 1, 3)
    assert table[(two, "expert", 1)] == (1, 3, 3)
    # each row: the cache keys of its rubric's 3 votes, in vote order (the unparseable's too)
    ask = ScriptedAsk(judge_answer)
    again = P.judge_responses(JUDGE_RESPONSES, examples, JUDGE_RUBRICS, "judge/j", 3, 0.8, ask,
                              reads=None)
    by_vote = {}
    for request in ask.requests:
        marker = next(k for k in VOTES if k[0] in user_text(request)
                      and f"0. {k[1]} c0." in user_text(request))
        by_vote.setdefault(marker, {})[request.sample_index] = cache_key(request,
                                                                         "fake-fingerprint")
    keys = {(r.response_id, r.rubric): r.cache_keys for r in again.itertuples(index=False)}
    assert keys[(one, "expert")] == " ".join(by_vote[("Response one.", "Expert e1")][v]
                                             for v in range(3))
    assert keys[(one, "g")] == " ".join(by_vote[("Response one.", "Gen e1")][v] for v in range(3))
    assert keys[(one, "expert")] != keys[(one, "g")]
    vectors = P.verdict_vectors(verdicts)
    assert vectors[(one, "expert")].tolist() == [1, -1, -1]
    assert vectors[(one, "g")].tolist() == [1, 0]
    assert vectors[(two, "expert")].tolist() == [0, 1]
    assert (two, "g") not in vectors


def test_judge_with_realistic_fake_answers_gives_determined_verdicts():
    examples = examples_frame(example_row("e1"), example_row("e2"))
    verdicts = P.judge_responses(JUDGE_RESPONSES, examples, JUDGE_RUBRICS, "fake/hash", 3, 0.8,
                                 ScriptedAsk(realistic), reads=None)
    # 3 parsed votes of 0/1 always have a majority
    assert len(verdicts) == 7 and set(verdicts["verdict"]) <= {0, 1}
    assert (verdicts["votes"] == 3).all()


# --- interventions ---------------------------------------------------------------------------

INT_RUBRICS = {
    "expert": {"e1": ["Expert e1 c0.", "Expert e1 c1.", "Expert e1 c2."],
               "e2": ["Expert e2 c0.", "Expert e2 c1."]},
    "g": {"e1": ["Gen e1 c0.", "Gen e1 c1."], "e2": ["Gen e2 c0.", "Gen e2 c1."]},
}
ORIGINALS = pd.DataFrame([
    dict(example_id="e1", response_id="e1|original|m|0", model="m", kind="original",
         target_rubric="", target_index=-1, direction="", text="ORIGINAL ONE text."),
    dict(example_id="e2", response_id="e2|original|m|0", model="m", kind="original",
         target_rubric="", target_index=-1, direction="", text="ORIGINAL TWO text."),
])
STATES = {
    ("e1|original|m|0", "expert"): [1, 0, 1],
    ("e1|original|m|0", "g"): [0, -1],              # c1 undetermined
    ("e2|original|m|0", "expert"): [0, 0],
    ("e2|original|m|0", "g"): [1, 0],
}


def verdict_table(states) -> pd.DataFrame:
    rows = [dict(example_id=rid.split("|")[0], response_id=rid, rubric=rubric, criterion_index=i,
                 verdict=v, votes_yes=0, votes=3)
            for (rid, rubric), vector in states.items() for i, v in enumerate(vector)]
    return pd.DataFrame(rows, columns=P.VERDICT_COLUMNS)


class EditAsk(ScriptedAsk):
    """Every edit answer is a distinct text, so an edit's text in a prompt would be seen."""

    def __init__(self):
        self.counter = 0
        super().__init__(self._answer)

    def _answer(self, request):
        self.counter += 1
        return ok(f"EDITED RESPONSE {self.counter}.")


def run_intervene(criteria_per_rubric=None, criterion_edits=True):
    examples = examples_frame(example_row("e1"), example_row("e2"))
    ask = EditAsk()
    table = P.intervene(ORIGINALS, examples, verdict_table(STATES), INT_RUBRICS, "m", 0.0, 500,
                        criteria_per_rubric, ask, criterion_edits=criterion_edits)
    return table, ask.requests


def test_intervene_makes_the_expected_edits():
    table, requests = run_intervene()
    # e1 expert [1,0,1]: pass + fail whole; c0 -, c1 +, c2 -            -> 5
    # e1 g [0,-1]: undetermined -> no whole-rubric edit; c0 +, c1 none   -> 1
    # e2 expert [0,0]: pass + fail; c0 +, c1 +                           -> 4
    # e2 g [1,0]: pass + fail; c0 -, c1 +                                -> 4
    assert len(requests) == len(table) == 14
    assert list(table.columns) == P.RESPONSE_COLUMNS
    assert set(table["response_id"]) == {
        "e1|rubric_edit|m|expert|-1|+", "e1|rubric_edit|m|expert|-1|-",
        "e1|criterion_edit|m|expert|0|-", "e1|criterion_edit|m|expert|1|+",
        "e1|criterion_edit|m|expert|2|-",
        "e1|criterion_edit|m|g|0|+",
        "e2|rubric_edit|m|expert|-1|+", "e2|rubric_edit|m|expert|-1|-",
        "e2|criterion_edit|m|expert|0|+", "e2|criterion_edit|m|expert|1|+",
        "e2|rubric_edit|m|g|-1|+", "e2|rubric_edit|m|g|-1|-",
        "e2|criterion_edit|m|g|0|-", "e2|criterion_edit|m|g|1|+",
    }
    assert not table["response_id"].duplicated().any()
    assert set(table["text"]) == {f"EDITED RESPONSE {k}." for k in range(1, 15)}
    assert all(r.response_format == RESPONSE_FORMAT and r.model == "m" for r in requests)


def test_intervene_edits_the_original_response_never_another_edit():
    table, requests = run_intervene()
    for row, request in zip(table.itertuples(index=False), requests, strict=True):
        content = user_text(request)
        own = "ORIGINAL ONE text." if row.example_id == "e1" else "ORIGINAL TWO text."
        other = "ORIGINAL TWO text." if row.example_id == "e1" else "ORIGINAL ONE text."
        assert content.endswith(f"# Response\n\n{own}")
        assert other not in content
        assert "EDITED RESPONSE" not in content


def test_intervene_prompts_show_the_judged_split():
    table, requests = run_intervene()
    by_id = dict(zip(table["response_id"], requests, strict=True))
    # whole-rubric pass edit of e1 expert [1,0,1]: c0, c2 satisfied; c1 not
    whole = by_id["e1|rubric_edit|m|expert|-1|+"]
    assert system_text(whole) == PASS_EDIT_SYSTEM
    content = user_text(whole)
    satisfied, rest = content.split("# Criteria it does NOT satisfy", 1)
    assert "- Expert e1 c0." in satisfied and "- Expert e1 c2." in satisfied
    assert "- Expert e1 c1." in rest.split("# Conversation")[0]
    assert system_text(by_id["e1|rubric_edit|m|expert|-1|-"]) == FAIL_EDIT_SYSTEM
    # single-criterion edits show only their criterion, towards its other state
    up = user_text(by_id["e1|criterion_edit|m|expert|1|+"])
    assert system_text(by_id["e1|criterion_edit|m|expert|1|+"]) == PASS_EDIT_SYSTEM
    assert "- Expert e1 c1." in up and "Expert e1 c0." not in up and "Expert e1 c2." not in up
    down = by_id["e2|criterion_edit|m|g|0|-"]
    assert system_text(down) == FAIL_EDIT_SYSTEM
    assert "- Gen e2 c0." in user_text(down) and "Gen e2 c1." not in user_text(down)


def test_intervene_respects_criteria_per_rubric():
    table, requests = run_intervene(criteria_per_rubric=1)
    # whole-rubric edits as before (2 + 0 + 2 + 2 = 6), criterion edits only for c0 of each
    # rubric (e1 expert c0 -, e1 g c0 +, e2 expert c0 +, e2 g c0 -)  -> 10
    assert len(table) == len(requests) == 10
    criterion = table[table["kind"] == "criterion_edit"]
    assert set(criterion["target_index"]) == {0}
    assert len(criterion) == 4
    assert len(table[table["kind"] == "rubric_edit"]) == 6


def test_intervene_without_criterion_edits_makes_the_whole_rubric_ones_alone():
    # A response model other than the main one (Figure 6 and Table A.9 read only its edits)
    table, requests = run_intervene(criterion_edits=False)
    full, full_requests = run_intervene()
    assert set(table["kind"]) == {"rubric_edit"} and len(table) == len(requests) == 6
    # the same requests as those of the full run (one cache key each)
    kept = full["kind"] == "rubric_edit"
    assert requests == [r for r, k in zip(full_requests, kept, strict=True) if k]
    assert table["response_id"].tolist() == full.loc[kept, "response_id"].tolist()


def test_intervene_raises_on_an_unusable_edit():
    examples = examples_frame(example_row("e1"), example_row("e2"))
    with pytest.raises(ValueError, match="no usable edited response"):
        P.intervene(ORIGINALS, examples, verdict_table(STATES), INT_RUBRICS, "m", 0.0, 500,
                    None, ScriptedAsk(lambda r: unparseable()), criterion_edits=True)


# --- matching --------------------------------------------------------------------------------

MATCH_EXPERT = {"e1": ["E1 zero.", "E1 one.", "E1 two."], "e2": ["E2 zero.", "E2 one."]}
MATCH_GENERATED = {"e1": ["G1 zero.", "G1 one."], "e2": ["G2 zero."]}
SIMILARITY = {  # (generated text, expert text) -> score; None: unparseable
    ("G1 zero.", "E1 zero."): 9, ("G1 zero.", "E1 one."): 3, ("G1 zero.", "E1 two."): 0,
    ("G1 one.", "E1 zero."): 2, ("G1 one.", "E1 one."): None, ("G1 one.", "E1 two."): 4,
    ("G2 zero.", "E2 zero."): 5, ("G2 zero.", "E2 one."): 0,
}


def match_answer(request):
    content = user_text(request)
    if system_text(request) == SIMILARITY_SYSTEM:
        ref = content.split("REFERENCE: ", 1)[1].split("\n", 1)[0]
        gen = content.split("GENERATED: ", 1)[1].split("\n", 1)[0]
        score = SIMILARITY[(gen, ref)]
        return unparseable() if score is None else ok(score)
    framing = "implies" if "logically implies" in system_text(request) else "match_rubric"
    if "G1 zero." in content:
        return unparseable() if framing == "implies" else ok([[0, 2], []])
    return ok([[1]]) if framing == "match_rubric" else ok([[]])


def run_match(answer=match_answer):
    examples = examples_frame(example_row("e1"), example_row("e2"))
    ask = ScriptedAsk(answer)
    table = P.match_rubrics(examples, MATCH_EXPERT, MATCH_GENERATED, "g", "sim/model", 0.0,
                            ["match_rubric", "implies"], ask)
    return table, ask


def test_match_asks_one_similarity_per_pair_and_one_call_per_framing():
    table, ask = run_match()
    assert ask.calls[0][1] == "transfer match g"
    similarity = [r for r in ask.requests if r.response_format == SIMILARITY_FORMAT]
    framings = [r for r in ask.requests if r.response_format != SIMILARITY_FORMAT]
    # e1: 2 x 3 pairs, e2: 1 x 2 pairs -> 8 similarity calls; 2 framings x 2 examples -> 4
    assert len(similarity) == 8 and len(framings) == 4
    pairs = [(user_text(r).split("GENERATED: ")[1].split("\n")[0],
              user_text(r).split("REFERENCE: ")[1].split("\n")[0]) for r in similarity]
    assert sorted(pairs) == sorted(SIMILARITY)                  # each pair exactly once
    assert all("Question about" not in user_text(r) for r in similarity)  # no conversation
    formats = sorted(r.response_format for r in framings)
    assert formats == sorted([match_format_name(2)] * 2 + [match_format_name(1)] * 2)


def test_match_rows_and_nan_for_unparseable():
    table, _ = run_match()
    sim = table[table["measure"] == "similarity"]
    assert len(sim) == 8
    value = {(r.example_id, r.generated_index, r.expert_index): r.value
             for r in sim.itertuples(index=False)}
    assert value[("e1", 0, 0)] == 9 and value[("e1", 1, 2)] == 4 and value[("e2", 0, 0)] == 5
    assert value[("e2", 0, 1)] == 0                           # a real 0 stays 0
    assert math.isnan(value[("e1", 1, 1)])                    # unparseable -> NaN, never 0
    match = table[table["measure"] == "match_rubric"]
    # e1: 2 generated x 3 expert = 6 rows; e2: 1 x 2 = 2 rows
    assert len(match) == 8
    matrix = {(r.example_id, r.generated_index, r.expert_index): r.value
              for r in match.itertuples(index=False)}
    # parsed [[0, 2], []] for e1 -> G0 matches T0 and T2, G1 nothing
    assert [matrix[("e1", 0, e)] for e in range(3)] == [1, 0, 1]
    assert [matrix[("e1", 1, e)] for e in range(3)] == [0, 0, 0]
    assert [matrix[("e2", 0, e)] for e in range(2)] == [0, 1]
    implies = table[table["measure"] == "implies"]
    assert len(implies) == 8
    assert implies[implies["example_id"] == "e1"]["value"].isna().all()      # 6 NaN rows
    assert (implies[implies["example_id"] == "e2"]["value"] == 0).all()      # parsed [[]]
    assert set(table["generator"]) == {"g"}


def test_match_rejects_an_unknown_framing():
    examples = examples_frame(example_row("e1"))
    with pytest.raises(ValueError, match="unknown matching framing"):
        P.match_rubrics(examples, {"e1": ["E."]}, {"e1": ["G."]}, "g", "m", 0.0, ["nope"],
                        ScriptedAsk(lambda r: ok(1)))


def test_match_out_of_range_label_counts_as_unparseable():
    # match_matrix refuses a T label the prompt never showed (T5 of 3): that answer counts as
    # unparseable, NaN rows, never a crash of the stage nor a 0/1 reading
    def answer(request):
        if system_text(request) == SIMILARITY_SYSTEM:
            return ok(1)
        if "G1 zero." in user_text(request):
            return ok([[5], []])           # the format parser cannot know there are 3 T labels
        return ok([[0]])

    table, _ = run_match(answer)
    e1 = table[(table["measure"] != "similarity") & (table["example_id"] == "e1")]
    assert e1["value"].isna().all()


def test_match_with_realistic_fake_answers():
    examples = examples_frame(example_row("e1"), example_row("e2"))
    table = P.match_rubrics(examples, MATCH_EXPERT, MATCH_GENERATED, "g", "fake/hash", 0.0,
                            ["match_rubric", "simulate_intervention", "implies"],
                            ScriptedAsk(realistic))
    # 8 similarity rows + 3 framings x (6 + 2) rows
    assert len(table) == 8 + 3 * 8
    assert table["value"].notna().all()
    sim = table[table["measure"] == "similarity"]["value"]
    assert sim.between(0, 9).all()
    assert set(table[table["measure"] != "similarity"]["value"]) <= {0, 1}


# --- embedding cosines -----------------------------------------------------------------------

class FakeEmbedder:
    VECTORS = {"E a.": [1.0, 0.0], "E b.": [0.0, 1.0], "G a.": [1.0, 1.0], "G b.": [2.0, 0.0],
               "H a.": [0.0, 3.0]}

    def embed(self, texts):
        return np.array([self.VECTORS[t] for t in texts])


def test_embedding_cosines_every_pair_of_every_generator():
    rubrics = {"expert": {"e1": ["E a.", "E b."]}, "g": {"e1": ["G a.", "G b."]},
               "h": {"e1": ["H a."]}}
    table = P.embedding_cosines(FakeEmbedder(), rubrics, ["e1"])
    assert len(table) == 4 + 2                    # g: 2 x 2, h: 1 x 2
    cos = {(r.generator, r.generated_index, r.expert_index): r.cosine
           for r in table.itertuples(index=False)}
    # G a. = (1,1): cos with (1,0) and (0,1) is 1/sqrt(2); G b. = (2,0): 1 and 0
    assert cos[("g", 0, 0)] == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    assert cos[("g", 0, 1)] == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    assert cos[("g", 1, 0)] == pytest.approx(1.0, abs=1e-6)
    assert cos[("g", 1, 1)] == pytest.approx(0.0, abs=1e-6)
    assert cos[("h", 0, 1)] == pytest.approx(1.0, abs=1e-6)
    assert cos[("h", 0, 0)] == pytest.approx(0.0, abs=1e-6)


def test_matching_table_round_trips_an_unparseable_answer_as_nan(tmp_path):
    from rubriclab.transfer.pipeline import read_matching, write_matching
    table = pd.DataFrame([
        dict(example_id="e1", generator="g", measure="similarity", generated_index=0,
             expert_index=0, value=7.0),
        dict(example_id="e1", generator="g", measure="implies", generated_index=0,
             expert_index=0, value=float("nan")),
    ])
    write_matching(table, tmp_path / "m.csv")
    back = read_matching(tmp_path / "m.csv")
    assert back["value"].iloc[0] == 7.0 and pd.isna(back["value"].iloc[1])
    assert back["value"].dtype.kind == "f"
