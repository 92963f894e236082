"""The planner's stand-in answers (as the rehearsal server gives them), and its token counts."""

import dataclasses

from rubriclab.llm import Request
from rubriclab.llm.tokens import prompt_tokens
from rubriclab.plan import planner as planner_module
from rubriclab.plan.dag import PlannedJob, Workflow
from rubriclab.plan.planner import (COUNT_EVERY_UP_TO, SAMPLES_PER_LARGE_BATCH, THINKING_SHARES,
                                    Planner, StandIn, plan_workflow)
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


def test_thinking_is_counted_from_each_efforts_budget():
    """Gemini 2.5 Flash judging at medium effort may think 2,048 tokens (litellm's budget),
    not its 4,096-token room; the expected share of that is billed."""
    flash = "gemini/gemini-2.5-flash"
    requests = [Request.chat(flash, [{"role": "user", "content": f"Is {i} even? Yes or No."}],
                             max_tokens=4, reasoning_effort="medium", reasoning_tokens=4096)
                for i in range(10)]
    planner = Planner(StandIn(), use_cache=False)
    planner.answer(_Client(), requests, "transfer_judge")
    totals = planner.rows[("", "transfer_judge", flash)]
    assert totals.thinking_cap_to_pay == 10 * 2048
    # on top of the answers' own tokens (every answer is sampled here)
    assert totals.answers_sampled == 10 and totals.completion_tokens_to_pay == (
        totals.answer_tokens_sampled + round(THINKING_SHARES["expected"] * 10 * 2048))


# The staged plan: outputs already made (and up to date) are read as they are.

RUBRIC_PROMPT = "Write a checklist for the summary below, one check a line.\n\nThe summary."
GENERATE = f"""
from pathlib import Path
from rubriclab.llm import LLMClient, LLMConfig, Request
prompt = {RUBRIC_PROMPT!r}
with LLMClient(LLMConfig()) as client:
    (rubric,) = client.run([Request.chat("fake/hash", [{{"role": "user", "content": prompt}}],
                                         max_tokens=64)])
Path(snakemake.output[0]).write_text(rubric.text or "")
"""
JUDGE = """
from pathlib import Path
from rubriclab.llm import LLMClient, LLMConfig, Request
checks = [c for c in Path(snakemake.input[0]).read_text().splitlines() if c.strip()]
with LLMClient(LLMConfig()) as client:
    client.run([Request.chat("fake/hash", [{"role": "user", "content": f"Check: {c}"}],
                             max_tokens=4) for c in checks])
Path(snakemake.output[0]).write_text(str(len(checks)))
"""


def _job(index, rule, script, inputs, outputs, needs, needs_run=True):
    from snakemake.iocontainers import Namedlist

    return PlannedJob(index=index, rule=rule, wildcards=Namedlist(), params=Namedlist(
        fromdict={"calls": ["fake/hash"]}), input=Namedlist(toclone=inputs),
        output=Namedlist(toclone=outputs), log=Namedlist(), resources=Namedlist(),
        script=script, needs=needs, needs_run=needs_run)


def _two_jobs(tmp_path, rubric_made: bool) -> Workflow:
    (tmp_path / "generate.py").write_text(GENERATE)
    (tmp_path / "judge.py").write_text(JUDGE)
    jobs = [_job(0, "generate", tmp_path / "generate.py", [], ["rubric.txt"], (),
                 needs_run=not rubric_made),
            _job(1, "judge", tmp_path / "judge.py", ["rubric.txt"], ["verdicts.txt"], (0,))]
    return Workflow(jobs=jobs, config={}, workdir=tmp_path)


def test_a_plan_after_the_rubrics_are_made_judges_the_real_rubrics(tmp_path):
    """Without the rubric, the judging is planned on the stand-in rubric's checks; with a
    rubric the run made (its job up to date, as Snakemake sees it), on that rubric's 11."""
    stand_in = StandIn().answer(Request.chat("fake/hash", [{"role": "user",
                                                            "content": RUBRIC_PROMPT}],
                                             max_tokens=64))
    on_stand_ins = plan_workflow(_two_jobs(tmp_path, rubric_made=False), StandIn())
    judged = {r.rule: r for r in on_stand_ins}["judge"]
    assert judged.requests == len([c for c in stand_in.splitlines() if c.strip()]) != 11
    assert judged.basis == "estimated"
    (tmp_path / "rubric.txt").write_text("\n".join(f"{i}. Check {i}." for i in range(11)))
    staged = plan_workflow(_two_jobs(tmp_path, rubric_made=True), StandIn())
    judged = {r.rule: r for r in staged}["judge"]
    assert judged.requests == 11 and judged.basis == "exact"
    assert not (tmp_path / "verdicts.txt").exists()  # the plan writes only in its shadow
