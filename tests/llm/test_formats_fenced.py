"""A JSON answer in one surrounding markdown fence is read through the real client path, not
re-asked (one paid call, not two)."""

import pytest

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request

from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/stub-model"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def verdicts(text="Check these."):
    return Request.chat(MODEL, [{"role": "user", "content": text}],
                        response_format="verdict_list_3", max_tokens=64)


def client_for(tmp_path, server):
    settings = ModelSettings(api_base=server.api_base, timeout_s=2.0, num_retries=1,
                             backoff_s=0.01, max_reasks=2)
    return LLMClient(LLMConfig(cache_dir=tmp_path / "cache", defaults=settings))


@pytest.mark.parametrize("fenced", [
    '```json\n{"verdicts": ["yes", "no", "yes"]}\n```',
    '```\n{"verdicts": ["yes", "no", "yes"]}\n```',
])
def test_a_fenced_answer_is_read_and_cached_without_a_reask(tmp_path, fenced):
    with ScriptedOpenAIServer([fenced]) as server:
        with client_for(tmp_path, server) as client:
            (answer,) = client.run([verdicts()])
            assert answer.outcome == "ok" and answer.parsed == ["yes", "no", "yes"]
            assert answer.reasks == 0 and answer.attempts == 1
            assert len(server.requests) == 1
            (again,) = client.run([verdicts()])
            assert again.cached and again.parsed == ["yes", "no", "yes"]


def test_prose_around_a_fence_is_still_reasked(tmp_path):
    answers = ['Sure:\n```json\n{"verdicts": ["yes", "no", "yes"]}\n```',
               '{"verdicts": ["no", "no", "yes"]}']
    with ScriptedOpenAIServer(answers) as server:
        with client_for(tmp_path, server) as client:
            (answer,) = client.run([verdicts()])
    assert answer.reasks == 1 and answer.parsed == ["no", "no", "yes"]
    assert len(server.requests) == 2
