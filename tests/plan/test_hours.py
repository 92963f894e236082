"""Honest hours (issue 33, item 5): without batch mode each model is bound by its provider's limits
as the provider counts them (Anthropic: uncached input against ITPM, output against OTPM); with
batch mode the run waits on the batches in series on its DAG's critical path, at each
provider's typical and worst window."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rubriclab.llm import Request
from rubriclab.llm.settings import LLMConfig
from rubriclab.plan.dag import PlannedJob, Workflow
from rubriclab.plan.hours import BATCH_WINDOWS, batch_critical_path
from rubriclab.plan.planner import Planner, StandIn, _model_jobs_upstream, plan_workflow
from rubriclab.plan.markdown import plan_markdown
from rubriclab.plan.report import plan_table, prompt_caching, worst_case_hours, write_plan

from .test_report import MINI, SONNET, judged, thinking_row

GEMINI = "gemini/gemini-2.5-flash"


def hours_of(rows, per_model):
    table = plan_table(rows, LLMConfig.from_dict({"per_model": per_model}))
    return table, table.attrs["hours"]


def test_anthropic_counts_uncached_input_and_output_against_limits_of_their_own():
    row = judged(SONNET, 20)  # 20 checks of one long item: 19 read it from the prompt cache
    reads = prompt_caching(row).read_tokens
    uncached = row.prompt_tokens_to_pay - reads
    assert reads > 0.9 * row.prompt_tokens_to_pay
    # input binds: the uncached input over ITPM, 30 minutes; counting the cache reads (or
    # prompt + completion against one limit) would make it some 20 times as long
    itpm = uncached / 30
    table, hours = hours_of([row], {SONNET: {"input_tokens_per_minute": itpm,
                                             "output_tokens_per_minute": 1e9}})
    assert table["hours"].sum() == pytest.approx(0.5)
    assert set(table["hours_bound"]) == {"input_tokens_per_minute"}
    one_limit = plan_table([row], LLMConfig.from_dict(
        {"per_model": {SONNET: {"tokens_per_minute": itpm}}}))
    assert one_limit["hours"].sum() > 10 * table["hours"].sum()
    # output binds: completion tokens over OTPM, apart from the input
    otpm = row.completion_tokens_to_pay / 90
    table, _ = hours_of([row], {SONNET: {"input_tokens_per_minute": 1e9,
                                         "output_tokens_per_minute": otpm}})
    assert table["hours"].sum() == pytest.approx(1.5)
    assert set(table["hours_bound"]) == {"output_tokens_per_minute"}
    # without prompt caching every prompt token is uncached input
    table, _ = hours_of([row], {SONNET: {"input_tokens_per_minute": itpm,
                                         "prompt_cache": False}})
    assert table["hours"].sum() == pytest.approx(row.prompt_tokens_to_pay / itpm / 60)


def test_other_providers_count_every_prompt_token_against_an_input_limit():
    row = judged(GEMINI, 20)  # Gemini's TPM counts input tokens, cached or not
    itpm = row.prompt_tokens_to_pay / 30
    table, _ = hours_of([row], {GEMINI: {"input_tokens_per_minute": itpm}})
    assert table["hours"].sum() == pytest.approx(0.5)


def test_hours_at_the_high_thinking_level_are_printed_beside_the_expected():
    row = thinking_row(GEMINI, 600, 2048)
    high_completion = row.completion_tokens_at(1.0)
    otpm = row.completion_tokens_to_pay / 60  # an hour at the expected thinking
    table, hours = hours_of([row], {GEMINI: {"output_tokens_per_minute": otpm}})
    assert hours[GEMINI]["expected"] == pytest.approx(1.0)
    assert hours[GEMINI]["high"] == pytest.approx(high_completion / otpm / 60)
    markdown = plan_markdown(table, config_name="c.yaml", digest="d", free_text_share=0.25)
    line = next(l for l in markdown.splitlines() if l.startswith("- **Hours** per model"))
    assert (f"`{GEMINI}` 1.0 (output tokens a minute), "
            f"{hours[GEMINI]['high']:.1f} at high thinking") in line


def placed(row, job, after=(), askings=(1,)):
    """The row as the planner records it: made by DAG job `job`, after the model jobs
    `after`, its requests sent to a batch in the job's askings `askings`."""
    return replace(row, label=f"{row.rule}[{job}]", jobs=(job,), after={job: tuple(after)},
                   batch_askings=tuple((job, a) for a in askings))


def transfer_like(models=(GEMINI, SONNET, MINI)):
    """generate (two generators side by side, jobs 0 and 1) -> respond (2) -> judge (3); and a
    job needing only the first generator (4), whose model is not batched."""
    gemini, sonnet, mini = models
    return [
        placed(replace(judged(gemini, 5), rule="generate"), 0),
        placed(replace(judged(sonnet, 5), rule="generate"), 1),
        placed(replace(judged(mini, 5), rule="respond"), 2, after=(0, 1)),
        placed(replace(judged(gemini, 5), rule="judge"), 3, after=(0, 1, 2)),
        placed(replace(judged("openai/gpt-4o", 5), rule="embed"), 4, after=(0,), askings=()),
    ]


def test_batch_waits_side_by_side_count_once_on_the_critical_path():
    path = batch_critical_path(transfer_like())
    assert len(path.waits) == 3  # not 4: the two generators wait side by side
    assert [w.rule for w in path.waits] == ["generate", "respond", "judge"]
    assert path.worst_h == 3 * 24
    assert path.typical_h is None  # OpenAI and Gemini document no typical time
    # a job that asks twice, each asking a batch, waits twice
    rows = transfer_like()
    rows[3] = replace(rows[3], batch_askings=((3, 1), (3, 2)))
    assert len(batch_critical_path(rows).waits) == 4


def test_only_anthropic_documents_a_typical_batch_time():
    path = batch_critical_path(transfer_like((SONNET, SONNET, SONNET)))
    assert len(path.waits) == 3
    assert path.typical_h == 3 * BATCH_WINDOWS["anthropic"].typical_h == 3.0
    assert path.worst_h == 72
    # of two generators side by side, the one of no documented typical time sets the path's
    path = batch_critical_path([
        placed(replace(judged(SONNET, 5), rule="generate"), 0),
        placed(replace(judged(MINI, 5), rule="generate"), 1),
        placed(replace(judged(SONNET, 5), rule="respond"), 2, after=(0, 1)),
        placed(replace(judged(SONNET, 5), rule="judge"), 3, after=(0, 1, 2))])
    assert [w.models for w in path.waits] == [(MINI,), (SONNET,), (SONNET,)]
    assert path.typical_h is None


def test_the_plan_prints_both_kinds_of_hours_and_records_the_worst_case(tmp_path):
    batched = {m: {"batch": True} for m in (GEMINI, SONNET, MINI)}
    table = plan_table(transfer_like(), LLMConfig.from_dict({"per_model": batched}))
    markdown = plan_markdown(table, config_name="c.yaml", digest="d", free_text_share=0.25)
    line = next(l for l in markdown.splitlines()
                if l.startswith("- **Hours as this config runs**"))
    assert "3 batch waits in series on the critical path" in line
    assert "generate[0] → respond[2] → judge[3]" in line
    assert "at worst 3 × 24 h = 72 h" in line
    assert "no typical time: Gemini, OpenAI document only their 24-hour window" in line
    # the one model sent as ordinary calls (openai/gpt-4o) beside the waits
    ordinary = table.attrs["hours"]["openai/gpt-4o"]["run_high"]
    assert worst_case_hours(table) == pytest.approx(72 + ordinary)
    written = write_plan(table, markdown, tmp_path, "digest")
    assert json.loads(written[1].read_text())["worst_case_hours"] == pytest.approx(
        72 + ordinary)


class _Client:
    ledger = None

    def __init__(self, config):
        self.config = config


def test_the_planner_records_each_jobs_batch_askings_and_the_model_jobs_it_needs():
    config = LLMConfig.from_dict({"per_model": {MINI: {"batch": True}},
                                  "roles": {"reviser": {"batch": False}}})
    planner = Planner(StandIn(), use_cache=False)
    planner.current_job, planner.current_rule = 7, "judge"

    def ask(n, role=None):
        planner.answer(_Client(config), [
            Request.chat(MINI, [{"role": "user", "content": f"q {n} {i}"}], max_tokens=4,
                         role=role) for i in range(3)], "judge")

    ask(1)
    ask(2, role="reviser")  # its role opts out: no batch
    ask(3)
    (totals,) = planner.rows.values()
    assert totals.jobs == {7} and totals.batch_askings == {(7, 1), (7, 3)}

    def job(index, needs, calls):
        return PlannedJob(index=index, rule=f"r{index}", wildcards={}, input=[], output=[],
                          log=[], resources={}, script=None, needs=needs,
                          params={"calls": 1} if calls else {})

    # 0 (model) -> 1 (no model) -> 2 (model); 3 (model) needs 2
    workflow = Workflow(jobs=[job(0, (), True), job(1, (0,), False), job(2, (1,), True),
                              job(3, (2,), True)], config={}, workdir=Path("."))
    upstream = _model_jobs_upstream(workflow)
    assert upstream[2] == {0} and upstream[3] == {0, 2} and upstream[0] == frozenset()


def test_the_worst_case_adds_the_ordinary_calls_of_models_that_may_run_one_after_another():
    """Models sent as ordinary calls may run one after another (generators, then responders,
    then a judge): the upper bound adds their hours at high thinking, not the slowest's."""
    unbatched = [replace(r, batch_askings=()) for r in transfer_like()]
    table = plan_table(unbatched, LLMConfig())  # nothing batched
    assert table.attrs["batch_path"].waits == ()
    ordinary = [h["run_high"] for h in table.attrs["hours"].values()]
    assert len(ordinary) == 4 and min(ordinary) > 0
    assert worst_case_hours(table) == pytest.approx(sum(ordinary))
    assert worst_case_hours(table) > max(ordinary)


def test_a_row_of_jobs_with_different_upstreams_adds_no_batch_wait():
    """A row's jobs each wait for their own upstream jobs: a judging job needing nothing (3)
    waits twice, not twice after the generate -> respond chain another judging job (2)
    needs."""
    rows = transfer_like()[:3]  # generate (0, 1) -> respond (2)
    judge = replace(judged(SONNET, 5), rule="judge", label="judge", jobs=(3, 4),
                    after={3: (0, 1, 2), 4: ()}, batch_askings=((4, 1), (4, 2)))
    path = batch_critical_path(rows + [judge])
    assert [w.rule for w in path.waits] == ["generate", "respond"]  # 2 waits on either
    # with job 3 asking a batch too, 3 waits: generate -> respond -> judge, not 4
    path = batch_critical_path(rows + [replace(judge, batch_askings=((3, 1), (4, 1), (4, 2)))])
    assert [w.rule for w in path.waits] == ["generate", "respond", "judge"]


def test_the_planner_records_each_jobs_own_upstream(tmp_path):
    """generate (0) -> judge (1); judge (2) on a rubric made before: one row, two jobs, each
    after its own model jobs."""
    from .test_planner import GENERATE, JUDGE, _job

    (tmp_path / "generate.py").write_text(GENERATE)
    (tmp_path / "judge.py").write_text(JUDGE)
    (tmp_path / "old_rubric.txt").write_text("1. Check one.\n2. Check two.\n")
    workflow = Workflow(jobs=[
        _job(0, "generate", tmp_path / "generate.py", [], ["rubric.txt"], ()),
        _job(1, "judge", tmp_path / "judge.py", ["rubric.txt"], ["verdicts.txt"], (0,)),
        _job(2, "judge", tmp_path / "judge.py", ["old_rubric.txt"], ["old_verdicts.txt"], ())],
        config={}, workdir=tmp_path)
    (judge,) = [r for r in plan_workflow(workflow, StandIn()) if r.rule == "judge"]
    assert judge.jobs == (1, 2)
    assert judge.after == {1: (0,), 2: ()}
