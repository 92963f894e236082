"""Batch mode for Gemini (litellm's Gemini file and batch calls) and Anthropic (the anthropic
SDK's Message Batches), against the rehearsal server's imitation of each provider's batch API
on its real wire paths."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm.batch_store import BatchStore
from rubriclab.llm.pricing import price
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

from .batch_setup import kill_while_it_polls

MODELS = {"gemini": "gemini/gemini-2.5-flash",
          "anthropic": "anthropic/claude-sonnet-4-5-20250929"}
KEYS = {"gemini": "GEMINI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
YES_NO = "Answer with exactly one word: Yes or No."


@pytest.fixture(autouse=True)
def api_keys(monkeypatch):
    for name in KEYS.values():
        monkeypatch.setenv(name, "test-key-not-a-secret")


@pytest.fixture
def server():
    with RehearsalServer(faults=FaultMix.none()) as running:
        yield running


@pytest.fixture(params=sorted(MODELS))
def provider(request):
    return request.param


def api_of(server, provider):
    return server.batch_apis[provider]


def config(tmp_path, url, provider, **extra):
    values = dict(api_base=url, batch=True, batch_poll_s=0.05, batch_max_wait_s=30,
                  timeout_s=5, num_retries=2, backoff_s=0.01, max_backoff_s=0.02)
    values.update(extra)
    return LLMConfig(cache_dir=tmp_path / "cache",
                     per_model={MODELS[provider]: ModelSettings(**values)},
                     progress_interval_s=0.05)


def questions(provider, n=4, **fields):
    return [Request.chat(MODELS[provider],
                         [{"role": "user", "content": f"Is {i} even? {YES_NO}"}],
                         response_format="yes_no", max_tokens=4, **fields) for i in range(n)]


def ledger_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_batch_answers_are_parsed_cached_priced_as_batch_and_recorded(tmp_path, server,
                                                                      provider):
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(tmp_path, server.url, provider),
                   ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(questions(provider))
        assert [a.outcome for a in answers] == ["ok"] * 4 and all(a.batch for a in answers)
        assert {a.parsed for a in answers} <= {"yes", "no"}
        assert len(client.cache) == 4
    api = api_of(server, provider)
    assert api.calls["create"] == 1
    assert server.stats.batch_rows[provider] == server.stats.requests[provider] == 4
    rows = ledger_rows(ledger_path)
    assert all(r["batch"] and not r["cached"] for r in rows)
    row = rows[0]
    assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0
    assert row["cost_usd"] == pytest.approx(
        price(MODELS[provider], row["prompt_tokens"], row["completion_tokens"], batch=True))
    assert row["cost_usd"] == pytest.approx(
        price(MODELS[provider], row["prompt_tokens"], row["completion_tokens"]) / 2)


def test_a_batch_request_is_the_request_an_ordinary_call_sends(tmp_path, server, provider):
    """Same params as litellm's ordinary call: system prompt, budget with the thinking room,
    temperature, the thinking budget of the effort, and (Anthropic) the cache_control marks."""
    shared = "Background of the case. " + " ".join(f"fact {i} holds." for i in range(700))
    requests = [Request.chat(MODELS[provider], [
        {"role": "system", "content": "You judge facts."},
        {"role": "user", "content": f"{shared}\nIs fact {i} true? {YES_NO}"}],
        response_format="yes_no", max_tokens=16, reasoning_effort="low", temperature=1.0 if provider == "anthropic" else 0.3)
        for i in range(2)]
    server.keep_bodies = True
    room = {"reasoning_tokens": 2048}  # the thinking's room beside the answer
    with LLMClient(config(tmp_path / "ordinary", server.url, provider, batch=False,
                          **room)) as client:
        ordinary = client.run(requests)
    sent = [body for _, body in server.bodies]
    server.bodies.clear()
    with LLMClient(config(tmp_path / "batched", server.url, provider, **room)) as client:
        batched = client.run(requests)
    assert all(a.outcome == "ok" for a in ordinary + batched) and all(a.batch for a in batched)
    assert [a.key for a in ordinary] == [a.key for a in batched]
    rows = [body for _, body in server.bodies]
    by_text = {json.dumps(body, sort_keys=True) for body in sent}
    assert {json.dumps(body, sort_keys=True) for body in rows} == by_text
    if provider == "anthropic":
        assert all("cache_control" in json.dumps(body) for body in rows)
        assert rows[0]["max_tokens"] == 16 + 2048
        assert rows[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    else:
        assert rows[0]["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 1024
    # the same answers, counted the same way
    assert ([a.usage.prompt_tokens for a in ordinary]
            == [a.usage.prompt_tokens for a in batched])


def test_prompt_cache_tokens_of_a_batch_are_priced_at_the_batch_cache_rates(tmp_path, server):
    shared = "Background of the case. " + " ".join(f"fact {i} holds." for i in range(700))
    requests = [Request.chat(MODELS["anthropic"], [
        {"role": "user", "content": f"{shared}\nIs fact {i} true? {YES_NO}"}],
        response_format="yes_no", max_tokens=4) for i in range(3)]
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(tmp_path, server.url, "anthropic"),
                   ledger=Ledger(ledger_path, "r")) as client:
        assert all(a.outcome == "ok" and a.batch for a in client.run(requests))
    rows = ledger_rows(ledger_path)
    assert sum(r["cache_write_tokens"] for r in rows) > 0
    assert sum(r["cache_read_tokens"] for r in rows) > 0
    for r in rows:
        assert r["cost_usd"] == pytest.approx(price(
            MODELS["anthropic"], r["prompt_tokens"], r["completion_tokens"], batch=True,
            cache_read_tokens=r["cache_read_tokens"], cache_write_tokens=r["cache_write_tokens"]))


def _job(tmp_path, url, provider):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import logging, sys
        from pathlib import Path
        logging.basicConfig(level=logging.INFO)
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.llm.test_batch_providers import config, questions
        from rubriclab.llm import LLMClient

        with LLMClient(config(Path({str(tmp_path)!r}), {url!r}, {provider!r})) as client:
            client.run(questions({provider!r}))
        print("finished")
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


@pytest.mark.long
def test_a_job_killed_after_submitting_collects_the_same_batch_when_restarted(tmp_path, server,
                                                                             provider):
    api = api_of(server, provider)
    api.hold = True  # the batch stays in progress while the first job polls it
    kill_while_it_polls(api, _job(tmp_path, server.url, provider))
    (stored,) = BatchStore(tmp_path / "cache" / BatchStore.FILE_NAME).all()
    assert stored.batch_id and stored.status not in ("completed", "collected")

    api.hold = False
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(tmp_path, server.url, provider),
                   ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(questions(provider))
    assert [a.outcome for a in answers] == ["ok"] * 4 and all(a.batch for a in answers)
    assert api.calls["create"] == 1  # collected, not submitted again
    assert server.stats.requests[provider] == 4
    assert all(r["batch"] for r in ledger_rows(ledger_path))
    with LLMClient(config(tmp_path, server.url, provider)) as client:
        assert all(a.cached for a in client.run(questions(provider)))
    assert api.calls["create"] == 1 and server.stats.requests[provider] == 4


def test_a_batch_submitted_but_not_stored_is_found_on_the_provider(tmp_path, server, provider,
                                                                   monkeypatch):
    """Killed between the provider creating the batch and its id being stored."""
    api = api_of(server, provider)
    api.hold = True
    original_save = BatchStore.save

    def save_then_die(store, job):
        if job.batch_id:
            raise KeyboardInterrupt("killed before the batch id was stored")
        return original_save(store, job)

    monkeypatch.setattr(BatchStore, "save", save_then_die)
    with LLMClient(config(tmp_path, server.url, provider)) as client:
        with pytest.raises(KeyboardInterrupt):
            client.run(questions(provider))
    monkeypatch.setattr(BatchStore, "save", original_save)
    assert api.calls["create"] == 1
    api.hold = False
    with LLMClient(config(tmp_path, server.url, provider)) as client:
        answers = client.run(questions(provider))
    assert all(a.outcome == "ok" and a.batch for a in answers)
    assert api.calls["create"] == 1 and api.calls["list"] >= 1


@pytest.mark.parametrize("outcome", ["failed", "expired"])
def test_requests_a_failed_or_expired_batch_left_are_asked_as_ordinary_calls(
        tmp_path, server, provider, outcome):
    api = api_of(server, provider)
    api.outcome = outcome
    with LLMClient(config(tmp_path, server.url, provider)) as client:
        answers = client.run(questions(provider))
        assert [a.outcome for a in answers] == ["ok"] * 4 and len(client.cache) == 4
    # Anthropic reports an expired batch's unanswered requests one by one (the first half
    # here was answered); an expired Gemini job has no results at all.
    answered = 2 if (outcome, provider) == ("expired", "anthropic") else 0
    assert [a.batch for a in answers] == [True] * answered + [False] * (4 - answered)
    assert server.stats.batch_rows[provider] == answered
    assert server.stats.requests[provider] == 4  # each request answered once


def test_with_fallback_fail_a_failed_batch_counts_its_requests_failed_never_cached(
        tmp_path, server, provider):
    api_of(server, provider).outcome = "failed"
    with LLMClient(config(tmp_path, server.url, provider, batch_fallback="fail")) as client:
        with pytest.raises(ModelCallsFailed, match="failed|errored"):
            client.run(questions(provider))
        assert len(client.cache) == 0
    assert server.stats.requests[provider] == 0  # no ordinary call


def test_a_batch_the_provider_no_longer_knows_falls_back(tmp_path, server, provider):
    api = api_of(server, provider)
    api.hold = True
    with LLMClient(config(tmp_path, server.url, provider, batch_max_wait_s=0.2)) as client:
        answers = client.run(questions(provider), raise_on_failure=False)
        assert all(a.outcome == "failed" and "still" in a.error for a in answers)
    api.batches.clear()
    api.hold = False
    with LLMClient(config(tmp_path, server.url, provider)) as client:
        answers = client.run(questions(provider))
    assert all(a.outcome == "ok" and not a.batch for a in answers)
    assert api.calls["create"] == 1 and server.stats.requests[provider] == 4


@pytest.mark.parametrize("name", ["openai", "gemini", "anthropic"])
def test_polls_and_downloads_that_meet_429s_5xx_and_hangs_are_retried(tmp_path, monkeypatch,
                                                                      name):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-a-secret")
    faults = FaultMix(rate_limited=0.3, server_error=0.2, hang=0.15, fenced=0, truncated=0,
                      refusal=0, long_think=0, latency_s=(0.0, 0.0), retry_after_s=0.05,
                      hang_s=1.5)
    model = MODELS.get(name, "openai/gpt-4o-mini-2024-07-18")
    with RehearsalServer(faults=faults, seed=3) as server:
        url = server.url + ("/v1" if name == "openai" else "")
        cfg = LLMConfig(cache_dir=tmp_path / "cache", per_model={model: ModelSettings(
            api_base=url, batch=True, batch_poll_s=0.05, timeout_s=1.0, num_retries=12,
            backoff_s=0.01, max_backoff_s=0.05)})
        requests = [Request.chat(model, [{"role": "user", "content": f"Is {i} even? {YES_NO}"}],
                                 response_format="yes_no", max_tokens=4) for i in range(4)]
        with LLMClient(cfg) as client:
            answers = client.run(requests)
        assert all(a.outcome == "ok" and a.batch for a in answers)
        assert server.batch_apis[name].calls["create"] == 1
        assert server.stats.faults["hang"] and server.stats.faults["rate_limited"]
