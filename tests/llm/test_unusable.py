"""Answers that never parse (issue 24, item 4): a model whose answers keep coming back unusable
is no longer asked, and the job fails saying how many, with an example and what to change."""

import json

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.client import UnusableAnswers

from .loopback import LoopbackServer, answers

MODEL = "openai/stub-judge"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def judge(text, model=MODEL):
    return Request.chat(model, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


def config(tmp_path, api_base=None, **settings):
    values = dict(api_base=api_base, backoff_s=0.0, timeout_s=5.0, concurrency=1,
                  max_reasks=2)
    values.update(settings)
    return LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(**values))


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_always_maybe_judge_is_stopped_after_n_answers_and_the_run_fails(tmp_path):
    ledger = tmp_path / "results" / "ledger" / "judge.jsonl"
    with LoopbackServer(answers("Maybe")) as server:
        with LLMClient(config(tmp_path, server.api_base, max_unusable_in_a_row=4),
                       ledger=Ledger(ledger, "judge")) as client:
            with pytest.raises(UnusableAnswers) as stopped:
                # raise_on_failure=False does not let a run of unusable answers pass
                client.run([judge(f"claim {i}") for i in range(40)], raise_on_failure=False)
            assert len(client.cache) == 0
    # 4 requests, each asked once and re-asked twice; the other 36 never sent
    assert len(server.requests) == 4 * 3
    message = str(stopped.value)
    assert "4 answers in a row were unusable" in message
    assert "4 of 4 answers unusable (100%)" in message and "'Maybe'" in message
    assert "max_unusable_in_a_row" in message and "36 of 40 requests not answered" in message
    written = rows(ledger)
    assert [r["outcome"] for r in written].count("unparseable") == 4
    assert [r["attempts"] for r in written if r["outcome"] == "failed"] == [0] * 36
    # what was paid is journaled: 4 rows of 3 attempts
    journal = rows(ledger.parent / "attempts" / ledger.name)
    assert [r["attempts"] for r in journal] == [3, 3, 3, 3]


def test_an_answer_cut_off_at_every_budget_counts_as_unusable(tmp_path):
    with LoopbackServer(answers("Y", finish_reason="length")) as server:
        with LLMClient(config(tmp_path, server.api_base, max_unusable_in_a_row=3,
                              budget_doublings=1)) as client:
            with pytest.raises(UnusableAnswers) as stopped:
                client.run([judge(f"claim {i}") for i in range(20)])
    # asked at 4 tokens, then at 8; three requests, then no more
    assert [r["max_tokens"] for r in server.requests] == [4, 8] * 3
    assert "3 of 3 answers unusable" in str(stopped.value)
    assert "AnswerCutOff" in str(stopped.value) and "budget_doublings" in str(stopped.value)


def test_a_share_of_unusable_answers_above_the_limit_stops_the_model(tmp_path):
    # every other claim is answered "Maybe": never 3 in a row, but half of them
    def half(body, headers):
        text = body["messages"][0]["content"]
        return 200, ("Maybe" if int(text.split()[-1]) % 2 else "Yes"), "stop"

    with LoopbackServer(half) as server:
        with LLMClient(config(tmp_path, server.api_base, max_reasks=0, max_unusable_in_a_row=3,
                              max_unusable_share=0.4, unusable_min_answers=6)) as client:
            with pytest.raises(UnusableAnswers) as stopped:
                client.run([judge(f"claim {i}") for i in range(30)])
            assert len(client.cache) == 3  # the answers that parsed are kept
    assert len(server.requests) == 6
    assert "3 of 6 answers unusable (50%)" in str(stopped.value)
    assert "max_unusable_share" in str(stopped.value)


def test_a_few_unusable_answers_below_the_limits_are_reported_not_stopped(tmp_path):
    def one_in_five(body, headers):
        text = body["messages"][0]["content"]
        return 200, ("Maybe" if int(text.split()[-1]) % 5 == 0 else "No"), "stop"

    with LoopbackServer(one_in_five) as server:
        with LLMClient(config(tmp_path, server.api_base, max_reasks=0)) as client:
            completions = client.run([judge(f"claim {i}") for i in range(25)])
    assert [c.outcome for c in completions].count("unparseable") == 5
    assert len(server.requests) == 25


def test_unusable_answers_are_counted_across_the_runs_of_one_job_not_across_jobs(tmp_path):
    """A job that asks one request a run (an agent's steps) is stopped all the same; the next
    job (a new client) counts afresh."""
    cfg = config(tmp_path, max_unusable_in_a_row=3)
    with LLMClient(cfg) as client:
        for i in range(2):
            (answer,) = client.run([judge(f"step {i}", "fake/unparseable")])
            assert answer.outcome == "unparseable"
        with pytest.raises(UnusableAnswers):
            client.run([judge("step 2", "fake/unparseable")])
        # stopped for the rest of the job: not asked again
        with pytest.raises(UnusableAnswers):
            client.run([judge("step 3", "fake/unparseable")], raise_on_failure=False)
    with LLMClient(cfg) as client:
        (answer,) = client.run([judge("step 0", "fake/unparseable")])
        assert answer.outcome == "unparseable"


def test_an_ok_answer_ends_a_run_of_unusable_ones(tmp_path):
    def three_in_four(body, headers):
        text = body["messages"][0]["content"]
        return 200, ("Yes" if int(text.split()[-1]) % 4 == 3 else "Maybe"), "stop"

    with LoopbackServer(three_in_four) as server:
        with LLMClient(config(tmp_path, server.api_base, max_reasks=0, max_unusable_in_a_row=4,
                              max_unusable_share=1.0)) as client:
            completions = client.run([judge(f"claim {i}") for i in range(12)])
    assert [c.outcome for c in completions].count("unparseable") == 9
    assert len(server.requests) == 12


@pytest.mark.parametrize("key, value", [("max_unusable_in_a_row", 0),
                                        ("unusable_min_answers", 2.5),
                                        ("max_unusable_share", 1.5),
                                        ("max_unusable_share", True)])
def test_limits_that_cannot_work_are_refused_naming_the_key(key, value):
    with pytest.raises(ValueError, match=rf"llm.per_model\['fake/yes'\]\.{key}"):
        LLMConfig.from_dict({"per_model": {"fake/yes": {key: value}}})
    with pytest.raises(ValueError, match=rf"llm.defaults\.{key}"):
        LLMConfig.from_dict({"defaults": {key: value}})


def test_a_job_whose_every_answer_is_unusable_fails_at_its_end_below_the_limits(tmp_path):
    """3 answers, all "Maybe": too few for max_unusable_in_a_row (10) or unusable_min_answers
    (10), so the run returns them; the job's end (leaving `with LLMClient`) fails."""
    with LoopbackServer(answers("Maybe")) as server:
        with pytest.raises(UnusableAnswers) as failed:
            with LLMClient(config(tmp_path, server.api_base)) as client:
                completions = client.run([judge(f"claim {i}") for i in range(3)])
                assert [c.outcome for c in completions] == ["unparseable"] * 3
    assert len(server.requests) == 3 * 3  # each asked, and re-asked twice
    message = str(failed.value)
    assert f"every answer of model {MODEL!r} in this job was unusable" in message
    assert "3 of 3 answers unusable (100%)" in message and "'Maybe'" in message
    assert "max_unusable_share" in message and "change the model" in message


def test_a_job_with_one_usable_answer_or_that_expects_unusable_ones_ends_normally(tmp_path):
    def first_only(body, headers):
        return 200, ("Yes" if body["messages"][0]["content"].endswith(" 0") else "Maybe"), "stop"

    with LoopbackServer(first_only) as server:
        with LLMClient(config(tmp_path, server.api_base, max_reasks=0)) as client:
            outcomes = [c.outcome for c in client.run([judge(f"claim {i}") for i in range(3)])]
    assert outcomes == ["ok", "unparseable", "unparseable"]
    with LoopbackServer(answers("Maybe")) as server:
        with LLMClient(config(tmp_path / "b", server.api_base, max_reasks=0,
                              max_unusable_share=1.0)) as client:
            client.run([judge(f"claim {i}") for i in range(3)])
    with LLMClient(config(tmp_path / "c")) as client:  # fake/: never parses by design
        client.run([judge("step 0", "fake/unparseable")])


def test_the_end_of_job_check_does_not_hide_an_error_leaving_the_job(tmp_path):
    with pytest.raises(KeyError, match="the job's own error"):
        with LoopbackServer(answers("Maybe")) as server:
            with LLMClient(config(tmp_path, server.api_base, max_reasks=0)) as client:
                client.run([judge("claim 0")])
                raise KeyError("the job's own error")


JOB = """
import sys
from pathlib import Path
from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request

settings = ModelSettings(api_base={api_base!r}, max_reasks=0, backoff_s=0.0, timeout_s=5.0)
with LLMClient(LLMConfig(cache_dir=Path({tmp!r}) / "cache", defaults=settings)) as client:
    client.run([Request.chat({model!r}, [{{"role": "user", "content": f"claim {{i}}"}}],
                             response_format="yes_no", max_tokens=4) for i in range(2)])
print("wrote the job's outputs")
"""


def test_a_job_process_whose_every_answer_is_unusable_exits_non_zero(tmp_path):
    import os
    import subprocess
    import sys

    with LoopbackServer(answers("Maybe")) as server:
        script = tmp_path / "job.py"
        script.write_text(JOB.format(tmp=str(tmp_path), api_base=server.api_base, model=MODEL))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                   OPENAI_API_KEY="sk-test-not-a-secret")
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=300)
    assert done.returncode != 0 and "wrote the job's outputs" not in done.stdout
    assert "UnusableAnswers" in done.stderr and "2 of 2 answers unusable (100%)" in done.stderr
    assert len(server.requests) == 2
