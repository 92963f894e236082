"""The planner's stand-in answers: as the rehearsal server gives them."""

import dataclasses

from rubriclab.llm import Request
from rubriclab.plan.planner import StandIn
from rubriclab.rehearsal.answers import answer, served_name

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
