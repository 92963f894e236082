"""The progress line: tokens and dollars paid so far, and how far the whole run is."""

import logging
import os
import time

from rubriclab.llm.progress import RUN_PLAN_VARIABLE, Progress, RunPlan, write_run_plan
from rubriclab.llm.request import Completion, Message, Request, Usage


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def completion(tokens, cost, cached=False):
    request = Request(model="openai/x", messages=(Message("user", "q"),))
    return Completion(request=request, key="k", outcome="ok", text="Yes",
                      usage=Usage(tokens - 1, 1), cost_usd=cost, cached=cached)


def test_the_line_counts_tokens_and_dollars_of_paid_calls_only(caplog):
    clock = Clock()
    with caplog.at_level(logging.INFO, logger="rubriclab.progress"):
        progress = Progress("judge", 4, cache_hits=0, interval_s=0, clock=clock, run_plan=None)
        clock.now = 2.0
        progress.advance(completion(1500, 0.0125))
        progress.advance(completion(900, None))
        progress.advance(completion(700, 0.5, cached=True))  # answered by another job meanwhile
        progress.advance(completion(10_000, 0.0005))
    lines = [r.getMessage() for r in caplog.records]
    assert "1.5k tokens, $0.0125" in lines[1]
    assert "2.4k tokens, $0.0125 + 1 call(s) of unknown price" in lines[2]
    assert lines[-1].endswith("| 12k tokens, $0.0130 + 1 call(s) of unknown price")
    assert lines[-1].startswith("[judge] 4/4 (100%) | 0 cache hits")


def test_a_batch_served_by_the_cache_shows_no_bill():
    progress = Progress("judge", 3, cache_hits=3, run_plan=None, log=logging.getLogger("quiet"))
    assert "tokens" not in progress.line() and "done in" in progress.line()


def test_run_plan_counts_jobs_whose_outputs_were_written_since_the_run_started(tmp_path):
    old, a1, a2, b = (tmp_path / name for name in ("old.csv", "a1.csv", "a2.csv", "b.csv"))
    old.write_text("from a previous run")
    started = time.time() + 100  # everything written so far predates the run
    os.utime(old, (started - 50, started - 50))
    write_run_plan(tmp_path / "plan.json", [[str(a1), str(a2)], [str(b)], [str(old)], []],
                   started=started)
    plan = RunPlan.from_environment({RUN_PLAN_VARIABLE: str(tmp_path / "plan.json")})
    clock = Clock(started + 60)
    plan._clock = clock
    assert plan.status() == (0, 3, None)  # the job without outputs (rule all) is not counted
    for path in (a1, a2):
        path.write_text("x")
        os.utime(path, (started + 30, started + 30))
    b.write_text("x")  # b's job has only one output: done once it is written in the run
    os.utime(b, (started + 40, started + 40))
    assert plan.status() == (2, 3, 30.0)  # 60 s for 2 jobs: 30 s for the one left
    assert plan.line() == "run: 2/3 jobs done, about 30s left at its pace so far"


def test_the_progress_line_carries_the_run_line(tmp_path):
    write_run_plan(tmp_path / "plan.json", [[str(tmp_path / "never.csv")]])
    plan = RunPlan.from_environment({RUN_PLAN_VARIABLE: str(tmp_path / "plan.json")})
    progress = Progress("judge", 2, cache_hits=1, run_plan=plan, log=logging.getLogger("quiet"))
    assert progress.line().endswith("| run: 0/1 jobs done")


def test_no_plan_or_a_broken_one_leaves_the_line_as_it_was(tmp_path):
    assert RunPlan.from_environment({}) is None
    (tmp_path / "plan.json").write_text("{not json")
    assert RunPlan.from_environment({RUN_PLAN_VARIABLE: str(tmp_path / "plan.json")}) is None


def test_llm_client_feeds_the_line_what_each_call_paid(tmp_path, caplog, monkeypatch):
    from rubriclab.llm import LLMClient, LLMConfig
    from rubriclab.llm.settings import ModelSettings

    monkeypatch.delenv(RUN_PLAN_VARIABLE, raising=False)
    config = LLMConfig(cache_dir=tmp_path, defaults=ModelSettings(backoff_s=0.0),
                       progress_interval_s=0)
    requests = [Request(model="fake/hash", messages=(Message("user", f"one two q{i}"),),
                        response_format="yes_no") for i in range(3)]
    with LLMClient(config) as client, caplog.at_level(logging.INFO, logger="rubriclab.progress"):
        answers = client.run(requests, label="judge")
    lines = [r.getMessage() for r in caplog.records if r.name == "rubriclab.progress"]
    tokens = sum(a.usage.total_tokens for a in answers)
    assert tokens > 0 and lines[-1].endswith(f"| {tokens} tokens, $0.0000")
