"""The planner's stand-in answers (as the rehearsal server gives them), and its token counts."""

import dataclasses

from rubriclab.llm import Request
from rubriclab.llm.tokens import prompt_tokens
from rubriclab.plan import planner as planner_module
from rubriclab.plan.planner import COUNT_EVERY_UP_TO, SAMPLES_PER_LARGE_BATCH, Planner, StandIn
from rubriclab.llm.standins import answer, served_name

MODEL = "anthropic/claude-sonnet-4-5-20250929"


def revision_request(sample_index: int) -> Request:
    prompt = ("Revise the rubric. Current checks:\n1. The output is faithful to the source.\n"
              "2. The output is concise.\nAnswer with JSON only.")
    return Request.chat(MODEL, [{"role": "user", "content": prompt}], max_tokens=64,
                        sample_index=sample_index)


def test_distinct_requests_with_equal_messages_get_the_servers_later_answers():
    """Seeds and trials send equal messages as distinct requests; the server answers the
    n-th asking afresh, so the stand-in must too (else every seed's chain is the first's)."""
    stand_in = StandIn()
    first, second = revision_request(1), revision_request(2)
    assert first != second and first.message_dicts() == second.message_dicts()
    served = served_name(MODEL)
    expected = [answer(first.message_dicts(), served, nth)[1] for nth in (0, 1)]
    assert expected[0] != expected[1]
    assert [stand_in.answer(first), stand_in.answer(second)] == expected


def test_one_request_asked_again_gets_its_first_answer():
    stand_in = StandIn()
    request = revision_request(1)
    once = stand_in.answer(request)
    assert stand_in.answer(dataclasses.replace(request)) == once
    # and it did not count as a second asking: the next distinct request gets the 2nd answer
    assert stand_in.answer(revision_request(3)) == answer(
        request.message_dicts(), served_name(MODEL), 1)[1]


class _Client:
    ledger = None  # the row is then labelled by the answer call's label


def _mixed_batch(size: int) -> list[Request]:
    """Alternating English and Chinese prompts: far apart in tokens per character."""
    english = "The patient asks whether the rash on her arm needs a doctor. " * 3
    chinese = "患者询问手臂上的皮疹是否需要看医生。" * 3
    return [Request.chat(MODEL, [{"role": "user",
                                  "content": f"{english if i % 2 == 0 else chinese} ({i})"}],
                         max_tokens=16)
            for i in range(size)]


def test_a_small_batch_of_mixed_texts_is_counted_whole():
    """HealthBench's 105 conversations: a sample of every other one came out 5% short."""
    requests = _mixed_batch(105)
    planner = Planner(StandIn(), use_cache=False)
    planner.answer(_Client(), requests, "transfer_respond")
    row_key = ("", "transfer_respond", MODEL)
    exact = sum(prompt_tokens(r.model, r.message_dicts()) for r in requests)
    assert planner.tokens(row_key, planner.rows[row_key].prompt_chars) == exact


def test_a_large_batch_is_counted_on_a_sample(monkeypatch):
    counted = []

    def counting(model, messages):
        counted.append(model)
        return prompt_tokens(model, messages)

    monkeypatch.setattr(planner_module, "prompt_tokens", counting)
    size = 3 * COUNT_EVERY_UP_TO
    requests = _mixed_batch(size)
    planner = Planner(StandIn(), use_cache=False)
    planner.answer(_Client(), requests, "carry_judge")
    assert len(counted) == SAMPLES_PER_LARGE_BATCH
    row_key = ("", "carry_judge", MODEL)
    exact = sum(prompt_tokens(r.model, r.message_dicts()) for r in requests)
    planned = planner.tokens(row_key, planner.rows[row_key].prompt_chars)
    assert abs(planned - exact) <= 0.02 * exact
