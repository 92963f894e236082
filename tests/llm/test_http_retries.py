"""The real HTTP path: litellm talking to an OpenAI-compatible server on 127.0.0.1."""

import json

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm.backends import MissingAPIKey
from rubriclab.llm.cache import make_answer

from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/stub-model"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def client_for(tmp_path, server, ledger=None, **settings):
    defaults = dict(api_base=server.api_base, timeout_s=1.0, num_retries=5, backoff_s=0.01,
                    max_backoff_s=0.05, max_reasks=2)
    defaults.update(settings)
    cfg = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(**defaults))
    return LLMClient(cfg, ledger=ledger)


def judge(text="Is the sky blue?"):
    return Request.chat(MODEL, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


def test_retries_recover_from_429_500_timeout_and_dropped_connection(tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    with ScriptedOpenAIServer(["429", "500", "timeout", "drop", "Yes."]) as server:
        with client_for(tmp_path, server, ledger=Ledger(ledger_path, "test")) as client:
            (answer,) = client.run([judge()])
            assert answer.outcome == "ok" and answer.parsed == "yes" and answer.attempts == 5
            assert answer.usage.prompt_tokens == 11
            assert len(server.requests) == 5
            assert len(client.cache) == 1
            # Served from the cache now: the server is not asked again.
            (again,) = client.run([judge()])
            assert again.cached and len(server.requests) == 5
    row = json.loads(ledger_path.read_text().splitlines()[0])
    assert row["attempts"] == 5 and row["outcome"] == "ok" and row["cached"] is False


def test_empty_answer_is_a_failure_that_is_retried(tmp_path):
    with ScriptedOpenAIServer(["empty", "No"]) as server:
        with client_for(tmp_path, server) as client:
            (answer,) = client.run([judge()])
    assert answer.parsed == "no" and answer.attempts == 2


def test_exhausted_retries_fail_without_caching(tmp_path):
    with ScriptedOpenAIServer(["500", "429", "500"]) as server:
        with client_for(tmp_path, server, num_retries=2) as client:
            with pytest.raises(ModelCallsFailed, match="1 of 1 requests"):
                client.run([judge()])
            assert len(client.cache) == 0
            assert len(server.requests) == 3


@pytest.mark.parametrize("status", ["400", "401"])
def test_client_errors_are_not_retried(tmp_path, status):
    with ScriptedOpenAIServer([status, "Yes"]) as server:
        with client_for(tmp_path, server, num_retries=3) as client:
            (answer,) = client.run([judge()], raise_on_failure=False)
            assert len(client.cache) == 0
        assert len(server.requests) == 1
    assert answer.outcome == "failed" and answer.attempts == 1


def test_unparseable_answers_are_reasked_with_the_instruction_then_reported(tmp_path):
    with ScriptedOpenAIServer(["Probably.", "It depends.", "Hard to say."]) as server:
        with client_for(tmp_path, server, max_reasks=2) as client:
            (answer,) = client.run([judge()])
            assert answer.outcome == "unparseable" and answer.reasks == 2
            assert len(client.cache) == 0
        last = server.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"] == "Probably." and "Yes or No" in last[-1]["content"]


def test_reasked_answer_that_parses_is_cached(tmp_path):
    with ScriptedOpenAIServer(["Well, yes it is", "Yes"]) as server:
        with client_for(tmp_path, server) as client:
            (answer,) = client.run([judge()])
            assert answer.outcome == "ok" and answer.parsed == "yes" and answer.reasks == 1
            assert client.cache.get(answer.key).text == "Yes"


def test_missing_api_key_is_named_before_any_call(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    request = Request.chat("anthropic/claude-sonnet-4-5-20250929",
                           [{"role": "user", "content": "hi"}], response_format="yes_no")
    cfg = LLMConfig(cache_dir=tmp_path / "cache")
    with LLMClient(cfg, ledger=Ledger(tmp_path / "l.jsonl", "t")) as client:
        with pytest.raises(MissingAPIKey, match="ANTHROPIC_API_KEY"):
            client.run([request])
    assert (tmp_path / "l.jsonl").read_text() == ""


def test_cached_answers_need_no_api_key(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    request = Request.chat("anthropic/claude-sonnet-4-5-20250929",
                           [{"role": "user", "content": "hi"}], response_format="yes_no")
    cfg = LLMConfig(cache_dir=tmp_path / "cache")
    with LLMClient(cfg) as client:
        client.cache.put(make_answer(client.key_for(request), request, "Yes", 3, 1, 0.001))
        (answer,) = client.run([request])
    assert answer.cached and answer.parsed == "yes"
