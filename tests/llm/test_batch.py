"""Batch mode against the rehearsal server's OpenAI file and batch endpoints, through litellm."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm.client import UnusableAnswers
from rubriclab.llm.batch_store import BatchStore
from rubriclab.llm.settings import BatchNotSupported
from rubriclab.llm.pricing import price
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

MODEL = "openai/gpt-4o-mini-2024-07-18"
YES_NO = "Answer with exactly one word: Yes or No."


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


@pytest.fixture
def server():
    with RehearsalServer(faults=FaultMix.none()) as running:
        yield running


def settings(server, **extra):
    values = dict(api_base=server.url + "/v1", batch=True, batch_poll_s=0.05,
                  batch_max_wait_s=30, timeout_s=5, num_retries=2, backoff_s=0.01,
                  max_backoff_s=0.02)
    values.update(extra)
    return values


def config(tmp_path, server, **extra):
    return LLMConfig(cache_dir=tmp_path / "cache",
                     per_model={MODEL: ModelSettings(**settings(server, **extra))},
                     progress_interval_s=0.05)


def questions(n=4, max_tokens=4):
    return [Request.chat(MODEL, [{"role": "user", "content": f"Is {i} even? {YES_NO}"}],
                         response_format="yes_no", max_tokens=max_tokens) for i in range(n)]


def ledger_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_batch_answers_are_parsed_cached_priced_as_batch_and_recorded(tmp_path, server):
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(tmp_path, server), ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(questions())
        assert [a.outcome for a in answers] == ["ok"] * 4 and all(a.batch for a in answers)
        assert {a.parsed for a in answers} <= {"yes", "no"}
        assert len(client.cache) == 4
    assert server.batches.calls["create"] == 1
    assert server.stats.requests["openai"] == 4  # the batch's lines, not ordinary calls
    rows = ledger_rows(ledger_path)
    assert all(r["batch"] and not r["cached"] for r in rows)
    row, answer = rows[0], answers[0]
    assert row["cost_usd"] == pytest.approx(
        price(MODEL, row["prompt_tokens"], row["completion_tokens"], batch=True))
    assert row["cost_usd"] == pytest.approx(
        price(MODEL, row["prompt_tokens"], row["completion_tokens"]) / 2)
    assert answer.usage.prompt_tokens > 0


# How long a job process may take to reach its batch: it imports litellm first, about 5 s on a
# quiet machine and over 60 s at a load of 20 on 2 cores.
JOB_START_S = 300


def _run_in_subprocess(tmp_path, server):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import logging, sys
        logging.basicConfig(level=logging.INFO)
        sys.path.insert(0, {str(os.path.dirname(__file__))!r})
        from test_batch import config, questions
        from rubriclab.llm import LLMClient

        class Server:
            url = {server.url!r}

        from pathlib import Path
        with LLMClient(config(Path({str(tmp_path)!r}), Server())) as client:
            client.run(questions())
        print("finished")
    """))
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-secret",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


@pytest.mark.long
def test_a_job_killed_after_submitting_collects_the_same_batch_when_restarted(tmp_path, server):
    server.batches.hold = True  # the batch stays in progress while the first job polls it
    job = _run_in_subprocess(tmp_path, server)
    try:
        deadline = time.monotonic() + JOB_START_S
        while server.batches.calls["retrieve"] < 2 and time.monotonic() < deadline:
            assert job.poll() is None, job.stdout.read().decode()
            time.sleep(0.05)
        assert server.batches.calls["create"] == 1, "the job never submitted its batch"
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
    assert job.returncode == -signal.SIGKILL
    (stored,) = BatchStore(tmp_path / "cache" / BatchStore.FILE_NAME).all()
    assert stored.status == "in_progress" and stored.batch_id in server.batches.batches

    server.batches.hold = False
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(tmp_path, server), ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(questions())
    assert [a.outcome for a in answers] == ["ok"] * 4 and all(a.batch for a in answers)
    assert (server.batches.calls["upload"], server.batches.calls["create"]) == (1, 1)
    assert server.stats.requests["openai"] == 4
    assert all(r["batch"] for r in ledger_rows(ledger_path))
    # And once collected, the answers are cache hits: nothing is asked again.
    with LLMClient(config(tmp_path, server)) as client:
        assert all(a.cached for a in client.run(questions()))
    assert server.batches.calls["create"] == 1 and server.stats.requests["openai"] == 4


def test_requests_another_process_is_batching_are_waited_for_not_batched_again(tmp_path,
                                                                              server):
    """A second job whose requests overlap a running batch's (Figure 2's judging and verify's
    label judging ask the same questions) batches only the requests nobody holds."""
    server.batches.hold = True
    job = _run_in_subprocess(tmp_path, server)  # questions 0-3
    second: dict = {}
    thread = threading.Thread(target=lambda: second.update(
        answers=LLMClient(config(tmp_path, server)).run(questions(6))))
    try:
        deadline = time.monotonic() + JOB_START_S
        while server.batches.calls["create"] < 1 and time.monotonic() < deadline:
            assert job.poll() is None, job.stdout.read().decode()
            time.sleep(0.05)
        thread.start()
        while server.batches.calls["create"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.batches.calls["create"] == 2, "the second job submitted no batch"
        server.batches.hold = False
        thread.join(timeout=60)
        assert job.wait(timeout=60) == 0, job.stdout.read().decode()
    finally:
        server.batches.hold = False
        if job.poll() is None:
            job.kill()
    assert not thread.is_alive()
    answers = second["answers"]
    assert [a.outcome for a in answers] == ["ok"] * 6
    # The four the first job held came from its batch, through the cache; two were batched.
    assert [a.cached for a in answers] == [True] * 4 + [False] * 2
    assert server.batches.calls["create"] == 2
    assert server.stats.requests["openai"] == 6  # 4 + 2 batch lines: none paid twice


def test_a_batch_submitted_but_not_stored_is_found_by_its_metadata(tmp_path, server,
                                                                   monkeypatch):
    """Killed between the provider creating the batch and the id being stored."""
    server.batches.hold = True
    original_save = BatchStore.save

    def save_then_die(store, job):
        if job.batch_id:
            raise KeyboardInterrupt("killed before the batch id was stored")
        return original_save(store, job)

    monkeypatch.setattr(BatchStore, "save", save_then_die)
    with LLMClient(config(tmp_path, server)) as client:
        with pytest.raises(KeyboardInterrupt):
            client.run(questions())
    monkeypatch.setattr(BatchStore, "save", original_save)
    assert server.batches.calls["create"] == 1
    server.batches.hold = False
    with LLMClient(config(tmp_path, server)) as client:
        answers = client.run(questions())
    assert all(a.outcome == "ok" and a.batch for a in answers)
    assert server.batches.calls["create"] == 1 and server.batches.calls["list"] >= 1


@pytest.mark.parametrize("outcome", ["failed", "expired"])
def test_requests_a_failed_or_expired_batch_left_are_asked_as_ordinary_calls(tmp_path, server,
                                                                            outcome):
    server.batches.outcome = outcome
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(tmp_path, server), ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(questions())
        assert [a.outcome for a in answers] == ["ok"] * 4
        cached_texts = {a.key: client.cache.get(a.key).text for a in answers}
    by_batch = [a.batch for a in answers]
    expected = {"failed": [False] * 4, "expired": [True, True, False, False]}[outcome]
    assert by_batch == expected
    # Batch lines answered, plus one ordinary call for each request the batch left.
    assert server.stats.requests["openai"] == expected.count(True) + expected.count(False)
    assert all(cached_texts[a.key] == a.text for a in answers)
    assert [r["batch"] for r in ledger_rows(ledger_path)] == expected


@pytest.mark.parametrize("outcome", ["failed", "expired"])
def test_with_fallback_fail_a_failed_batch_counts_its_requests_failed_never_cached(
        tmp_path, server, outcome):
    server.batches.outcome = outcome
    with LLMClient(config(tmp_path, server, batch_fallback="fail")) as client:
        with pytest.raises(ModelCallsFailed, match=outcome):
            client.run(questions())
        assert len(client.cache) == (0 if outcome == "failed" else 2)
        # A rerun submits a new batch for what is left; the ended one is not polled again.
        answers = client.run(questions(), raise_on_failure=False)
        failed = [a for a in answers if a.outcome == "failed"]
        assert failed and all(client.cache.get(a.key) is None for a in failed)
        assert all(outcome in a.error and a.batch for a in failed)
    assert server.batches.calls["create"] == 2
    # Only batch lines were answered (expired: 2 of 4, then 1 of the 2 left); no ordinary call.
    assert server.stats.requests["openai"] == (0 if outcome == "failed" else 3)


def test_a_batch_past_its_max_wait_fails_this_run_and_is_collected_by_the_next(tmp_path, server):
    server.batches.hold = True
    with LLMClient(config(tmp_path, server, batch_max_wait_s=0.2)) as client:
        answers = client.run(questions(), raise_on_failure=False)
        assert all(a.outcome == "failed" and "still in_progress" in a.error for a in answers)
        assert len(client.cache) == 0
    assert server.stats.requests["openai"] == 0  # no ordinary call pays for it twice
    server.batches.hold = False
    with LLMClient(config(tmp_path, server)) as client:
        assert all(a.outcome == "ok" for a in client.run(questions()))
    assert server.batches.calls["create"] == 1


def test_an_unparseable_batch_answer_is_reasked_as_an_ordinary_call(tmp_path, server):
    server.faults = FaultMix(0, 0, 0, 0, 0, refusal=1.0, long_think=0, latency_s=(0.0, 0.0))
    server.keep_bodies = True
    # its only answer unusable: the job fails at its end (LLMClient.finish)
    with pytest.raises(UnusableAnswers), LLMClient(config(tmp_path, server,
                                                          max_reasks=1)) as client:
        (answer,) = client.run(questions(1, max_tokens=64), raise_on_failure=False)
        assert answer.outcome == "unparseable" and answer.batch and answer.reasks == 1
        assert answer.attempts == 2 and len(client.cache) == 0
    assert server.stats.requests["openai"] == 2  # the batch line and one ordinary re-ask
    path, body = server.bodies[-1]
    assert path.endswith("/chat/completions")  # an ordinary call, continuing the batch's answer
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"].startswith("I'm sorry")


@pytest.mark.parametrize("model", ["deepseek/deepseek-chat", "fake/hash"])
def test_batch_for_a_provider_without_a_batch_api_is_refused_before_any_call(tmp_path, model):
    with pytest.raises(BatchNotSupported, match=r"batch: true.*anthropic/, gemini/, openai/"):
        LLMConfig.from_dict({"per_model": {model: {"batch": True}}}, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="set per model"):
        LLMConfig.from_dict({"defaults": {"batch": True}}, cache_dir=tmp_path)
    cfg = LLMConfig(cache_dir=tmp_path, per_model={model: ModelSettings(batch=True,
                                                                        check_api_key=False)})
    with LLMClient(cfg, ledger=Ledger(tmp_path / "l.jsonl", "r")) as client:
        with pytest.raises(BatchNotSupported):
            client.run([Request.chat(model, [{"role": "user", "content": "hi"}])])
    assert (tmp_path / "l.jsonl").read_text() == ""


@pytest.mark.parametrize("model", ["openai/gpt-5", "gemini/gemini-2.5-flash",
                                   "anthropic/claude-sonnet-4-5-20250929"])
def test_batch_is_accepted_for_the_three_providers(tmp_path, model):
    cfg = LLMConfig.from_dict({"per_model": {model: {"batch": True}}}, cache_dir=tmp_path)
    assert cfg.settings_for(model).batch


def test_a_refused_submission_falls_back_and_a_failing_poll_does_not(tmp_path, server,
                                                                    monkeypatch):
    def refuse_upload(path, headers, raw):
        return 400, {"error": {"message": "rehearsal: file refused", "type": "invalid_request"}}

    with monkeypatch.context() as patch:
        patch.setattr(server.batches, "post", refuse_upload)
        with LLMClient(config(tmp_path / "refused", server)) as client:
            answers = client.run(questions())
    assert all(a.outcome == "ok" and not a.batch for a in answers)  # asked as ordinary calls
    assert server.stats.requests["openai"] == 4

    server.batches.hold = True
    original_get = server.batches.get
    with monkeypatch.context() as patch:
        patch.setattr(server.batches, "get", lambda path, headers=None: (
            (500, {"error": {"message": "down"}}) if "/batches/" in path
            else original_get(path, headers)))
        with LLMClient(config(tmp_path / "polled", server)) as client:
            answers = client.run(questions(), raise_on_failure=False)
    assert all(a.outcome == "failed" and "rerun collects it" in a.error for a in answers)
    assert server.stats.requests["openai"] == 4  # submitted, so never paid for again here


def test_a_batch_the_provider_no_longer_knows_falls_back_instead_of_blocking(tmp_path, server,
                                                                           monkeypatch):
    server.batches.hold = True
    with LLMClient(config(tmp_path, server, batch_max_wait_s=0.2)) as client:
        client.run(questions(), raise_on_failure=False)  # submitted, still running
    server.batches.batches.clear()  # the provider forgot it (deleted, or past retention)
    server.batches.hold = False
    with LLMClient(config(tmp_path, server)) as client:
        answers = client.run(questions())
    assert all(a.outcome == "ok" and not a.batch for a in answers)  # ordinary calls
    (stored,) = BatchStore(tmp_path / "cache" / BatchStore.FILE_NAME).all()
    assert stored.status == "gone"
    assert server.batches.calls["create"] == 1 and server.stats.requests["openai"] == 4


def test_requests_past_a_batch_limit_are_split_and_a_rerun_collects_the_parts(
        tmp_path, server, monkeypatch):
    from rubriclab.llm.batch_openai import OpenAIBatchAPI

    monkeypatch.setattr(OpenAIBatchAPI, "MAX_REQUESTS", 3)
    server.batches.hold = True
    with LLMClient(config(tmp_path, server, batch_max_wait_s=0.2)) as client:
        client.run(questions(5), raise_on_failure=False)
    assert server.batches.calls["create"] == 2  # 3 + 2
    assert sorted(len(b["_rows"]) for b in server.batches.batches.values()) == [2, 3]
    # A rerun that would split differently still collects the two batches it stored.
    monkeypatch.setattr(OpenAIBatchAPI, "MAX_REQUESTS", 50_000)
    server.batches.hold = False
    with LLMClient(config(tmp_path, server)) as client:
        answers = client.run(questions(5))
    assert all(a.outcome == "ok" and a.batch for a in answers)
    assert server.batches.calls["create"] == 2 and server.stats.requests["openai"] == 5


def test_a_role_that_opts_out_of_batches_asks_its_requests_as_ordinary_calls(tmp_path, server):
    base = config(tmp_path, server)
    opted_out = LLMConfig(cache_dir=base.cache_dir, per_model=base.per_model,
                          progress_interval_s=0.05,
                          roles=LLMConfig.from_dict({"roles": {"reviser": {"batch": False}}}).roles)
    assert opted_out.batch_for(MODEL, "judge") and not opted_out.batch_for(MODEL, "reviser")
    with LLMClient(opted_out, role="reviser") as client:
        answers = client.run(questions(3))
    assert [a.outcome for a in answers] == ["ok"] * 3 and not any(a.batch for a in answers)
    assert server.batches.calls["create"] == 0
    with LLMClient(opted_out, role="judge") as client:
        assert all(a.batch for a in client.run(questions(6)[3:]))
    assert server.batches.calls["create"] == 1


def test_a_role_can_only_opt_out_of_batches():
    with pytest.raises(ValueError, match=r"llm.roles.judge: batch is false .* got True"):
        LLMConfig.from_dict({"roles": {"judge": {"batch": True}}})


def test_a_budget_refuses_a_batch_before_it_is_submitted_and_bills_one_it_holds(tmp_path,
                                                                                server):
    from dataclasses import replace as with_budget

    from rubriclab.llm.budget import BudgetExceeded, SpendRecord, spend_record_path

    ledger_path = tmp_path / "results" / "ledger" / "judge.jsonl"
    within = with_budget(config(tmp_path, server), budget_usd=1.0)
    with LLMClient(within, ledger=Ledger(ledger_path, "judge")) as client:
        answers = client.run(questions(4))
    assert all(a.outcome == "ok" and a.batch for a in answers)
    bill = SpendRecord(spend_record_path(ledger_path)).bill()
    # the batch's booking was released once its answers were billed, each at what it cost
    assert bill.in_flight_usd == pytest.approx(0.0, abs=1e-12)
    assert bill.settled_usd == pytest.approx(sum(a.cost_usd for a in answers))
    assert server.batches.calls["create"] == 1

    tiny = with_budget(config(tmp_path, server), budget_usd=bill.settled_usd + 1e-9)
    with LLMClient(tiny, ledger=Ledger(ledger_path, "judge")) as client:
        with pytest.raises(BudgetExceeded, match="a batch of 4 requests to"):
            client.run(questions(8)[4:])
    assert server.batches.calls["create"] == 1  # refused before submitting, no ordinary call
    assert server.stats.requests["openai"] == 4
